package pum

import (
	"bufio"
	"bytes"
	"math"
	"math/rand/v2"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/poly"
)

const eps = 0x1p-52

// coverCase is one cover of the table-driven tests.
type coverCase struct {
	name string
	make func() (*Cover, error)
}

var covers = []coverCase{
	{"2d-l2", func() (*Cover, error) { return UniformCover(2, 2, 1.25, false) }},
	{"2d-l3-a1.7", func() (*Cover, error) { return UniformCover(2, 3, 1.7, false) }},
	{"2d-l3-periodic", func() (*Cover, error) { return UniformCover(2, 3, 1.25, true) }},
	{"2d-adaptive-1-4", func() (*Cover, error) { return AdaptiveCover(2, 1, 4, 1.25) }},
	{"3d-l1", func() (*Cover, error) { return UniformCover(3, 1, 1.25, false) }},
	{"3d-l2-periodic", func() (*Cover, error) { return UniformCover(3, 2, 1.5, true) }},
	{"3d-adaptive-1-3", func() (*Cover, error) { return AdaptiveCover(3, 1, 3, 1.25) }},
}

func mustCover(t *testing.T, cc coverCase) *Cover {
	t.Helper()
	c, err := cc.make()
	if err != nil {
		t.Fatalf("%s: %v", cc.name, err)
	}
	return c
}

// supportsOverlap reports, independently of the cover's neighbour lists,
// whether the supports of patches i and j overlap (nearest periodic image).
func supportsOverlap(c *Cover, i, j int) bool {
	d := c.Dim
	for k := range d {
		dist := math.Abs(c.Centre[i*d+k] - c.Centre[j*d+k])
		if c.Periodic {
			dist = math.Min(dist, 1-dist)
		}
		if dist >= c.Alpha*(c.Half[i*d+k]+c.Half[j*d+k])-1e-12 {
			return false
		}
	}
	return true
}

func TestLegendreRecurrence(t *testing.T) {
	v := make([]float64, 6)
	dv := make([]float64, 6)
	for _, x := range []float64{-1, -0.73, 0, 0.31, 1} {
		legendre(5, x, v, dv)
		for n := range 6 {
			if d := math.Abs(v[n] - poly.Legendre(n, x)); d > 8*eps {
				t.Errorf("P_%d(%v) off by %.3g", n, x, d)
			}
			if d := math.Abs(dv[n] - poly.LegendreDeriv(n, x)); d > 64*eps {
				t.Errorf("P'_%d(%v) off by %.3g", n, x, d)
			}
		}
	}
}

func TestSpaceSizes(t *testing.T) {
	c2, _ := UniformCover(2, 1, 1.25, false)
	c3, _ := UniformCover(3, 1, 1.25, false)
	want := map[int][]int{2: {1, 3, 6, 10, 15, 21}, 3: {1, 4, 10, 20}}
	for d, c := range map[int]*Cover{2: c2, 3: c3} {
		for p, b := range want[d] {
			s, err := NewSpace(c, p)
			if err != nil {
				t.Fatal(err)
			}
			if s.B != b {
				t.Errorf("%d-D p=%d: B = %d, want %d", d, p, s.B, b)
			}
			seen := map[string]bool{}
			prev := 0
			for n := range s.B {
				ex := s.Exp[n*d : n*d+d]
				deg := 0
				for _, e := range ex {
					deg += int(e)
				}
				if n == 0 && deg != 0 {
					t.Errorf("%d-D p=%d: ψ⁰ has degree %d", d, p, deg)
				}
				if deg < prev || deg > p {
					t.Errorf("%d-D p=%d: function %d has degree %d out of order", d, p, n, deg)
				}
				prev = deg
				k := string(strconv.AppendInt(nil, int64(ex[0])*100+int64(ex[1])*10+int64(ex[d-1]), 10)) + strconv.Itoa(d)
				if seen[k] {
					t.Errorf("%d-D p=%d: repeated exponent %v", d, p, ex)
				}
				seen[k] = true
			}
		}
	}
}

func TestNeighbours(t *testing.T) {
	for _, cc := range covers {
		c := mustCover(t, cc)
		for i := range c.N {
			var want []int32
			for j := range c.N {
				if supportsOverlap(c, i, j) {
					want = append(want, int32(j))
				}
			}
			got := c.Neighbours(i)
			if len(got) != len(want) {
				t.Fatalf("%s: patch %d neighbours %v, want %v", cc.name, i, got, want)
			}
			for k := range got {
				if got[k] != want[k] {
					t.Fatalf("%s: patch %d neighbours %v, want %v", cc.name, i, got, want)
				}
			}
		}
		if !c.Adaptive {
			// Patches are numbered x-fastest.
			d := c.Dim
			if c.Centre[d] <= c.Centre[0] || (c.PerDir > 1 && c.Centre[c.PerDir*d+1] <= c.Centre[1]) {
				t.Errorf("%s: patches not numbered x-fastest", cc.name)
			}
		}
	}
}

