package cli

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/internal/paths"
	"github.com/bespoke-hpc/bespoke/kernel"
	kpum "github.com/bespoke-hpc/bespoke/kernel/pum"
	"github.com/bespoke-hpc/bespoke/operator/npy"
	"github.com/bespoke-hpc/bespoke/pum"
	pumrun "github.com/bespoke-hpc/bespoke/pum/run"
	"github.com/bespoke-hpc/bespoke/pum/tuned"
	"github.com/bespoke-hpc/bespoke/report"
	"github.com/bespoke-hpc/bespoke/tune"
)

// pumCmd is `bespoke pum`: partition-of-unity integration and assembly.
func pumCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "pum",
		Short: "Partition-of-unity method: integrate and assemble −∇·(κ∇u) + r u = f on uniform patch covers",
	}
	c.AddCommand(pumBenchCmd(), pumAssembleCmd())
	return c
}

// pumFlags are the problem flags both subcommands take.
type pumFlags struct {
	dim, level, degree int
	periodic           bool
	coeff              string
	kappa, r           float64
	backend, device    string
	dtype, strategy    string
	layout             string
	integrator         string
	decompose          string
	perCell            bool // --per-cell
	// levels and degrees as given (bench: lists or ranges, e.g. 5-9).
	levelSpec, degreeSpec string
	threads, tiles, side  int
	vec                   int
	mma                   int
}

func (o *pumFlags) register(c *cobra.Command, coeff string, r float64, backend, strategy string) {
	f := c.Flags()
	f.IntVar(&o.dim, "dim", 2, "dimension: 2 or 3")
	many := map[bool]string{true: "; a list or range, e.g. 5-9 or 1,3,5", false: ""}[strategy == "auto"]
	f.StringVar(&o.levelSpec, "level", "4", fmt.Sprintf("cover level: 2^level patches per direction (2-D ≤ %d, 3-D ≤ %d)%s", pum.MaxLevel2D, pum.MaxLevel3D, many))
	f.StringVar(&o.degreeSpec, "degree", "1", fmt.Sprintf("local polynomial degree p (2-D ≤ %d, 3-D ≤ %d)%s", pum.MaxDegree2D, pum.MaxDegree3D, many))
	f.IntVar(&o.threads, "threads", 0, "threads per block of the device kernels (0: the chosen candidate's)")
	f.IntVar(&o.side, "side", 0, fmt.Sprintf("group kernel: side R of a thread's R×R tiles of the element block (0: the chosen candidate's; up to %d) — 2R staged loads per R² multiply-adds", kpum.MaxSide))
	f.IntVar(&o.tiles, "tiles", 0, fmt.Sprintf("group kernel: tiles of the element block per thread (0: the chosen candidate's; up to %d) — fewer threads per cell, more cells per block", kpum.MaxTiles))
	f.IntVar(&o.vec, "vec", 0, "group kernel: staged values a tile reads in one load from shared memory, 1, 2 or 4 (0: the chosen candidate's, by default 2 in f32 with an even tile side, else 1)")
	f.IntVar(&o.mma, "mma", -1, fmt.Sprintf("group kernel on CUDA: side W of the W×W blocks of the element block whose Gram product runs on tensor cores (f64 mma m8n8k4, a multiple of 8; f32 3×TF32 m16n8k8, a multiple of 16; up to %d), 0 for the SIMT tiles of --side (-1: the chosen candidate's)", kpum.MaxMMA))
	f.BoolVar(&o.periodic, "periodic", false, "periodic domain (every patch inner)")
	f.StringVar(&o.coeff, "coeff", coeff, "coefficients: const (κ = K, r = R, f = 1), smooth (κ = K(1+0.3|x|²+0.2x₀(1−x₀)), r = R(1+x₀x₁), f = 1+x₀²x₁−x_d³) or wave (κ = K, r = R, f = (4π²dK+R)·Π sin 2πx_k: with --periodic the solution is Π sin 2πx_k)")
	f.Float64Var(&o.kappa, "kappa", 1, "κ scale K (> 0)")
	f.Float64Var(&o.r, "r", r, "r scale R (≥ 0; 0 leaves the mass term out)")
	f.StringVar(&o.backend, "backend", backend, "reference (float64 Go, all cores), or a device backend: auto, cuda, opencl, c")
	f.StringVar(&o.device, "device", "", "device within the backend (CUDA ordinal; OpenCL P:D or name)")
	f.StringVar(&o.dtype, "dtype", "f64", "precision of a device run: f32 or f64")
	f.StringVar(&o.strategy, "strategy", strategy, "device assembly: atomic, colour, fused (atomic adds from the integration kernel, no element buffer)"+map[bool]string{true: ", auto (the tuned best of every strategy on the device: from the tuning store, or measured now and stored), both (atomic and colour) or all; each strategy runs its own tuned shape", false: ""}[strategy == "auto"])
	f.StringVar(&o.integrator, "integrator", "auto", "integration kernel: auto (the chosen candidate's), thread (one thread per cell) or group (a team of threads per cell, points staged in shared memory; the fused strategy's)")
	f.StringVar(&o.decompose, "decompose", pumrun.DecompDevice, "where a device run decomposes the cover into cells: device (count, prefix sum, fill kernels from the split tables; the patch data and matrix pattern made there too) or host (pum.Decompose and the plan on the host, uploaded)")
	f.BoolVar(&o.perCell, "per-cell", false, "fused strategy with device decomposition: integrate and add every cell on its own (default: the chosen candidate's; merged, a uniform cover's bins ordered by active set and the 2^d cells of a set summed in registers, one atomic add per entry per set)")
	f.StringVar(&o.layout, "layout", "auto", "element-block layout: auto (interleaved on a GPU, blocked on a CPU), blocked, interleaved")
}

