package cli

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/bespoke-hpc/bespoke/fr"
	"github.com/bespoke-hpc/bespoke/operator"
	"github.com/bespoke-hpc/bespoke/operator/load"
)

// DefaultSuite is what bench runs with no arguments: PyFR's hex p3
// operators with Gauss–Legendre points.
const DefaultSuite = "hex:p3"

// suiteOps are the operators PyFR applies through GiMMiK in a time step.
var suiteOps = []string{"m0", "m3", "m6", "m132", "m460"}

// loadOperators reads files and directories, or builds a suite when there
// are none.
func loadOperators(args []string, suite string) ([]*operator.Operator, error) {
	if len(args) > 0 && suite != "" {
		return nil, usagef("give operator files or --suite, not both")
	}
	if len(args) > 0 {
		return load.Paths(args)
	}
	if suite == "" {
		suite = DefaultSuite
	}
	return Suite(suite)
}

// Suite builds operators from selectors like "hex:p1-6,quad:p3": element
// kind, then orders as a list or range, Gauss–Legendre points, named
// "p3/hex/m0" as in PyFR's operator dumps.
func Suite(spec string) ([]*operator.Operator, error) {
	var ops []*operator.Operator
	for _, sel := range strings.Split(spec, ",") {
		kind, orders, ok := strings.Cut(strings.TrimSpace(sel), ":")
		if !ok {
			return nil, usagef("suite %q: want KIND:pLO[-HI], e.g. hex:p1-6", sel)
		}
		lo, hi, err := orderRange(orders, 20)
		if err != nil {
			return nil, usagef("suite %q: %v", sel, err)
		}
		for p := lo; p <= hi; p++ {
			el, err := fr.Element(kind, p, "", "") // PyFR's default points
			if err != nil {
				return nil, fmt.Errorf("suite %q: %w", sel, err)
			}
			for _, name := range suiteOps {
				op, err := el.Operator(name)
				if err != nil {
					return nil, fmt.Errorf("suite %q: %w", sel, err)
				}
				op.Name = fmt.Sprintf("p%d/%s/%s", p, kind, name)
				ops = append(ops, op)
			}
		}
	}
	return ops, nil
}

// orderRange parses one order or a range of orders, each in 1..maxOrder.
func orderRange(s string, maxOrder int) (lo, hi int, err error) {
	s = strings.TrimPrefix(s, "p")
	a, b, isRange := strings.Cut(s, "-")
	if lo, err = strconv.Atoi(a); err != nil {
		return 0, 0, fmt.Errorf("bad order %q", a)
	}
	hi = lo
	if isRange {
		if hi, err = strconv.Atoi(strings.TrimPrefix(b, "p")); err != nil {
			return 0, 0, fmt.Errorf("bad order %q", b)
		}
	}
	if lo < 1 || hi < lo || hi > maxOrder {
		return 0, 0, fmt.Errorf("orders %d..%d out of 1..%d", lo, hi, maxOrder)
	}
	return lo, hi, nil
}

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

// filterOperators keeps the operators whose names match one of the
// comma-separated globs (path.Match syntax); "" keeps all.
func filterOperators(ops []*operator.Operator, globs string) ([]*operator.Operator, error) {
	if globs == "" {
		return ops, nil
	}
	var kept []*operator.Operator
	for _, op := range ops {
		for _, g := range strings.Split(globs, ",") {
			ok, err := path.Match(strings.TrimSpace(g), op.Name)
			if err != nil {
				return nil, usagef("--only %q: %v", g, err)
			}
			if ok {
				kept = append(kept, op)
				break
			}
		}
	}
	if len(kept) == 0 {
		return nil, usagef("--only %q matches none of the %d operators", globs, len(ops))
	}
	return kept, nil
}
