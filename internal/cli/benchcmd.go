package cli

import (
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/bespoke-hpc/bespoke/baseline"
	"github.com/bespoke-hpc/bespoke/bench"
	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/internal/paths"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/kernel/family/registry"
	"github.com/bespoke-hpc/bespoke/report"
	"github.com/bespoke-hpc/bespoke/tune"
)

type benchOptions struct {
	problemFlags
	backend, device, variants              string
	n, reps, warmup, rounds, readmit       int
	workingSet                             int64
	jsonOut, csvOut, goOut, plotDir, mdOut string
	maxMemory, workingSetFlag              string
	noBaselines, quiet, retune, noStore    bool
	commit                                 string
	pruneFlag                              string
	prune, screen                          float64
	choices                                bool // tune: print the choices, not every candidate
}

func benchCmd() *cobra.Command { return timingCmd(false) }

func tuneCmd() *cobra.Command { return timingCmd(true) }

// timingCmd is bench, or tune (choices): the same measurement, reported
// candidate by candidate or as each problem's choice.
func timingCmd(choices bool) *cobra.Command {
	o := benchOptions{choices: choices}
	c := &cobra.Command{
		Use:   "bench [FILE|DIR...]",
		Short: "Verify and time every candidate kernel against the memory roof (and cuBLAS/cuSPARSE on CUDA, OpenBLAS on C)",
		Long: `bench times every candidate kernel for each problem on one device: data stay on
the device, copies of the arrays are rotated so each timed launch touches
--working-set bytes, and the median of --reps launches is reported after
--warmup launches. Each candidate is first verified against a float64 reference
at sampled outputs. The roof is the best bandwidth of two streaming kernels (a
copy and an in-place update) over the same working set, measured before every
problem in the same run: % roof = (ideal bytes / roof bandwidth) / time.

With no operator files it runs the built-in suite (` + DefaultSuite + `: PyFR's hex p3
operators m0, m3, m6, m132, m460 with β = 1 for m3 and m6).`,
		Example: `  bespoke bench
  bespoke bench ../shared/pyfr-mats/p3/hex --backend c --json out.json
  bespoke bench --suite hex:p1-6,quad:p1-6 --backend cuda --dtype f32 --csv out.csv --plot plots/`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ps, err := o.problems(args)
			if err != nil {
				return err
			}
			if err := o.validate(); err != nil {
				return err
			}
			if err := checkFiles(inputFiles("file", append(args, o.sources()...)...), o.outputs()); err != nil {
				return err
			}
			return onTimingDevice(cmd, o.backend, o.device, func(dev device.Device, stop <-chan struct{}) error {
				return runBench(cmd.OutOrStdout(), cmd.ErrOrStderr(), dev, ps, o, stop)
			})
		},
	}
	f := c.Flags()
	o.register(f, registry.Options{Suites: true})
	f.StringVar(&o.backend, "backend", "auto", "auto (a GPU through CUDA, else through OpenCL; a CPU through C, or OpenCL without a C compiler), cuda, opencl or c")
	f.StringVar(&o.device, "device", "", "device within the backend (CUDA ordinal; OpenCL P:D or name)")
	f.StringVar(&o.variants, "variant", "", "variants to time, comma-separated (default: every candidate for the device)")
	f.IntVar(&o.n, "n", 0, "size (default per family: "+sizesHelp(false)+")")
	f.IntVar(&o.reps, "reps", 30, "timed launches per candidate (the median is reported)")
	f.IntVar(&o.warmup, "warmup", 5, "untimed launches before timing")
	f.IntVar(&o.rounds, "rounds", bench.DefaultRounds, "rounds in which the candidates timed in full take turns, so that all see the same clocks (at most --reps; 1: each timed in one go)")
	f.IntVar(&o.readmit, "readmit", bench.DefaultReadmit, "the most pruned candidates a problem builds after all where the kept ones run slower than those were predicted to (0: none)")
	f.StringVar(&o.workingSetFlag, "working-set", "", "bytes each timed launch should touch, rotating copies of the arrays, e.g. 256M (default: 1G on GPUs, 512M on CPUs, or 8 (GPU) and 3 (CPU) times the last-level cache when that is more)")
	f.StringVar(&o.maxMemory, "max-memory", "", "device memory the bench may allocate, e.g. 16G (default: 60 % of the device's, at most 8G on CPUs)")
	f.StringVar(&o.jsonOut, "json", "", "write the full report as JSON to this file (- for stdout)")
	f.StringVar(&o.csvOut, "csv", "", "write one CSV row per candidate to this file")
	f.StringVar(&o.goOut, "gobench", "", "write Go benchmark format (for benchstat) to this file")
	f.StringVar(&o.plotDir, "plot", "", "write SVG charts to this folder")
	f.StringVar(&o.mdOut, "markdown", "", "write Markdown tables (as in docs/performance.md) to this file")
	f.BoolVar(&o.noBaselines, "no-baselines", false, "skip the vendor libraries (cuBLAS/cuSPARSE on CUDA, OpenBLAS on C)")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no progress bar")
	f.StringVar(&o.commit, "commit", "", "commit to record (default: git rev-parse of the working folder, if any)")
	f.BoolVar(&o.retune, "retune", false, "measure problems whose choice the tuning store holds, and store the new one")
	f.BoolVar(&o.noStore, "no-store", false, "neither reuse nor record choices in the tuning store")
	f.Float64Var(&o.screen, "screen", bench.DefaultScreen, "time in full only the candidates whose screening time is within this factor of the best (0: time every candidate in full)")
	f.StringVar(&o.pruneFlag, "prune", "auto", "do not build candidates the cost model predicts over this factor slower than its best prediction (auto: 1.2 on GPUs, 2 on CPUs; 0: build and time all, a full search); see --readmit")
	if choices {
		c.Use = "tune [FILE|DIR...]"
		c.Short = "Choose each problem's fastest kernel (or vendor library) on a device, and remember the choice"
		c.Long = `tune measures, for each problem, every candidate kernel and the vendor libraries
(cuBLAS and cuSPARSE on CUDA, OpenBLAS on C) as bench does, and keeps the fastest verified one
in the tuning store (the user cache folder, or BESPOKE_CACHE_DIR), keyed by the
problem's content and size class, the device, its driver and compiler, and
bespoke's generation of kernels. A problem already there is not measured again
(--retune measures it anew); gen --best writes the chosen kernel.`
		c.Example = `  bespoke tune ../shared/pyfr-mats --backend cuda --dtype f64
  bespoke tune --suite hex:p1-6 --retune --json choices.json
  bespoke gen ../shared/pyfr-mats/p3/hex/m6-sp.mtx --best --backend cuda`
	}
	return c
}