// uniformEntries is the number of stored scalars of a uniform cover's
// matrix: (3n − 2)^d block pairs of patches at most one apart per
// direction (3n^d periodic, n ≥ 3), B² scalars each.
func uniformEntries(cfg pumrun.Config) int64 {
	n := int64(1) << cfg.Level
	per := 3*n - 2
	if cfg.Periodic && n >= 3 {
		per = 3 * n
	}
	pairs := int64(1)
	for range cfg.Dim {
		pairs *= per
	}
	b := int64(kpum.Spec{Dim: cfg.Dim, Degree: cfg.Degree}.B())
	return pairs * b * b
}

// grid reads --level and --degree: lists or ranges of integers.
func (o *pumFlags) grid() (levels, degrees []int, err error) {
	if levels, err = intList("--level", o.levelSpec, 0, 16); err != nil {
		return nil, nil, err
	}
	if degrees, err = intList("--degree", o.degreeSpec, 0, 8); err != nil {
		return nil, nil, err
	}
	return levels, degrees, nil
}

// single reads --level and --degree as one value each.
func (o *pumFlags) single() error {
	ls, ds, err := o.grid()
	if err != nil {
		return err
	}
	if len(ls) != 1 || len(ds) != 1 {
		return usagef("--level %s --degree %s: want one level and one degree", o.levelSpec, o.degreeSpec)
	}
	o.level, o.degree = ls[0], ds[0]
	return nil
}

// intList parses "5", "5-9" or "1,3,5-6" into distinct integers in
// [lo, hi], in the order given.
func intList(flag, s string, lo, hi int) ([]int, error) {
	var out []int
	seen := map[int]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		a, b, isRange := strings.Cut(part, "-")
		x, err1 := strconv.Atoi(strings.TrimSpace(a))
		y, err2 := x, error(nil)
		if isRange {
			y, err2 = strconv.Atoi(strings.TrimSpace(b))
		}
		if err1 != nil || err2 != nil || y < x {
			return nil, usagef("%s %q: want integers, lists or ranges such as 5-9", flag, s)
		}
		if x < lo || y > hi {
			return nil, usagef("%s %q: values outside %d…%d", flag, s, lo, hi)
		}
		for v := x; v <= y; v++ {
			if !seen[v] {
				seen[v] = true
				out = append(out, v)
			}
		}
	}
	return out, nil
}

// config checks the flags (usage errors) and returns the run's problem
// (its shape is left to tuned.Choose: see fixed).
func (o *pumFlags) config() (pumrun.Config, error) {
	cfg := pumrun.Config{Dim: o.dim, Level: o.level, Degree: o.degree, Periodic: o.periodic,
		Coeff: kpum.Coefficients{Name: o.coeff, K: o.kappa, R: o.r}}
	if o.threads < 0 || o.threads > kernel.MaxThreads {
		return cfg, usagef("--threads %d: want 0…%d", o.threads, kernel.MaxThreads)
	}
	if o.tiles < 0 || o.tiles > kpum.MaxTiles {
		return cfg, usagef("--tiles %d: want 0…%d", o.tiles, kpum.MaxTiles)
	}
	if o.mma < -1 || o.mma > kpum.MaxMMA {
		return cfg, usagef("--mma %d: want -1, 0 or a block side up to %d", o.mma, kpum.MaxMMA)
	}
	if o.side < 0 || o.side > kpum.MaxSide {
		return cfg, usagef("--side %d: want 0…%d", o.side, kpum.MaxSide)
	}
	if o.vec < 0 || o.vec > 4 || o.vec == 3 {
		return cfg, usagef("--vec %d: want 0, 1, 2 or 4", o.vec)
	}
	if err := cfg.Coeff.Check(); err != nil {
		return cfg, usagef("%v", err)
	}
	if o.dim != 2 && o.dim != 3 {
		return cfg, usagef("--dim %d: want 2 or 3", o.dim)
	}
	maxL, maxP := pum.MaxLevel2D, pum.MaxDegree2D
	if o.dim == 3 {
		maxL, maxP = pum.MaxLevel3D, pum.MaxDegree3D
	}
	if o.level < 0 || o.level > maxL || (o.periodic && o.level < 2) {
		return cfg, usagef("--level %d: want %d…%d for %d-D (≥ 2 when periodic)", o.level, 0, maxL, o.dim)
	}
	if o.degree < 0 || o.degree > maxP {
		return cfg, usagef("--degree %d: want 0…%d for %d-D", o.degree, maxP, o.dim)
	}
	dt, err := kernel.ParseDType(o.dtype)
	if err != nil {
		return cfg, usagef("--dtype: %v", err)
	}
	cfg.DType = dt
	switch o.integrator {
	case "auto", pumrun.Thread, pumrun.Group:
	default:
		return cfg, usagef("--integrator %q: want auto, thread or group", o.integrator)
	}
	switch o.decompose {
	case pumrun.DecompDevice, pumrun.DecompHost:
		cfg.Decompose = o.decompose
	default:
		return cfg, usagef("--decompose %q: want device or host", o.decompose)
	}
	switch o.layout {
	case "auto", "blocked":
	case "interleaved":
		cfg.Layout = kpum.Interleaved
	default:
		return cfg, usagef("--layout %q: want auto, blocked or interleaved", o.layout)
	}
	return cfg, nil
}