func TestDecomposition(t *testing.T) {
	for _, cc := range covers {
		c := mustCover(t, cc)
		dec, err := Decompose(c, 2)
		if err != nil {
			t.Fatal(err)
		}
		d := c.Dim
		vol := 0.0
		for cell := range dec.NCells {
			o := int(dec.Owner[cell])
			if cell < int(dec.CellPtr[o]) || cell >= int(dec.CellPtr[o+1]) {
				t.Fatalf("%s: cell %d outside its owner's range", cc.name, cell)
			}
			v := 1.0
			for k := range d {
				lo, hi := dec.Lo[cell*d+k], dec.Hi[cell*d+k]
				bl, bh := c.Centre[o*d+k]-c.Half[o*d+k], c.Centre[o*d+k]+c.Half[o*d+k]
				if lo < bl-1e-15 || hi > bh+1e-15 || hi <= lo {
					t.Fatalf("%s: cell %d [%v,%v] not inside owner %d's [%v,%v]", cc.name, cell, lo, hi, o, bl, bh)
				}
				v *= hi - lo
			}
			vol += v
			// The active set is every patch (brute force over the cover)
			// whose support overlaps the cell.
			var want []int32
			for j := range c.N {
				in := true
				for k := range d {
					dx := math.Abs((dec.Lo[cell*d+k]+dec.Hi[cell*d+k])/2 - c.Centre[j*d+k])
					if c.Periodic {
						dx = math.Min(dx, 1-dx)
					}
					if dx >= c.Alpha*c.Half[j*d+k]+(dec.Hi[cell*d+k]-dec.Lo[cell*d+k])/2-1e-12 {
						in = false
					}
				}
				if in {
					want = append(want, int32(j))
				}
			}
			got := dec.Active(cell)
			// No active weight has a kink inside the cell: the W_j are
			// smooth (tensor linear) on every cell.
			for _, j := range got {
				for k := range d {
					lo, hi := dec.Lo[cell*d+k], dec.Hi[cell*d+k]
					mid := (lo + hi) / 2
					cj := c.Centre[int(j)*d+k]
					if c.Periodic {
						cj = mid - c.dxOf(int(j), k, mid)
					}
					sj := c.Alpha * c.Half[int(j)*d+k]
					for _, v := range []float64{cj - sj, cj, cj + sj} {
						if v > lo+1e-12 && v < hi-1e-12 {
							t.Fatalf("%s: cell %d [%v,%v] has patch %d's kink %v inside", cc.name, cell, lo, hi, j, v)
						}
					}
				}
			}
			if len(got) != len(want) {
				t.Fatalf("%s: cell %d active %v, want %v", cc.name, cell, got, want)
			}
			for k := range got {
				if got[k] != want[k] {
					t.Fatalf("%s: cell %d active %v, want %v", cc.name, cell, got, want)
				}
			}
		}
		if math.Abs(vol-1) > 1e-13 {
			t.Errorf("%s: cells cover volume %.17g, want 1", cc.name, vol)
		}
		// Bins: each cell once, in the bin of its active count.
		seen := make([]bool, dec.NCells)
		for k := 0; k+1 < len(dec.BinPtr); k++ {
			for _, cell := range dec.BinCell[dec.BinPtr[k]:dec.BinPtr[k+1]] {
				if seen[cell] || len(dec.Active(int(cell))) != k {
					t.Fatalf("%s: cell %d misbinned in bin %d", cc.name, cell, k)
				}
				seen[cell] = true
			}
		}
		if int(dec.BinPtr[len(dec.BinPtr)-1]) != dec.NCells {
			t.Errorf("%s: bins hold %d of %d cells", cc.name, dec.BinPtr[len(dec.BinPtr)-1], dec.NCells)
		}
		t.Logf("%s: %d patches, %d cells, at most %d active, bins %v", cc.name, c.N, dec.NCells, dec.MaxActive, dec.BinPtr)
	}
}

// On a periodic uniform cover every patch has 4^d cells, C(d,k)·2^d of
// them with 2^k active patches (background §2.3).
func TestPeriodicCellCounts(t *testing.T) {
	for _, tc := range []struct {
		dim, level int
		bins       map[int]int // active count → cells per patch
	}{
		{2, 3, map[int]int{1: 4, 2: 8, 4: 4}},
		{3, 2, map[int]int{1: 8, 2: 24, 4: 24, 8: 8}},
	} {
		c, err := UniformCover(tc.dim, tc.level, 1.25, true)
		if err != nil {
			t.Fatal(err)
		}
		dec, err := Decompose(c, 0)
		if err != nil {
			t.Fatal(err)
		}
		for k := 0; k+1 < len(dec.BinPtr); k++ {
			if got, want := int(dec.BinPtr[k+1]-dec.BinPtr[k]), tc.bins[k]*c.N; got != want {
				t.Errorf("%d-D: %d cells with %d active patches, want %d", tc.dim, got, k, want)
			}
		}
	}
}

// The inner patches of the non-periodic uniform 2-D cover have the cell
// counts of the thesis's Table 2.1 (tensor decomposition).
func TestThesisTable21(t *testing.T) {
	for level, want := range map[int]int{2: 64, 4: 3136, 6: 61504} {
		c, _ := UniformCover(2, level, 1.25, false)
		dec, err := Decompose(c, 0)
		if err != nil {
			t.Fatal(err)
		}
		n := c.PerDir
		got := 0
		for i := range c.N {
			ix, iy := i%n, i/n
			if ix > 0 && ix < n-1 && iy > 0 && iy < n-1 {
				got += int(dec.CellPtr[i+1] - dec.CellPtr[i])
			}
		}
		if got != want {
			t.Errorf("level %d: %d inner cells, want %d", level, got, want)
		}
	}
}

