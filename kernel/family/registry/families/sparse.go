package families

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/bespoke-hpc/bespoke/fr"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/kernel/family/registry"
	"github.com/bespoke-hpc/bespoke/kernel/sparse"
	"github.com/bespoke-hpc/bespoke/operator"
	"github.com/bespoke-hpc/bespoke/operator/load"
)

// sparseFamily is C ← α·A·B + β·C with a constant operator A (GiMMiK's
// kernels and more), one problem per operator file, precision and β.
var sparseFamily = registry.Family{
	Name:    "sparse",
	Doc:     "C ← α·A·B + β·C with a constant operator A",
	Unit:    "columns",
	Package: "kernel/sparse",
	Files:   true,
	Flags: func(fs *pflag.FlagSet, o registry.Options) registry.Flags {
		f := &sparseFlags{}
		if o.Lists {
			fs.StringVar(&f.betas, "beta", "pyfr", "β values, comma-separated, or pyfr (1 for m3/m6, else 0)")
		} else {
			fs.StringVar(&f.betas, "beta", "pyfr", "β, a number, or pyfr (1 for m3/m6, else 0)")
		}
		fs.Float64Var(&f.alpha, "alpha", 1, "α, folded into the literals")
		fs.IntVar(&f.maxNNZ, "max-nnz", sparse.DefaultMaxNNZ, "the most non-zeros a kernel unrolls")
		if o.Suites {
			fs.StringVar(&f.suite, "suite", "", "built-in operator sets, e.g. hex:p1-6,quad:p3 (default "+DefaultSuite+" when no files are given)")
			fs.StringVar(&f.only, "only", "", "keep operators whose names match one of these comma-separated globs, e.g. 'p*/quad/*,p*/hex/*'")
		}
		if o.Gen {
			fs.IntVar(&f.ldb, "ldb", 0, "leading dimension of B in elements, baked in (0: a kernel argument)")
			fs.IntVar(&f.ldc, "ldc", 0, "leading dimension of C in elements, baked in (0: a kernel argument)")
		} else if o.Suites {
			// bench and tune: the sizes they time
			fs.StringVar(&f.ld, "ld", "pad", "leading dimension of the timed B and C: pad (n padded to 64 elements, and past multiples of 512) or n (as PyFR allocates its panels)")
		}
		return f
	},
	// bstream runs on every dialect and is the plain column-streaming
	// kernel most operators choose.
	Variant: func(family.Problem, family.Target) string { return "bstream" },
	Check:   1001, // columns: one past a multiple of every block
	Bench: func(gpu bool) registry.Sizes {
		if gpu {
			// Small operators get more columns, until a launch moves 1 GiB
			// as the roof's does, up to 2²⁵: PyFR runs 10⁵–10⁷ columns, and
			// a GPU of 80 GB filled with a p1 mesh about 3·10⁷. At 2²³ the
			// smallest fp32 operators moved 0.3–0.5 GiB a launch and lost up
			// to 9 points of the roof to the launch's ramp and tail
			// (docs/rationale.md#launch-size).
			return registry.Sizes{Units: 1 << 20, MinLaunchBytes: 1 << 30, MaxUnits: 1 << 25}
		}
		return registry.Sizes{Units: 262144}
	},
	Baselines: true,
	Report: registry.Columns{
		Marker: "nnz",
		Facts:  []registry.Fact{{Name: "nnz", Title: "nnz"}, {Name: "beta", Title: "β"}},
	},
}

type sparseFlags struct {
	suite, only, betas string
	ld                 string // pad or n (bench, tune)
	alpha              float64
	maxNNZ, ldb, ldc   int
	sources            []string // the operator files read
}

func (f *sparseFlags) Sources() []string { return f.sources }