// fixed is the shape the flags set by hand: it replaces the candidates'
// own fields.
func (o *pumFlags) fixed() tuned.Fixed {
	f := tuned.Fixed{Threads: o.threads, Tiles: o.tiles, Side: o.side, Vec: o.vec, MMA: o.mma, PerCell: o.perCell}
	if o.integrator != "auto" {
		f.Integrator = o.integrator
	}
	return f
}

// strategies reads --strategy: the strategies to run, each chosen
// among its own candidates ("" for the tuned best of all).
func (o *pumFlags) strategies() ([]string, error) {
	switch o.strategy {
	case "auto":
		return []string{""}, nil
	case "both":
		return []string{pumrun.Atomic, pumrun.Colour}, nil
	case "all":
		return pumrun.Strategies, nil
	case pumrun.Atomic, pumrun.Colour, pumrun.Fused:
		return []string{o.strategy}, nil
	}
	return nil, usagef("--strategy %q: want auto, atomic, colour, fused, both or all", o.strategy)
}

// openDevice opens the backend and settles the layout for its kind.
func (o *pumFlags) openDevice(cfg *pumrun.Config) (device.Device, error) {
	dev, err := openDevice(o.backend, o.device)
	if err != nil {
		return nil, err
	}
	if o.layout == "auto" && dev.Info().GPU {
		cfg.Layout = kpum.Interleaved
	}
	return dev, nil
}

// pumBenchRow is one timed run.
type pumBenchRow struct {
	Backend  string `json:"backend"`
	Device   string `json:"device"`
	DType    string `json:"dtype"`
	Strategy string `json:"strategy"`
	// Candidate names the shape that ran (tuned.Candidate), Choice where
	// it came from (tuned.FromStore, Measured or Only) and ChoiceDate when
	// the winner was measured.
	Candidate  string  `json:"candidate,omitempty"`
	Choice     string  `json:"choice,omitempty"`
	ChoiceDate string  `json:"choice_measured,omitempty"`
	Layout     string  `json:"layout,omitempty"`
	Integrator string  `json:"integrator,omitempty"`
	Decompose  string  `json:"decompose,omitempty"`
	Merge      int     `json:"merge,omitempty"` // cells the fused kernel takes together (SetOrder's sets)
	Dim        int     `json:"dim"`
	Level      int     `json:"level"`
	Degree     int     `json:"degree"`
	Periodic   bool    `json:"periodic"`
	Coeff      string  `json:"coeff"`
	Patches    int     `json:"patches"`
	DOF        int     `json:"dof"`
	Cells      int     `json:"cells"`
	Points     int     `json:"points"`
	SetupS     float64 `json:"setup_s"`
	DecompS    float64 `json:"decomposition_s"`
	IntegS     float64 `json:"integration_s"`
	AssemS     float64 `json:"assembly_s"`
	DownloadS  float64 `json:"download_s"` // matrix and load to the host; 0 with SystemOnDevice
	TotalS     float64 `json:"total_s"`
	BuildS     float64 `json:"build_s"`
	USPerDOF   float64 `json:"us_per_dof"`
	CellsPerS  float64 `json:"cells_per_s"`
	PointsPerS float64 `json:"points_per_s"`
	ModelGFLOP float64 `json:"model_gflop"`
	GFLOPS     float64 `json:"model_gflops"`
	Reps       int     `json:"reps"`
	// The solve after assembly (--solve): CG with block Jacobi, on the
	// device from its matrix (solve.PCG) or, for the reference, pum.Solve.
	// SolveS is the device time of the iterations (reference: wall time
	// of the whole solve), SolveSetupS that of the factors and first
	// residual; outside TotalS.
	Solved         bool    `json:"solved,omitempty"`
	SolveConverged bool    `json:"solve_converged,omitempty"`
	SolveIters     int     `json:"solve_iterations,omitempty"`
	SolveRelRes    float64 `json:"solve_relres,omitempty"`
	SolveSetupS    float64 `json:"solve_setup_s,omitempty"`
	SolveS         float64 `json:"solve_s,omitempty"`
	// SystemOnDevice: a device solve read the matrix and load where they
	// were assembled, and neither was downloaded (DownloadS 0, the
	// table's "–").
	SystemOnDevice bool `json:"system_on_device,omitempty"`
}