// Σφ = 1, Σ∇φ = 0 and φ ≥ 0 at every quadrature point, and every patch of
// the owner's neighbourhood that is not active on the cell has W = 0 there
// (a missing neighbour would break the partition of unity).
func TestPartitionOfUnity(t *testing.T) {
	for _, cc := range covers {
		c := mustCover(t, cc)
		s, _ := NewSpace(c, 0)
		dec, err := Decompose(c, 0)
		if err != nil {
			t.Fatal(err)
		}
		d := c.Dim
		h := 2 * c.MinHalf()
		ev, all := newEvaluator(s), newEvaluator(s)
		var x [3]float64
		var e0, e1 float64
		for _, nq := range []int{2, 5} {
			rule, _ := NewRule(d, nq)
			for cell := range dec.NCells {
				act := dec.Active(cell)
				for q := range rule.NumPoints() {
					rule.point(q, dec.Lo[cell*d:cell*d+d], dec.Hi[cell*d:cell*d+d], x[:d])
					ev.pu(x[:d], act)
					sum := 0.0
					var g [3]float64
					for a := range act {
						if ev.phi[a] < 0 {
							t.Fatalf("%s: φ < 0", cc.name)
						}
						sum += ev.phi[a]
						for k := range d {
							g[k] += ev.dph[a*d+k]
						}
					}
					e0 = math.Max(e0, math.Abs(sum-1))
					for k := range d {
						e1 = math.Max(e1, math.Abs(g[k])*h)
					}
					nbr := c.Neighbours(int(dec.Owner[cell]))
					all.pu(x[:d], nbr)
					for sl, j := range nbr {
						isAct := false
						for _, a := range act {
							isAct = isAct || a == j
						}
						if !isAct && all.w[sl] != 0 {
							t.Fatalf("%s: inactive patch %d has W = %v on cell %d", cc.name, j, all.w[sl], cell)
						}
					}
				}
			}
		}
		if e0 > 4*eps || e1 > 64*eps {
			t.Errorf("%s: |Σφ−1| ≤ %.3g, h·|Σ∇φ| ≤ %.3g", cc.name, e0, e1)
		}
	}
}

// kappaVar is a variable diffusion coefficient used by several tests.
func kappaVar(x []float64) float64 {
	v := 1.0
	for _, xi := range x {
		v += 0.3 * xi * xi
	}
	return v + 0.2*math.Sin(5*x[0])
}

type systemCase struct {
	name  string
	cover coverCase
	p     int
}

var systems = []systemCase{
	{"2d-l2-p0", covers[0], 0},
	{"2d-l2-p3", covers[0], 3},
	{"2d-l3-a1.7-p2", covers[1], 2},
	{"2d-l3-periodic-p5", covers[2], 5},
	{"2d-adaptive-p1", covers[3], 1},
	{"3d-l1-p2", covers[4], 2},
	{"3d-l2-periodic-p1", covers[5], 1},
	{"3d-adaptive-p1", covers[6], 1},
	{"3d-l1-p3", covers[4], 3},
}

