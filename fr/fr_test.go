package fr

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/poly"
)

// Tolerances.
const (
	// exactTol bounds the error of operators applied to polynomials they
	// reproduce exactly: entries are O(p²) and sums have O((p+1)^d) terms,
	// so rounding stays well below 1e-11 up to p = 8.
	exactTol = 1e-11
	// productTol bounds the difference between m132/m460 and the product
	// formed from the returned factors: PyFR-style cleaning moves entries by
	// less than CleanTol, amplified by at most a few hundred-term sums.
	productTol = 1e-9
)

const maxTestOrder = 8

type combo struct{ sol, flux string }

func combos() []combo {
	var c []combo
	for _, s := range PointSets {
		for _, f := range PointSets {
			c = append(c, combo{s, f})
		}
	}
	return c
}

// forAll runs f for quad and hex, p = 1..maxTestOrder (hex to 6 in -short
// mode) and all point-set combinations.
func forAll(t *testing.T, f func(t *testing.T, e *RefElement)) {
	for _, kind := range Kinds {
		for p := 1; p <= maxTestOrder; p++ {
			if testing.Short() && kind == "hex" && p > 6 {
				continue
			}
			for _, c := range combos() {
				e, err := Element(kind, p, c.sol, c.flux)
				if err != nil {
					t.Fatal(err)
				}
				f(t, e)
			}
		}
	}
}

func name(e *RefElement) string {
	return fmt.Sprintf("%s/p%d/%s/%s", e.Kind, e.Order, e.SolPts, e.FluxPts)
}

