package poly

import "math"

// Jacobi returns the Jacobi polynomial P_n^{(a,b)}(x) for n ≥ 0 and
// a, b > -1, evaluated with the standard three-term recurrence. It uses the
// usual normalisation P_n^{(a,b)}(1) = binom(n+a, n); for a = b = 0 it is the
// Legendre polynomial P_n.
func Jacobi(n int, a, b, x float64) float64 {
	if n < 0 {
		return 0
	}
	p0 := 1.0
	if n == 0 {
		return p0
	}
	p1 := ((a+b+2)*x + a - b) / 2
	for k := 2; k <= n; k++ {
		q := float64(k)
		s := a + b + 2*q // a+b+2k
		c1 := 2 * q * (q + a + b) * (s - 2)
		c2 := (s - 1) * (a*a - b*b)
		c3 := (s - 2) * (s - 1) * s
		c4 := 2 * (q + a - 1) * (q + b - 1) * s
		p0, p1 = p1, ((c2+c3*x)*p1-c4*p0)/c1
	}
	return p1
}

// JacobiDeriv returns d/dx P_n^{(a,b)}(x), using
// d/dx P_n^{(a,b)} = (n+a+b+1)/2 · P_{n-1}^{(a+1,b+1)}.
func JacobiDeriv(n int, a, b, x float64) float64 {
	if n <= 0 {
		return 0
	}
	return (float64(n) + a + b + 1) / 2 * Jacobi(n-1, a+1, b+1, x)
}

// Legendre returns the Legendre polynomial P_n(x) (P_n(1) = 1).
func Legendre(n int, x float64) float64 {
	p, _, _ := legendre3(n, x)
	return p
}

// LegendreDeriv returns P_n'(x).
func LegendreDeriv(n int, x float64) float64 {
	return JacobiDeriv(n, 0, 0, x)
}

// legendre3 returns P_n(x), P_{n-1}(x) and P_n'(x) (the derivative from the
// Jacobi identity, valid also at x = ±1).
func legendre3(n int, x float64) (pn, pnm1, dpn float64) {
	if n == 0 {
		return 1, 0, 0
	}
	p0, p1 := 1.0, x
	for k := 2; k <= n; k++ {
		q := float64(k)
		p0, p1 = p1, ((2*q-1)*x*p1-(q-1)*p0)/q
	}
	return p1, p0, JacobiDeriv(n, 0, 0, x)
}

// OrthoLegendre returns φ_n(x) = sqrt(n + 1/2) · P_n(x), the n-th member of
// the orthonormal Legendre basis on [-1, 1]: ∫ φ_i φ_j dx = δ_ij.
func OrthoLegendre(n int, x float64) float64 {
	return math.Sqrt(float64(n)+0.5) * Legendre(n, x)
}

// OrthoLegendreDeriv returns φ_n'(x).
func OrthoLegendreDeriv(n int, x float64) float64 {
	return math.Sqrt(float64(n)+0.5) * LegendreDeriv(n, x)
}

// OrthoBasis returns φ_0(x) … φ_{n-1}(x), the first n orthonormal Legendre
// functions (a basis of polynomials of degree < n), and their derivatives.
func OrthoBasis(n int, x float64) (vals, ders []float64) {
	vals = make([]float64, n)
	ders = make([]float64, n)
	for i := range n {
		vals[i] = OrthoLegendre(i, x)
		ders[i] = OrthoLegendreDeriv(i, x)
	}
	return vals, ders
}
