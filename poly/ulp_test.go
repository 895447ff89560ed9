package poly

import (
	"math"
	"math/big"
	"testing"
)

// Against a 256-bit reference (Newton polished with math/big from our own
// nodes), nodes and weights must be within these many units in the last
// place: Newton lands within one ulp of the root, and the weights are
// evaluated in double-double with a first-order correction for the node's
// rounding, so they are essentially correctly rounded.
const (
	nodeULPs   = 2
	weightULPs = 2
)

const refPrec = 256

func bf(v float64) *big.Float { return new(big.Float).SetPrec(refPrec).SetFloat64(v) }

// refLegendre returns P_n and its first and second derivatives at x, in
// refPrec bits (|x| < 1).
func refLegendre(n int, x *big.Float) (p, dp, d2p *big.Float) {
	p0, p1 := bf(1), new(big.Float).SetPrec(refPrec).Set(x)
	for k := 2; k <= n; k++ {
		q := float64(k)
		a := new(big.Float).SetPrec(refPrec).Mul(x, p1)
		a.Mul(a, bf(2*q-1))
		a.Sub(a, new(big.Float).SetPrec(refPrec).Mul(p0, bf(q-1)))
		p0, p1 = p1, a.Quo(a, bf(q))
	}
	omx2 := new(big.Float).SetPrec(refPrec).Mul(x, x)
	omx2.Sub(bf(1), omx2)
	// P' = n(P_{n-1} − xP_n)/(1−x²); P'' = (2xP' − n(n+1)P)/(1−x²).
	dp = new(big.Float).SetPrec(refPrec).Mul(x, p1)
	dp.Sub(p0, dp)
	dp.Mul(dp, bf(float64(n)))
	dp.Quo(dp, omx2)
	d2p = new(big.Float).SetPrec(refPrec).Mul(x, dp)
	d2p.Mul(d2p, bf(2))
	d2p.Sub(d2p, new(big.Float).SetPrec(refPrec).Mul(p1, bf(float64(n*(n+1)))))
	d2p.Quo(d2p, omx2)
	return p1, dp, d2p
}

func ulps(got, want float64) float64 {
	if got == want {
		return 0
	}
	return math.Abs(got-want) / (math.Nextafter(math.Abs(want), math.Inf(1)) - math.Abs(want))
}

func TestRulesAgainstHighPrecision(t *testing.T) {
	for _, r := range rules {
		lobatto := r.minN == 2
		for n := r.minN; n <= MaxPoints; n++ {
			x, w, _ := r.fn(n)
			for i := range x {
				if lobatto && (i == 0 || i == n-1) {
					if want := 2 / float64(n*(n-1)); ulps(w[i], want) > weightULPs {
						t.Errorf("%s N=%d: end weight %v, want %v", r.name, n, w[i], want)
					}
					continue
				}
				z := bf(x[i])
				var wref *big.Float
				if !lobatto { // root of P_n; w = 2/((1−x²)P_n'²)
					for range 6 {
						p, dp, _ := refLegendre(n, z)
						z.Sub(z, p.Quo(p, dp))
					}
					_, dp, _ := refLegendre(n, z)
					den := new(big.Float).SetPrec(refPrec).Mul(z, z)
					den.Sub(bf(1), den)
					den.Mul(den, dp)
					den.Mul(den, dp)
					wref = bf(2)
					wref.Quo(wref, den)
				} else { // root of P_m'; w = 2/(m(m+1)P_m²)
					m := n - 1
					for range 6 {
						_, dp, d2p := refLegendre(m, z)
						z.Sub(z, dp.Quo(dp, d2p))
					}
					p, _, _ := refLegendre(m, z)
					den := new(big.Float).SetPrec(refPrec).Mul(p, p)
					den.Mul(den, bf(float64(m*(m+1))))
					wref = bf(2)
					wref.Quo(wref, den)
				}
				xr, _ := z.Float64()
				wr, _ := wref.Float64()
				// At x = 0 count ulps of 1, not of the smallest subnormal.
				if u := ulps(x[i], xr); u > nodeULPs && math.Abs(x[i]-xr) > nodeULPs*eps {
					t.Errorf("%s N=%d: node %d = %.17g, reference %.17g (%.0f ulp)", r.name, n, i, x[i], xr, u)
				}
				if u := ulps(w[i], wr); u > weightULPs {
					t.Errorf("%s N=%d: weight %d = %.17g, reference %.17g (%.0f ulp)", r.name, n, i, w[i], wr, u)
				}
			}
		}
	}
}
