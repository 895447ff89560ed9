package poly

import (
	"fmt"
	"math"
)

// MaxPoints is the largest number of points GaussLegendre and GaussLobatto
// accept. The Newton iterations and the accuracy tests are validated up to
// this size.
const MaxPoints = 40

// maxNewton bounds the Newton iterations per node; from the initial guesses
// used here convergence takes 3–6 steps.
const maxNewton = 100

// GaussLegendre returns the n-point Gauss–Legendre rule on [-1, 1]
// (1 ≤ n ≤ MaxPoints): nodes in ascending order and weights. It integrates
// polynomials of degree ≤ 2n−1 exactly.
//
// The nodes are the roots of P_n, found by Newton iteration from the
// Tricomi/Chebyshev-type guess cos(π(k−1/4)/(n+1/2)); the weights are
// 2/((1−x²)P_n'(x)²), corrected for the rounding of the node (glWeight).
func GaussLegendre(n int) (x, w []float64, err error) {
	if n < 1 || n > MaxPoints {
		return nil, nil, fmt.Errorf("poly: Gauss–Legendre needs 1 ≤ N ≤ %d points, got %d", MaxPoints, n)
	}
	x = make([]float64, n)
	w = make([]float64, n)
	// Roots in (0,1): k = 1..n/2 from the top; the guess for the k-th
	// largest root.
	for k := 1; k <= n/2; k++ {
		r := math.Cos(math.Pi * (float64(k) - 0.25) / (float64(n) + 0.5))
		r = newton(r, func(t float64) (float64, float64) {
			p, _, dp := legendre3(n, t)
			return p, dp
		})
		wt := glWeight(n, r)
		x[n-k], x[k-1] = r, -r
		w[n-k], w[k-1] = wt, wt
	}
	if n%2 == 1 {
		x[n/2] = 0
		w[n/2] = glWeight(n, 0)
	}
	return x, w, nil
}

// glWeight returns the Gauss–Legendre weight 2/((1−x²)P_n'(x)²) of the root
// x* nearest r, evaluated in double-double. The formula is sensitive to the
// rounding of the node (d ln w/dx = −2x/(1−x²) at a root, large near ±1),
// so it is evaluated at r and then carried to x* to first order with the
// sub-ulp Newton correction x* − r = −P_n(r)/P_n'(r).
func glWeight(n int, r float64) float64 {
	p, pm1 := legendreDD(n, r)
	// 1 − r², and P_n' = n(P_{n−1} − rP_n)/(1 − r²).
	omx2 := twoProd(r, r).neg().add(dd{1, 0})
	dp := pm1.add(p.mulF(r).neg()).mulF(float64(n)).div(omx2)
	w := dd{2, 0}.div(omx2.mul(dp).mul(dp))
	corr := 2 * r / omx2.float() * (p.float() / dp.float())
	return w.add(w.mulF(corr)).float()
}

// gllWeight returns the Gauss–Lobatto weight 2/(m(m+1)P_m(x)²) at an
// interior node, evaluated in double-double. It is insensitive to first
// order to the rounding of the node, where P_m' vanishes.
func gllWeight(m int, r float64) float64 {
	p, _ := legendreDD(m, r)
	return dd{2, 0}.div(p.mul(p).mulF(float64(m * (m + 1)))).float()
}

// GaussLobatto returns the n-point Gauss–Legendre–Lobatto rule on [-1, 1]
// (2 ≤ n ≤ MaxPoints): nodes in ascending order (x[0] = −1, x[n−1] = 1) and
// weights. It integrates polynomials of degree ≤ 2n−3 exactly.
//
// The interior nodes are the roots of P_{n−1}', found by Newton iteration
// from the Chebyshev–Gauss–Lobatto guess cos(πk/(n−1)) with
// second derivative (2xP′ − m(m+1)P)/(1−x²), m = n−1; the weights are
// 2/(m(m+1)P_m(x)²), evaluated in double-double (gllWeight).
func GaussLobatto(n int) (x, w []float64, err error) {
	if n < 2 || n > MaxPoints {
		return nil, nil, fmt.Errorf("poly: Gauss–Legendre–Lobatto needs 2 ≤ N ≤ %d points, got %d", MaxPoints, n)
	}
	m := n - 1
	fm := float64(m)
	x = make([]float64, n)
	w = make([]float64, n)
	we := 2 / (fm * (fm + 1))
	x[0], x[n-1] = -1, 1
	w[0], w[n-1] = we, we
	for k := 1; k <= (n-2)/2; k++ {
		r := math.Cos(math.Pi * float64(k) / fm)
		r = newton(r, func(t float64) (float64, float64) {
			p, _, dp := legendre3(m, t)
			return dp, (2*t*dp - fm*(fm+1)*p) / (1 - t*t)
		})
		wt := gllWeight(m, r)
		x[n-1-k], x[k] = r, -r
		w[n-1-k], w[k] = wt, wt
	}
	if n%2 == 1 {
		x[n/2] = 0
		w[n/2] = gllWeight(m, 0)
	}
	return x, w, nil
}

// newton refines a root of f from x0; f returns (f(x), f'(x)). It stops
// when the update no longer changes x or starts to oscillate at the level of
// rounding, then takes the better of the last two iterates.
func newton(x0 float64, f func(float64) (float64, float64)) float64 {
	x := x0
	for range maxNewton {
		v, d := f(x)
		if v == 0 {
			return x
		}
		dx := v / d
		xn := x - dx
		if math.Abs(dx) <= 4*eps*math.Abs(xn) {
			// One more step at rounding level; keep whichever residual
			// is smaller.
			vn, _ := f(xn)
			if math.Abs(vn) <= math.Abs(v) {
				return xn
			}
			return x
		}
		x = xn
	}
	return x
}

// eps is the float64 unit roundoff (2^-53 × 2, the spacing at 1).
const eps = 0x1p-52
