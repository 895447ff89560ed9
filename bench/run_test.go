package bench_test

import (
	"testing"

	"github.com/bespoke-hpc/bespoke/bench"
	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/sparse"
	"github.com/bespoke-hpc/bespoke/operator"
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
