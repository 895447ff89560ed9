package fr

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bespoke-hpc/bespoke/operator"
	"github.com/bespoke-hpc/bespoke/poly"
)

// rule1d returns the n nodes of a named 1-D point set.
func rule1d(name string, n int, what string) ([]float64, error) {
	switch name {
	case "gauss-legendre":
		x, _, err := poly.GaussLegendre(n)
		return x, err
	case "gauss-legendre-lobatto":
		if n < 2 {
			return nil, fmt.Errorf("fr: %s points %q need order ≥ 1", what, name)
		}
		x, _, err := poly.GaussLobatto(n)
		return x, err
	}
	return nil, fmt.Errorf("fr: unknown %s point set %q (want one of %s)", what, name, strings.Join(PointSets, ", "))
}

func ipow(b, e int) int {
	r := 1
	for range e {
		r *= b
	}
	return r
}

// Operator returns the named operator (see OperatorNames) as a dense,
// row-major matrix, cleaned as PyFR cleans it. The result is a fresh copy.
func (e *RefElement) Operator(name string) (*operator.Operator, error) {
	name = strings.ToLower(name)
	if !slices.Contains(OperatorNames, name) {
		return nil, fmt.Errorf("fr: unknown operator %q (want one of %s)", name, strings.Join(OperatorNames, ", "))
	}
	data, rows, cols := e.final(name)
	label := fmt.Sprintf("p%d/%s/%s", e.Order, e.Kind, name)
	if e.pyClean && !e.defaultPts || !e.pyClean && (e.SolPts != DefaultPointSet || e.FluxPts != DefaultPointSet) {
		label += fmt.Sprintf("[%s,%s]", e.SolPts, e.FluxPts)
	}
	return operator.New(label, rows, cols, slices.Clone(data))
}

// Shape returns the dimensions of the named operator without building it.
func (e *RefElement) Shape(name string) (rows, cols int, err error) {
	nu, nf, nd := e.NUpts, e.NFpts, e.NDims
	switch strings.ToLower(name) {
	case "m0":
		return nf, nu, nil
	case "m1", "m132":
		return nu, nd * nu, nil
	case "m2":
		return nf, nd * nu, nil
	case "m3":
		return nu, nf, nil
	case "m4", "m460":
		return nd * nu, nu, nil
	case "m6":
		return nd * nu, nf, nil
	}
	return 0, 0, fmt.Errorf("fr: unknown operator %q", name)
}

// final returns the operator as PyFR's opmat gives it: the expression
// evaluated from the (cleaned) building blocks, then cleaned as a whole.
func (e *RefElement) final(name string) ([]float64, int, int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	rows, cols, _ := e.Shape(name)
	if d, ok := e.cache["op:"+name]; ok {
		return d, rows, cols
	}
	var d []float64
	nu, nf, nd := e.NUpts, e.NFpts, e.NDims
	switch name {
	case "m0":
		d = slices.Clone(e.m0())
	case "m1":
		d = slices.Clone(e.m1())
	case "m2":
		d = e.m2()
	case "m3":
		d = slices.Clone(e.m3())
	case "m4":
		d = e.m4()
	case "m6":
		d = e.m6()
	case "m132": // m1 − m3·m2
		d = slices.Clone(e.m1())
		mulSub(d, e.m3(), e.m2(), nu, nf, nd*nu)
	case "m460": // m4 − m6·m0
		d = e.m4()
		mulSub(d, e.m6(), e.m0(), nd*nu, nf, nu)
	}
	if e.pyClean {
		cleanPyFR(d, CleanTol)
	} else {
		clean(d, CleanTol)
	}
	e.cache["op:"+name] = d
	return d, rows, cols
}

