package run

import (
	"fmt"
	"math"
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

// RelDiff is max|a−b| / max|b| over the matrix and over the load of two
// systems on the same cover (an empty or zero reference gives +Inf, or
// NaN when got is zero too; a missing matrix or load gives +Inf).
func RelDiff(got, want *pum.System) (ea, ef float64) {
	return relMax(got.A, want.A), relMaxVec(got.F, want.F)
}

func relMax(got, want *pum.BSR) float64 {
	if got == nil || want == nil {
		return math.Inf(1)
	}
	return relMaxVec(got.Val, want.Val)
}

func relMaxVec(got, want []float64) float64 {
	if len(got) != len(want) {
		return math.Inf(1)
	}
	m, d := 0.0, 0.0
	for i, w := range want {
		m = math.Max(m, math.Abs(w))
		d = math.Max(d, math.Abs(got[i]-w))
	}
	return d / m
}
