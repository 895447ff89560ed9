package cli

import (
	"strconv"

	"github.com/bespoke-hpc/bespoke/kernel/family/registry/families"
	"github.com/bespoke-hpc/bespoke/operator"
	"github.com/bespoke-hpc/bespoke/operator/load"
)

// DefaultSuite is what bench runs with no arguments: PyFR's hex p3
// operators with Gauss–Legendre points.
const DefaultSuite = families.DefaultSuite

// Suite builds operators from selectors like "hex:p1-6,quad:p3" (see
// families.Suite).
func Suite(spec string) ([]*operator.Operator, error) { return families.Suite(spec) }

// betaFlag is "pyfr" (β = 1 for m3 and m6, else 0) or a number.
func betaFunc(s string) (func(*operator.Operator) float64, error) {
	if s == "" || s == "pyfr" {
		return func(op *operator.Operator) float64 { return load.PyFRBeta(op.Name) }, nil
	}
	b, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, usagef("--beta %q: want a number or pyfr", s)
	}
	return func(*operator.Operator) float64 { return b }, nil
}
