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
	Units          int      `json:"units"`
	MinLaunchBytes int64    `json:"min_launch_bytes,omitempty"`
	MaxUnits       int      `json:"max_units,omitempty"`
	Date           string   `json:"date"`
	Commit         string   `json:"commit,omitempty"`
	RoofGBs        float64  `json:"roof_gbs"`
	Roof           Timing   `json:"roof_timing"`
	Problems       []Result `json:"problems"`
	// Interrupted: Config.Stop ended the run before every problem ran.
	Interrupted bool `json:"interrupted,omitempty"`
}

// Run measures the roof, then every problem, on one device. The problems
// must share one precision.
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
	r.cfg.Progress("copy roof")
	if rep.RoofGBs, rep.Roof, err = r.Roof(); err != nil {
		return nil, fmt.Errorf("measuring the copy roof: %w", err)
	}
	rep.Device.CopyGBs = rep.RoofGBs
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
	defer wait()
	defer close(stop)
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
			return rep, nil
		default:
		}
		rep.Problems = append(rep.Problems, r.measure(prepared[i], rep.RoofGBs))
	}
	return rep, nil
}