// pumSolveFlags are bench's --solve flags.
type pumSolveFlags struct {
	on      bool
	tol     float64
	maxIter int
}

// check refuses the solve's settings without --solve.
func (f pumSolveFlags) check(cmd *cobra.Command) error {
	if f.on {
		return nil
	}
	for _, name := range []string{"solve-tol", "solve-iter"} {
		if cmd.Flags().Changed(name) {
			return usagef("--%s applies only with --solve", name)
		}
	}
	return nil
}

// config is the solve the flags ask for (nil without --solve): the
// tolerance 1e-10 in f64 and 1e-5 in f32 unless given.
func (f pumSolveFlags) config(dt kernel.DType) (*pumrun.Solve, error) {
	if !f.on {
		return nil, nil
	}
	tol := f.tol
	if tol == 0 {
		tol = map[kernel.DType]float64{kernel.F64: 1e-10, kernel.F32: 1e-5}[dt]
	}
	if !(tol > 0 && tol < 1) {
		return nil, usagef("--solve-tol %g: want 0 < tol < 1", f.tol)
	}
	if f.maxIter < 1 || f.maxIter > 100000 {
		return nil, usagef("--solve-iter %d: want 1…100000", f.maxIter)
	}
	return &pumrun.Solve{Tol: tol, MaxIter: f.maxIter}, nil
}