func TestErrors(t *testing.T) {
	bad := []struct {
		kind       string
		p          int
		sol, flux  string
		wantInText string
	}{
		{"wedge", 2, "", "", "unknown element kind"},
		{"tri", 2, "", "", "tabulated"},
		{"tet", 2, "alpha-opt", "", "tabulated"},
		{"pyr", 2, "", "", "tabulated"}, // triangular faces need a file
		{"pri", 9, "", "", "1 ≤ p ≤ 8"},
		{"pyr", 2, "gauss-chebyshev", "", "unknown pyr solution point set"},
		{"quad", 0, "", "", "order 0"},
		{"hex", -1, "", "", "order -1"},
		{"quad", MaxOrder + 1, "", "", "out of range"},
		{"quad", 2, "gauss-chebyshev", "", "unknown solution point set"},
		{"hex", 2, "", "equi-spaced", "unknown flux point set"},
		{"quad", 0, "gauss-legendre-lobatto", "", "order 0"},
	}
	for _, b := range bad {
		_, err := Element(b.kind, b.p, b.sol, b.flux)
		if err == nil || !strings.Contains(err.Error(), b.wantInText) {
			t.Errorf("Element(%q, %d, %q, %q): error %v, want one mentioning %q", b.kind, b.p, b.sol, b.flux, err, b.wantInText)
		}
	}
	e, err := Element("quad", 2, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Operator("m5"); err == nil || !strings.Contains(err.Error(), "unknown operator") {
		t.Errorf("Operator(m5): error %v", err)
	}
	if _, err := e.Operator("M132"); err != nil {
		t.Errorf("Operator(M132) (upper case): %v", err)
	}
}

func TestShapesAndPoints(t *testing.T) {
	forAll(t, func(t *testing.T, e *RefElement) {
		n := e.Order + 1
		nf := map[string]int{"quad": 4 * n, "hex": 6 * n * n}[e.Kind]
		if e.NUpts != ipow(n, e.NDims) || e.NFpts != nf {
			t.Fatalf("%s: %d solution and %d flux points", name(e), e.NUpts, e.NFpts)
		}
		for _, op := range OperatorNames {
			m, err := e.Operator(op)
			if err != nil {
				t.Fatalf("%s %s: %v", name(e), op, err)
			}
			r, c, _ := e.Shape(op)
			if m.Rows != r || m.Cols != c {
				t.Errorf("%s %s: %s, Shape says %d×%d", name(e), op, m.Shape(), r, c)
			}
		}
		// Every flux point lies on its face, inside the face, and its
		// normal is the face's outward unit normal.
		for f, x := range e.Fpts {
			face := e.Faces[e.FpFace[f]]
			if x[face.Dim] != face.Value || e.Norm[f][face.Dim] != face.Value {
				t.Errorf("%s: flux point %d %v not on face %d", name(e), f, x, e.FpFace[f])
			}
		}
	})
}

// evalPoly evaluates Π_d P_{deg[d]}(x[d]) (Legendre), and its gradient.
func evalPoly(deg []int, x []float64) (float64, []float64) {
	v := 1.0
	g := make([]float64, len(x))
	for d := range x {
		g[d] = 1
	}
	for d := range x {
		pd, dpd := poly.Legendre(deg[d], x[d]), poly.LegendreDeriv(deg[d], x[d])
		v *= pd
		for k := range x {
			if k == d {
				g[k] *= dpd
			} else {
				g[k] *= pd
			}
		}
	}
	return v, g
}

// degrees lists a few multi-degrees ≤ p per direction, including the
// corners of the polynomial space.
func degrees(nd, p int) [][]int {
	var out [][]int
	for _, a := range []int{0, 1, p / 2, p} {
		for _, b := range []int{0, p, (p + 1) / 2} {
			if nd == 2 {
				out = append(out, []int{a, b})
				continue
			}
			for _, c := range []int{0, p} {
				out = append(out, []int{a, b, c})
			}
		}
	}
	return out
}

// TestPolynomialExactness: m0 interpolates, m1 takes divergences and m4
// gradients of polynomials of degree ≤ p per direction exactly.
func TestPolynomialExactness(t *testing.T) {
	forAll(t, func(t *testing.T, e *RefElement) {
		m0, _ := e.Operator("m0")
		m1, _ := e.Operator("m1")
		m4, _ := e.Operator("m4")
		nu, nd := e.NUpts, e.NDims
		for _, deg := range degrees(nd, e.Order) {
			q := make([]float64, nu)
			grad := make([][]float64, nu)
			// PyFR's cleaning merges magnitudes within CleanTol, moving
			// each entry by less than CleanTol: a product with q may move
			// by up to CleanTol·Σ|q|, on top of rounding.
			sumq := 0.0
			for u, x := range e.Upts {
				q[u], grad[u] = evalPoly(deg, x)
				sumq += math.Abs(q[u])
			}
			tol := exactTol + CleanTol*sumq
			dtol := exactTol*float64(e.Order*e.Order) + CleanTol*sumq
			for f, x := range e.Fpts {
				want, _ := evalPoly(deg, x)
				got := 0.0
				for u := range nu {
					got += m0.At(f, u) * q[u]
				}
				if math.Abs(got-want) > tol {
					t.Errorf("%s deg %v: m0 at flux point %d: %v, want %v", name(e), deg, f, got, want)
				}
			}
			// Gradient via m4, divergence via m1 of the field (q, …, q).
			for u := range nu {
				div, wantDiv := 0.0, 0.0
				for d := range nd {
					g := 0.0
					for v := range nu {
						g += m4.At(d*nu+u, v) * q[v]
						div += m1.At(u, d*nu+v) * q[v]
					}
					wantDiv += grad[u][d]
					if math.Abs(g-grad[u][d]) > dtol {
						t.Errorf("%s deg %v: m4 ∂_%d at %d: %v, want %v", name(e), deg, d, u, g, grad[u][d])
					}
				}
				if math.Abs(div-wantDiv) > float64(nd)*dtol {
					t.Errorf("%s deg %v: m1 divergence at %d: %v, want %v", name(e), deg, u, div, wantDiv)
				}
			}
		}
	})
}

// TestCorrectionIsLifting checks the defining property of the DG-equivalent
// correction, independently of how m3 is evaluated: the polynomial whose
// nodal values are column f of m3 has, against every orthonormal basis
// function φ_j, the volume integral ∫_Ω φ_j·(m3 e_f) = ∫_face(f) φ_j ℓ_f.
// Integrals are done with a Gauss–Legendre rule of p+2 points per direction
// (exact here). Checked on quads and on hexes to p = 3.
func TestCorrectionIsLifting(t *testing.T) {
	forAll(t, func(t *testing.T, e *RefElement) {
		if e.Kind == "hex" && e.Order > 3 {
			return
		}
		n, nd, nu := e.Order+1, e.NDims, e.NUpts
		m3, _ := e.Operator("m3")
		xq, wq, _ := poly.GaussLegendre(n + 1)
		lsol, _ := poly.InterpMatrix(e.sol1d, xq)  // [q][a]
		lflx, _ := poly.InterpMatrix(e.flux1d, xq) // [q][i]
		phiQ := make([][]float64, len(xq))         // [q][m]
		for q := range xq {
			phiQ[q], _ = poly.OrthoBasis(n, xq[q])
		}
		phiE := [2][]float64{}
		phiE[0], _ = poly.OrthoBasis(n, -1)
		phiE[1], _ = poly.OrthoBasis(n, 1)
		nq := ipow(len(xq), nd)
		nj := ipow(n, nd)
		// Per quadrature point: its weight, its 1-D indices, and the
		// interpolant of every column of m3 there.
		wts := make([]float64, nq)
		qidx := make([][]int, nq)
		vals := make([][]float64, nq)
		for qi := range nq {
			qd := make([]int, nd)
			w := 1.0
			for d, r := 0, qi; d < nd; d, r = d+1, r/len(xq) {
				qd[d] = r % len(xq)
				w *= wq[qd[d]]
			}
			wts[qi], qidx[qi] = w, qd
			vals[qi] = make([]float64, e.NFpts)
			for u := range nu {
				l := 1.0
				for d := range nd {
					l *= lsol[qd[d]][e.upIdx[u][d]]
				}
				for f := range e.NFpts {
					vals[qi][f] += l * m3.At(u, f)
				}
			}
		}
		for f := range e.NFpts {
			face := e.Faces[e.FpFace[f]]
			for j := range nj {
				jd := make([]int, nd)
				for d, r := 0, j; d < nd; d, r = d+1, r/n {
					jd[d] = r % n
				}
				// Volume integral of φ_j times the interpolant of column f.
				vol := 0.0
				for qi := range nq {
					phi := 1.0
					for d := range nd {
						phi *= phiQ[qidx[qi][d]][jd[d]]
					}
					vol += wts[qi] * phi * vals[qi][f]
				}
				// Face integral of φ_j ℓ_f.
				side := (int(face.Value) + 1) / 2
				surf := phiE[side][jd[face.Dim]]
				for k, dim := range face.Free {
					s := 0.0
					for q := range xq {
						s += wq[q] * phiQ[q][jd[dim]] * lflx[q][e.fpIdx[f][k]]
					}
					surf *= s
				}
				if math.Abs(vol-surf) > exactTol {
					t.Errorf("%s: flux point %d, mode %v: ∫φ·m3 = %v, face ∫ = %v", name(e), f, jd, vol, surf)
					return
				}
			}
		}
	})
}

// TestProductsAndNormals: m2, m6 are the normal-weighted m0, m3; m4 is m1
// reshaped; m132 and m460 equal the products of the returned factors.
func TestProductsAndNormals(t *testing.T) {
	forAll(t, func(t *testing.T, e *RefElement) {
		if e.Kind == "hex" && e.Order > 5 {
			return // the dense triple loops below get slow
		}
		ops := map[string][]float64{}
		for _, n := range OperatorNames {
			m, _ := e.Operator(n)
			ops[n] = m.Data
		}
		nu, nf, nd := e.NUpts, e.NFpts, e.NDims
		for f := range nf {
			for d := range nd {
				for u := range nu {
					if ops["m2"][f*nd*nu+d*nu+u] != e.Norm[f][d]*ops["m0"][f*nu+u] {
						t.Fatalf("%s: m2 ≠ n·m0 at (%d,%d,%d)", name(e), f, d, u)
					}
					if ops["m6"][(d*nu+u)*nf+f] != e.Norm[f][d]*ops["m3"][u*nf+f] {
						t.Fatalf("%s: m6 ≠ n·m3 at (%d,%d,%d)", name(e), d, u, f)
					}
				}
			}
		}
		for u := range nu {
			for d := range nd {
				for v := range nu {
					if ops["m4"][(d*nu+u)*nu+v] != ops["m1"][u*nd*nu+d*nu+v] {
						t.Fatalf("%s: m4 is not m1 reshaped at (%d,%d,%d)", name(e), u, d, v)
					}
				}
			}
		}
		check := func(res, a, b, c []float64, m, k, n int, label string) {
			for i := range m {
				for j := range n {
					s := a[i*n+j]
					for l := range k {
						s -= b[i*k+l] * c[l*n+j]
					}
					if math.Abs(s-res[i*n+j]) > productTol {
						t.Fatalf("%s: %s at (%d,%d): %v, product %v", name(e), label, i, j, res[i*n+j], s)
					}
				}
			}
		}
		check(ops["m132"], ops["m1"], ops["m3"], ops["m2"], nu, nf, nd*nu, "m132")
		check(ops["m460"], ops["m4"], ops["m6"], ops["m0"], nd*nu, nf, nu, "m460")
	})
}

// TestKnownValues pins a few entries by hand: p = 1 Gauss–Legendre, 1-D
// nodes ±1/√3, ℓ(−1) = (1+√3)/2 and ℓ(+1) = (1−√3)/2; with Lobatto points
// on both sides m0 is a 0/1 selection matrix.
func TestKnownValues(t *testing.T) {
	e, _ := Element("quad", 1, "", "")
	m0, _ := e.Operator("m0")
	a, b := (1+math.Sqrt(3))/2, (1-math.Sqrt(3))/2
	// Flux point 0: face 0 (y = −1), x = −1/√3; solution points 0 (−,−)
	// and 2 (−,+).
	if math.Abs(m0.At(0, 0)-a) > 4e-16 || math.Abs(m0.At(0, 2)-b) > 4e-16 || m0.At(0, 1) != 0 {
		t.Errorf("p1 quad m0 row 0 = %v", m0.Data[:4])
	}
	for _, kind := range Kinds {
		for p := 1; p <= 4; p++ {
			e, _ := Element(kind, p, "gauss-legendre-lobatto", "gauss-legendre-lobatto")
			m0, _ := e.Operator("m0")
			for f := range m0.Rows {
				ones := 0
				for u := range m0.Cols {
					switch v := m0.At(f, u); v {
					case 0:
					case 1:
						ones++
					default:
						t.Fatalf("%s p%d GLL: m0[%d][%d] = %v, want 0 or 1", kind, p, f, u, v)
					}
				}
				if ones != 1 {
					t.Fatalf("%s p%d GLL: m0 row %d has %d ones", kind, p, f, ones)
				}
			}
		}
	}
}

func TestClean(t *testing.T) {
	a := []float64{1, -1 - 5e-11, 3e-11, 2, 2 + 2e-10, -0.5}
	clean(a, CleanTol)
	want := []float64{1 + 2.5e-11, -1 - 2.5e-11, 0, 2, 2 + 2e-10, -0.5}
	for i := range a {
		if a[i] != want[i] && math.Abs(a[i]-want[i]) > 1e-16 {
			t.Errorf("clean: entry %d = %.17g, want %.17g", i, a[i], want[i])
		}
	}
}
