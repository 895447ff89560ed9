package cli

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/spf13/cobra"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/element"
	"github.com/bespoke-hpc/bespoke/internal/paths"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/kernel/family/registry"
	"github.com/bespoke-hpc/bespoke/kernel/family/registry/families"
	"github.com/bespoke-hpc/bespoke/kernel/integrate"
	"github.com/bespoke-hpc/bespoke/operator/npy"
)

// integrateCmd is `bespoke integrate`: element-matrix integration (the
// kernel/integrate family) timed by the generic bench, and applied to a
// mesh read from .npy.
func integrateCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "integrate",
		Short: "Element-matrix integration (tet, prism, hex; Laplace, mass, convection–diffusion–reaction): bench and apply",
	}
	c.AddCommand(integrateBenchCmd(), integrateApplyCmd())
	return c
}

// foreignBenchFlags are bench's flags of other families, hidden here and
// refused when set.
func foreignBenchFlags() []string {
	return append([]string{"family", "no-baselines"}, registry.Foreign("integrate", registry.Options{Suites: true})...)
}

// integrateBenchCmd is bench over the integration family's problems: the
// same verification, rotation, roof, tuning store and outputs, with
// ns/elem, Gelem/s and GFLOP/s at the nominal counts in the table.
func integrateBenchCmd() *cobra.Command {
	c := benchCmd()
	c.Use = "bench"
	c.Short = "Verify and time the integration kernels: ns/element, G elements/s, GB/s, % of the copy roof, GFLOP/s"
	c.Long = `integrate bench times every variant (work-group size, elements per
work-item, local-memory staging) of each element × problem × precision, as
bench does for any family: each candidate verified first against the float64
reference at sampled elements, arrays rotated so that a launch touches the
working set, the median of --reps launches, the copy roof measured in the same
run. The winner (marked *) is kept in the tuning store, so that a second run
measures nothing (--retune measures again). Columns: ns/elem and Gelem/s per
element matrix; GB/s and % roof over the least traffic (coordinates and
coefficients in, full entry-major matrices out); GFLOP/s at the nominal counts
(prism: the paper's 2916 Laplace, 4806 convection–diffusion).`
	c.Example = `  bespoke integrate bench --element prism,tet,hex --problem laplace,cdr --dtype f32 --backend cuda --json out.json --markdown out.md
  bespoke integrate bench --element prism --problem laplace --backend c --n 262144`
	c.Args = cobra.NoArgs
	for _, name := range foreignBenchFlags() {
		if f := c.Flags().Lookup(name); f != nil {
			f.Hidden = true
		}
	}
	f := c.Flags()
	// --element, --problem and the format flags are bench's own (the
	// integrate family's flags of problemFlags).
	f.Lookup("dtype").Usage = "precision: f32 or f64 (one per run, as bench times one)"
	f.Lookup("n").Usage = fmt.Sprintf("elements per launch (default %d on GPUs, %d on CPUs; at most %d)", families.IntegrateGPUElements, families.IntegrateCPUElements, integrate.MaxElements)
	c.RunE = func(cmd *cobra.Command, _ []string) error {
		o, ps, err := integrateBenchOptions(cmd)
		if err != nil {
			return err
		}
		return onTimingDevice(cmd, o.backend, o.device, func(dev device.Device, stop <-chan struct{}) error {
			if o.n == 0 {
				o.n, _, _ = o.benchSizes(dev.Info().GPU) // the registry's, as gen --best looks them up
			}
			return runBench(cmd.OutOrStdout(), cmd.ErrOrStderr(), dev, ps, o, stop)
		})
	}
	return c
}

// integrateBenchOptions reads bench's flags (the options struct of
// benchCmd stays inside it) and the family's, and makes the problems.
func integrateBenchOptions(cmd *cobra.Command) (benchOptions, []family.Problem, error) {
	fs := cmd.Flags()
	var o benchOptions
	var bad []string
	for _, name := range foreignBenchFlags() {
		if fs.Changed(name) {
			bad = append(bad, "--"+name)
		}
	}
	if len(bad) > 0 {
		return o, nil, usagef("%s: not a flag of integrate bench", strings.Join(bad, ", "))
	}
	o.family = "integrate" // its sizes, and no vendor baselines
	str := func(name string) string { s, _ := fs.GetString(name); return s }
	boolean := func(name string) bool { b, _ := fs.GetBool(name); return b }
	integer := func(name string) int { n, _ := fs.GetInt(name); return n }
	o.dtypes = str("dtype")
	o.backend, o.device, o.variants = str("backend"), str("device"), str("variant")
	o.n, o.reps, o.warmup = integer("n"), integer("reps"), integer("warmup")
	o.rounds, o.readmit = integer("rounds"), integer("readmit")
	o.workingSetFlag, o.maxMemory = str("working-set"), str("max-memory")
	o.jsonOut, o.csvOut, o.goOut, o.plotDir, o.mdOut = str("json"), str("csv"), str("gobench"), str("plot"), str("markdown")
	o.noBaselines, o.quiet, o.retune, o.noStore = boolean("no-baselines"), boolean("quiet"), boolean("retune"), boolean("no-store")
	o.commit, o.pruneFlag = str("commit"), str("prune")
	o.screen, _ = fs.GetFloat64("screen")
	if o.n > integrate.MaxElements {
		return o, nil, usagef("--n %d: at most %d elements", o.n, integrate.MaxElements)
	}
	if err := o.validate(); err != nil {
		return o, nil, err
	}
	if err := checkFiles(nil, o.outputs()); err != nil {
		return o, nil, err
	}
	opts := integrate.Options{Symmetric: boolean("symmetric"), Upper: boolean("upper"), ElemMajor: boolean("element-major"), Load: boolean("load")}
	ps, err := integrateProblems(str("element"), str("problem"), o.dtypes, opts)
	return o, ps, err
}