func pumBenchCmd() *cobra.Command {
	var o pumFlags
	var jsonOut, csvOut, plotOut string
	reps := 1
	sf := pumSolveFlags{maxIter: 10000}
	c := &cobra.Command{
		Use:   "bench",
		Short: "Time the PUM pipeline, tuned for the device, in the thesis's split",
		Long: `bench runs the partition-of-unity pipeline on a uniform cover of [0,1]^d
(α = 1.25, Gauss rule of p+1 points per direction, variable coefficients by
default) and prints the split of Kanis (2013): set-up (cover, space, rule,
uploads; with --decompose device, the default, the patch data and the
matrix pattern made on the device), decomposition (--decompose device:
kernels from the cover's split tables, for colour count and fill with the
prefix sums of a small histogram on the host, otherwise one fill in the
decomposition's order; host: pum.Decompose, binning by active patches,
colour ordering, upload), integration and
assembly (device time of their kernels; assembly includes zeroing the
matrix on the device; with --strategy fused the integration kernels add
into the matrix themselves), and the total; the download of the matrix and
load is reported beside, outside the total (with --solve on a device they
stay there for the solve and are not downloaded: "–"), and so are kernel
builds. Rates: µs per DOF (DOF = N·C(p+d,d), all patches), cells/s and
quadrature points/s over the total, GFLOP/s of the digest's Gram model
(2(d+1)·n_q·n_f² per cell, full product; our kernels compute the upper
triangle) over the integration time. --backend reference times pum's Go
pipeline.
On a device, how the pipeline runs (strategy, integration kernel, team
size, tile shape, tensor cores, merged cells) is a candidate: without
--strategy the tuned best of all candidates runs, read from the tuning
store or, when none is stored for the configuration and device, chosen
now by checking each candidate against the float64 reference at a small
level and timing it at the size asked for, and stored; --strategy
restricts the choice to one strategy, and --threads, --side, --tiles,
--vec, --mma, --integrator and --per-cell fix a field of every candidate.
The table's candidate and choice columns, and a line per row below it,
say which ran and where the choice came from.
With --solve, A u = f is then solved by CG preconditioned with block
Jacobi (Cholesky factors of the diagonal blocks) on the device, from the
matrix and load left there (the reference: pum.Solve), and a second table
gives the iterations, the relative residual, the preconditioner's set-up
and the device time of the iterations.`,
		Example: `  bespoke pum bench --dim 2 --level 9 --degree 1 --backend c
  bespoke pum bench --dim 3 --level 6 --degree 2 --backend cuda --dtype f32 --json pum.json
  bespoke pum bench --dim 2 --level 6 --degree 3 --strategy fused --backend c --solve
  bespoke pum bench --dim 2 --level 7 --strategy all --backend c`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := sf.check(cmd); err != nil {
				return err
			}
			if err := checkFiles(nil, []paths.File{outFile("--json", jsonOut), outFile("--csv", csvOut), outFile("--plot", plotOut)}); err != nil {
				return err
			}
			levels, degrees, err := o.grid()
			if err != nil {
				return err
			}
			sts, err := o.strategies()
			if err != nil {
				return err
			}
			if reps < 1 || reps > 100 {
				return usagef("--reps %d: want 1…100", reps)
			}
			var cfgs []pumrun.Config
			for _, p := range degrees {
				for _, l := range levels {
					o.level, o.degree = l, p
					cfg, err := o.config()
					if err != nil {
						return err
					}
					if cfg.Solve, err = sf.config(cfg.DType); err != nil {
						return err
					}
					// Every size is checked before the first run, so
					// that a grid does not fail after minutes of work.
					if n := uniformEntries(cfg); n > pum.MaxMatrixEntries {
						return usagef("--level %d --degree %d: %d matrix entries exceed MaxMatrixEntries = %d (lower the level or degree)", l, p, n, int64(pum.MaxMatrixEntries))
					}
					cfgs = append(cfgs, cfg)
				}
			}
			// A grid's finished sizes are written on an interrupt; one
			// size has nothing to write and ends at once.
			stopped := func() bool { return false }
			var stop <-chan struct{} // ends a choice being measured
			if len(cfgs) > 1 {
				in := interruptible(cmd, "writing the sizes finished")
				defer in.release()
				stopped, stop = in.interrupted, in.stop
			}
			rows := []pumBenchRow{}
			done := 0
			for _, cfg := range cfgs {
				rs, err := runPUMBench(o, cfg, sts, reps, cmd.ErrOrStderr(), stop)
				if err == nil {
					rows = append(rows, rs...)
					done++
				}
				if stopped() {
					break
				}
				if err != nil {
					return err
				}
			}
			if err := writePUMBench(cmd.OutOrStdout(), rows, jsonOut, csvOut); err != nil {
				return err
			}
			if plotOut != "" {
				if err := plotPUMBench(plotOut, rows); err != nil {
					return err
				}
			}
			if stopped() {
				return fmt.Errorf("interrupted after %d of %d sizes (the rows so far are written)", done, len(cfgs))
			}
			return nil
		},
	}
	o.register(c, kpum.CoeffSmooth, 1, "auto", "auto")
	c.Flags().IntVar(&reps, "reps", 1, "runs per strategy; the run of median total is reported")
	c.Flags().StringVar(&jsonOut, "json", "", "also write the rows as JSON to this file")
	c.Flags().StringVar(&csvOut, "csv", "", "also write the rows as CSV to this file")
	c.Flags().StringVar(&plotOut, "plot", "", "also write an SVG chart of µs per DOF against the level (one line per degree, precision and strategy) to this file")
	c.Flags().BoolVar(&sf.on, "solve", false, "also solve A u = f after assembly by CG with block Jacobi, on the device from the matrix there (the reference: pum.Solve in Go), and report the iterations, the relative residual and the solve time (device time of the iterations), outside the total")
	c.Flags().Float64Var(&sf.tol, "solve-tol", 0, "--solve: relative residual ‖f − A u‖/‖f‖ to reach (0: 1e-10 in f64, 1e-5 in f32)")
	c.Flags().IntVar(&sf.maxIter, "solve-iter", 10000, "--solve: most CG iterations")
	return c
}

// plotPUMBench charts the rows' time per DOF against the level.
func plotPUMBench(path string, rows []pumBenchRow) error {
	var series []report.Series
	at := map[string]int{}
	dev := ""
	for _, r := range rows {
		name := fmt.Sprintf("p=%d %s %s", r.Degree, r.DType, r.Strategy)
		i, ok := at[name]
		if !ok {
			i = len(series)
			at[name] = i
			series = append(series, report.Series{Name: name})
		}
		series[i].X = append(series[i].X, float64(r.Level))
		series[i].Y = append(series[i].Y, r.USPerDOF)
		dev = r.Device
	}
	d := 0
	if len(rows) > 0 {
		d = rows[0].Dim
	}
	return report.LinePlot(path, fmt.Sprintf("PUM assembly, %d-D, end to end (set-up … assembly)\n%s", d, dev), "level", "µs per DOF", true, series)
}

