package fr

import (
	"math"

	"github.com/bespoke-hpc/bespoke/poly"
)

// Orthonormal polynomial bases on PyFR's reference elements, from the
// collapsed-coordinate (Dubiner/Koornwinder, Sherwin–Karniadakis)
// construction: on each element a product of Jacobi polynomials in
// coordinates that map the element onto a cube, with factors (1−b)^i that
// keep the product a polynomial. The nodal basis, its gradient and the
// DG correction are invariant under an orthogonal change of basis, so only
// the spanned space and the orthonormality matter, not the order of the
// functions.
//
// Reference elements (as in PyFR):
//
//	tri  {x, y ≥ −1, x + y ≤ 0}
//	tet  {x, y, z ≥ −1, x + y + z ≤ −1}
//	pri  tri × [−1, 1]
//	pyr  {−(1−z)/2 ≤ x, y ≤ (1−z)/2, −1 ≤ z ≤ 1}
//
// Spaces, p the order: tri and tet all polynomials of total degree ≤ p;
// pri degree ≤ p in (x, y) times degree ≤ p in z; pyr the span of
// P_i(a)P_j(b)(1−z)^{i+j}P_k^{(2i+2j+2,0)}(z), i, j ≤ p, k ≤ p − max(i, j),
// with a = 2x/(1−z), b = 2y/(1−z).

// jacobiNorm2 is ∫_{−1}^{1} (1−x)^α P_n^{(α,0)}(x)² dx.
func jacobiNorm2(alpha float64, n int) float64 {
	return math.Pow(2, alpha+1) / (2*float64(n) + alpha + 1)
}

// jac returns P_0..P_n^{(α,0)}(x) and their derivatives.
func jac(n int, alpha, x float64) (v, d []float64) {
	v = make([]float64, n+1)
	d = make([]float64, n+1)
	for k := 0; k <= n; k++ {
		v[k] = poly.Jacobi(k, alpha, 0, x)
		d[k] = poly.JacobiDeriv(k, alpha, 0, x)
	}
	return v, d
}

// powz is x^e for e ≥ 1 and 1 for e ≤ 0: the factors (1−b)^{i−1} of the
// gradients multiply terms that vanish when i = 0.
func powz(x float64, e int) float64 {
	r := 1.0
	for range e {
		r *= x
	}
	return r
}

// basisSize is the dimension of the order-p space of an element kind.
func basisSize(kind string, p int) int {
	n := p + 1
	switch kind {
	case "line":
		return n
	case "quad":
		return n * n
	case "tri":
		return n * (n + 1) / 2
	case "tet":
		return n * (n + 1) * (n + 2) / 6
	case "pri":
		return n * n * (n + 1) / 2
	case "pyr":
		return n * (n + 1) * (2*n + 1) / 6
	}
	return 0
}

// orthoAt returns the orthonormal basis of order p of the element kind at
// the point x, and (when grad is set) its gradient, [function][dimension].
func orthoAt(kind string, p int, x []float64, grad bool) (vals []float64, grads [][]float64) {
	add := func(v float64, g ...float64) {
		vals = append(vals, v)
		if grad {
			grads = append(grads, g)
		}
	}
	switch kind {
	case "line":
		l, dl := jac(p, 0, x[0])
		for i := range p + 1 {
			c := 1 / math.Sqrt(jacobiNorm2(0, i))
			add(c*l[i], c*dl[i])
		}
	case "quad":
		l0, d0 := jac(p, 0, x[0])
		l1, d1 := jac(p, 0, x[1])
		for i := range p + 1 {
			for j := range p + 1 {
				c := 1 / math.Sqrt(jacobiNorm2(0, i)*jacobiNorm2(0, j))
				add(c*l0[i]*l1[j], c*d0[i]*l1[j], c*l0[i]*d1[j])
			}
		}
	case "tri":
		triBasis(p, x[0], x[1], func(v, gx, gy float64) { add(v, gx, gy) })
	case "pri":
		l, dl := jac(p, 0, x[2])
		triBasis(p, x[0], x[1], func(v, gx, gy float64) {
			for k := range p + 1 {
				c := 1 / math.Sqrt(jacobiNorm2(0, k))
				add(c*v*l[k], c*gx*l[k], c*gy*l[k], c*v*dl[k])
			}
		})
	case "tet":
		tetBasis(p, x, add)
	case "pyr":
		pyrBasis(p, x, add)
	}
	return vals, grads
}