// build assembles a system with the given coefficients on a test cover.
func build(t *testing.T, sc systemCase, co Coefficients, nq int) *System {
	t.Helper()
	c := mustCover(t, sc.cover)
	s, err := NewSpace(c, sc.p)
	if err != nil {
		t.Fatal(err)
	}
	if nq == 0 {
		nq = sc.p + 1
	}
	rule, err := NewRule(c.Dim, nq)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := Decompose(c, 0)
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewBSR(c, s.B)
	if err != nil {
		t.Fatal(err)
	}
	f := make([]float64, s.NumDOF())
	el, err := Integrate(s, dec, rule, co, 0, dec.NCells, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := Assemble(a, f, dec, el); err != nil {
		t.Fatal(err)
	}
	return &System{Cover: c, Space: s, Dec: dec, Rule: rule, A: a, F: f}
}

// A·e₀ = 0 for r = 0: Σ_i φ_i ψ_i⁰ = 1 has zero gradient at every point,
// whatever the quadrature.
func TestConstantReproduction(t *testing.T) {
	for _, sc := range systems {
		sys := build(t, sc, Coefficients{Kappa: kappaVar}, 0)
		B := sys.Space.B
		e0 := make([]float64, sys.Space.NumDOF())
		for i := range sys.Cover.N {
			e0[i*B] = 1
		}
		y := make([]float64, len(e0))
		sys.A.MulVec(y, e0)
		// Scale: the largest row sum of |A_ij|·e0_j, what cancels.
		worst := 0.0
		for r := range y {
			sc := 0.0
			for i := range sys.Cover.N {
				sc += math.Abs(sys.A.At(r, i*B))
			}
			if sc > 0 {
				worst = math.Max(worst, math.Abs(y[r])/sc)
			}
		}
		if worst > 1e-13 {
			t.Errorf("%s: |A·e₀| / Σ|A|e₀ = %.3g, want ≤ 1e-13", sc.name, worst)
		}
	}
}

// Σ_i F_{(i,0)} = ∫f: exact for f = 1 on any rule, and for a polynomial f
// of degree ≤ 2n−1 per direction on the n-point rule (Σφ = 1 pointwise).
func TestLoadSum(t *testing.T) {
	cubic := func(x []float64) float64 { return 3 + x[0]*x[0]*x[1] - x[len(x)-1]*x[len(x)-1]*x[len(x)-1] }
	for _, sc := range systems {
		for _, f := range []struct {
			name string
			f    func([]float64) float64
			want float64
			minP int
		}{
			{"f=1", func([]float64) float64 { return 1 }, 1, 0},
			{"f=cubic", cubic, 3 + 1.0/6 - 0.25, 1},
		} {
			if sc.p < f.minP {
				continue
			}
			sys := build(t, sc, Coefficients{Kappa: kappaVar, F: f.f}, 0)
			sum := 0.0
			for i := range sys.Cover.N {
				sum += sys.F[i*sys.Space.B]
			}
			if e := math.Abs(sum-f.want) / f.want; e > 1e-14 {
				t.Errorf("%s %s: ΣF = %.17g, want %.17g (rel %.3g)", sc.name, f.name, sum, f.want, e)
			}
		}
	}
}

// jacobiEigen returns the eigenvalues of the symmetric matrix a (n×n,
// destroyed) by cyclic Jacobi rotations.
func jacobiEigen(a []float64, n int) []float64 {
	for sweep := 0; sweep < 100; sweep++ {
		off := 0.0
		for i := range n {
			for j := range n {
				if i != j {
					off += a[i*n+j] * a[i*n+j]
				}
			}
		}
		if off < 1e-30 {
			break
		}
		for p := range n {
			for q := p + 1; q < n; q++ {
				if a[p*n+q] == 0 {
					continue
				}
				th := (a[q*n+q] - a[p*n+p]) / (2 * a[p*n+q])
				tt := math.Copysign(1, th) / (math.Abs(th) + math.Sqrt(th*th+1))
				cs := 1 / math.Sqrt(tt*tt+1)
				sn := tt * cs
				for k := range n {
					akp, akq := a[k*n+p], a[k*n+q]
					a[k*n+p], a[k*n+q] = cs*akp-sn*akq, sn*akp+cs*akq
				}
				for k := range n {
					apk, aqk := a[p*n+k], a[q*n+k]
					a[p*n+k], a[q*n+k] = cs*apk-sn*aqk, sn*apk+cs*aqk
				}
			}
		}
	}
	ev := make([]float64, n)
	for i := range n {
		ev[i] = a[i*n+i]
	}
	sort.Float64s(ev)
	return ev
}

// A is symmetric, positive semi-definite for r = 0 (one zero eigenvalue
// per connected cover: the constants) and definite for r > 0.
func TestSymmetricPositive(t *testing.T) {
	for _, sc := range []systemCase{
		{"2d-l2-p2", covers[0], 2},
		{"2d-l2-periodic", coverCase{"", func() (*Cover, error) { return UniformCover(2, 2, 1.25, true) }}, 1},
		{"3d-l1-p1", covers[4], 1},
		{"2d-adaptive-1-3-p1", coverCase{"", func() (*Cover, error) { return AdaptiveCover(2, 1, 3, 1.4) }}, 1},
	} {
		for _, r := range []func([]float64) float64{nil, func(x []float64) float64 { return 2 + x[0] }} {
			sys := build(t, sc, Coefficients{Kappa: kappaVar, R: r}, 0)
			n := sys.Space.NumDOF()
			a := make([]float64, n*n)
			amax := 0.0
			for i := range n {
				for j := range n {
					a[i*n+j] = sys.A.At(i, j)
					amax = math.Max(amax, math.Abs(a[i*n+j]))
				}
			}
			for i := range n {
				for j := range i {
					if a[i*n+j] != a[j*n+i] {
						t.Fatalf("%s: A[%d,%d] = %v ≠ A[%d,%d] = %v", sc.name, i, j, a[i*n+j], j, i, a[j*n+i])
					}
				}
			}
			ev := jacobiEigen(a, n)
			lmax := ev[n-1]
			if r == nil {
				if ev[0] < -1e-12*lmax || math.Abs(ev[0]) > 1e-12*lmax || ev[1] < 1e-12*lmax {
					t.Errorf("%s r=0: smallest eigenvalues %.3g, %.3g (largest %.3g): want one zero, rest > 0", sc.name, ev[0], ev[1], lmax)
				}
			} else if ev[0] <= 1e-12*lmax {
				t.Errorf("%s r>0: smallest eigenvalue %.3g (largest %.3g), want > 0", sc.name, ev[0], lmax)
			}
			t.Logf("%s r=%v: n=%d λ ∈ [%.3g, %.3g], cond %.3g", sc.name, r != nil, n, ev[0], lmax, lmax/ev[min(1, n-1)])
		}
	}
}

// refEntries computes A and F entry by entry on the same cells by a plain
// loop over all patch pairs of the cover, evaluating every patch's weight
// (no active lists, no masks) and ψ with poly.Legendre, as an independent
// check of the evaluator, the element blocks and the scatter.
func refEntries(sys *System, co Coefficients) (a, f []float64) {
	c, s, dec, rule := sys.Cover, sys.Space, sys.Dec, sys.Rule
	d, B, N := c.Dim, s.B, c.N
	n := N * B
	a = make([]float64, n*n)
	f = make([]float64, n)
	u := make([]float64, n)
	du := make([]float64, n*d)
	var x [3]float64
	for cell := range dec.NCells {
		for q := range rule.NumPoints() {
			w := rule.point(q, dec.Lo[cell*d:cell*d+d], dec.Hi[cell*d:cell*d+d], x[:d])
			W := make([]float64, N)
			dW := make([]float64, N*d)
			S, dS := 0.0, make([]float64, d)
			for j := range N {
				var fk, gk [3]float64
				for k := range d {
					dx := x[k] - c.Centre[j*d+k]
					if c.Periodic {
						dx -= math.Round(dx)
					}
					sj := c.Alpha * c.Half[j*d+k]
					if math.Abs(dx) < sj {
						fk[k] = 1 - math.Abs(dx)/sj
						gk[k] = -math.Copysign(1/sj, dx)
					}
				}
				W[j] = 1
				for k := range d {
					W[j] *= fk[k]
				}
				for k := range d {
					g := gk[k]
					for m := range d {
						if m != k {
							g *= fk[m]
						}
					}
					dW[j*d+k] = g
					dS[k] += g
				}
				S += W[j]
			}
			for j := range N {
				phi := W[j] / S
				for m := range B {
					ex := s.Exp[m*d : m*d+d]
					var xi, sj [3]float64
					for k := range d {
						sj[k] = c.Alpha * c.Half[j*d+k]
						dx := x[k] - c.Centre[j*d+k]
						if c.Periodic {
							dx -= math.Round(dx)
						}
						xi[k] = dx / sj[k]
					}
					psi := 1.0
					for k := range d {
						psi *= poly.Legendre(int(ex[k]), xi[k])
					}
					u[j*B+m] = phi * psi
					for k := range d {
						dphi := (dW[j*d+k] - phi*dS[k]) / S
						dpsi := poly.LegendreDeriv(int(ex[k]), xi[k]) / sj[k]
						for mm := range d {
							if mm != k {
								dpsi *= poly.Legendre(int(ex[mm]), xi[mm])
							}
						}
						du[(j*B+m)*d+k] = dphi*psi + phi*dpsi
					}
				}
			}
			kap, r, ff := 1.0, 0.0, 0.0
			if co.Kappa != nil {
				kap = co.Kappa(x[:d])
			}
			if co.R != nil {
				r = co.R(x[:d])
			}
			if co.F != nil {
				ff = co.F(x[:d])
			}
			for I := range n {
				if u[I] == 0 && du[I*d] == 0 {
					continue
				}
				f[I] += w * ff * u[I]
				for J := range n {
					g := 0.0
					for k := range d {
						g += du[I*d+k] * du[J*d+k]
					}
					a[I*n+J] += w * (kap*g + r*u[I]*u[J])
				}
			}
		}
	}
	return a, f
}

func TestEntrywise(t *testing.T) {
	co := Coefficients{Kappa: kappaVar, R: func(x []float64) float64 { return 1 + x[1] }, F: func(x []float64) float64 { return math.Exp(x[0]) }}
	for _, sc := range []systemCase{
		{"2d-l2-p2", covers[0], 2},
		{"2d-l2-periodic-p1", coverCase{"", func() (*Cover, error) { return UniformCover(2, 2, 1.6, true) }}, 1},
		{"2d-adaptive-1-3-p1", coverCase{"", func() (*Cover, error) { return AdaptiveCover(2, 1, 3, 1.25) }}, 1},
		{"3d-l1-p1", covers[4], 1},
	} {
		sys := build(t, sc, co, 3)
		ra, rf := refEntries(sys, co)
		n := sys.Space.NumDOF()
		amax, fmax := 0.0, 0.0
		for _, v := range ra {
			amax = math.Max(amax, math.Abs(v))
		}
		for _, v := range rf {
			fmax = math.Max(fmax, math.Abs(v))
		}
		ea, ef := 0.0, 0.0
		for i := range n {
			ef = math.Max(ef, math.Abs(sys.F[i]-rf[i])/fmax)
			for j := range n {
				ea = math.Max(ea, math.Abs(sys.A.At(i, j)-ra[i*n+j])/amax)
			}
		}
		// Pairs outside the neighbour graph must be zero in the reference.
		for i := range sys.Cover.N {
			for j := range sys.Cover.N {
				if sys.A.Block(i, j) < 0 && ra[i*sys.Space.B*n+j*sys.Space.B] != 0 {
					t.Errorf("%s: reference couples %d and %d outside the graph", sc.name, i, j)
				}
			}
		}
		if ea > 1e-13 || ef > 1e-13 {
			t.Errorf("%s: max relative difference from the reference: A %.3g, F %.3g", sc.name, ea, ef)
		}
	}
}

// Serial and parallel runs give the same bits (the per-cell work does not
// depend on the split, assembly is serial).
func TestWorkersDeterministic(t *testing.T) {
	cfg := Config{Dim: 2, Level: 4, Degree: 2, Coeffs: benchCoeffs, Workers: 1}
	s1, _, err := Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Workers = 3
	s2, _, err := Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range s1.A.Val {
		if s1.A.Val[i] != s2.A.Val[i] {
			t.Fatalf("entry %d differs: %v vs %v", i, s1.A.Val[i], s2.A.Val[i])
		}
	}
	for i := range s1.F {
		if s1.F[i] != s2.F[i] {
			t.Fatalf("load %d differs", i)
		}
	}
}

// manufactured problems with analytic right-hand sides.
type mms struct {
	name     string
	periodic bool
	co       Coefficients
	u        func(x, g []float64) float64
}

func periodicMMS() mms {
	// u = sin 2πx sin 2πy, κ = 1 + u/2, r = 1:
	// f = −κΔu − ∇κ·∇u + r u = 8π²κu − |∇u|²/2 + u.
	u := func(x, g []float64) float64 {
		sx, cx := math.Sincos(2 * math.Pi * x[0])
		sy, cy := math.Sincos(2 * math.Pi * x[1])
		g[0], g[1] = 2*math.Pi*cx*sy, 2*math.Pi*sx*cy
		return sx * sy
	}
	return mms{"periodic", true, Coefficients{
		Kappa: func(x []float64) float64 { var g [2]float64; return 1 + u(x, g[:])/2 },
		R:     func([]float64) float64 { return 1 },
		F: func(x []float64) float64 {
			var g [2]float64
			v := u(x, g[:])
			return 8*math.Pi*math.Pi*(1+v/2)*v - (g[0]*g[0]+g[1]*g[1])/2 + v
		},
	}, u}
}

func neumannMMS() mms {
	// u = cos πx cos πy (∂u/∂n = 0 on the boundary), κ = 1 + xy/4, r = 1:
	// f = 2π²κu − ∇κ·∇u + u.
	u := func(x, g []float64) float64 {
		sx, cx := math.Sincos(math.Pi * x[0])
		sy, cy := math.Sincos(math.Pi * x[1])
		g[0], g[1] = -math.Pi*sx*cy, -math.Pi*cx*sy
		return cx * cy
	}
	return mms{"neumann", false, Coefficients{
		Kappa: func(x []float64) float64 { return 1 + x[0]*x[1]/4 },
		R:     func([]float64) float64 { return 1 },
		F: func(x []float64) float64 {
			var g [2]float64
			v := u(x, g[:])
			return 2*math.Pi*math.Pi*(1+x[0]*x[1]/4)*v - (x[1]*g[0]+x[0]*g[1])/4 + v
		},
	}, u}
}

// L² error ~ h^{p+1}, H¹ ~ h^p with (p+1)^2 Gauss points per cell.
func TestConvergence(t *testing.T) {
	for _, m := range []mms{periodicMMS(), neumannMMS()} {
		for _, p := range []int{1, 2} {
			var l2s, h1s []float64
			for level := 2; level <= 5; level++ {
				sys, _, err := Build(Config{Dim: 2, Level: level, Degree: p, Periodic: m.periodic, Coeffs: m.co})
				if err != nil {
					t.Fatal(err)
				}
				u, res, err := Solve(sys.A, sys.F, 1e-12, 10000)
				if err != nil {
					t.Fatalf("%s p=%d level %d: %v", m.name, p, level, err)
				}
				l2, h1, err := sys.Errors(u, m.u, p+4)
				if err != nil {
					t.Fatal(err)
				}
				l2s, h1s = append(l2s, l2), append(h1s, h1)
				t.Logf("%s p=%d level %d: %d DOF, CG %d its, L² %.3e, H¹ %.3e", m.name, p, level, sys.Space.NumDOF(), res.Iterations, l2, h1)
			}
			for k := 1; k < len(l2s); k++ {
				r0, r1 := math.Log2(l2s[k-1]/l2s[k]), math.Log2(h1s[k-1]/h1s[k])
				t.Logf("%s p=%d levels %d→%d: rates L² %.2f, H¹ %.2f", m.name, p, k+1, k+2, r0, r1)
				if k == len(l2s)-1 && (r0 < float64(p+1)-0.2 || r1 < float64(p)-0.2) {
					t.Errorf("%s p=%d: final rates L² %.2f (want ≈ %d), H¹ %.2f (want ≈ %d)", m.name, p, r0, p+1, r1, p)
				}
			}
		}
	}
}

func TestSolveResidual(t *testing.T) {
	m := neumannMMS()
	sys, _, err := Build(Config{Dim: 2, Level: 3, Degree: 3, Coeffs: m.co})
	if err != nil {
		t.Fatal(err)
	}
	u, res, err := Solve(sys.A, sys.F, 1e-11, 5000)
	if err != nil {
		t.Fatal(err)
	}
	r := make([]float64, len(u))
	sys.A.MulVec(r, u)
	num, den := 0.0, 0.0
	for i := range r {
		num += (r[i] - sys.F[i]) * (r[i] - sys.F[i])
		den += sys.F[i] * sys.F[i]
	}
	if e := math.Sqrt(num / den); e > 1e-11 {
		t.Errorf("‖Au − f‖/‖f‖ = %.3g after %d iterations (reported %.3g)", e, res.Iterations, res.RelRes)
	}
	if _, _, err := Solve(sys.A, sys.F, 1e-30, 3); err == nil || !strings.Contains(err.Error(), "did not reach") {
		t.Errorf("unreachable tolerance: err = %v", err)
	}
}

func TestCSRAndMatrixMarket(t *testing.T) {
	sys := build(t, systemCase{"", covers[4], 1}, Coefficients{Kappa: kappaVar, R: func([]float64) float64 { return 1 }}, 0)
	a := sys.A
	csr := a.CSR()
	for r := range csr.Rows {
		for k := csr.RowPtr[r]; k < csr.RowPtr[r+1]; k++ {
			if csr.Val[k] != a.At(r, int(csr.Col[k])) {
				t.Fatalf("CSR (%d,%d) = %v, BSR %v", r, csr.Col[k], csr.Val[k], a.At(r, int(csr.Col[k])))
			}
		}
	}
	var buf bytes.Buffer
	if err := WriteMatrixMarket(&buf, a, "pum test"); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(&buf)
	sc.Scan()
	if sc.Text() != "%%MatrixMarket matrix coordinate real general" {
		t.Fatalf("banner %q", sc.Text())
	}
	sc.Scan() // comment
	sc.Scan()
	var rows, cols, nnz int
	hdr := strings.Fields(sc.Text())
	rows, _ = strconv.Atoi(hdr[0])
	cols, _ = strconv.Atoi(hdr[1])
	nnz, _ = strconv.Atoi(hdr[2])
	if rows != a.N*a.B || cols != rows || nnz != len(a.Val) {
		t.Fatalf("header %q", sc.Text())
	}
	got := 0
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		i, _ := strconv.Atoi(f[0])
		j, _ := strconv.Atoi(f[1])
		v, _ := strconv.ParseFloat(f[2], 64)
		if v != a.At(i-1, j-1) {
			t.Fatalf("entry (%d,%d) = %v, want %v", i, j, v, a.At(i-1, j-1))
		}
		got++
	}
	if got != nnz {
		t.Errorf("%d entries read, header says %d", got, nnz)
	}
	buf.Reset()
	if err := WriteMatrixMarketVector(&buf, sys.F); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if lines[1] != strconv.Itoa(len(sys.F))+" 1" || len(lines) != len(sys.F)+2 {
		t.Fatalf("vector header %q, %d lines", lines[1], len(lines))
	}
	for i, l := range lines[2:] {
		if v, _ := strconv.ParseFloat(l, 64); v != sys.F[i] {
			t.Fatalf("vector entry %d = %v, want %v", i, v, sys.F[i])
		}
	}
}