// validate checks the flags before any work.
func (o *benchOptions) validate() error {
	switch {
	case o.n < 0:
		return usagef("--n %d: want a positive size (or 0 for the default)", o.n)
	case o.reps < 1:
		return usagef("--reps %d: want at least 1 timed launch", o.reps)
	case o.warmup < 0:
		return usagef("--warmup %d: want 0 or more", o.warmup)
	case o.rounds < 1:
		return usagef("--rounds %d: want at least 1", o.rounds)
	case o.readmit < 0:
		return usagef("--readmit %d: want 0 (none) or more", o.readmit)
	case math.IsNaN(o.screen) || math.IsInf(o.screen, 0) || o.screen < 0 || (o.screen > 0 && o.screen < 1):
		return usagef("--screen %g: want 0 (no screening) or a factor of at least 1", o.screen)
	}
	switch o.pruneFlag {
	case "auto", "":
		o.prune = 0 // the model's factor for the device
	default:
		f, err := strconv.ParseFloat(o.pruneFlag, 64)
		switch {
		case err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || (f > 0 && f < 1):
			return usagef("--prune %q: want auto, 0 (no pruning) or a factor of at least 1", o.pruneFlag)
		case f == 0:
			o.prune = -1 // a full search
		default:
			o.prune = f
		}
	}
	if o.workingSetFlag != "" {
		ws, err := parseBytes("--working-set", o.workingSetFlag)
		if err != nil {
			return err
		}
		o.workingSet = ws
	}
	if o.maxMemory != "" {
		mm, err := parseBytes("--max-memory", o.maxMemory)
		if err != nil {
			return err
		}
		if mm < minMaxMemory {
			return usagef("--max-memory %q: want at least 1M", o.maxMemory)
		}
	}
	return nil
}

