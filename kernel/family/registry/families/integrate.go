package families

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/bespoke-hpc/bespoke/element"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/kernel/family/registry"
	"github.com/bespoke-hpc/bespoke/kernel/integrate"
)

// Bench sizes of the integrate family: 2²² elements on GPUs (the least
// size the paper's comparison asks for; 2 GiB of f64 prism matrices), 2²⁰
// on CPUs.
const (
	IntegrateGPUElements = 1 << 22
	IntegrateCPUElements = 1 << 20
)

// integrateFamily is the element matrices of low-order elements, one
// problem per element kind, coefficient pattern and precision.
var integrateFamily = registry.Family{
	Name:    "integrate",
	Doc:     "element matrices of low-order elements (tet, prism, hex)",
	Unit:    "elements",
	Package: "kernel/integrate",
	Flags: func(fs *pflag.FlagSet, _ registry.Options) registry.Flags {
		f := &integrateFlags{}
		fs.StringVar(&f.elements, "element", "prism", "element kinds, comma-separated: tet, prism, hex")
		fs.StringVar(&f.ops, "problem", "laplace", "coefficient patterns, comma-separated: laplace, mass, cdr")
		fs.BoolVar(&f.o.Symmetric, "symmetric", false, "symmetric CDR coefficient blocks")
		fs.BoolVar(&f.o.Upper, "upper", false, "store the upper triangle only (symmetric problems)")
		fs.BoolVar(&f.o.ElemMajor, "element-major", false, "element-major output (e·n + i) instead of entry-major (i·E + e)")
		fs.BoolVar(&f.o.Load, "load", false, "the load vector too")
		return f
	},
	// 64 work-items of one element each: every device runs it.
	Variant: func(family.Problem, family.Target) string { return "w64/e1" },
	Check:   301, // elements: past a block of every variant, the last one partly full
	Bench: func(gpu bool) registry.Sizes {
		if gpu {
			return registry.Sizes{Units: IntegrateGPUElements}
		}
		return registry.Sizes{Units: IntegrateCPUElements}
	},
	Report: registry.Columns{
		// Not "elements", which other families state without wanting
		// these columns.
		Marker: "integrated",
		Rates: []registry.Rate{
			{Title: "ns/elem", Work: "integrated", Per: true},
			{Title: "Gelem/s", Work: "integrated"},
		},
	},
}

type integrateFlags struct {
	elements, ops string
	o             integrate.Options
}

func (*integrateFlags) Sources() []string { return nil }

// Problems are the element matrices of each element kind, coefficient
// pattern and precision, in the format the flags ask for.
func (f *integrateFlags) Problems(args []string, dts []kernel.DType) ([]family.Problem, error) {
	if err := noFiles("integrate", "--element and --problem", args); err != nil {
		return nil, err
	}
	return IntegrateProblems(f.elements, f.ops, dts, f.o)
}

// IntegrateProblems is every element × problem × precision, in the format
// o asks for (by default full entry-major storage, the paper's coalesced
// output).
func IntegrateProblems(elements, problems string, dts []kernel.DType, o integrate.Options) ([]family.Problem, error) {
	kinds, err := parseList(elements, element.ParseKind)
	if err != nil {
		return nil, err
	}
	ops, err := parseList(problems, element.ParseProblem)
	if err != nil {
		return nil, err
	}
	switch {
	case len(kinds) == 0:
		return nil, registry.Usagef("--element %q names no element (want tet, prism, hex)", elements)
	case len(ops) == 0:
		return nil, registry.Usagef("--problem %q names no problem (want laplace, mass, cdr)", problems)
	}
	var ps []family.Problem
	for _, k := range kinds {
		for _, op := range ops {
			for _, dt := range dts {
				p, err := integrate.New(k, op, dt, o)
				if err != nil {
					return nil, registry.UsageError{Err: err}
				}
				ps = append(ps, p)
			}
		}
	}
	return ps, nil
}

// GenInstance is the kernel for any batch: the batch is an argument, and
// only 64-bit indexing depends on it (it keeps 32-bit indices up to 2²⁵
// elements); streaming variants ask for one work-group's worth at least.
func (f *integrateFlags) GenInstance(p family.Problem, n int) (family.Instance, error) {
	if err := sizeAtRunTime("integrate", n); err != nil {
		return nil, err
	}
	ip, ok := p.(*integrate.Problem)
	if !ok {
		return nil, fmt.Errorf("integrate: no instance for %T", p)
	}
	return ip.Instance(1 << 20)
}