// Problems are one per operator (files and directories, or a suite),
// precision and β.
func (f *sparseFlags) Problems(args []string, dts []kernel.DType) ([]family.Problem, error) {
	ops, err := loadOperators(args, f.suite)
	if err != nil {
		return nil, err
	}
	f.sources = f.sources[:0]
	for _, op := range ops {
		if op.Source != "" {
			f.sources = append(f.sources, op.Source)
		}
	}
	if ops, err = filterOperators(ops, f.only); err != nil {
		return nil, err
	}
	if err := finite("--alpha", f.alpha); err != nil {
		return nil, err
	}
	if err := inRange("--alpha", f.alpha, dts); err != nil {
		return nil, err
	}
	if f.maxNNZ < 1 {
		return nil, registry.Usagef("--max-nnz %d: want at least 1", f.maxNNZ)
	}
	if f.ld != "" && f.ld != "pad" && f.ld != "n" {
		return nil, registry.Usagef("--ld %q: want pad or n", f.ld)
	}
	var ps []family.Problem
	for _, op := range ops {
		betas, err := f.betasFor(op)
		if err != nil {
			return nil, err
		}
		for _, b := range betas {
			if err := inRange("--beta", b, dts); err != nil {
				return nil, err
			}
		}
		for _, dt := range dts {
			for _, beta := range betas {
				o := sparse.NewOperator(op, dt, f.alpha, beta).WithMaxNNZ(f.maxNNZ)
				if f.ld == "n" {
					o = o.WithUnpaddedLD()
				}
				ps = append(ps, o)
			}
		}
	}
	return ps, nil
}

// betasFor parses --beta for one operator: pyfr, or a list of numbers.
func (f *sparseFlags) betasFor(op *operator.Operator) ([]float64, error) {
	if f.betas == "pyfr" {
		return []float64{load.PyFRBeta(op.Name)}, nil
	}
	bs, err := parseList(f.betas, func(s string) (float64, error) {
		b, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return 0, fmt.Errorf("--beta %q: want numbers or pyfr", s)
		}
		return b, finite("--beta", b)
	})
	if err != nil {
		return nil, err
	}
	if len(bs) == 0 {
		return nil, registry.Usagef("--beta %q names no value", f.betas)
	}
	return bs, nil
}

// GenInstance bakes n, --ldb and --ldc in where given (0: kernel
// arguments).
func (f *sparseFlags) GenInstance(p family.Problem, n int) (family.Instance, error) {
	op, ok := p.(sparse.Operator)
	if !ok {
		return nil, fmt.Errorf("sparse: no instance for %T", p)
	}
	ldb, ldc := f.ldb, f.ldc
	if n < 0 || ldb < 0 || ldc < 0 {
		return nil, registry.Usagef("--n, --ldb and --ldc must not be negative")
	}
	if n > 0 && ((ldb > 0 && ldb < n) || (ldc > 0 && ldc < n)) {
		return nil, registry.Usagef("--ldb=%d and --ldc=%d must be at least --n=%d", ldb, ldc, n)
	}
	// The panels' shape: what is baked, else the least that fits it.
	shape := max(n, 1)
	wide := func(ld int) int {
		if ld > 0 {
			return ld
		}
		return shape
	}
	pb := op.Spec()
	pb.N, pb.LDB, pb.LDC = n, ldb, ldc
	return &sparse.Instance{Problem: pb, N: shape, LDB: wide(ldb), LDC: wide(ldc)}, nil
}

// DefaultSuite is what the sparse family runs with neither files nor
// --suite: PyFR's hex p3 operators with Gauss–Legendre points.
const DefaultSuite = "hex:p3"

// suiteOps are the operators PyFR applies through GiMMiK in a time step.
var suiteOps = []string{"m0", "m3", "m6", "m132", "m460"}

// loadOperators reads files and directories, or builds a suite when there
// are none.
func loadOperators(args []string, suite string) ([]*operator.Operator, error) {
	if len(args) > 0 && suite != "" {
		return nil, registry.Usagef("give operator files or --suite, not both")
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
			return nil, registry.Usagef("suite %q: want KIND:pLO[-HI], e.g. hex:p1-6", sel)
		}
		lo, hi, err := orderRange(orders, 20)
		if err != nil {
			return nil, registry.Usagef("suite %q: %v", sel, err)
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
				return nil, registry.Usagef("--only %q: %v", g, err)
			}
			if ok {
				kept = append(kept, op)
				break
			}
		}
	}
	if len(kept) == 0 {
		return nil, registry.Usagef("--only %q matches none of the %d operators", globs, len(ops))
	}
	return kept, nil
}
