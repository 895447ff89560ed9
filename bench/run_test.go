package bench_test

import (
	"testing"

	"github.com/bespoke-hpc/bespoke/bench"
	"github.com/bespoke-hpc/bespoke/build"
	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/emit"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/kernel/sparse"
	"github.com/bespoke-hpc/bespoke/operator"
)

func small(t *testing.T, name string, data []float64) *operator.Operator {
	t.Helper()
	op, err := operator.New(name, 3, 2, data)
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// A run measures every problem unless stopped, and a stopped run still
// returns the report of what it did (here: nothing), marked interrupted.
func TestRunStop(t *testing.T) {
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	op := small(t, "small", []float64{1, 0, 0.5, -2, 0, 3})
	closed := make(chan struct{})
	close(closed)
	for _, tc := range []struct {
		name        string
		dev         device.Device
		stop        chan struct{}
		want        int
		interrupted bool
	}{
		{"runs", dev, nil, 1, false},
		{"stopped", dev, closed, 0, true},
		// The interrupt killed the compilers of the helper kernels.
		{"stopped while building", abortedDevice{dev}, closed, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := bench.Config{Units: 4096, Reps: 3, Warmup: 1, WorkingSet: 1 << 20, MaxMemory: 64 << 20,
				Variants: []string{"cstream"}, Stop: tc.stop}
			rep, err := bench.Run(tc.dev, []family.Problem{sparse.NewOperator(op, kernel.F64, 1, 0)}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Problems) != tc.want || rep.Interrupted != tc.interrupted || rep.Problems == nil {
				t.Fatalf("%d problems, interrupted %v; want %d, %v", len(rep.Problems), rep.Interrupted, tc.want, tc.interrupted)
			}
			for _, o := range rep.Problems {
				for _, c := range o.Candidates {
					if !c.Verified {
						t.Errorf("%s %s not verified: %s", o.Name, c.Name, c.Err)
					}
				}
			}
		})
	}
}

// abortedDevice is the C device once an interrupt has stopped its
// compilers: every build fails.
type abortedDevice struct{ *host.Device }

func (abortedDevice) Build(emit.Source) (device.Program, error) { return nil, host.ErrAborted }

// kernelBaseline runs a generated kernel for op (not the operator being
// benched) as a baseline; nil op leaves C alone.
type kernelBaseline struct {
	name string
	dev  device.Device
	op   *operator.Operator
}

func (kb kernelBaseline) Name() string { return kb.name }

func (kb kernelBaseline) Setup(in family.Instance, w *family.Workload) (func(map[string]device.Buffer) error, bool, error) {
	if kb.op == nil {
		return func(map[string]device.Buffer) error { return nil }, true, nil
	}
	si := in.(*sparse.Instance)
	other := &sparse.Instance{Problem: si.Problem, N: si.N, LDB: si.LDB, LDC: si.LDC}
	other.Op = kb.op
	k, err := other.Build(sparse.Defaults(sparse.CStream))
	if err != nil {
		return nil, true, err
	}
	_, dk, err := build.One(kb.dev, k)
	if err != nil {
		return nil, true, err
	}
	return func(a map[string]device.Buffer) error {
		l, args, err := device.Bind(k, w.Values, a)
		if err != nil {
			return err
		}
		return dk.Launch(l, args...)
	}, true, nil
}

// The bench verifies every candidate before timing it: a run that gives
// the right C passes; one that leaves C unwritten or applies a slightly
// different operator is reported unverified, with no time.
func TestRunVerifies(t *testing.T) {
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	data := []float64{1, 0, 0.5, -2, 0, 3}
	op := small(t, "small", data)
	off := append([]float64(nil), data...)
	off[5] *= 1 + 1e-9 // far above fp64's tolerance
	offOp := small(t, "off", off)
	for _, beta := range []float64{0, 1} {
		cfg := bench.Config{Units: 4096, Reps: 3, Warmup: 1, WorkingSet: 1 << 20, MaxMemory: 64 << 20,
			Variants:  []string{"cstream"},
			Baselines: []bench.Baseline{kernelBaseline{"same", dev, op}, kernelBaseline{"off", dev, offOp}, kernelBaseline{"none", dev, nil}}}
		rep, err := bench.Run(dev, []family.Problem{sparse.NewOperator(op, kernel.F64, 1, beta)}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range rep.Problems[0].Candidates {
			want := c.Name == "cstream/x128" || c.Name == "same"
			if c.Verified != want || (c.Timing.Reps > 0) != want || (c.Err != "") == want {
				t.Errorf("β=%g %s: verified %v, %d timed runs, error %q; want verified %v", beta, c.Name, c.Verified, c.Timing.Reps, c.Err, want)
			}
		}
	}
}

// One run times one precision.
func TestRunOnePrecision(t *testing.T) {
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	op := small(t, "small", []float64{1, 0, 0.5, -2, 0, 3})
	ps := []family.Problem{sparse.NewOperator(op, kernel.F64, 1, 0), sparse.NewOperator(op, kernel.F32, 1, 0)}
	if _, err := bench.Run(dev, ps, bench.Config{Units: 1024}); err == nil {
		t.Error("problems of two precisions were accepted")
	}
	if _, err := bench.Run(dev, nil, bench.Config{Units: 1024}); err == nil {
		t.Error("a run with no problem was accepted")
	}
}

// Screening keeps the best of each kind: even with no margin at all, the
// fastest bespoke candidate and the fastest baseline are both timed in
// full, so the report always compares the two (before, a vendor library
// far ahead screened out every bespoke candidate).
func TestRunScreensPerKind(t *testing.T) {
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	op := small(t, "small", []float64{1, 0, 0.5, -2, 0, 3})
	cfg := bench.Config{Units: 4096, Reps: 5, Warmup: 1, WorkingSet: 1 << 20, MaxMemory: 64 << 20, Screen: 1 + 1e-12,
		Variants:  []string{"cstream", "bstream"},
		Baselines: []bench.Baseline{kernelBaseline{"same", dev, op}}}
	rep, err := bench.Run(dev, []family.Problem{sparse.NewOperator(op, kernel.F64, 1, 0)}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	full := map[string]int{}
	for _, c := range rep.Problems[0].Candidates {
		if !c.Verified {
			t.Errorf("%s not verified: %s", c.Name, c.Err)
		}
		if !c.Screened && c.Timing.Reps == cfg.Reps {
			full[c.Kind]++
		}
	}
	if full["bespoke"] != 1 || full["baseline"] != 1 {
		t.Errorf("timed in full: %v, want one bespoke candidate and one baseline", full)
	}
}
