package run

import (
	"fmt"
	"sort"
	"time"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/pum"
	"github.com/bespoke-hpc/bespoke/solve"
)

// Bench times cfg on dev reps times, after one untimed run, and returns
// the run of median total. The untimed run keeps a driver that compiles a
// kernel at its first launch (PoCL, for each work-group size; CUDA's lazy
// loading) out of the timings: cold, such a build counts in a phase.
func Bench(dev device.Device, cfg Config, reps int) (*Outcome, error) {
	if reps < 1 {
		return nil, fmt.Errorf("pum: %d repetitions: want at least 1", reps)
	}
	warm := cfg
	if cfg.Solve != nil { // one iteration launches every kernel of the solve
		s := *cfg.Solve
		s.MaxIter = 1
		warm.Solve = &s
	}
	if _, err := OnDevice(dev, warm); err != nil {
		return nil, err
	}
	return median(reps, func() (*Outcome, error) { return OnDevice(dev, cfg) })
}

// BenchReference times Reference reps times (with cfg.Solve, pum.Solve
// after it, timed on the wall: the host's counterpart of the device
// solve) and returns the run of median total.
func BenchReference(cfg Config, reps int) (*Outcome, error) {
	if reps < 1 {
		return nil, fmt.Errorf("pum: %d repetitions: want at least 1", reps)
	}
	cfg.DType = kernel.F64
	return median(reps, func() (*Outcome, error) {
		out, err := Reference(cfg)
		if err != nil || cfg.Solve == nil {
			return out, err
		}
		t0 := time.Now()
		u, res, err := pum.Solve(out.Sys.A, out.Sys.F, cfg.Solve.Tol, cfg.Solve.MaxIter)
		if err != nil && res.Iterations < cfg.Solve.MaxIter {
			return nil, err
		}
		out.Solved = &solve.PCGResult{Iterations: res.Iterations, Residual: res.RelRes, Converged: err == nil, X: u, Time: time.Since(t0)}
		return out, nil
	})
}

// median runs f reps times and returns the run of median total.
func median(reps int, f func() (*Outcome, error)) (*Outcome, error) {
	var outs []*Outcome
	for range reps {
		out, err := f()
		if err != nil {
			return nil, err
		}
		outs = append(outs, out)
	}
	sort.Slice(outs, func(i, j int) bool { return outs[i].Tm.Total < outs[j].Tm.Total })
	return outs[len(outs)/2], nil
}
