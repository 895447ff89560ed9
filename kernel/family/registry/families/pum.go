package families

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/kernel/family/registry"
	kpum "github.com/bespoke-hpc/bespoke/kernel/pum"
	"github.com/bespoke-hpc/bespoke/pum"
	"github.com/bespoke-hpc/bespoke/pum/run"
	"github.com/bespoke-hpc/bespoke/pum/tuned"
)

// Bench sizes of the pum family, in patches: 2^18 on GPUs (2-D level 9,
// 3-D level 6, the sizes of the thesis's comparison), 2^12 on CPUs (2-D
// level 6, 3-D level 4).
const (
	PUMGPUPatches = 1 << 18
	PUMCPUPatches = 1 << 12
)

// pumFamily is the partition-of-unity assembly on uniform patch covers:
// one problem per dimension, degree, coefficients and precision, its size
// the cover's patches. A candidate (tuned.Candidate) is a whole pipeline
// (decomposition, integration, assembly), so gen writes the kernel the
// candidates differ in: the integration kernel for the largest active set
// (Instance.Build).
var pumFamily = registry.Family{
	Name:    "pum",
	Doc:     "partition-of-unity integration and assembly of −∇·(κ∇u) + r u = f on uniform patch covers",
	Unit:    "patches",
	Package: "pum/tuned",
	Flags: func(fs *pflag.FlagSet, _ registry.Options) registry.Flags {
		f := &pumFlags{}
		fs.IntVar(&f.dim, "dim", 2, "dimension: 2 or 3")
		fs.IntVar(&f.degree, "degree", 1, fmt.Sprintf("local polynomial degree p (2-D ≤ %d, 3-D ≤ %d)", pum.MaxDegree2D, pum.MaxDegree3D))
		fs.BoolVar(&f.periodic, "periodic", false, "periodic domain (every patch inner)")
		fs.StringVar(&f.coeff, "coeff", kpum.CoeffSmooth, "coefficients: const, smooth or wave (as pum bench's --coeff)")
		fs.Float64Var(&f.kappa, "kappa", 1, "κ scale K (> 0)")
		fs.Float64Var(&f.r, "r", 1, "r scale R (≥ 0; 0 leaves the mass term out)")
		fs.StringVar(&f.layout, "layout", "blocked", "element-block layout: blocked or interleaved (pum bench's auto picks interleaved on a GPU)")
		fs.StringVar(&f.strategy, "strategy", "", "restrict the candidates to one strategy: atomic, colour or fused (default: all)")
		return f
	},
	// The thread integration kernel with atomic assembly: one thread per
	// cell, no shared memory, so every dialect runs it at every degree.
	Variant: func(_ family.Problem, t family.Target) string {
		if t.GPU {
			return "atomic.thread.t64"
		}
		return "atomic.thread.t1"
	},
	Check: 1 << 6, // unused: verify refuses the family (Pipeline)
	Bench: func(gpu bool) registry.Sizes {
		if gpu {
			return registry.Sizes{Units: PUMGPUPatches}
		}
		return registry.Sizes{Units: PUMCPUPatches}
	},
	Report: registry.Columns{
		Marker: "patches",
		Facts:  []registry.Fact{{Name: "pum_dofs", Title: "DOF"}},
		Rates:  []registry.Rate{{Title: "ns/DOF", Work: "pum_dofs", Per: true}},
	},
	Pipeline: "each candidate is a whole pipeline, checked as an assembled system: tune and pum bench verify every candidate against pum's float64 reference before timing it",
}

type pumFlags struct {
	dim, degree             int
	periodic                bool
	coeff, layout, strategy string
	kappa, r                float64
}

func (*pumFlags) Sources() []string { return nil }

// Problems are the configuration in each precision; the cover's level is
// the size (--n, in patches).
func (f *pumFlags) Problems(args []string, dts []kernel.DType) ([]family.Problem, error) {
	if err := noFiles("pum", "--dim, --degree and --coeff", args); err != nil {
		return nil, err
	}
	maxP := pum.MaxDegree2D
	switch f.dim {
	case 2:
	case 3:
		maxP = pum.MaxDegree3D
	default:
		return nil, registry.Usagef("--dim %d: want 2 or 3", f.dim)
	}
	if f.degree < 0 || f.degree > maxP {
		return nil, registry.Usagef("--degree %d: want 0…%d for %d-D", f.degree, maxP, f.dim)
	}
	cfg := run.Config{Dim: f.dim, Degree: f.degree, Periodic: f.periodic, Coeff: kpum.Coefficients{Name: f.coeff, K: f.kappa, R: f.r}}
	if err := cfg.Coeff.Check(); err != nil {
		return nil, registry.UsageError{Err: err}
	}
	switch f.layout {
	case "blocked":
	case "interleaved":
		cfg.Layout = kpum.Interleaved
	default:
		return nil, registry.Usagef("--layout %q: want blocked or interleaved", f.layout)
	}
	switch f.strategy {
	case "", run.Atomic, run.Colour, run.Fused:
	default:
		return nil, registry.Usagef("--strategy %q: want atomic, colour or fused", f.strategy)
	}
	var ps []family.Problem
	for _, dt := range dts {
		c := cfg
		c.DType = dt
		ps = append(ps, tuned.Problem{Config: c, Strategy: f.strategy})
	}
	return ps, nil
}

// GenInstance is the instance at the least cover: the integration kernel
// does not depend on the level.
func (f *pumFlags) GenInstance(p family.Problem, n int) (family.Instance, error) {
	if err := sizeAtRunTime("pum", n); err != nil {
		return nil, err
	}
	tp, ok := p.(tuned.Problem)
	if !ok {
		return nil, fmt.Errorf("pum: no instance for %T", p)
	}
	return tp.Timed(1)
}