func TestTimings(t *testing.T) {
	sys, tm, err := Build(Config{Dim: 2, Level: 6, Degree: 1, Coeffs: benchCoeffs})
	if err != nil {
		t.Fatal(err)
	}
	parts := tm.Setup + tm.Decompose + tm.Integrate + tm.Assemble
	if tm.Integrate <= 0 || tm.Decompose <= 0 || parts > tm.Total {
		t.Errorf("inconsistent split: %v", tm)
	}
	t.Logf("2-D level 6 p=1: %d DOF, %d cells: %v", sys.Space.NumDOF(), sys.Dec.NCells, tm)
}

func TestBadInputs(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  func() error
		want string
	}{
		{"dim 1", func() error { _, err := UniformCover(1, 2, 1.25, false); return err }, "dimension 1"},
		{"dim 4", func() error { _, err := UniformCover(4, 2, 1.25, false); return err }, "dimension 4"},
		{"2-D level", func() error { _, err := UniformCover(2, 11, 1.25, false); return err }, "MaxLevel2D = 10"},
		{"3-D level", func() error { _, err := UniformCover(3, 7, 1.25, false); return err }, "MaxLevel3D = 6"},
		{"negative level", func() error { _, err := UniformCover(2, -1, 1.25, false); return err }, "level -1"},
		{"α = 1", func() error { _, err := UniformCover(2, 2, 1, false); return err }, "(1,2)"},
		{"α = 2", func() error { _, err := UniformCover(2, 2, 2, false); return err }, "(1,2)"},
		{"α NaN", func() error { _, err := UniformCover(2, 2, math.NaN(), false); return err }, "(1,2)"},
		{"periodic level 1", func() error { _, err := UniformCover(2, 1, 1.25, true); return err }, "level ≥ 2"},
		{"adaptive base 0", func() error { _, err := AdaptiveCover(2, 0, 3, 1.25); return err }, "base level 0"},
		{"adaptive base > max", func() error { _, err := AdaptiveCover(2, 4, 3, 1.25); return err }, "base level 4"},
		{"adaptive level", func() error { _, err := AdaptiveCover(3, 1, 7, 1.25); return err }, "MaxLevel3D"},
		{"2-D degree", func() error {
			c, _ := UniformCover(2, 2, 1.25, false)
			_, err := NewSpace(c, 6)
			return err
		}, "MaxDegree2D = 5"},
		{"3-D degree", func() error {
			c, _ := UniformCover(3, 2, 1.25, false)
			_, err := NewSpace(c, 4)
			return err
		}, "MaxDegree3D = 3"},
		{"negative degree", func() error {
			c, _ := UniformCover(2, 2, 1.25, false)
			_, err := NewSpace(c, -1)
			return err
		}, "degree -1"},
		{"quadrature", func() error { _, err := NewRule(2, 13); return err }, "MaxQuadPoints = 12"},
		{"quadrature 0", func() error { _, err := NewRule(2, 0); return err }, "MaxQuadPoints"},
		{"matrix size", func() error {
			_, _, err := Build(Config{Dim: 2, Level: 10, Degree: 5})
			return err
		}, "MaxMatrixEntries"},
		{"adaptive periodic", func() error {
			_, _, err := Build(Config{Dim: 2, Level: 3, BaseLevel: 1, Adaptive: true, Periodic: true})
			return err
		}, "not periodic"},
		{"rhs length", func() error {
			sys, _, _ := Build(Config{Dim: 2, Level: 2, Degree: 1, Coeffs: Coefficients{R: func([]float64) float64 { return 1 }}})
			_, _, err := Solve(sys.A, sys.F[1:], 1e-10, 10)
			return err
		}, "right-hand side"},
		{"singular blocks", func() error {
			c, _ := UniformCover(2, 2, 1.25, false)
			a, _ := NewBSR(c, 3)
			_, _, err := Solve(a, make([]float64, 48), 1e-10, 10)
			return err
		}, "not positive definite"},
		{"cell range", func() error {
			sys, _, _ := Build(Config{Dim: 2, Level: 2, Degree: 1})
			_, err := Integrate(sys.Space, sys.Dec, sys.Rule, Coefficients{}, 0, sys.Dec.NCells+1, 1, nil)
			return err
		}, "cell range"},
	} {
		err := tc.err()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one naming %q", tc.name, err, tc.want)
		} else if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error spans lines: %q", tc.name, err)
		}
	}
}

