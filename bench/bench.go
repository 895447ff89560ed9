package bench

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/bespoke-hpc/bespoke/build"
	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/tune"
)

// Config says what to time and how.
type Config struct {
	// Units is the least size a problem is timed at (columns,
	// elements …); MinLaunchBytes, when positive, raises it for a problem
	// until one launch moves at least this many ideal bytes (up to
	// MaxUnits, in whole multiples of 1024), so that small problems are
	// timed where bandwidth, not launch latency and the tail of the grid,
	// bounds them.
	Units          int
	MinLaunchBytes int64
	MaxUnits       int
	Warmup         int   // untimed launches before timing (0: 5; negative: none)
	Reps           int   // timed launches, the median reported (0: 30)
	WorkingSet     int64 // bytes each timed launch should touch across rotated sets
	MaxMemory      int64 // most device memory to allocate at once
	// Variants names the candidates to time; nil: every candidate the
	// family offers for the device (tune.Candidates).
	Variants  []string
	Baselines []Baseline // vendor libraries timed side by side
	// Compute, when set, measures the attainable arithmetic rate before
	// the first problem (a vendor library's large GEMM), so that each
	// candidate is also reported against the roofline: the lesser of the
	// memory roof and that rate.
	Compute  ComputeProbe
	Progress func(step string) // each step of the timing loop, from one goroutine
	// Notes, when set, hears about background work (builds over 10 s); it
	// may be called from several goroutines at once.
	Notes func(note string)
	// Warn, when set, hears what the user must know although the run
	// goes on (a stored choice found stale and measured again, a choice
	// not stored); one line each.
	Warn func(warning string)
	// Stop, when closed, ends the run after the problem in progress; the
	// report then holds the problems done so far (Report.Interrupted).
	Stop <-chan struct{}
	// Store, when set, keeps each problem's measurement and choice
	// (under tune.Key of its instance on the device): a problem found
	// there is reported from it, with no candidate built or timed, unless
	// Retune; a run restricted to some Variants neither reuses nor
	// records. Leave it nil for a run without the usual baselines.
	Store  *tune.Store
	Retune bool
	// Commit is recorded with the choices stored.
	Commit string
	// Screen is the screening margin: candidates whose screening time is
	// over Screen times the best of their kind (bespoke, baseline) are not
	// timed in full (0: DefaultScreen;
	// negative: every verified candidate is timed in full).
	Screen float64
	// Prune is the cost model's pruning factor: a candidate whose
	// predicted time (tune.Estimate) is over Prune times the problem's
	// best prediction is not built (0: the model's factor for the device,
	// tune.Machine.Prune; negative: every candidate is built and timed, a
	// full search that still records what the model would have kept at
	// its factor). Runs restricted to Variants never prune.
	Prune float64
	// Readmit is the most pruned candidates a problem builds after all
	// when its kept candidates ran slower than those were predicted to
	// (see readmit; 0: DefaultReadmit; negative: none).
	Readmit int
	// Rounds is how many rounds the candidates timed in full take turns
	// in (Runner.timeRounds; 0: DefaultRounds; 1: each timed once, in
	// turn).
	Rounds int
	// BuildWorkers bounds the compilations in flight ahead of timing (0:
	// all CPUs, or all but two on a GPU, whose timing runs beside them).
	BuildWorkers int
}

// Baseline is a library implementation timed beside the generated kernels.
type Baseline interface {
	Name() string
	// Setup prepares the baseline for an instance; applies is false when
	// the library does not compute what the instance does (another
	// family). The returned function runs it on one set of the
	// workload's arrays, by name.
	Setup(in family.Instance, w *family.Workload) (run func(arrays map[string]device.Buffer) error, applies bool, err error)
}

func (c *Config) defaults() {
	if c.Warmup == 0 {
		c.Warmup = 5
	}
	c.Warmup = max(c.Warmup, 0)
	if c.Reps <= 0 {
		c.Reps = 30
	}
	if c.Screen == 0 {
		c.Screen = DefaultScreen
	}
	if c.Rounds <= 0 {
		c.Rounds = DefaultRounds
	}
	if c.Readmit == 0 {
		c.Readmit = DefaultReadmit
	}
	if c.WorkingSet <= 0 {
		c.WorkingSet = 1 << 30
	}
	if c.MaxMemory <= 0 {
		c.MaxMemory = 8 << 30
	}
	if c.Progress == nil {
		c.Progress = func(string) {}
	}
	if c.Notes == nil {
		c.Notes = func(string) {}
	}
	if c.Warn == nil {
		c.Warn = func(string) {}
	}
}

// DefaultRounds is Config.Rounds' default: six launches a round at the
// default 30.
const DefaultRounds = 5

// periods are the lengths of the fill tables, one per array of a
// workload: primes, so that the patterns line up with no row of any
// leading dimension nor with each other.
var periods = []int{4093, 4091, 4079, 4073, 4057, 4051, 4049, 4027, 4021, 4019, 4013, 4007}

