package bench_test

import (
	"testing"

	"github.com/bespoke-hpc/bespoke/bench"
	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/emit"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/sparse"
	"github.com/bespoke-hpc/bespoke/operator"
	"github.com/bespoke-hpc/bespoke/verify"
)

// A run measures every operator unless stopped, and a stopped run still
// returns the report of what it did (here: nothing), marked interrupted.
func TestRunStop(t *testing.T) {
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	op, err := operator.New("small", 3, 2, []float64{1, 0, 0.5, -2, 0, 3})
	if err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	close(closed)
	for _, tc := range []struct {
		name        string
		stop        chan struct{}
		wantOps     int
		interrupted bool
	}{
		{"runs", nil, 1, false},
		{"stopped", closed, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := bench.Config{DType: kernel.F64, N: 4096, Reps: 3, Warmup: 1, WorkingSet: 1 << 20, MaxMemory: 64 << 20,
				Variants: []sparse.Variant{sparse.Defaults(sparse.CStream)}, Stop: tc.stop}
			rep, err := bench.Run(dev, []*operator.Operator{op}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Operators) != tc.wantOps || rep.Interrupted != tc.interrupted {
				t.Fatalf("%d operators, interrupted %v; want %d, %v", len(rep.Operators), rep.Interrupted, tc.wantOps, tc.interrupted)
			}
			for _, o := range rep.Operators {
				for _, c := range o.Candidates {
					if !c.Verified {
						t.Errorf("%s %s not verified: %s", o.Name, c.Name, c.Err)
					}
				}
			}
		})
	}
}

// kernelBaseline runs a generated kernel for op (not the operator being
// benched) as a baseline; nil op leaves C alone.
type kernelBaseline struct {
	name string
	dev  device.Device
	op   *operator.Operator
}

func (kb kernelBaseline) Name() string { return kb.name }

func (kb kernelBaseline) Setup(_ *operator.Operator, dt kernel.DType, alpha, beta float64, n, ld int) (func(b, c device.Buffer) error, error) {
	if kb.op == nil {
		return func(b, c device.Buffer) error { return nil }, nil
	}
	k, err := sparse.Build(sparse.Problem{Op: kb.op, DType: dt, Alpha: alpha, Beta: beta, N: n, LDB: ld, LDC: ld}, sparse.Defaults(sparse.CStream))
	if err != nil {
		return nil, err
	}
	src, err := emit.Render(kb.dev.Dialect(), k)
	if err != nil {
		return nil, err
	}
	prog, err := kb.dev.Build(src)
	if err != nil {
		return nil, err
	}
	dk, err := prog.Kernel(k.Name)
	if err != nil {
		return nil, err
	}
	return func(b, c device.Buffer) error {
		args, err := k.Args(map[string]any{"n": n, "b": b, "c": c})
		if err != nil {
			return err
		}
		return dk.Launch(verify.Geometry(k, n), args...)
	}, nil
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
	op, err := operator.New("small", 3, 2, data)
	if err != nil {
		t.Fatal(err)
	}
	off := append([]float64(nil), data...)
	off[5] *= 1 + 1e-9 // far above fp64's tolerance
	offOp, err := operator.New("off", 3, 2, off)
	if err != nil {
		t.Fatal(err)
	}
	for _, beta := range []float64{0, 1} {
		cfg := bench.Config{DType: kernel.F64, N: 4096, Reps: 3, Warmup: 1, WorkingSet: 1 << 20, MaxMemory: 64 << 20,
			Variants:  []sparse.Variant{sparse.Defaults(sparse.CStream)},
			Beta:      func(*operator.Operator) float64 { return beta },
			Baselines: []bench.Baseline{kernelBaseline{"same", dev, op}, kernelBaseline{"off", dev, offOp}, kernelBaseline{"none", dev, nil}}}
		rep, err := bench.Run(dev, []*operator.Operator{op}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range rep.Operators[0].Candidates {
			want := c.Name == "cstream/x128" || c.Name == "same"
			if c.Verified != want || (c.Timing.Reps > 0) != want || (c.Err != "") == want {
				t.Errorf("β=%g %s: verified %v, %d timed runs, error %q; want verified %v", beta, c.Name, c.Verified, c.Timing.Reps, c.Err, want)
			}
		}
	}
}