// A random symmetric check of MulVec against At.
func TestMulVec(t *testing.T) {
	sys := build(t, systemCase{"", covers[3], 2}, Coefficients{Kappa: kappaVar}, 0)
	n := sys.Space.NumDOF()
	rng := rand.New(rand.NewPCG(1, 2))
	x := make([]float64, n)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	y := make([]float64, n)
	sys.A.MulVec(y, x)
	for i := range n {
		s, sa := 0.0, 0.0
		for j := range n {
			s += sys.A.At(i, j) * x[j]
			sa += math.Abs(sys.A.At(i, j) * x[j])
		}
		if math.Abs(s-y[i]) > 1e-14*sa {
			t.Fatalf("row %d: %v vs %v", i, y[i], s)
		}
	}
}

// The periodic cover's model work matches the digest's closed form
// F(p,d) = 2(d+1)(p+1)^d B² 10^d per patch (Σ_cells n_active² = 10^d).
func TestModelFlops(t *testing.T) {
	for _, tc := range []struct{ dim, level, p int }{{2, 3, 1}, {2, 2, 5}, {3, 2, 2}} {
		sys, _, err := Build(Config{Dim: tc.dim, Level: tc.level, Degree: tc.p, Periodic: true})
		if err != nil {
			t.Fatal(err)
		}
		B := float64(sys.Space.B)
		want := 2 * float64(tc.dim+1) * math.Pow(float64(tc.p+1), float64(tc.dim)) * B * B * math.Pow(10, float64(tc.dim)) * float64(sys.Cover.N)
		if got := sys.ModelFlops(); got != want {
			t.Errorf("%d-D level %d p=%d: %v model flops, want %v", tc.dim, tc.level, tc.p, got, want)
		}
		dof, cells, pts := sys.Stats()
		if dof != sys.Cover.N*sys.Space.B || pts != cells*int(math.Pow(float64(tc.p+1), float64(tc.dim))) {
			t.Errorf("stats %d %d %d", dof, cells, pts)
		}
	}
}