// Runner holds a device and the helper kernels for one precision.
type Runner struct {
	dev     device.Device
	cfg     Config
	dt      kernel.DType
	roofGBs float64 // the first roof measured, for the cost model
	// aux is the helper kernels' program, holding the fill tables
	// ("tab0" …, periods[i] random values each) and "nan" (one NaN).
	aux                          *build.Program
	fill, copyK, updateK, gather string // the helper kernels' names
	hostTab                      [][]float64
}

// NewRunner builds the helper kernels and the fill tables for dt.
func NewRunner(dev device.Device, dt kernel.DType, cfg Config) (*Runner, error) {
	cfg.defaults()
	r := &Runner{dev: dev, cfg: cfg, dt: dt}
	ks := []*kernel.Kernel{fillKernel(dt), copyKernel(dt), gatherKernel(dt), updateKernel(dt)}
	var err error
	if r.aux, err = build.NewProgram(dev, ks...); err != nil {
		return nil, fmt.Errorf("building helper kernels: %w", err)
	}
	r.fill, r.copyK, r.gather, r.updateK = ks[0].Name, ks[1].Name, ks[2].Name, ks[3].Name
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	for i, p := range periods {
		t := make([]float64, p)
		for i := range t {
			t[i] = dt.Rounded((0.5 + rng.Float64()) * float64(1-2*rng.IntN(2)))
		}
		if _, err := r.aux.Upload(tabName(i), dt.Encode(t)); err != nil {
			r.Close()
			return nil, err
		}
		r.hostTab = append(r.hostTab, t)
	}
	if _, err = r.aux.Upload("nan", dt.Encode([]float64{math.NaN()})); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// tabName names fill table i in the helper program.
func tabName(i int) string { return "tab" + strconv.Itoa(i) }

// Close frees the runner's buffers and programs.
func (r *Runner) Close() {
	if r.aux != nil {
		r.aux.Close()
	}
}

// auxStep binds a helper kernel over n elements to the buffers given.
func (r *Runner) auxStep(kernel string, n int64, values map[string]int64, bufs map[string]device.Buffer) (*build.Step, error) {
	vals := map[string]int64{"n": n}
	for k, v := range values {
		vals[k] = v
	}
	return r.aux.Bind(kernel, build.With{Values: vals, Use: bufs})
}

// launchAux runs a helper kernel over n elements.
func (r *Runner) launchAux(kernel string, n int64, values map[string]int64, bufs map[string]device.Buffer) error {
	st, err := r.auxStep(kernel, n, values, bufs)
	if err != nil {
		return err
	}
	return r.aux.Run(st)
}

// fillFrom writes n elements of x from table t (or NaN when t < 0).
func (r *Runner) fillFrom(t int, x device.Buffer, n int64) error {
	if t < 0 {
		return r.launchAux(r.fill, n, map[string]int64{"period": 1}, map[string]device.Buffer{"x": x, "tab": r.aux.Buffer("nan")})
	}
	return r.launchAux(r.fill, n, map[string]int64{"period": int64(periods[t])}, map[string]device.Buffer{"x": x, "tab": r.aux.Buffer(tabName(t))})
}

// Timing is the distribution of one candidate's launch times.
type Timing struct {
	Median time.Duration `json:"median_ns"`
	Min    time.Duration `json:"min_ns"`
	Max    time.Duration `json:"max_ns"`
	Reps   int           `json:"reps"`
}

// time runs launch(set) warmup times, then reps times rotating sets, and
// returns the distribution of the timed launches.
func (r *Runner) time(sets int, launch func(set int) error) (Timing, error) {
	ds, err := r.series(sets, launch, r.cfg.Warmup, r.cfg.Reps, 0)
	if err != nil {
		return Timing{}, err
	}
	return timing(ds)
}

// series runs launch warmup times (sets 0, 1, …), then the last warm-up's
// set untimed as a lead-in, then reps timed launches rotating over the
// sets from set first, and returns the timed launches' durations.
func (r *Runner) series(sets int, launch func(set int) error, warmup, reps, first int) ([]time.Duration, error) {
	for i := 0; i < warmup; i++ {
		if err := launch(i % sets); err != nil {
			return nil, err
		}
	}
	if err := r.dev.Sync(); err != nil {
		return nil, err
	}
	last := max(warmup-1, 0) % sets
	return device.ElapsedSeries(r.dev, reps, func(i int) error {
		if i == 0 {
			return launch(last)
		}
		return launch((first + i - 1) % sets)
	})
}

// timing is the distribution of the durations ds.
func timing(ds []time.Duration) (Timing, error) {
	if len(ds) == 0 {
		return Timing{}, errors.New("bench: no launches timed (reps must be at least 1)")
	}
	ds = slices.Clone(ds)
	slices.Sort(ds)
	med := ds[len(ds)/2]
	if len(ds)%2 == 0 {
		med = (ds[len(ds)/2-1] + ds[len(ds)/2]) / 2
	}
	return Timing{Median: med, Min: ds[0], Max: ds[len(ds)-1], Reps: len(ds)}, nil
}

// timeRounds times several launches side by side: Config.Reps launches
// each, in Config.Rounds rounds that take every launch in turn (forwards,
// then backwards), so that each sees the same states of the device. A
// GPU's clocks fall under its power cap within a second of dense kernels,
// so that whatever is timed last pays for the others
// (docs/rationale.md#timing-in-rounds). The
// first round warms each launch up Config.Warmup times, later rounds
// once. stop, when it returns true, ends the timing (the results so far
// are partial). errs[i] is launch i's error; its timing is then empty.
func (r *Runner) timeRounds(sets int, launches []func(set int) error, stop func() bool) (ts []Timing, errs []error, stopped bool) {
	rounds := min(max(r.cfg.Rounds, 1), r.cfg.Reps)
	ds := make([][]time.Duration, len(launches))
	errs = make([]error, len(launches))
	done := 0 // timed launches per candidate so far
	for round := 0; round < rounds; round++ {
		reps := r.cfg.Reps*(round+1)/rounds - done
		warmup := r.cfg.Warmup
		if round > 0 {
			warmup = 1
		}
		for j := range launches {
			i := j
			if round%2 == 1 {
				i = len(launches) - 1 - j
			}
			if errs[i] != nil {
				continue
			}
			if stop() {
				return nil, errs, true
			}
			got, err := r.series(sets, launches[i], warmup, reps, done)
			if err != nil {
				errs[i] = err
				continue
			}
			ds[i] = append(ds[i], got...)
		}
		done += reps
	}
	ts = make([]Timing, len(launches))
	for i := range launches {
		if errs[i] == nil {
			ts[i], errs[i] = timing(ds[i])
		}
	}
	return ts, errs, false
}

// Roof times the streaming kernels (a copy, and an in-place update) over
// the configured working set and returns the faster one's bandwidth in
// GB/s (bytes read plus written, 10⁹ bytes per second) and its timing.
func (r *Runner) Roof() (float64, Timing, error) { return r.roof(r.cfg.Reps) }

// errStopped ends a measurement that Config.Stop interrupted.
var errStopped = errors.New("bench: stopped")

// roof is Roof with reps timed launches of each kernel.
func (r *Runner) roof(reps int) (float64, Timing, error) {
	w := int64(r.dt.Bytes())
	n := r.cfg.WorkingSet / 2 / w
	n -= n % (2 * roofStripes)
	x, err := r.dev.Alloc(n * w)
	if err != nil {
		return 0, Timing{}, err
	}
	defer x.Free()
	y, err := r.dev.Alloc(n * w)
	if err != nil {
		return 0, Timing{}, err
	}
	defer y.Free()
	if err := r.fillFrom(0, x, n); err != nil {
		return 0, Timing{}, err
	}
	if err := r.fillFrom(1, y, n); err != nil {
		return 0, Timing{}, err
	}
	saved := r.cfg.Reps
	r.cfg.Reps = reps
	defer func() { r.cfg.Reps = saved }()
	best, bestT := 0.0, Timing{}
	for _, k := range []struct {
		kern  string
		words int64 // read plus written per element
	}{{r.copyK, 2}, {r.updateK, 3}} {
		st, err := r.auxStep(k.kern, n, nil, map[string]device.Buffer{"x": x, "y": y})
		if err != nil {
			return 0, Timing{}, err
		}
		t, err := r.time(1, func(int) error {
			select {
			case <-r.cfg.Stop: // the roof takes seconds: an interrupt ends it
				return errStopped
			default:
			}
			return r.aux.Run(st)
		})
		if err != nil {
			return 0, Timing{}, err
		}
		if gbs := float64(k.words*n*w) / t.Median.Seconds() / 1e9; gbs > best {
			best, bestT = gbs, t
		}
	}
	return best, bestT, nil
}

// Units is the size a problem is timed at: Config.Units, raised to make one
// launch move MinLaunchBytes (at most MaxUnits), in whole multiples of 1024.
func (r *Runner) Units(p family.Problem) int { return units(r.cfg, p) }

// Units is the size Run times p at with cfg.
func Units(cfg Config, p family.Problem) int { return units(cfg, p) }

func units(cfg Config, p family.Problem) int {
	n := cfg.Units
	if cfg.MinLaunchBytes <= 0 {
		return n
	}
	per := p.UnitBytes()
	want := (cfg.MinLaunchBytes + per - 1) / max(per, 1)
	want = (want + 1023) / 1024 * 1024
	return int(max(int64(n), min(want, int64(max(cfg.MaxUnits, n)))))
}
