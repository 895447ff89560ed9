package bench

import (
	"encoding/json"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/bespoke-hpc/bespoke/build"
	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/tune"
)

// Report is one bench run.
type Report struct {
	Device device.Info `json:"device"`
	DType  string      `json:"dtype"`
	// Units is the least size timed; with MinLaunchBytes it was raised
	// per problem until one launch moved MinLaunchBytes, up to MaxUnits
	// (see Result.Units).
	Units          int    `json:"units"`
	MinLaunchBytes int64  `json:"min_launch_bytes,omitempty"`
	MaxUnits       int    `json:"max_units,omitempty"`
	Date           string `json:"date"`
	Commit         string `json:"commit,omitempty"`
	// RoofGBs is the roof: the best bandwidth of the streaming kernels (a
	// copy and an in-place update, each in four parts at once) measured
	// through the run (RoofSamples, GB/s: one before the first problem,
	// then one before each), which every % of the roof is relative to.
	// Roof is the timing of that best measurement.
	RoofGBs     float64   `json:"roof_gbs"`
	Roof        Timing    `json:"roof_timing"`
	RoofSamples []float64 `json:"roof_samples_gbs"`
	RoofMethod  string    `json:"roof_method"`
	// ComputeGFLOPs is the attainable arithmetic rate measured in the run
	// (Config.Compute; 0 without one), ComputeMethod how.
	ComputeGFLOPs float64 `json:"compute_gflops,omitempty"`
	ComputeMethod string  `json:"compute_method,omitempty"`
	// RoofWarning, when set, says the roof's measurements spread too far
	// in this run to trust its % of roof figures (a busy machine).
	RoofWarning string   `json:"roof_warning,omitempty"`
	Problems    []Result `json:"problems"`
	// Interrupted: Config.Stop ended the run before every problem ran.
	Interrupted bool `json:"interrupted,omitempty"`
}