// Cell counts of the centre-refined cover, for comparison with the
// thesis's Table 2.2 (which counts inner patches only, on its own cover).
func TestAdaptiveCounts(t *testing.T) {
	for _, level := range []int{4, 6, 8} {
		c, err := AdaptiveCover(2, 1, level, 1.25)
		if err != nil {
			t.Fatal(err)
		}
		dec, err := Decompose(c, 0)
		if err != nil {
			t.Fatal(err)
		}
		if want := 4 + 12*(level-1); c.N != want {
			t.Errorf("level %d: %d patches, want %d", level, c.N, want)
		}
		t.Logf("2-D centre-refined 1…%d: %d patches, %d cells (%.1f per patch), at most %d active", level, c.N, dec.NCells, float64(dec.NCells)/float64(c.N), dec.MaxActive)
	}
}

// The uniform split tables give the general decomposition bit for bit.
func TestUniformDecomposition(t *testing.T) {
	for _, c := range []struct {
		dim, level int
		periodic   bool
	}{{2, 0, false}, {2, 1, false}, {2, 3, false}, {2, 2, true}, {2, 3, true}, {3, 1, false}, {3, 2, false}, {3, 2, true}, {3, 3, true}} {
		cv, err := UniformCover(c.dim, c.level, DefaultAlpha, c.periodic)
		if err != nil {
			t.Fatal(err)
		}
		fast, err := Decompose(cv, 0)
		if err != nil {
			t.Fatal(err)
		}
		generalOnly = true
		slow, err := Decompose(cv, 0)
		generalOnly = false
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Errorf("%+v: uniform and general decompositions differ", c)
		}
	}
}