// triBasis calls f with each orthonormal function on the triangle and its
// gradient: ψ_ij = c·P_i(a)(1−b)^i P_j^{(2i+1,0)}(b), a = 2(1+x)/(1−y) − 1,
// b = y.
func triBasis(p int, x, y float64, f func(v, gx, gy float64)) {
	a, b := -1.0, y
	if y != 1 {
		a = 2*(1+x)/(1-y) - 1
	}
	fa, dfa := jac(p, 0, a)
	for i := 0; i <= p; i++ {
		g, dg := jac(p-i, float64(2*i+1), b)
		for j := 0; j <= p-i; j++ {
			c := 1 / math.Sqrt(jacobiNorm2(0, i)*jacobiNorm2(float64(2*i+1), j)/2)
			t := powz(1-b, i-1)
			bi := powz(1-b, i)
			v := fa[i] * bi * g[j]
			gx := 2 * t * dfa[i] * g[j]
			gy := t*((1+a)*dfa[i]-float64(i)*fa[i])*g[j] + bi*fa[i]*dg[j]
			f(c*v, c*gx, c*gy)
		}
	}
}

// tetBasis: ψ_ijk = c·P_i(a)(1−b)^i P_j^{(2i+1,0)}(b)(1−c)^{i+j}
// P_k^{(2i+2j+2,0)}(c), a = −2(1+x)/(y+z) − 1, b = 2(1+y)/(1−z) − 1, c = z.
func tetBasis(p int, x []float64, add func(v float64, g ...float64)) {
	a, b, c := -1.0, -1.0, x[2]
	if x[1]+x[2] != 0 {
		a = -2*(1+x[0])/(x[1]+x[2]) - 1
	}
	if x[2] != 1 {
		b = 2*(1+x[1])/(1-x[2]) - 1
	}
	fa, dfa := jac(p, 0, a)
	for i := 0; i <= p; i++ {
		g, dg := jac(p-i, float64(2*i+1), b)
		for j := 0; j <= p-i; j++ {
			h, dh := jac(p-i-j, float64(2*(i+j+1)), c)
			for k := 0; k <= p-i-j; k++ {
				cn := 1 / math.Sqrt(jacobiNorm2(0, i)*jacobiNorm2(float64(2*i+1), j)*jacobiNorm2(float64(2*(i+j+1)), k)/8)
				bi := powz(1-b, i)
				cij := powz(1-c, i+j)
				t1 := powz(1-c, i+j-1)
				t2 := t1 * powz(1-b, i-1)
				F, dF, G, dG, H, dH := fa[i], dfa[i], g[j], dg[j], h[k], dh[k]
				fi, fij := float64(i), float64(i+j)
				v := F * bi * G * cij * H
				gx := 4 * t2 * dF * G * H
				gy := 2 * (t2*((1+a)*dF-fi*F)*G + t1*bi*F*dG) * H
				gz := 2*(1+a)*t2*dF*G*H + (1+b)*t1*bi*F*dG*H + cij*bi*F*G*dH -
					(fi*(1+b)*t2+fij*t1*bi)*F*G*H
				add(cn*v, cn*gx, cn*gy, cn*gz)
			}
		}
	}
}

// pyrBasis: ψ_ijk = c·P_i(a)P_j(b)(1−z)^{i+j}P_k^{(2i+2j+2,0)}(z),
// a = 2x/(1−z), b = 2y/(1−z).
func pyrBasis(p int, x []float64, add func(v float64, g ...float64)) {
	a, b, c := 0.0, 0.0, x[2]
	if c != 1 {
		a, b = 2*x[0]/(1-c), 2*x[1]/(1-c)
	}
	fa, dfa := jac(p, 0, a)
	fb, dfb := jac(p, 0, b)
	for i := 0; i <= p; i++ {
		for j := 0; j <= p; j++ {
			m := p - max(i, j)
			h, dh := jac(m, float64(2*(i+j+1)), c)
			for k := 0; k <= m; k++ {
				cn := 1 / math.Sqrt(jacobiNorm2(0, i)*jacobiNorm2(0, j)*jacobiNorm2(float64(2*(i+j+1)), k)/4)
				t := powz(1-c, i+j-1)
				cij := powz(1-c, i+j)
				F, dF, G, dG, H, dH := fa[i], dfa[i], fb[j], dfb[j], h[k], dh[k]
				v := F * G * cij * H
				gx := 2 * t * dF * G * H
				gy := 2 * t * F * dG * H
				gz := t*(a*dF*G+b*F*dG-float64(i+j)*F*G)*H + cij*F*G*dH
				add(cn*v, cn*gx, cn*gy, cn*gz)
			}
		}
	}
}
