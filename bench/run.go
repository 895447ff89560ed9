package bench

import (
	"fmt"
	"runtime"
	"time"

	"github.com/bespoke-hpc/bespoke/build"
	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
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
	Problems    []Result  `json:"problems"`
	// Interrupted: Config.Stop ended the run before every problem ran.
	Interrupted bool `json:"interrupted,omitempty"`
}

// Run measures the roof, then every problem, on one device. The problems
// must share one precision. When Config.Stop closes, Run returns at the
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
	r, err := NewRunner(dev, dt, cfg)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	rep := &Report{Device: dev.Info(), DType: dt.String(), Units: r.cfg.Units, Problems: []Result{},
		MinLaunchBytes: r.cfg.MinLaunchBytes, MaxUnits: r.cfg.MaxUnits, Date: time.Now().UTC().Format("2006-01-02")}
	// The roof is measured before the first problem and again before
	// each (fewer launches); the best is kept. A shared machine's
	// bandwidth drifts: on a 2-core VM one measurement gave 15.7 GB/s
	// and kernels then ran 40 % faster than that "roof".
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
		return nil, err
	}
	rep.RoofMethod = fmt.Sprintf("the faster of a copy y[i] = x[i] and an update y[i] += x[i], each streaming four parts of x and y at once, over %d MiB (bytes read + written), median of %d launches, best of the measurements before each problem",
		r.cfg.WorkingSet>>20, r.cfg.Reps)
	r.cfg.Progress("compiling")
	// On a GPU the timing loop runs while later problems compile, on all
	// but two host cores; a CPU device times on the cores the compilers
	// would use, so there every build finishes first.
	stop := make(chan struct{})
	workers, overlap := runtime.NumCPU(), rep.Device.GPU
	if overlap {
		workers = max(workers-2, 1)
	}
	prepared := make([]*prepared, len(problems))
	slow := func(i int, k *kernel.Kernel, took time.Duration) {
		r.cfg.Notes(fmt.Sprintf("%s: %s compiled in %.1f s", problems[i].Name(), k.Variant, took.Seconds()))
	}
	ready, wait := build.Ahead(dev, len(problems), func(i int) []*kernel.Kernel {
		prepared[i] = r.prepare(problems[i])
		return prepared[i].ks
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
	for i := range problems {
		select {
		case <-ready[i]:
		case <-r.cfg.Stop:
		}
		// A stop wins even when the problem is ready.
		select {
		case <-r.cfg.Stop:
			rep.Interrupted = true
			rep.scale()
			return rep, nil
		default:
		}
		if i > 0 {
			if err := roof(roofReps); err != nil {
				return nil, err
			}
		}
		res := r.measure(prepared[i])
		rep.Problems = append(rep.Problems, res)
		if res.Partial {
			rep.Interrupted = true
			break
		}
	}
	rep.scale()
	return rep, nil
}

// roofReps is how many launches each re-measurement of the roof times.
const roofReps = 30

// scale expresses every time against the best roof of the run.
func (rep *Report) scale() {
	rep.Device.CopyGBs = rep.RoofGBs
	for i := range rep.Problems {
		o := &rep.Problems[i]
		o.RoofTime = time.Duration(float64(o.IdealBytes) / (rep.RoofGBs * 1e9) * float64(time.Second))
		for j := range o.Candidates {
			if c := &o.Candidates[j]; c.Timing.Median > 0 {
				c.RoofFrac = float64(o.RoofTime) / float64(c.Timing.Median)
			}
		}
	}
}