// runPUMBench times one configuration: the reference, or on the device
// each strategy asked for with its chosen candidate (a choice ends early
// once stop closes).
func runPUMBench(o pumFlags, cfg pumrun.Config, sts []string, reps int, progress io.Writer, stop <-chan struct{}) ([]pumBenchRow, error) {
	if o.backend == "reference" {
		out, err := pumrun.BenchReference(cfg, reps)
		if err != nil {
			return nil, err
		}
		cfg.DType = kernel.F64
		return []pumBenchRow{pumRow("reference", "Go float64", "serial", cfg, out, nil, reps)}, nil
	}
	dev, err := o.openDevice(&cfg)
	if err != nil {
		return nil, err
	}
	defer dev.Close()
	var rows []pumBenchRow
	for _, st := range sts {
		c, ch, err := tuned.Resolve(dev, tuned.Instance{Config: cfg, Strategy: st, Fixed: o.fixed(), Progress: progress, Stop: stop}, tune.Open())
		if err != nil {
			return nil, err
		}
		out, err := pumrun.Bench(dev, c, reps)
		if err != nil {
			return nil, err
		}
		rows = append(rows, pumRow(dev.Info().Backend, dev.Info().Name, c.Strategy, c, out, ch, reps))
	}
	return rows, nil
}

func pumRow(backend, devName, strategy string, cfg pumrun.Config, out *pumrun.Outcome, ch *tuned.Choice, reps int) pumBenchRow {
	dof, cells, points := out.Sys.Stats()
	tm := out.Tm
	r := pumBenchRow{Backend: backend, Device: devName, DType: cfg.DType.String(), Strategy: strategy,
		Dim: cfg.Dim, Level: cfg.Level, Degree: cfg.Degree, Periodic: cfg.Periodic, Coeff: cfg.Coeff.Name,
		Patches: out.Sys.Cover.N, DOF: dof, Cells: cells, Points: points,
		SetupS: tm.Setup.Seconds(), DecompS: tm.Decompose.Seconds(), IntegS: tm.Integrate.Seconds(),
		AssemS: tm.Assemble.Seconds(), DownloadS: out.Download.Seconds(), TotalS: tm.Total.Seconds(),
		BuildS: out.Build.Seconds(), ModelGFLOP: out.Sys.ModelFlops() / 1e9, Reps: reps, SystemOnDevice: out.DeviceOnly}
	if backend != "reference" {
		r.Layout = cfg.Layout.String()
		r.Integrator = out.Shape.Integrator
		r.Decompose = cfg.Decompose
		r.Merge = out.Merge
	}
	if ch != nil {
		r.Candidate, r.Choice, r.ChoiceDate = ch.Candidate.Name(), ch.Source, ch.Date
	}
	if t := r.TotalS; t > 0 {
		r.USPerDOF = t / float64(dof) * 1e6
		r.CellsPerS = float64(cells) / t
		r.PointsPerS = float64(points) / t
	}
	if r.IntegS > 0 {
		r.GFLOPS = r.ModelGFLOP / r.IntegS
	}
	if s := out.Solved; s != nil {
		r.Solved, r.SolveConverged, r.SolveIters, r.SolveRelRes = true, s.Converged, s.Iterations, s.Residual
		r.SolveSetupS, r.SolveS = s.Setup.Seconds(), s.Time.Seconds()
	}
	return r
}

// pumChoice says in words where a row's candidate came from.
func pumChoice(r pumBenchRow) string {
	switch r.Choice {
	case tuned.FromStore:
		return fmt.Sprintf("from the tuning store (measured %s; nothing timed for the choice)", r.ChoiceDate)
	case tuned.Measured:
		return "the fastest verified candidate, measured now and stored in the tuning store"
	case tuned.Only:
		return "the only candidate"
	}
	return ""
}

func secs(s float64) string {
	return time.Duration(s * 1e9).Round(time.Microsecond).String()
}

func orNone(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

func writePUMBench(w io.Writer, rows []pumBenchRow, jsonOut, csvOut string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "backend\tdtype\tstrategy\tcandidate\tchoice\td\tlevel\tp\tDOF\tcells\tset-up\tdecomp.\tintegr.\tassembly\tdownload\ttotal\tµs/DOF\tcells/s\tQP/s\tGFLOP/s\t")
	for _, r := range rows {
		download := secs(r.DownloadS)
		if r.SystemOnDevice {
			download = "–"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%.3g\t%.3g\t%.3g\t%.3g\t\n",
			r.Backend, r.DType, r.Strategy, orNone(r.Candidate), orNone(r.Choice), r.Dim, r.Level, r.Degree, r.DOF, r.Cells,
			secs(r.SetupS), secs(r.DecompS), secs(r.IntegS), secs(r.AssemS), download, secs(r.TotalS),
			r.USPerDOF, r.CellsPerS, r.PointsPerS, r.GFLOPS)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "(every patch, natural boundary unless periodic; kernel builds and the download not in the total)")
	for _, r := range rows {
		if r.Candidate != "" {
			fmt.Fprintf(w, "%d-D level %d p = %d %s: ran %s, %s\n", r.Dim, r.Level, r.Degree, r.DType, r.Candidate, pumChoice(r))
		}
	}
	if err := writePUMSolves(w, rows); err != nil {
		return err
	}
	if jsonOut != "" {
		b, err := json.MarshalIndent(rows, "", "  ")
		if err != nil {
			return err
		}
		if err := paths.WriteFile(jsonOut, append(b, '\n')); err != nil {
			return err
		}
	}
	if csvOut != "" {
		return paths.Write(csvOut, func(f io.Writer) error { return writePUMCSV(f, rows) })
	}
	return nil
}