// minMaxMemory is the least --max-memory: below it nothing is timed.
const minMaxMemory = 1 << 20

func runBench(stdout, stderr io.Writer, dev device.Device, ps []family.Problem, o benchOptions, stop <-chan struct{}) error {
	if len(ps) == 0 {
		return usagef("no problem to time")
	}
	if err := o.validate(); err != nil {
		return err
	}
	info := dev.Info()
	cfg := bench.Config{Units: o.n, Reps: o.reps, Warmup: o.warmup, WorkingSet: o.workingSet}
	if o.warmup == 0 {
		cfg.Warmup = -1 // none, as asked
	}
	gpu := info.GPU
	if cfg.Units == 0 {
		cfg.Units, cfg.MinLaunchBytes, cfg.MaxUnits = o.benchSizes(gpu)
	}
	if cfg.WorkingSet == 0 {
		// Several times the last-level cache, so that rotated copies
		// come from memory (a cloud CPU's L3 can be hundreds of MiB).
		cfg.WorkingSet = max(512<<20, 3*info.LastCacheBytes)
		if gpu {
			cfg.WorkingSet = max(1<<30, 8*info.LastCacheBytes)
		}
	}
	cfg.MaxMemory = 8 << 30
	if info.MemoryBytes > 0 {
		cfg.MaxMemory = info.MemoryBytes * 6 / 10
		if !gpu {
			cfg.MaxMemory = min(cfg.MaxMemory, 8<<30)
		}
	}
	if o.maxMemory != "" {
		mm, err := parseBytes("--max-memory", o.maxMemory)
		if err != nil {
			return err
		}
		cfg.MaxMemory = mm
	}
	// Sizes beyond the memory allowed are refused before anything is
	// built or drawn.
	if err := bench.CheckMemory(cfg, ps); err != nil {
		return err
	}
	var err error
	if cfg.Variants, err = parseList(o.variants, func(s string) (string, error) { return s, nil }); err != nil {
		return err
	}
	if o.variants != "" && len(cfg.Variants) == 0 {
		return usagef("--variant %q names no variant", o.variants)
	}
	if len(cfg.Variants) > 0 {
		// A name no family reads is one usage error before anything is
		// measured (the instances of a small size only parse names).
		var ins []family.Instance
		for _, p := range ps {
			if in, err := p.Checks(1); err == nil {
				ins = append(ins, in...)
			}
		}
		if err := checkVariantNames(ins, cfg.Variants); err != nil {
			return err
		}
	}
	fam, _ := o.entry() // problems refused an unknown family already
	// A race without the vendor libraries a family has chooses nothing to
	// keep; a family without any keeps its choice.
	if !o.noStore && !(fam.Baselines && o.noBaselines) {
		cfg.Store, cfg.Retune = tune.Open(), o.retune
	}
	cfg.Prune, cfg.Screen, cfg.Rounds, cfg.Readmit = o.prune, o.screen, o.rounds, o.readmit
	if o.readmit == 0 {
		cfg.Readmit = -1 // none
	}
	if o.screen == 0 {
		cfg.Screen = -1 // every candidate timed in full
	}
	cfg.Warn = func(s string) { fmt.Fprintln(stderr, "bespoke: warning:", s) }
	cfg.Commit = o.commit
	if cfg.Commit == "" {
		cfg.Commit = gitCommit()
	}
	if fam.Baselines && !o.noBaselines {
		rivals, closeAll := baseline.ForGEMM(dev, func(s string) { fmt.Fprintln(stderr, "bespoke: warning:", s) })
		defer closeAll()
		for _, r := range rivals {
			cfg.Baselines = append(cfg.Baselines, r)
			if d, ok := r.(interface{ Describe() string }); ok && !o.quiet {
				fmt.Fprintf(stderr, "bespoke: baseline %s: %s\n", r.Name(), d.Describe())
			}
		}
	}
	if !o.noBaselines {
		// The compute side of the roofline: the vendor BLAS's large GEMM.
		if probe, err := baseline.ForCompute(dev); err != nil {
			fmt.Fprintln(stderr, "bespoke: warning: the compute roof is not measured:", err)
		} else if probe != nil {
			cfg.Compute = probe
			defer probe.Close()
		}
	}
	if f, ok := stderr.(*os.File); !o.quiet && !(ok && term.IsTerminal(int(f.Fd()))) {
		// Not a terminal (a log file, CI): one timestamped line per step.
		// Builds report from other goroutines (Notes) between the steps.
		start := time.Now()
		var mu sync.Mutex
		cfg.Progress = func(step string) {
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(stderr, "bench: %7.1fs %s\n", time.Since(start).Seconds(), step)
		}
		cfg.Notes = cfg.Progress
	} else if ok && !o.quiet {
		bar := progressbar.NewOptions(len(ps)+1, progressbar.OptionSetWriter(stderr), progressbar.OptionClearOnFinish(),
			progressbar.OptionSetDescription("bench"), progressbar.OptionShowCount())
		last := ""
		cfg.Progress = func(step string) {
			name, _, _ := strings.Cut(step, ":")
			if name != last {
				bar.Add(1)
				last = name
			}
			bar.Describe(step)
		}
		defer bar.Finish()
	}
	// An interrupt (Ctrl-C, or SIGTERM from a time limit) ends the run
	// at the next candidate and still writes what was measured.
	cfg.Stop = stop
	rep, err := bench.Run(dev, ps, cfg)
	if err != nil {
		return err
	}
	rep.Commit = cfg.Commit
	if err := writeOutputs(stdout, rep, o); err != nil {
		return err
	}
	if rep.Interrupted {
		return fmt.Errorf("interrupted after %d of %d problems (the results so far are written)", len(rep.Problems), len(ps))
	}
	timed := 0
	for _, p := range rep.Problems {
		if p.Err != "" {
			return fmt.Errorf("%s: %s", p.Name, p.Err)
		}
		for _, c := range p.Candidates {
			if c.Err != "" && strings.HasPrefix(c.Err, "wrong result") {
				return fmt.Errorf("%s: %s gave a wrong result", p.Name, c.Name)
			}
			if c.Verified && c.Kind == "bespoke" {
				timed++
			}
		}
	}
	if timed == 0 {
		return fmt.Errorf("no candidate was verified and timed")
	}
	return nil
}

