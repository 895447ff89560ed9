package bench_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/bespoke-hpc/bespoke/bench"
	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/kernel/sparse"
)

// sleepProbe "computes" flops operations in a fixed wall time: a probe of
// a known rate on the host backend, whose timers are the wall clock.
type sleepProbe struct {
	flops int64
	d     time.Duration
	err   error
}

func (p sleepProbe) Name() string { return "sleep" }

func (p sleepProbe) Setup(device.Device, kernel.DType) (func() error, int64, func(), error) {
	if p.err != nil {
		return nil, 0, nil, p.err
	}
	return func() error { time.Sleep(p.d); return nil }, p.flops, func() {}, nil
}

// The compute roof: a probe's rate is measured before the problems, and
// each candidate's attainable fraction is the roofline's time (the longer
// of bytes at the roof and operations at that rate) over its median; a
// probe that fails is one warning, and the run goes on without it.
func TestComputeRoof(t *testing.T) {
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	op := small(t, "small", []float64{1, 0, 0.5, -2, 0, 3})
	for _, tc := range []struct {
		name  string
		probe sleepProbe
		// slow: a rate so low that the operations, not the bytes, bound
		// the problem
		slow bool
	}{
		{"memory-bound", sleepProbe{flops: 1e12, d: time.Millisecond}, false},
		{"compute-bound", sleepProbe{flops: 1, d: time.Millisecond}, true},
		{"probe fails", sleepProbe{err: errors.New("no BLAS")}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var warnings []string
			cfg := bench.Config{Units: 4096, Reps: 3, Warmup: 1, WorkingSet: 1 << 20, MaxMemory: 64 << 20,
				Variants: []string{"cstream"}, Compute: tc.probe, Warn: func(s string) { warnings = append(warnings, s) }}
			rep, err := bench.Run(dev, []family.Problem{sparse.NewOperator(op, kernel.F64, 1, 0)}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if tc.probe.err != nil {
				if rep.ComputeGFLOPs != 0 || len(warnings) != 1 || !strings.Contains(warnings[0], "no BLAS") {
					t.Fatalf("a failing probe: %g GFLOP/s, warnings %q", rep.ComputeGFLOPs, warnings)
				}
				return
			}
			wantRate := float64(tc.probe.flops) / tc.probe.d.Seconds() / 1e9
			if rep.ComputeGFLOPs <= 0 || rep.ComputeGFLOPs > wantRate || rep.ComputeGFLOPs < wantRate/20 {
				t.Fatalf("compute rate %g GFLOP/s, want about %g (a sleep lasts at least its time)", rep.ComputeGFLOPs, wantRate)
			}
			o := rep.Problems[0]
			for _, c := range o.Candidates {
				if c.Timing.Median <= 0 {
					continue
				}
				att := math.Max(float64(o.RoofTime), float64(o.Flops)/(rep.ComputeGFLOPs*1e9)*1e9) / float64(c.Timing.Median)
				if math.Abs(c.AttainableFrac-att) > 1e-9*att || c.AttainableFrac < c.RoofFrac {
					t.Errorf("%s: attainable %g, roof %g; want %g, and never below the memory roof's", c.Name, c.AttainableFrac, c.RoofFrac, att)
				}
				if tc.slow != (c.AttainableFrac > 10*c.RoofFrac) {
					t.Errorf("%s: attainable %g against roof %g: compute-bound should be %v", c.Name, c.AttainableFrac, c.RoofFrac, tc.slow)
				}
			}
		})
	}
}
