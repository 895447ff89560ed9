package families

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family/registry"
)

// parseList parses a comma-separated list, skipping empty items; a bad
// item is a usage error.
func parseList[T any](s string, parse func(string) (T, error)) ([]T, error) {
	var out []T
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		v, err := parse(f)
		if err != nil {
			return nil, registry.UsageError{Err: err}
		}
		out = append(out, v)
	}
	return out, nil
}

// Orders parses a list of orders and ranges (--order 1-7 or 2,4), each in
// 1..maxOrder.
func Orders(s string, maxOrder int) ([]int, error) {
	var orders []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, err := orderRange(strings.TrimSpace(part), maxOrder)
		if err != nil {
			return nil, registry.Usagef("--order %q: %v", s, err)
		}
		for n := lo; n <= hi; n++ {
			orders = append(orders, n)
		}
	}
	return orders, nil
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

// finite rejects NaN and infinities.
func finite(flag string, x float64) error {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return registry.Usagef("%s %v: want a finite number", flag, x)
	}
	return nil
}

// inRange refuses a value some precision of the run cannot hold: its
// kernels would compute with an infinity.
func inRange(flag string, x float64, dts []kernel.DType) error {
	for _, dt := range dts {
		if math.IsInf(dt.Rounded(x), 0) {
			return registry.Usagef("%s %g is beyond the %s range (%.2g)", flag, x, dt, dt.Max())
		}
	}
	return nil
}

// noFiles refuses arguments for a family that takes none.
func noFiles(name, how string, args []string) error {
	if len(args) > 0 {
		return registry.Usagef("the %s family takes no files (got %s); choose it with %s", name, strings.Join(args, " "), how)
	}
	return nil
}

// sizeAtRunTime refuses gen's --n for a family whose kernels take their
// size as an argument.
func sizeAtRunTime(name string, n int) error {
	if n > 0 {
		return registry.Usagef("--n: the %s family's kernels take their size at run time; --n applies with --best (the size bench timed)", name)
	}
	return nil
}