func writeOutputs(stdout io.Writer, rep *bench.Report, o benchOptions) error {
	if o.jsonOut != "-" {
		table := report.WriteTable
		if o.choices {
			table = report.WriteChoices
		}
		if err := table(stdout, rep); err != nil {
			return err
		}
	}
	write := func(path string, f func(io.Writer, *bench.Report) error) error {
		if path == "" {
			return nil
		}
		if path == "-" {
			return f(stdout, rep)
		}
		return paths.Write(path, func(w io.Writer) error { return f(w, rep) })
	}
	if err := write(o.jsonOut, report.WriteJSON); err != nil {
		return err
	}
	if err := write(o.csvOut, report.WriteCSV); err != nil {
		return err
	}
	if err := write(o.goOut, report.WriteGoBench); err != nil {
		return err
	}
	if err := write(o.mdOut, report.WriteMarkdown); err != nil {
		return err
	}
	if o.plotDir != "" {
		return report.Plot(rep, o.plotDir)
	}
	return nil
}

// gitCommit returns the short commit the binary was built from (Go's
// build information, "-dirty" when the tree had changes), else that of
// the working folder, or "". The binary's own comes first: a run on
// another machine with a copy of the tree (the GPU machine) may see a
// stale checkout there.
func gitCommit() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		var rev, dirty string
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = "-dirty"
				}
			}
		}
		if len(rev) >= 7 {
			return rev[:7] + dirty
		}
	}
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// onTimingDevice opens the backend's device for a timing run and runs f
// with the channel an interrupt closes. A device with compilations still
// running when interrupted is left open: the process is ending.
func onTimingDevice(cmd *cobra.Command, backend, sel string, f func(device.Device, <-chan struct{}) error) error {
	in := interruptible(cmd, "writing the results so far")
	defer in.release()
	dev, err := openDevice(backend, sel)
	if err != nil {
		return err
	}
	defer func() {
		if !in.interrupted() {
			dev.Close()
		}
	}()
	return f(dev, in.stop)
}