// mulSub computes c −= a·b for row-major a (m×k), b (k×n), c (m×n),
// skipping the zeros of a and of b (the building blocks are sparse).
func mulSub(c, a, b []float64, m, k, n int) {
	// b in compressed-row form.
	rowStart := make([]int, k+1)
	var cols []int
	var vals []float64
	for l := range k {
		for j, v := range b[l*n : (l+1)*n] {
			if v != 0 {
				cols = append(cols, j)
				vals = append(vals, v)
			}
		}
		rowStart[l+1] = len(cols)
	}
	for i := range m {
		ci := c[i*n : (i+1)*n]
		for l := range k {
			v := a[i*k+l]
			if v == 0 {
				continue
			}
			for t := rowStart[l]; t < rowStart[l+1]; t++ {
				ci[cols[t]] -= v * vals[t]
			}
		}
	}
}

// m0 is the nodal basis of the solution points at the flux points,
// [f][u] = Π_d ℓ_{u_d}(x_f[d]) (PyFR: ubasis.nodal_basis_at(fpts), cleaned).
func (e *RefElement) m0() []float64 {
	if d, ok := e.cache["m0"]; ok {
		return d
	}
	nd := e.NDims
	// 1-D Lagrange values of the solution basis at each flux coordinate
	// and at ±1.
	lf, _ := poly.InterpMatrix(e.sol1d, e.flux1d)
	le, _ := poly.InterpMatrix(e.sol1d, []float64{-1, 1})
	d := make([]float64, e.NFpts*e.NUpts)
	for f := range e.NFpts {
		face := e.Faces[e.FpFace[f]]
		// Per dimension, the row of 1-D basis values at this point.
		rows := make([][]float64, nd)
		rows[face.Dim] = le[(int(face.Value)+1)/2]
		for k, dim := range face.Free {
			rows[dim] = lf[e.fpIdx[f][k]]
		}
		for u := range e.NUpts {
			v := 1.0
			for dim := range nd {
				v *= rows[dim][e.upIdx[u][dim]]
			}
			d[f*e.NUpts+u] = v
		}
	}
	clean(d, CleanTol)
	e.cache["m0"] = d
	return d
}

// m1 is the divergence of the nodal basis at the solution points,
// [u][d·nu+v] = ∂_d ℓ_v(x_u) (PyFR: jac_nodal_basis_at(upts), cleaned).
// On its own nodes a Lagrange basis is the identity, so only entries with
// u and v differing in (at most) direction d are non-zero: D[u_d][v_d].
func (e *RefElement) m1() []float64 {
	if d, ok := e.cache["m1"]; ok {
		return d
	}
	nu, nd := e.NUpts, e.NDims
	dm, _ := poly.DiffMatrix(e.sol1d)
	d := make([]float64, nu*nd*nu)
	for u := range nu {
		for dim := range nd {
			for v := range nu {
				same := true
				for k := range nd {
					if k != dim && e.upIdx[u][k] != e.upIdx[v][k] {
						same = false
						break
					}
				}
				if same {
					d[u*nd*nu+dim*nu+v] = dm[e.upIdx[u][dim]][e.upIdx[v][dim]]
				}
			}
		}
	}
	clean(d, CleanTol)
	e.cache["m1"] = d
	return d
}

// m2 = normals × m0: [f][d·nu+u] = n_f[d]·m0[f][u].
func (e *RefElement) m2() []float64 {
	nu, nf, nd := e.NUpts, e.NFpts, e.NDims
	m0 := e.m0()
	d := make([]float64, nf*nd*nu)
	for f := range nf {
		for dim := range nd {
			for u := range nu {
				d[f*nd*nu+dim*nu+u] = e.Norm[f][dim] * m0[f*nu+u]
			}
		}
	}
	return d
}

// m4 is m1 reshaped to the gradient: [d·nu+u][v] = m1[u][d·nu+v].
func (e *RefElement) m4() []float64 {
	nu, nd := e.NUpts, e.NDims
	m1 := e.m1()
	d := make([]float64, nd*nu*nu)
	for u := range nu {
		for dim := range nd {
			copy(d[(dim*nu+u)*nu:(dim*nu+u+1)*nu], m1[u*nd*nu+dim*nu:u*nd*nu+(dim+1)*nu])
		}
	}
	return d
}

