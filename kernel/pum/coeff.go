package pum

import (
	"fmt"

	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/pum"
)

// Coefficient sets, compiled into the integration kernel as expressions of
// the quadrature point x (the IR has no transcendental intrinsics, so the
// variable set is polynomial). K and R scale κ and r; R = 0 means r ≡ 0
// and the mass rows are left out.
const (
	// CoeffConst is κ = K, r = R, f = 1.
	CoeffConst = "const"
	// CoeffSmooth is κ = K·(1 + 0.3|x|² + 0.2·x₀(1−x₀)), r = R·(1 + x₀x₁),
	// f = 1 + x₀²x₁ − x_{d−1}³: variable per point, so no reference table
	// can be reused across patches (the digest's fairness guard).
	CoeffSmooth = "smooth"
)

// CoeffNames lists the coefficient sets.
var CoeffNames = []string{CoeffConst, CoeffSmooth}

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
	case CoeffConst, CoeffSmooth:
	default:
		return fmt.Errorf("kernel/pum: unknown coefficient set %q (want const or smooth)", c.Name)
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

func lit(v float64) kernel.Expr { return kernel.Lit{V: v} }
func add(l, r kernel.Expr) kernel.Expr {
	return kernel.Op("+", l, r)
}
func sub(l, r kernel.Expr) kernel.Expr { return kernel.Op("-", l, r) }
func mul(l, r kernel.Expr) kernel.Expr { return kernel.Op("*", l, r) }
func div(l, r kernel.Expr) kernel.Expr { return kernel.Op("/", l, r) }

// exprs returns κ, r, f as kernel expressions of x (r nil when r ≡ 0).
func (c Coefficients) exprs(x []kernel.Expr) (kappa, r, f kernel.Expr) {
	K, R := lit(c.K), lit(c.R)
	switch c.Name {
	case CoeffConst:
		kappa, f = K, lit(1)
		if c.R != 0 {
			r = R
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