// writePUMCSV writes one row per run.
func writePUMCSV(f io.Writer, rows []pumBenchRow) error {
	cw := csv.NewWriter(f)
	cw.Write(strings.Split("backend,device,dtype,strategy,layout,dim,level,degree,periodic,coeff,patches,dof,cells,points,setup_s,decomposition_s,integration_s,assembly_s,download_s,total_s,build_s,us_per_dof,cells_per_s,points_per_s,model_gflop,model_gflops,integrator,decompose,solve_iterations,solve_relres,solve_setup_s,solve_s,system_on_device,candidate,choice,choice_measured", ","))
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	for _, r := range rows {
		cw.Write([]string{r.Backend, r.Device, r.DType, r.Strategy, r.Layout, strconv.Itoa(r.Dim), strconv.Itoa(r.Level), strconv.Itoa(r.Degree),
			strconv.FormatBool(r.Periodic), r.Coeff, strconv.Itoa(r.Patches), strconv.Itoa(r.DOF), strconv.Itoa(r.Cells), strconv.Itoa(r.Points),
			g(r.SetupS), g(r.DecompS), g(r.IntegS), g(r.AssemS), g(r.DownloadS), g(r.TotalS), g(r.BuildS),
			g(r.USPerDOF), g(r.CellsPerS), g(r.PointsPerS), g(r.ModelGFLOP), g(r.GFLOPS), r.Integrator, r.Decompose,
			strconv.Itoa(r.SolveIters), g(r.SolveRelRes), g(r.SolveSetupS), g(r.SolveS), strconv.FormatBool(r.SystemOnDevice), r.Candidate, r.Choice, r.ChoiceDate})
	}
	cw.Flush()
	return cw.Error()
}

// writePUMSolves prints the rows' solves (--solve), if any, as a second
// table.
func writePUMSolves(w io.Writer, rows []pumBenchRow) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := false
	for _, r := range rows {
		if !r.Solved {
			continue
		}
		if !header {
			fmt.Fprintln(w, "\nsolve (CG, block Jacobi; device time of the iterations, outside the total):")
			fmt.Fprintln(tw, "backend\tdtype\tstrategy\td\tlevel\tp\tDOF\titerations\trel. residual\tconverged\tset-up\tsolve\tper iteration\t")
			header = true
		}
		per := "–"
		if r.SolveIters > 0 {
			per = secs(r.SolveS / float64(r.SolveIters))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%.3g\t%v\t%s\t%s\t%s\t\n", r.Backend, r.DType, r.Strategy, r.Dim, r.Level, r.Degree, r.DOF,
			r.SolveIters, r.SolveRelRes, r.SolveConverged, secs(r.SolveSetupS), secs(r.SolveS), per)
	}
	return tw.Flush()
}