// m6 = normals × m3: [d·nu+u][f] = n_f[d]·m3[u][f].
func (e *RefElement) m6() []float64 {
	nu, nf, nd := e.NUpts, e.NFpts, e.NDims
	m3 := e.m3()
	d := make([]float64, nd*nu*nf)
	for dim := range nd {
		for u := range nu {
			for f := range nf {
				d[(dim*nu+u)*nf+f] = e.Norm[f][dim] * m3[u*nf+f]
			}
		}
	}
	return d
}

// m3 is the DG-equivalent correction evaluated at the solution points
// (PyFR: gbasis_at(upts), cleaned):
//
//	m3[u][f] = Σ_j φ_j(x_u) ∫_face ℓ_f(s) φ_j(proj(s)) ds
//
// with φ_j the orthonormal tensor Legendre basis (degree ≤ p per direction)
// and the face integral by Gauss–Legendre quadrature with p+1 points per
// face direction. With φ_j = Π_d φ_{j_d} and the tensor rule, the sum
// factorises: on the face x_D = c with face directions E,
//
//	m3[u][f] = k(x_u[D], c) · Π_{e∈E} g_{f_e}(x_u[e]),
//	k(a, b)  = Σ_m φ_m(a) φ_m(b),
//	g_i(b)   = Σ_m φ_m(b) Σ_q w_q ℓ^F_i(s_q) φ_m(s_q),
//
// ℓ^F_i the 1-D Lagrange basis of the flux points.
func (e *RefElement) m3() []float64 {
	if d, ok := e.cache["m3"]; ok {
		return d
	}
	n := e.Order + 1
	nu, nf := e.NUpts, e.NFpts
	sq, wq, _ := poly.GaussLegendre(n)
	lq, _ := poly.InterpMatrix(e.flux1d, sq) // [q][i] = ℓ^F_i(s_q)
	phi := func(x float64) []float64 {
		v, _ := poly.OrthoBasis(n, x)
		return v
	}
	phiQ := make([][]float64, n) // [q][m]
	for q := range n {
		phiQ[q] = phi(sq[q])
	}
	// c[i][m] = Σ_q w_q ℓ^F_i(s_q) φ_m(s_q): modal coefficients of ℓ^F_i.
	c := make([][]float64, n)
	for i := range n {
		c[i] = make([]float64, n)
		for m := range n {
			s := 0.0
			for q := range n {
				s += wq[q] * lq[q][i] * phiQ[q][m]
			}
			c[i][m] = s
		}
	}
	phiU := make([][]float64, n) // [a][m] = φ_m(sol1d[a])
	for a := range n {
		phiU[a] = phi(e.sol1d[a])
	}
	phiE := [2][]float64{phi(-1), phi(1)}
	// g[i][a] = g_i(sol1d[a]); kk[side][a] = k(sol1d[a], ∓1).
	g := make([][]float64, n)
	for i := range n {
		g[i] = make([]float64, n)
		for a := range n {
			s := 0.0
			for m := range n {
				s += phiU[a][m] * c[i][m]
			}
			g[i][a] = s
		}
	}
	var kk [2][]float64
	for side := range 2 {
		kk[side] = make([]float64, n)
		for a := range n {
			s := 0.0
			for m := range n {
				s += phiU[a][m] * phiE[side][m]
			}
			kk[side][a] = s
		}
	}
	d := make([]float64, nu*nf)
	for f := range nf {
		face := e.Faces[e.FpFace[f]]
		side := (int(face.Value) + 1) / 2
		for u := range nu {
			v := kk[side][e.upIdx[u][face.Dim]]
			for k, dim := range face.Free {
				v *= g[e.fpIdx[f][k]][e.upIdx[u][dim]]
			}
			d[u*nf+f] = v
		}
	}
	clean(d, CleanTol)
	e.cache["m3"] = d
	return d
}
