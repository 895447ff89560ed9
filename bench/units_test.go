package bench

import (
	"testing"

	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/sparse"
	"github.com/bespoke-hpc/bespoke/operator"
)

// TestUnits checks the size each problem is timed at.
func TestUnits(t *testing.T) {
	// 8×4 dense: 12 words a column (β = 0), 20 with β ≠ 0.
	data := make([]float64, 32)
	for i := range data {
		data[i] = float64(i + 1)
	}
	op, err := operator.New("small", 8, 4, data)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cfg  Config
		dt   kernel.DType
		beta float64
		want int
	}{
		{"fixed size", Config{Units: 5000}, kernel.F64, 0, 5000},
		{"raised to the launch bytes", Config{Units: 1024, MinLaunchBytes: 96 * 4096, MaxUnits: 1 << 20}, kernel.F64, 0, 4096},
		{"β ≠ 0 moves more, needs fewer", Config{Units: 1024, MinLaunchBytes: 160 * 4096, MaxUnits: 1 << 20}, kernel.F64, 1, 4096},
		{"rounded up to 1024", Config{Units: 1024, MinLaunchBytes: 48*4096 + 1, MaxUnits: 1 << 20}, kernel.F32, 0, 5120},
		{"capped at MaxUnits", Config{Units: 1024, MinLaunchBytes: 1 << 40, MaxUnits: 1 << 16}, kernel.F64, 0, 1 << 16},
		{"never below Units", Config{Units: 1 << 20, MinLaunchBytes: 1, MaxUnits: 1 << 16}, kernel.F64, 0, 1 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Runner{cfg: tc.cfg}
			if got := r.Units(sparse.NewOperator(op, tc.dt, 1, tc.beta)); got != tc.want {
				t.Errorf("Units = %d, want %d", got, tc.want)
			}
		})
	}
}
