package families

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/contract"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/kernel/family/registry"
)

// contractFamily is y ← D·x along one axis of a batch of Q³ arrays, one
// problem per order, axis and precision.
var contractFamily = registry.Family{
	Name:    "contract",
	Doc:     "y ← D·x along one axis of a batch of Q³ arrays",
	Unit:    "elements",
	Package: "kernel/contract",
	Flags: func(fs *pflag.FlagSet, _ registry.Options) registry.Flags {
		f := &contractFlags{}
		fs.StringVar(&f.orders, "order", "3", orderUsage)
		fs.StringVar(&f.axes, "axis", "x,y,z", "axes to apply D along, comma-separated")
		return f
	},
	// One element per thread block-slab: every dialect runs it.
	Variant: func(family.Problem, family.Target) string { return "slab/e1" },
	Check:   37, // elements: a few blocks of every variant, none full at the end
	Bench:   tensorSizes,
	Report:  registry.Columns{Marker: "axis"},
}

// orderUsage is --order's help, the same for every family that reads it.
const orderUsage = "polynomial orders N (Q = N+1 points per axis), e.g. 1-7 or 2,4"

// tensorSizes are the bench sizes of the families of Q³ arrays: 1024
// elements, raised until a launch moves 1 GiB on GPUs (256 MiB on CPUs).
func tensorSizes(gpu bool) registry.Sizes {
	if gpu {
		return registry.Sizes{Units: 1024, MinLaunchBytes: 1 << 30, MaxUnits: 1 << 24}
	}
	return registry.Sizes{Units: 1024, MinLaunchBytes: 256 << 20, MaxUnits: 1 << 24}
}

type contractFlags struct{ orders, axes string }

func (*contractFlags) Sources() []string { return nil }

// Problems are the derivative contractions of each order, axis and
// precision.
func (f *contractFlags) Problems(args []string, dts []kernel.DType) ([]family.Problem, error) {
	if err := noFiles("contract", "--order and --axis", args); err != nil {
		return nil, err
	}
	orders, err := Orders(f.orders, contract.MaxQ-1)
	if err != nil {
		return nil, err
	}
	axes, err := parseList(f.axes, contract.ParseAxis)
	if err != nil {
		return nil, err
	}
	if len(axes) == 0 {
		return nil, registry.Usagef("--axis %q names no axis", f.axes)
	}
	var ps []family.Problem
	for _, n := range orders {
		for _, a := range axes {
			for _, dt := range dts {
				p, err := contract.Derivative(n+1, a, dt)
				if err != nil {
					return nil, err
				}
				ps = append(ps, p)
			}
		}
	}
	return ps, nil
}

// GenInstance is the kernel for any batch: its size is an argument.
func (f *contractFlags) GenInstance(p family.Problem, n int) (family.Instance, error) {
	if err := sizeAtRunTime("contract", n); err != nil {
		return nil, err
	}
	c, ok := p.(*contract.Problem)
	if !ok {
		return nil, fmt.Errorf("contract: no instance for %T", p)
	}
	return c.Timed(1)
}