// integrateProblems is every element × problem × precision, in the format
// opts asks for, one precision per run.
func integrateProblems(elements, problems, dtypes string, opts integrate.Options) ([]family.Problem, error) {
	dts, err := parseList(dtypes, kernel.ParseDType)
	if err != nil {
		return nil, err
	}
	switch {
	case len(dts) > 1:
		return nil, usagef("--dtype %q: one precision per run (bench times one)", dtypes)
	case len(dts) == 0:
		return nil, usagef("--dtype %q names no precision", dtypes)
	}
	return families.IntegrateProblems(elements, problems, dts, opts)
}

type integrateApplyOptions struct {
	kind, problem, nodes, cells, out, backend, device, dtype, variant string
}

func integrateApplyCmd() *cobra.Command {
	var o integrateApplyOptions
	c := &cobra.Command{
		Use:   "apply",
		Short: "Integrate the element matrices of a mesh read from .npy and write them as .npy",
		Long: `apply reads node coordinates (a .npy of shape (nodes, 3), float64) and
connectivity (shape (E, nodes per element), int64 or int32: 4 for tet, 6 for
prism, 8 for hex, in the reference element's local order), integrates each
element's matrix — Laplace (∫ ∇N_a·∇N_b) or mass (∫ N_a N_b) — and writes
them as float64 of shape (E, n, n), rows and columns in the connectivity's
local order. --backend reference integrates in float64 in Go; a device
backend runs bespoke's kernel (--variant, in --dtype, widened back to
float64) and prints its largest error relative to the float64 reference.
Every element's Jacobian must be positive at its quadrature points and
vertices.`,
		Example: `  bespoke integrate apply --element prism --problem laplace --nodes x.npy --cells c.npy --out a.npy
  bespoke integrate apply --element hex --problem mass --nodes x.npy --cells c.npy --out a.npy --backend opencl --dtype f32`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runIntegrateApply(cmd.OutOrStdout(), o) },
	}
	f := c.Flags()
	f.StringVar(&o.kind, "element", "", "element kind: tet, prism or hex")
	f.StringVar(&o.problem, "problem", "laplace", "laplace or mass (cdr needs coefficients per element: integrate bench draws them)")
	f.StringVar(&o.nodes, "nodes", "", "node coordinates (.npy, shape (nodes, 3))")
	f.StringVar(&o.cells, "cells", "", "connectivity (.npy, shape (E, nodes per element))")
	f.StringVar(&o.out, "out", "", "element matrices (.npy, shape (E, n, n))")
	f.StringVar(&o.backend, "backend", "reference", "reference (float64 in Go), or a device backend: auto, cuda, opencl, c")
	f.StringVar(&o.device, "device", "", "device within the backend (CUDA ordinal; OpenCL P:D or name)")
	f.StringVar(&o.dtype, "dtype", "f64", "precision of a device run: f32 or f64")
	f.StringVar(&o.variant, "variant", "w64/e1", "kernel variant of a device run, e.g. w64/e1, w16/e2, w64/e1/local")
	return c
}

// maxApplyWords bounds the matrices apply writes (float64s: 1 GiB).
const maxApplyWords = 1 << 27