// Run measures the roof, then every problem, on one device. The problems
// must share one precision. A problem whose measurement the tuning store
// holds (Config.Store) is reported from it; when every one is, nothing is
// built, timed or measured. When Config.Stop closes, Run returns at the
// next candidate with what it measured (Report.Interrupted, the problem in
// progress Partial) without waiting for compilations still running: the
// device must then stay open until the process ends.
func Run(dev device.Device, problems []family.Problem, cfg Config) (*Report, error) {
	if len(problems) == 0 {
		return nil, fmt.Errorf("bench: no problems to time")
	}
	dt := problems[0].DType()
	for _, p := range problems {
		if p.DType() != dt {
			return nil, fmt.Errorf("bench: %s is %s and %s is %s: one run times one precision", problems[0].Name(), dt, p.Name(), p.DType())
		}
	}
	cfg.defaults()
	rep := &Report{Device: dev.Info(), DType: dt.String(), Units: cfg.Units, Problems: []Result{},
		MinLaunchBytes: cfg.MinLaunchBytes, MaxUnits: cfg.MaxUnits, Date: time.Now().UTC().Format("2006-01-02")}
	ins, sizes, err := choosers(cfg, problems)
	if err != nil {
		return nil, err
	}
	if ins != nil {
		return runChoosers(dev, cfg, ins, sizes, rep), nil
	}
	planned := planAll(dev, cfg, problems)
	fresh := 0
	for _, pr := range planned {
		if pr.cached == nil {
			fresh++
		}
	}
	if fresh == 0 { // every result is stored: nothing to build or time
		for _, pr := range planned {
			rep.Problems = append(rep.Problems, *pr.cached)
			rep.RoofGBs = max(rep.RoofGBs, pr.cached.RoofGBs)
		}
		rep.RoofMethod = "every result from the tuning store (each with the roof of the run that measured it)"
		return rep, nil
	}
	// An interrupt while the helper kernels build or the roof is timed
	// still gives a report: marked interrupted, with no problem.
	stopped := func() bool {
		select {
		case <-cfg.Stop:
			rep.Interrupted = true
			return true
		default:
			return false
		}
	}
	r, err := NewRunner(dev, dt, cfg)
	if err != nil {
		if stopped() {
			return rep, nil
		}
		return nil, err
	}
	defer r.Close()
	// The roof is measured before the first problem and again before
	// each (fewer launches); the best is kept. A shared machine's
	// bandwidth drifts: one low measurement would leave kernels running
	// 40 % faster than that "roof".
	roof := func(reps int) error {
		r.cfg.Progress("roof")
		gbs, t, err := r.roof(reps)
		if err != nil {
			return fmt.Errorf("measuring the roof: %w", err)
		}
		rep.RoofSamples = append(rep.RoofSamples, gbs)
		if gbs > rep.RoofGBs {
			rep.RoofGBs, rep.Roof = gbs, t
		}
		return nil
	}
	if err := roof(r.cfg.Reps); err != nil {
		if stopped() {
			return rep, nil
		}
		return nil, err
	}
	r.roofGBs = rep.RoofGBs
	if cfg.Compute != nil {
		r.cfg.Progress("compute roof")
		if g, t, err := r.measureCompute(cfg.Compute); err != nil {
			cfg.Warn(fmt.Sprintf("the compute roof (%s) was not measured: %v", cfg.Compute.Name(), err))
		} else {
			rep.ComputeGFLOPs = g
			rep.ComputeMethod = fmt.Sprintf("%s, median of %d launches (%s each)", cfg.Compute.Name(), t.Reps, t.Median)
		}
	}
	rep.RoofMethod = fmt.Sprintf("the faster of a copy y[i] = x[i] and an update y[i] += x[i], each streaming four parts of x and y at once, over %d MiB (bytes read + written), median of %d launches before the first problem and %d before each later one, the best of these",
		r.cfg.WorkingSet>>20, r.cfg.Reps, roofReps)
	r.cfg.Progress("compiling")
	// On a GPU the timing loop runs while later problems compile, on all
	// but two host cores; a CPU device times on the cores the compilers
	// would use, so there every build finishes first.
	stop := make(chan struct{})
	workers, overlap := runtime.NumCPU(), rep.Device.GPU
	if overlap {
		workers = max(workers-2, 1)
	}
	if w := r.cfg.BuildWorkers; w > 0 {
		workers = w
	}
	slow := func(i int, k *kernel.Kernel, took time.Duration) {
		r.cfg.Notes(fmt.Sprintf("%s: %s compiled in %.1f s", problems[i].Name(), k.Variant, took.Seconds()))
	}
	ready, wait := build.Ahead(dev, len(problems), func(i int) []*kernel.Kernel {
		r.prepare(planned[i])
		return planned[i].ks
	}, workers, stop, slow)
	defer func() {
		close(stop)
		if !rep.Interrupted {
			wait()
		}
	}()
	if !overlap {
		for _, c := range ready {
			select {
			case <-c:
			case <-r.cfg.Stop:
			}
		}
	}
	measured := false
	for i := range problems {
		select {
		case <-ready[i]:
		case <-r.cfg.Stop:
		}
		// A stop wins even when the problem is ready.
		select {
		case <-r.cfg.Stop:
			rep.Interrupted = true
		default:
		}
		if rep.Interrupted {
			break
		}
		if pr := planned[i]; pr.cached != nil {
			rep.Problems = append(rep.Problems, *pr.cached)
			continue
		}
		if measured {
			if err := roof(roofReps); err != nil {
				if stopped() {
					break
				}
				return nil, err
			}
		}
		measured = true
		res := r.measure(planned[i])
		// A candidate far over the roof means the roof was measured while
		// the machine was busy: measure it again before judging (record
		// stores no result that stays over tune.MaxRoofFrac).
		for again := 0; again < 2 && !res.Partial && res.overRoof(rep.RoofGBs) > tune.MaxRoofFrac; again++ {
			if err := roof(r.cfg.Reps); err != nil {
				return nil, err
			}
		}
		rep.Problems = append(rep.Problems, res)
		if res.Partial {
			rep.Interrupted = true
			break
		}
	}
	rep.scale()
	rep.RoofWarning = roofUnstable(rep.RoofSamples)
	rep.record(planned, cfg)
	return rep, nil
}

