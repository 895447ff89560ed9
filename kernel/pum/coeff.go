package pum

import (
	"fmt"
	"math"

	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/pum"
)

// Coefficient sets, compiled into the integration kernel as expressions of
// the quadrature point x (the IR has no transcendental intrinsics, so the
// variable set is polynomial). K and R scale κ and r; R = 0 means r ≡ 0
// and the mass rows are left out. Every set keeps κ > 0 and r ≥ 0 on [0,1]^d
// for K > 0 and R ≥ 0 (Check): the group kernel takes √(wκ) and √(wr).
const (
	// CoeffConst is κ = K, r = R, f = 1.
	CoeffConst = "const"
	// CoeffSmooth is κ = K·(1 + 0.3|x|² + 0.2·x₀(1−x₀)), r = R·(1 + x₀x₁),
	// f = 1 + x₀²x₁ − x_{d−1}³: variable per point, so no reference table
	// can be reused across patches (the digest's fairness guard).
	CoeffSmooth = "smooth"
	// CoeffWave is κ = K, r = R, f = (4π²dK + R)·Π_k sin 2πx_k, whose
	// solution on the periodic domain is u = Π_k sin 2πx_k (WaveExact): a
	// manufactured solution for convergence checks. The sines are a
	// polynomial (WaveSin), as the IR has no transcendental intrinsics.
	CoeffWave = "wave"
)

// CoeffNames lists the coefficient sets.
var CoeffNames = []string{CoeffConst, CoeffSmooth, CoeffWave}

// waveSin are the Taylor coefficients of sin y, y^{2k+1}/(2k+1)!
// (−1)^k, k = 0…13: on |y| ≤ π the remainder is below π^29/29! ≈ 3e-17.
var waveSin = func() []float64 {
	c := make([]float64, 14)
	f := 1.0
	for k := range c {
		c[k] = f
		f /= -float64((2*k + 2) * (2*k + 3))
	}
	return c
}()

// WaveSin is sin 2πx for x in [0, 1] as the wave set's kernels compute
// it: −sin y, y = 2π(x − ½) in [−π, π], by Horner in y² (the same
// operations in the same order as the kernel expression).
func WaveSin(x float64) float64 {
	y := 2 * math.Pi * (x - 0.5)
	y2 := y * y
	s := waveSin[len(waveSin)-1]
	for k := len(waveSin) - 2; k >= 0; k-- {
		s = waveSin[k] + y2*s
	}
	return -(y * s)
}

// waveSinExpr is WaveSin as a kernel expression.
func waveSinExpr(x kernel.Expr) kernel.Expr {
	y := mul(lit(2*math.Pi), sub(x, lit(0.5)))
	y2 := mul(y, y)
	var s kernel.Expr = lit(waveSin[len(waveSin)-1])
	for k := len(waveSin) - 2; k >= 0; k-- {
		s = add(lit(waveSin[k]), mul(y2, s))
	}
	return sub(lit(0), mul(y, s))
}

// WaveExact is the wave set's solution u = Π sin 2πx_k on the periodic
// domain and its gradient (into grad), with the math package's sines.
func WaveExact(x, grad []float64) float64 {
	u := 1.0
	for k := range x {
		u *= math.Sin(2 * math.Pi * x[k])
	}
	for k := range x {
		g := 2 * math.Pi * math.Cos(2*math.Pi*x[k])
		for m := range x {
			if m != k {
				g *= math.Sin(2 * math.Pi * x[m])
			}
		}
		grad[k] = g
	}
	return u
}

// waveScale is 4π²dK + R, the wave set's load factor.
func waveScale(d int, K, R float64) float64 { return 4*math.Pi*math.Pi*float64(d)*K + R }

// Coefficients names a coefficient set and its scales.
type Coefficients struct {
	Name string
	K, R float64
}

// MaxCoeff bounds |K| and |R| (values beyond it would overflow f32 sums).
const MaxCoeff = 1e6

// Check reports why the set cannot be used.
func (c Coefficients) Check() error {
	switch c.Name {
	case CoeffConst, CoeffSmooth, CoeffWave:
	default:
		return fmt.Errorf("kernel/pum: unknown coefficient set %q (want const, smooth or wave)", c.Name)
	}
	if !(c.K > 0 && c.K <= MaxCoeff) {
		return fmt.Errorf("kernel/pum: κ scale K = %v outside (0, MaxCoeff = %g]", c.K, MaxCoeff)
	}
	if !(c.R >= 0 && c.R <= MaxCoeff) {
		return fmt.Errorf("kernel/pum: r scale R = %v outside [0, MaxCoeff = %g]", c.R, MaxCoeff)
	}
	return nil
}

// Mass reports whether r ≢ 0.
func (c Coefficients) Mass() bool { return c.R != 0 }

// Reference returns the same functions in float64 Go, written with the
// same operations in the same order as the kernel's expressions.
func (c Coefficients) Reference() pum.Coefficients {
	K, R := c.K, c.R
	var co pum.Coefficients
	switch c.Name {
	case CoeffConst:
		co.Kappa = func([]float64) float64 { return K }
		if R != 0 {
			co.R = func([]float64) float64 { return R }
		}
		co.F = func([]float64) float64 { return 1 }
	case CoeffWave:
		co.Kappa = func([]float64) float64 { return K }
		if R != 0 {
			co.R = func([]float64) float64 { return R }
		}
		co.F = func(x []float64) float64 {
			f := waveScale(len(x), K, R)
			for _, v := range x {
				f *= WaveSin(v)
			}
			return f
		}
	case CoeffSmooth:
		co.Kappa = func(x []float64) float64 {
			s := 0.0
			for _, v := range x {
				s += v * v
			}
			return K * (1 + 0.3*s + 0.2*x[0]*(1-x[0]))
		}
		if R != 0 {
			co.R = func(x []float64) float64 { return R * (1 + x[0]*x[1]) }
		}
		co.F = func(x []float64) float64 {
			l := x[len(x)-1]
			return 1 + x[0]*x[0]*x[1] - l*l*l
		}
	}
	return co
}

// Shorthand for kernel's builder.
var (
	lit                = kernel.Float
	add, sub, mul, div = kernel.Add, kernel.Sub, kernel.Mul, kernel.Div
)

// exprs returns κ, r, f as kernel expressions of x (r nil when r ≡ 0).
func (c Coefficients) exprs(x []kernel.Expr) (kappa, r, f kernel.Expr) {
	K, R := lit(c.K), lit(c.R)
	switch c.Name {
	case CoeffConst:
		kappa, f = K, lit(1)
		if c.R != 0 {
			r = R
		}
	case CoeffWave:
		kappa = K
		if c.R != 0 {
			r = R
		}
		f = lit(waveScale(len(x), c.K, c.R))
		for _, v := range x {
			f = mul(f, waveSinExpr(v))
		}
	case CoeffSmooth:
		var s kernel.Expr = lit(0)
		for _, v := range x {
			s = add(s, mul(v, v))
		}
		kappa = mul(K, add(add(lit(1), mul(lit(0.3), s)), mul(mul(lit(0.2), x[0]), sub(lit(1), x[0]))))
		if c.R != 0 {
			r = mul(R, add(lit(1), mul(x[0], x[1])))
		}
		l := x[len(x)-1]
		f = sub(add(lit(1), mul(mul(x[0], x[0]), x[1])), mul(mul(l, l), l))
	}
	return kappa, r, f
}