func runIntegrateApply(w io.Writer, o integrateApplyOptions) error {
	kind, err := element.ParseKind(o.kind)
	if err != nil {
		return usageError{fmt.Errorf("--element: %w", err)}
	}
	op, err := element.ParseProblem(o.problem)
	if err != nil {
		return usageError{fmt.Errorf("--problem: %w", err)}
	}
	if op == element.CDR {
		return usagef("--problem cdr: apply integrates laplace or mass (CDR needs a coefficient block per element)")
	}
	if o.nodes == "" || o.cells == "" || o.out == "" {
		return usagef("apply needs --nodes, --cells and --out")
	}
	if err := checkFiles(append(inputFiles("--nodes", o.nodes), inputFiles("--cells", o.cells)...), []paths.File{outFile("--out", o.out)}); err != nil {
		return err
	}
	reference := o.backend == "reference"
	if reference && (o.dtype != "f64" || o.device != "" || o.variant != "w64/e1") {
		return usagef("--backend reference integrates in float64: --dtype, --device and --variant do not apply")
	}
	nn, cols, nodes, err := npy.ReadMatrix(o.nodes)
	if err != nil {
		return err
	}
	if cols != 3 {
		return fmt.Errorf("%s: shape (%d, %d), want (nodes, 3)", o.nodes, nn, cols)
	}
	if dt, err := kernel.ParseDType(o.dtype); err == nil && !reference {
		if err := dt.CheckRange(o.nodes, nodes); err != nil {
			return err
		}
	}
	ne, nb, cf, err := npy.ReadMatrix(o.cells)
	if err != nil {
		return err
	}
	if nb != kind.Nodes() {
		return fmt.Errorf("%s: shape (%d, %d), want (E, %d): %s elements have %d nodes", o.cells, ne, nb, kind.Nodes(), kind, kind.Nodes())
	}
	if words := int64(ne) * int64(nb*nb); words > maxApplyWords {
		return fmt.Errorf("%s: %d %s elements make %d MB of matrices (at most %d MB)", o.cells, ne, kind, words*8>>20, maxApplyWords*8>>20)
	}
	conn := make([]int64, len(cf))
	for i, v := range cf {
		// ReadMatrix reads int64 exactly up to 2⁵³; nodes are far fewer.
		if v != math.Trunc(v) || v < 0 || v >= float64(nn) {
			return fmt.Errorf("%s: entry [%d, %d] = %g: want a node number 0..%d", o.cells, i/nb, i%nb, v, nn-1)
		}
		conn[i] = int64(v)
	}
	b, err := element.Gather(kind, nodes, conn)
	if err != nil {
		return err
	}
	if err := b.CheckJacobians(); err != nil {
		return err
	}
	var mats []float64
	if reference {
		mats, err = integrateReference(b, op)
	} else {
		mats, err = integrateOnDevice(w, o, b, op)
	}
	if err != nil {
		return err
	}
	if err := element.CheckFinite(mats, nb); err != nil {
		return fmt.Errorf("%s not written: %v: the integration overflows %s", o.out, err, o.dtype)
	}
	return paths.Write(o.out, func(w io.Writer) error { return npy.WriteArray(w, []int{ne, nb, nb}, mats) })
}

// coefOf is the compiled-in coefficient block of apply's problems.
func coefOf(op element.Problem) element.Coef {
	if op == element.Mass {
		return element.MassCoef()
	}
	return element.LaplaceCoef(1)
}

// integrateReference is element's float64 reference, E×nb×nb.
func integrateReference(b *element.Batch, op element.Problem) ([]float64, error) {
	nb := b.Kind.Nodes()
	out := make([]float64, b.E*nb*nb)
	x := make([][3]float64, nb)
	c := coefOf(op)
	for e := range b.E {
		b.Element(e, x)
		if err := b.Kind.Matrix(x, &c, out[e*nb*nb:(e+1)*nb*nb]); err != nil {
			return nil, fmt.Errorf("element %d: %w", e, err)
		}
	}
	return out, nil
}

// integrateOnDevice runs the family's kernel once over the batch and
// reports its error against the float64 reference Given computes.
func integrateOnDevice(w io.Writer, o integrateApplyOptions, b *element.Batch, op element.Problem) ([]float64, error) {
	dt, err := kernel.ParseDType(o.dtype)
	if err != nil {
		return nil, usageError{err}
	}
	p, err := integrate.New(b.Kind, op, dt, integrate.Options{})
	if err != nil {
		return nil, usageError{err}
	}
	in, err := p.Instance(b.E)
	if err != nil {
		return nil, err
	}
	c, err := in.Variant(o.variant)
	if err != nil {
		return nil, usageError{err}
	}
	if err := in.Check(c); err != nil {
		return nil, usageError{err}
	}
	kern, err := in.Build(c)
	if err != nil {
		return nil, err
	}
	data, err := in.Given(b, integrate.Inputs{})
	if err != nil {
		return nil, err
	}
	got, info, err := launchOnce(o.backend, o.device, kern, data)
	if err != nil {
		return nil, err
	}
	mats, err := in.Matrices(got["a"])
	if err != nil {
		return nil, err
	}
	want, err := in.Matrices(data.Arrays["a"].Want)
	if err != nil {
		return nil, err
	}
	scale, worst := 0.0, 0.0
	for i, x := range mats {
		if math.IsNaN(x) {
			return nil, fmt.Errorf("%s on %s: element %d's matrix holds NaN: left unwritten, or its integration overflows %s", kern.Variant, info.Name, i/(in.Kind.Nodes()*in.Kind.Nodes()), o.dtype)
		}
		scale = math.Max(scale, math.Abs(want[i]))
		worst = math.Max(worst, math.Abs(x-want[i]))
	}
	fmt.Fprintf(w, "%s %s on %s (%s): %d elements, max error %.2g relative to the largest entry of the float64 reference\n",
		p.Label(), kern.Variant, info.Name, info.Backend, b.E, worst/math.Max(scale, math.SmallestNonzeroFloat64))
	return mats, nil
}