// roofUnstableBelow is how far under the best a roof measurement may fall
// before the run's figures are called unreliable: a machine whose
// bandwidth moves that much within one run was busy with other work.
const roofUnstableBelow = 0.8

// roofUnstable says, in one line, that the roof's measurements in this
// run spread too far to trust its % of roof figures; "" when they agree.
func roofUnstable(samples []float64) string {
	if len(samples) < 2 {
		return ""
	}
	lo, hi := samples[0], samples[0]
	for _, x := range samples {
		lo, hi = min(lo, x), max(hi, x)
	}
	if hi <= 0 || lo >= roofUnstableBelow*hi {
		return ""
	}
	return fmt.Sprintf("the roof varied from %.1f to %.1f GB/s in this run (%d measurements): the machine was busy, and %% of roof figures may be off; run again on a quiet machine", lo, hi, len(samples))
}

// planAll plans every problem, several at once: checking a stored choice
// enumerates the candidates of its instance (for a large tensor-product
// operator, the analysis of its blocks for every variant), which a run
// whose choices are all stored would otherwise do one problem at a time.
func planAll(dev device.Device, cfg Config, problems []family.Problem) []*prepared {
	warn := cfg.Warn
	var mu sync.Mutex
	cfg.Warn = func(w string) {
		mu.Lock()
		defer mu.Unlock()
		warn(w)
	}
	planned := make([]*prepared, len(problems))
	sem := make(chan struct{}, runtime.NumCPU())
	var wg sync.WaitGroup
	for i, p := range problems {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			planned[i] = plan(dev, cfg, p)
		}()
	}
	wg.Wait()
	return planned
}

// record stores the fresh, complete measurements in the tuning store.
func (rep *Report) record(planned []*prepared, cfg Config) {
	if cfg.Store == nil {
		return
	}
	for i := range rep.Problems {
		res, pr := &rep.Problems[i], planned[i]
		if res.Cached || res.Partial || res.Err != "" || res.Choice == nil || pr.key == "" {
			continue
		}
		if err := res.checkFigures(); err != nil {
			cfg.Warn(fmt.Sprintf("%s: the choice was not stored: %v", res.Name, err))
			continue
		}
		data, err := json.Marshal(res)
		if err != nil {
			continue
		}
		err = cfg.Store.Put(&tune.Record{Key: pr.key, Problem: res.Name, Device: rep.Device.Name, Date: rep.Date,
			Commit: cfg.Commit, Winner: res.Choice.Winner, Kind: res.Choice.Kind, Result: data})
		if err != nil {
			cfg.Warn(fmt.Sprintf("%s: the choice was not stored: %v", res.Name, err))
		}
	}
}

// roofReps is how many launches each re-measurement of the roof times: few,
// as the best of all the measurements is the roof (thirty launches of each
// kernel before every problem took a third of the main job on a CPU).
const roofReps = 10

// scale expresses every time measured in this run against its best roof,
// and chooses each problem's winner.
func (rep *Report) scale() {
	rep.Device.CopyGBs = rep.RoofGBs
	for i := range rep.Problems {
		o := &rep.Problems[i]
		if o.Cached {
			continue
		}
		o.RoofGBs = rep.RoofGBs
		o.choose()
		roofTime := func(bytes int64) time.Duration {
			return time.Duration(float64(bytes) / (rep.RoofGBs * 1e9) * float64(time.Second))
		}
		o.RoofTime = roofTime(o.IdealBytes)
		for j := range o.Candidates {
			if c := &o.Candidates[j]; c.Timing.Median > 0 {
				// Against the candidate's own least traffic, where it
				// moves less than the problem's ideal.
				rt := roofTime(c.bytes(o.IdealBytes))
				c.RoofFrac = float64(rt) / float64(c.Timing.Median)
				if rep.ComputeGFLOPs > 0 {
					c.AttainableFrac = float64(attainableTime(rt, o.Flops, rep.ComputeGFLOPs)) / float64(c.Timing.Median)
				}
			}
		}
	}
}
