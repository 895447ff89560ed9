package cli

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/kernel/family/registry"
	"github.com/bespoke-hpc/bespoke/kernel/family/registry/families"
)

// problemFlags are the flags that say which problems a command works on:
// --family, --dtype and every registered family's own flags. Each family
// reads its own and refuses the others'.
type problemFlags struct {
	family string
	dtypes string
	set    *pflag.FlagSet
	bound  *registry.Bound
}

// register adds the flags; o says which of a family's flags the command
// takes (lists of values, built-in suites, gen's baked sizes).
func (f *problemFlags) register(fs *pflag.FlagSet, o registry.Options) {
	f.set = fs
	fs.StringVar(&f.family, "family", registry.DefaultFamily, "kernel family: "+strings.Join(registry.Names(), ", "))
	if o.Lists {
		fs.StringVar(&f.dtypes, "dtype", "f32,f64", "precisions, comma-separated")
	} else {
		fs.StringVar(&f.dtypes, "dtype", "f64", "precision: f32 or f64")
	}
	f.bound = registry.Bind(fs, o)
}

// dtypeList parses --dtype.
func (f *problemFlags) dtypeList() ([]kernel.DType, error) {
	dts, err := parseList(f.dtypes, kernel.ParseDType)
	if err != nil {
		return nil, err
	}
	if len(dts) == 0 {
		return nil, usagef("--dtype %q names no precision", f.dtypes)
	}
	return dts, nil
}

// entry is the chosen family.
func (f *problemFlags) entry() (registry.Family, error) { return registry.Lookup(f.family) }

// problems turns the arguments into the family's problems, one per
// operator (or order …), precision and β.
func (f *problemFlags) problems(args []string) ([]family.Problem, error) {
	if _, err := f.entry(); err != nil {
		return nil, err
	}
	dts, err := f.dtypeList()
	if err != nil {
		return nil, err
	}
	return f.bound.Problems(f.family, args, dts)
}

// sources are the files the problems were read from.
func (f *problemFlags) sources() []string {
	fl, err := f.bound.Flags(f.family)
	if err != nil {
		return nil
	}
	return fl.Sources()
}

// genInstance is the instance gen writes a kernel of p for, n baked in
// where the family can.
func (f *problemFlags) genInstance(p family.Problem, n int) (family.Instance, error) {
	fl, err := f.bound.Flags(f.family)
	if err != nil {
		return nil, err
	}
	return fl.GenInstance(p, n)
}

// checkSize is the size verify checks at when --n is not given.
func (f *problemFlags) checkSize() int {
	e, err := f.entry()
	if err != nil {
		return 0 // problems refused the family already
	}
	return e.Check
}

// benchSizes are the sizes bench times at unless --n says otherwise: the
// least, the launch bytes it is raised to reach, and the most.
func (f *problemFlags) benchSizes(gpu bool) (units int, minBytes int64, maxUnits int) {
	e, err := f.entry()
	if err != nil {
		return 0, 0, 0 // problems refused the family already
	}
	s := e.Bench(gpu)
	return s.Units, s.MinLaunchBytes, s.MaxUnits
}

// sizesHelp is --n's help: each family's default size, as check gives
// it, or as bench times it on CPUs and GPUs.
func sizesHelp(check bool) string {
	var parts []string
	for _, f := range registry.All() {
		if check && f.Pipeline != "" {
			continue // verify refuses it
		}
		if check {
			parts = append(parts, fmt.Sprintf("%s %d %s", f.Name, f.Check, f.Unit))
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %s on CPUs, %s on GPUs", f.Name, benchSizeHelp(f.Bench(false), f.Unit), benchSizeHelp(f.Bench(true), f.Unit)))
	}
	return strings.Join(parts, "; ")
}

func benchSizeHelp(s registry.Sizes, unit string) string {
	if s.MinLaunchBytes <= 0 {
		return fmt.Sprintf("%d %s", s.Units, unit)
	}
	return fmt.Sprintf("%d %s raised until a launch moves %s (at most %d)", s.Units, unit, sizeString(s.MinLaunchBytes), s.MaxUnits)
}

// orderList parses --order for commands outside the registry's (fem
// bench's solves).
func orderList(s string, maxOrder int) ([]int, error) { return families.Orders(s, maxOrder) }

// finite rejects NaN and infinities.
func finite(flag string, x float64) error {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return usagef("%s %v: want a finite number", flag, x)
	}
	return nil
}

// parseBytes reads a memory size: bytes, or a number with K, M, G or T
// (powers of 1024; "GiB" and "GB" read alike).
func parseBytes(flag, s string) (int64, error) {
	t := strings.TrimSuffix(strings.TrimSuffix(strings.ToUpper(strings.TrimSpace(s)), "B"), "I")
	mult := int64(1)
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'K':
			mult, t = 1<<10, t[:n-1]
		case 'M':
			mult, t = 1<<20, t[:n-1]
		case 'G':
			mult, t = 1<<30, t[:n-1]
		case 'T':
			mult, t = 1<<40, t[:n-1]
		}
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
	if err != nil || math.IsNaN(v) || v <= 0 || v*float64(mult) > math.MaxInt64/2 {
		return 0, usagef("%s %q: want a positive size such as 512M or 4G", flag, s)
	}
	return int64(v * float64(mult)), nil
}
