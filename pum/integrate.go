package pum

import (
	"fmt"

	"github.com/bespoke-hpc/bespoke/poly"
)

// Coefficients of −∇·(κ∇u) + r u = f, evaluated per quadrature point.
// A nil Kappa means κ ≡ 1, a nil R means r ≡ 0 (the mass rows are then left
// out of the Gram products), a nil F means f ≡ 0.
type Coefficients struct {
	Kappa, R, F func(x []float64) float64
}

// Rule is a tensor Gauss–Legendre rule on [-1,1]^d: Points per direction.
type Rule struct {
	Dim, Points int
	X, W        []float64 // the 1-D nodes and weights
}

// NewRule returns the rule with n points per direction (1…MaxQuadPoints).
//
// The integrator uses n = p+1 by default, as the thesis did. On a cell with
// one active patch φ ≡ 1 and the integrands are polynomials of degree ≤ 2p
// per direction, integrated exactly by p+1 points. On cells with several
// patches φ is rational, so no rule is exact; the checks that must hold
// exactly (Σφ = 1, A·e₀ = 0 for r = 0, Σ F_{(i,0)} = ∫f) hold pointwise, for
// every rule, and the convergence tests show p+1 points do not spoil the
// rates.
func NewRule(dim, n int) (*Rule, error) {
	if n < 1 || n > MaxQuadPoints {
		return nil, fmt.Errorf("pum: %d quadrature points per direction outside 1…MaxQuadPoints = %d", n, MaxQuadPoints)
	}
	x, w, err := poly.GaussLegendre(n)
	if err != nil {
		return nil, err
	}
	return &Rule{Dim: dim, Points: n, X: x, W: w}, nil
}

// NumPoints returns Points^Dim.
func (r *Rule) NumPoints() int {
	n := 1
	for range r.Dim {
		n *= r.Points
	}
	return n
}

// point maps point q (x fastest) of the rule to the cell [lo,hi] and
// returns its weight times the cell's Jacobian.
func (r *Rule) point(q int, lo, hi, x []float64) float64 {
	w := 1.0
	for k := range r.Dim {
		t := q % r.Points
		q /= r.Points
		half := (hi[k] - lo[k]) / 2
		x[k] = lo[k] + half*(r.X[t]+1)
		w *= r.W[t] * half
	}
	return w
}

// Elements holds the element blocks and loads of the cells Cell0…Cell1−1:
// cell Cell0+t has its n_f × n_f block (row-major) at E[EPtr[t]:EPtr[t+1]]
// and its load at F[FPtr[t]:FPtr[t+1]], n_f = (active patches)·B, local
// function (slot a, n) at a·B+n.
type Elements struct {
	Cell0, Cell1 int
	EPtr, FPtr   []int64
	E, F         []float64
}

// cellIntegrator holds one goroutine's scratch.
type cellIntegrator struct {
	s    *Space
	dec  *Decomposition
	rule *Rule
	co   Coefficients
	ev   *evaluator
	g, h []float64
}

func newCellIntegrator(s *Space, dec *Decomposition, rule *Rule, co Coefficients) *cellIntegrator {
	return &cellIntegrator{s: s, dec: dec, rule: rule, co: co, ev: newEvaluator(s)}
}

// cell integrates one cell: with G the matrix whose rows are, per
// quadrature point, the values (if r is given) and the d derivatives of the
// n_f functions, and W the diagonal of w·r and w·κ, E = Gᵀ W G, computed
// as the upper triangle of dot products of G's columns with WG's columns
// and mirrored; F = Σ_q w f u.
func (ci *cellIntegrator) cell(c int, E, F []float64) {
	dec, s := ci.dec, ci.s
	d, B := s.Cover.Dim, s.B
	act := dec.Active(c)
	nf := len(act) * B
	lo, hi := dec.Lo[c*d:c*d+d], dec.Hi[c*d:c*d+d]
	np := ci.rule.NumPoints()
	mass := ci.co.R != nil
	rpp := d // rows per point
	if mass {
		rpp++
	}
	nr := rpp * np
	ci.g = grow(ci.g, nr*nf)
	ci.h = grow(ci.h, nr*nf)
	G, H := ci.g, ci.h
	for i := range F[:nf] {
		F[i] = 0
	}
	var x [3]float64
	for q := range np {
		w := ci.rule.point(q, lo, hi, x[:d])
		ci.ev.at(x[:d], act)
		U, DU := ci.ev.U, ci.ev.DU
		wk := w
		if ci.co.Kappa != nil {
			wk *= ci.co.Kappa(x[:d])
		}
		row := q * rpp
		if mass {
			wr := w * ci.co.R(x[:d])
			for col := range nf {
				G[col*nr+row] = U[col]
				H[col*nr+row] = wr * U[col]
			}
			row++
		}
		for col := range nf {
			o := col*nr + row
			for k := range d {
				v := DU[col*d+k]
				G[o+k] = v
				H[o+k] = wk * v
			}
		}
		if ci.co.F != nil {
			wf := w * ci.co.F(x[:d])
			for col := range nf {
				F[col] += wf * U[col]
			}
		}
	}
	gram(E, G, H, nf, nr)
}