func pumAssembleCmd() *cobra.Command {
	var o pumFlags
	var out, rhs, maxMemory, maxOutput string
	c := &cobra.Command{
		Use:   "assemble",
		Short: "Assemble the PUM stiffness matrix (MatrixMarket) and load vector (.npy)",
		Long: `assemble builds A_{(i,n),(j,m)} = ∫ κ∇(φ_iψ_i^n)·∇(φ_jψ_j^m) + r φ_iψ_i^n φ_jψ_j^m and
f_{(i,n)} = ∫ f φ_iψ_i^n on the uniform cover of [0,1]^d at the level (α = 1.25,
natural boundary or --periodic) and writes A as a MatrixMarket coordinate
matrix (every stored block entry) and, with --rhs, f as a float64 .npy of
shape (DOF, 1). DOFs are patch-major (patches numbered x-fastest), and
within a patch the Legendre products ordered by total degree, ψ⁰ ≡ 1 first.
--backend reference assembles in float64 Go; a device backend runs the
integration and assembly kernels (in --dtype, widened to float64).`,
		Example: `  bespoke pum assemble --dim 2 --level 3 --degree 2 --kappa 1 --r 1 -o A.mtx --rhs f.npy
  bespoke pum assemble --dim 3 --level 2 --degree 1 --periodic --backend c -o A.mtx`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return usagef("-o: the MatrixMarket file to write is required")
			}
			if err := checkFiles(nil, []paths.File{outFile("-o", out), outFile("--rhs", rhs)}); err != nil {
				return err
			}
			if err := o.single(); err != nil {
				return err
			}
			cfg, err := o.config()
			if err != nil {
				return err
			}
			if err := assembleLimits(cfg, maxMemory, maxOutput); err != nil {
				return err
			}
			var res *pumrun.Outcome
			if o.backend == "reference" {
				res, err = pumrun.Reference(cfg)
			} else {
				if o.strategy != pumrun.Atomic && o.strategy != pumrun.Colour && o.strategy != pumrun.Fused {
					return usagef("--strategy %q: want atomic, colour or fused", o.strategy)
				}
				var dev device.Device
				if dev, err = o.openDevice(&cfg); err != nil {
					return err
				}
				defer dev.Close()
				c, ch, err := tuned.Resolve(dev, tuned.Instance{Config: cfg, Strategy: o.strategy, Fixed: o.fixed(), Progress: cmd.ErrOrStderr()}, tune.Open())
				if err != nil {
					return err
				}
				// Said once it has run: an interrupted run says only that.
				if res, err = pumrun.OnDevice(dev, c); err == nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "bespoke: note: ran %s\n", ch.Describe())
				}
			}
			if err != nil {
				return err
			}
			if o.r == 0 {
				// The default: say so, as a solver given A would fail.
				fmt.Fprintln(cmd.ErrOrStderr(), "bespoke: note: with --r 0 and natural (or periodic) boundaries A is singular (the constants are in its null space); --r > 0 makes it definite")
			}
			return writePUMSystem(cmd.OutOrStdout(), res.Sys, o, out, rhs)
		},
	}
	o.register(c, kpum.CoeffConst, 0, "reference", pumrun.Atomic)
	c.Flags().StringVarP(&out, "out", "o", "", "MatrixMarket file for A")
	c.Flags().StringVar(&rhs, "rhs", "", "also write the load vector f as .npy")
	c.Flags().StringVar(&maxMemory, "max-memory", "8G", "the most memory the assembled matrix may take, e.g. 16G")
	c.Flags().StringVar(&maxOutput, "max-output", "4G", "the largest MatrixMarket file to write, e.g. 20G")
	return c
}

// assembleLimits refuses, before any work, a matrix that would take more
// memory than maxMemory or a MatrixMarket file larger than maxOutput.
func assembleLimits(cfg pumrun.Config, maxMemory, maxOutput string) error {
	mem, err := parseBytes("--max-memory", maxMemory)
	if err != nil {
		return err
	}
	outMax, err := parseBytes("--max-output", maxOutput)
	if err != nil {
		return err
	}
	entries := uniformEntries(cfg)
	what := fmt.Sprintf("--dim %d --level %d --degree %d", cfg.Dim, cfg.Level, cfg.Degree)
	if entries > pum.MaxMatrixEntries {
		return usagef("%s: %d matrix entries exceed MaxMatrixEntries = %d (lower the level or degree)", what, entries, int64(pum.MaxMatrixEntries))
	}
	if need := entries * 8; need > mem {
		return fmt.Errorf("%s: the matrix takes at least %.1f GB (%d entries), more than --max-memory %s allows (raise it with --max-memory)", what, float64(need)/1e9, entries, maxMemory)
	}
	// A line per entry: two indices and a value of 17 digits (about 23
	// characters; exact zeros fewer).
	n := int64(1) << cfg.Level
	dof := int64(kpum.Spec{Dim: cfg.Dim, Degree: cfg.Degree}.B())
	for range cfg.Dim {
		dof *= n
	}
	if size := entries * int64(2*len(strconv.FormatInt(dof, 10))+3+20); size > outMax {
		return fmt.Errorf("%s: the MatrixMarket file would take about %.1f GB (%d entries), more than --max-output %s allows (raise it with --max-output)", what, float64(size)/1e9, entries, maxOutput)
	}
	return nil
}

func writePUMSystem(w io.Writer, sys *pum.System, o pumFlags, out, rhs string) error {
	note := []string{
		fmt.Sprintf("bespoke pum assemble: dim %d, level %d, degree %d, alpha %g, periodic %v, coeff %s K=%g R=%g, backend %s %s",
			o.dim, o.level, o.degree, sys.Cover.Alpha, o.periodic, o.coeff, o.kappa, o.r, o.backend, o.dtype),
		fmt.Sprintf("DOF (i,n) = i*%d + n: patches x-fastest, Legendre products by total degree, psi^0 = 1 first", sys.Space.B),
	}
	if err := paths.Write(out, func(f io.Writer) error { return pum.WriteMatrixMarket(f, sys.A, note...) }); err != nil {
		return err
	}
	if rhs != "" {
		if err := paths.Write(rhs, func(g io.Writer) error { return npy.WriteMatrix(g, len(sys.F), 1, sys.F) }); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "wrote %s: %d×%d, %d stored entries (%d patches, %d functions each, %d cells)\n",
		out, sys.A.N*sys.A.B, sys.A.N*sys.A.B, len(sys.A.Val), sys.Cover.N, sys.Space.B, sys.Dec.NCells)
	return nil
}
