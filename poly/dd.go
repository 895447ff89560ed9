package poly

import "math"

// dd is an unevaluated sum hi + lo of two float64s ("double-double"),
// used to evaluate Legendre polynomials for the quadrature weights with
// about 106 bits, so that the weights come out correctly rounded to within
// a few ulps.
type dd struct{ hi, lo float64 }

func twoSum(a, b float64) dd {
	s := a + b
	bb := s - a
	return dd{s, (a - (s - bb)) + (b - bb)}
}

func quickTwoSum(a, b float64) dd {
	s := a + b
	return dd{s, b - (s - a)}
}

func twoProd(a, b float64) dd {
	p := a * b
	return dd{p, math.FMA(a, b, -p)}
}

func (a dd) add(b dd) dd {
	s := twoSum(a.hi, b.hi)
	t := twoSum(a.lo, b.lo)
	s.lo += t.hi
	s = quickTwoSum(s.hi, s.lo)
	s.lo += t.lo
	return quickTwoSum(s.hi, s.lo)
}

func (a dd) neg() dd { return dd{-a.hi, -a.lo} }

func (a dd) mulF(b float64) dd {
	p := twoProd(a.hi, b)
	p.lo += a.lo * b
	return quickTwoSum(p.hi, p.lo)
}

func (a dd) mul(b dd) dd {
	p := twoProd(a.hi, b.hi)
	p.lo += a.hi*b.lo + a.lo*b.hi
	return quickTwoSum(p.hi, p.lo)
}

func (a dd) div(b dd) dd {
	q1 := a.hi / b.hi
	r := a.add(b.mulF(q1).neg())
	q2 := r.hi / b.hi
	r = r.add(b.mulF(q2).neg())
	q3 := r.hi / b.hi
	return quickTwoSum(q1, q2).add(dd{q3, 0})
}

func (a dd) float() float64 { return a.hi + a.lo }

// legendreDD returns P_n(x), P_{n−1}(x) in double-double (n ≥ 1).
func legendreDD(n int, x float64) (pn, pnm1 dd) {
	p0, p1 := dd{1, 0}, dd{x, 0}
	for k := 2; k <= n; k++ {
		q := float64(k)
		t := p1.mulF(x).mulF(2*q - 1).add(p0.mulF(q - 1).neg())
		p0, p1 = p1, t.div(dd{q, 0})
	}
	return p1, p0
}