// UniformSplitTables, built without the cover, are the tables Decompose
// builds from it, bit for bit; bad inputs are refused.
func TestUniformSplitTables(t *testing.T) {
	for _, c := range []struct {
		dim, level int
		alpha      float64
		periodic   bool
	}{{2, 0, DefaultAlpha, false}, {2, 1, DefaultAlpha, false}, {2, 3, DefaultAlpha, false}, {2, 2, DefaultAlpha, true}, {2, 3, 1.9, true},
		{2, 4, 1.05, false}, {3, 1, DefaultAlpha, false}, {3, 2, 1.5, true}, {3, 3, DefaultAlpha, false}} {
		cv, err := UniformCover(c.dim, c.level, c.alpha, c.periodic)
		if err != nil {
			t.Fatal(err)
		}
		u, err := newUniformSplits(cv)
		if err != nil {
			t.Fatal(err)
		}
		st, err := UniformSplitTables(c.dim, c.level, c.alpha, c.periodic)
		if err != nil {
			t.Fatal(err)
		}
		if st.Dim != c.dim || st.PerDir != cv.PerDir || st.Periodic != c.periodic || len(st.Ptr) != c.dim*cv.PerDir+1 {
			t.Fatalf("%+v: tables %d-D, %d per direction, %d entries", c, st.Dim, st.PerDir, len(st.Ptr))
		}
		for k := range c.dim {
			for ix := range cv.PerDir {
				first, np := st.Entry(k, ix)
				e := k*cv.PerDir + ix
				iv := first - e
				if np != u.n[k][ix] || !reflect.DeepEqual(st.Pt[first:first+np], u.pt[k][ix]) || !reflect.DeepEqual(st.Off[iv:iv+np-1], u.off[k][ix]) {
					t.Fatalf("%+v: direction %d index %d: points %v offsets %v, want %v %v", c, k, ix,
						st.Pt[first:first+np], st.Off[iv:iv+np-1], u.pt[k][ix], u.off[k][ix])
				}
			}
		}
	}
	for _, bad := range []struct {
		dim, level int
		alpha      float64
		periodic   bool
	}{{4, 1, DefaultAlpha, false}, {2, 11, DefaultAlpha, false}, {3, 7, DefaultAlpha, false}, {2, 3, 2, false}, {2, 1, DefaultAlpha, true}} {
		if _, err := UniformSplitTables(bad.dim, bad.level, bad.alpha, bad.periodic); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: error %v, want one line", bad, err)
		}
	}
}