// gram sets E = Gᵀ H for the column-major n_r × n_f matrices G and H = WG,
// computing each upper-triangle entry once and mirroring it (so E is
// exactly symmetric). Columns are taken in pairs (2×2 register tiles), which
// halves the loads per multiply-add against plain dot products.
func gram(E, G, H []float64, nf, nr int) {
	col := func(M []float64, j int) []float64 { return M[j*nr : j*nr+nr : j*nr+nr] }
	set := func(i, j int, v float64) { E[i*nf+j], E[j*nf+i] = v, v }
	I := 0
	for ; I+1 < nf; I += 2 {
		g0, g1 := col(G, I), col(G, I+1)
		J := I
		for ; J+1 < nf; J += 2 {
			h0, h1 := col(H, J), col(H, J+1)
			g1, h0, h1 := g1[:len(g0)], h0[:len(g0)], h1[:len(g0)]
			var s00, s01, s10, s11 float64
			for r, a0 := range g0 {
				a1, b0, b1 := g1[r], h0[r], h1[r]
				s00 += a0 * b0
				s01 += a0 * b1
				s10 += a1 * b0
				s11 += a1 * b1
			}
			set(I, J, s00)
			set(I, J+1, s01)
			if J != I { // on the diagonal tile s10 duplicates s01
				set(I+1, J, s10)
			}
			set(I+1, J+1, s11)
		}
		if J < nf {
			h0 := col(H, J)
			set(I, J, dot(g0, h0))
			set(I+1, J, dot(g1, h0))
		}
	}
	if I < nf {
		set(I, I, dot(col(G, I), col(H, I)))
	}
}

func dot(a, b []float64) float64 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// Integrate computes the element blocks and loads of cells c0…c1−1
// (count: n_f per cell; prefix sums; fill in parallel). el is reused when
// its buffers are large enough.
func Integrate(s *Space, dec *Decomposition, rule *Rule, co Coefficients, c0, c1, workers int, el *Elements) (*Elements, error) {
	if s.Cover != dec.Cover {
		return nil, fmt.Errorf("pum: space and decomposition are on different covers")
	}
	if rule.Dim != s.Cover.Dim {
		return nil, fmt.Errorf("pum: %d-D rule on a %d-D cover", rule.Dim, s.Cover.Dim)
	}
	if c0 < 0 || c1 > dec.NCells || c0 > c1 {
		return nil, fmt.Errorf("pum: cell range %d…%d outside 0…%d", c0, c1, dec.NCells)
	}
	if el == nil {
		el = &Elements{}
	}
	n := c1 - c0
	el.Cell0, el.Cell1 = c0, c1
	if cap(el.EPtr) < n+1 {
		el.EPtr = make([]int64, n+1)
		el.FPtr = make([]int64, n+1)
	}
	el.EPtr, el.FPtr = el.EPtr[:n+1], el.FPtr[:n+1]
	el.EPtr[0], el.FPtr[0] = 0, 0
	for t := range n {
		nf := int64(dec.ActPtr[c0+t+1]-dec.ActPtr[c0+t]) * int64(s.B)
		el.EPtr[t+1] = el.EPtr[t] + nf*nf
		el.FPtr[t+1] = el.FPtr[t] + nf
	}
	if cap(el.E) < int(el.EPtr[n]) {
		el.E = make([]float64, el.EPtr[n])
	}
	if cap(el.F) < int(el.FPtr[n]) {
		el.F = make([]float64, el.FPtr[n])
	}
	el.E, el.F = el.E[:el.EPtr[n]], el.F[:el.FPtr[n]]
	err := parallel(n, workers, func(lo, hi int) error {
		ci := newCellIntegrator(s, dec, rule, co)
		for t := lo; t < hi; t++ {
			ci.cell(c0+t, el.E[el.EPtr[t]:el.EPtr[t+1]], el.F[el.FPtr[t]:el.FPtr[t+1]])
		}
		return nil
	})
	return el, err
}
