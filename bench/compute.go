package bench

import (
	"fmt"
	"time"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/kernel"
)

// ComputeProbe is a large matrix product through a vendor library: its
// rate, measured in the run, is the device's attainable arithmetic
// throughput in the run's precision (tensor cores where the library uses
// them), the compute side of the roofline.
type ComputeProbe interface {
	Name() string
	// Setup prepares the product on dev in dt: run computes it once, at
	// flops operations; release frees what Setup took.
	Setup(dev device.Device, dt kernel.DType) (run func() error, flops int64, release func(), err error)
}

// measureCompute times the probe as bench times a kernel (warm-up, then
// the median of the reps) and returns its rate in GFLOP/s.
func (r *Runner) measureCompute(p ComputeProbe) (gflops float64, t Timing, err error) {
	run, flops, release, err := p.Setup(r.dev, r.dt)
	if err != nil {
		return 0, Timing{}, err
	}
	defer release()
	if t, err = r.time(1, func(int) error { return run() }); err != nil {
		return 0, Timing{}, err
	}
	if t.Median <= 0 || flops <= 0 {
		return 0, t, fmt.Errorf("%s timed nothing", p.Name())
	}
	return float64(flops) / t.Median.Seconds() / 1e9, t, nil
}

// attainableTime is the least time the roofline allows a problem: its
// ideal bytes at the memory roof, or its operations at the compute rate,
// whichever is longer (the memory roof alone without a compute rate).
func attainableTime(roofTime time.Duration, flops int64, computeGFLOPs float64) time.Duration {
	if computeGFLOPs <= 0 || flops <= 0 {
		return roofTime
	}
	return max(roofTime, time.Duration(float64(flops)/(computeGFLOPs*1e9)*float64(time.Second)))
}
