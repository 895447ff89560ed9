package pum

import (
	"fmt"
	"math"
)

// Space is the PUM space Σ_i φ_i span{ψ_i^n} on a cover: the same local
// polynomial space of total degree ≤ Degree on every patch.
type Space struct {
	Cover  *Cover
	Degree int
	B      int    // local functions per patch, C(p+d, d)
	Exp    []int8 // B·Dim exponents: ψ^n = Π_k P_{Exp[n·Dim+k]}(ξ_k)
}

// NewSpace returns the space of degree p on c.
func NewSpace(c *Cover, p int) (*Space, error) {
	maxp := MaxDegree2D
	if c.Dim == 3 {
		maxp = MaxDegree3D
	}
	if p < 0 || p > maxp {
		return nil, fmt.Errorf("pum: %d-D degree %d outside 0…MaxDegree%dD = %d", c.Dim, p, c.Dim, maxp)
	}
	s := &Space{Cover: c, Degree: p}
	d := c.Dim
	for t := 0; t <= p; t++ {
		// Total degree t, descending x exponent, then descending y.
		if d == 2 {
			for a := t; a >= 0; a-- {
				s.Exp = append(s.Exp, int8(a), int8(t-a))
			}
		} else {
			for a := t; a >= 0; a-- {
				for b := t - a; b >= 0; b-- {
					s.Exp = append(s.Exp, int8(a), int8(b), int8(t-a-b))
				}
			}
		}
	}
	s.B = len(s.Exp) / d
	return s, nil
}

// NumDOF returns N·B.
func (s *Space) NumDOF() int { return s.Cover.N * s.B }

// legendre fills P_n(x) and P_n'(x) for n = 0…p by the three-term
// recurrences P_{n+1} = ((2n+1)x P_n − n P_{n−1})/(n+1) and
// P'_{n+1} = P'_{n−1} + (2n+1) P_n.
func legendre(p int, x float64, v, dv []float64) {
	v[0], dv[0] = 1, 0
	if p == 0 {
		return
	}
	v[1], dv[1] = x, 1
	for n := 1; n < p; n++ {
		q := float64(n)
		v[n+1] = ((2*q+1)*x*v[n] - q*v[n-1]) / (q + 1)
		dv[n+1] = dv[n-1] + (2*q+1)*v[n]
	}
}

// evaluator computes, at one point, the PU functions of a set of active
// patches and the products u_{a,n} = φ_a ψ_a^n with their gradients.
// Its scratch is sized once; one per goroutine.
type evaluator struct {
	s        *Space
	w, dw    []float64 // per active slot: W_a and ∇W_a (slot·d + k)
	phi, dph []float64 // φ_a, ∇φ_a
	leg, dl  [3][MaxDegree2D + 1]float64
	U, DU    []float64 // u_{a,n} at slot·B+n, ∇u at (slot·B+n)·d + k
}

func newEvaluator(s *Space) *evaluator {
	return &evaluator{s: s}
}

func grow(v []float64, n int) []float64 {
	if cap(v) < n {
		return make([]float64, n)
	}
	return v[:n]
}

// dxOf returns x_k − c_jk, wrapped to the nearest periodic image.
func (c *Cover) dxOf(j, k int, x float64) float64 {
	dx := x - c.Centre[j*c.Dim+k]
	if c.Periodic {
		dx -= math.Round(dx)
	}
	return dx
}

// pu evaluates W, ∇W, φ, ∇φ of the active patches at x. It returns
// S = Σ W (the caller guarantees that act holds every patch whose support
// contains x, so S > 0).
func (e *evaluator) pu(x []float64, act []int32) float64 {
	c := e.s.Cover
	d := c.Dim
	na := len(act)
	e.w = grow(e.w, na)
	e.dw = grow(e.dw, na*d)
	e.phi = grow(e.phi, na)
	e.dph = grow(e.dph, na*d)
	var gs [3]float64
	S := 0.0
	for a, j := range act {
		var f, sg [3]float64
		for k := range d {
			s := c.Alpha * c.Half[int(j)*d+k]
			dx := c.dxOf(int(j), k, x[k])
			f[k] = math.Max(0, 1-math.Abs(dx)/s)
			if f[k] > 0 {
				sg[k] = -math.Copysign(1, dx) / s
			}
		}
		wa := 1.0
		for k := range d {
			wa *= f[k]
		}
		e.w[a] = wa
		S += wa
		for k := range d {
			g := sg[k]
			for m := range d {
				if m != k {
					g *= f[m]
				}
			}
			e.dw[a*d+k] = g
			gs[k] += g
		}
	}
	for a := range na {
		ph := e.w[a] / S
		e.phi[a] = ph
		for k := range d {
			e.dph[a*d+k] = (e.dw[a*d+k] - ph*gs[k]) / S
		}
	}
	return S
}

// at evaluates u = φψ and ∇u for every active patch and local function.
func (e *evaluator) at(x []float64, act []int32) {
	e.pu(x, act)
	s := e.s
	c := s.Cover
	d, B, p := c.Dim, s.B, s.Degree
	e.U = grow(e.U, len(act)*B)
	e.DU = grow(e.DU, len(act)*B*d)
	for a, j := range act {
		var inv [3]float64
		for k := range d {
			sk := c.Alpha * c.Half[int(j)*d+k]
			inv[k] = 1 / sk
			legendre(p, c.dxOf(int(j), k, x[k])*inv[k], e.leg[k][:], e.dl[k][:])
		}
		ph := e.phi[a]
		dph := e.dph[a*d : a*d+d]
		for n := range B {
			ex := s.Exp[n*d : n*d+d]
			psi := 1.0
			for k := range d {
				psi *= e.leg[k][ex[k]]
			}
			o := a*B + n
			e.U[o] = ph * psi
			for k := range d {
				g := e.dl[k][ex[k]] * inv[k]
				for m := range d {
					if m != k {
						g *= e.leg[m][ex[m]]
					}
				}
				e.DU[o*d+k] = psi*dph[k] + ph*g
			}
		}
	}
}
