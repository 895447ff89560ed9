package bench

import (
	"testing"

	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/operator"
)

// TestColumns checks the n each operator is timed at.
func TestColumns(t *testing.T) {
	// 8×4 dense: 12 words a column (β = 0), 20 with β ≠ 0.
	data := make([]float64, 32)
	for i := range data {
		data[i] = float64(i + 1)
	}
	small, err := operator.New("small", 8, 4, data)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cfg  Config
		beta float64
		want int
	}{
		{"fixed n", Config{N: 5000, DType: kernel.F64}, 0, 5000},
		{"raised to the launch bytes", Config{N: 1024, DType: kernel.F64, MinLaunchBytes: 96 * 4096, MaxN: 1 << 20}, 0, 4096},
		{"β ≠ 0 moves more, needs fewer", Config{N: 1024, DType: kernel.F64, MinLaunchBytes: 160 * 4096, MaxN: 1 << 20}, 1, 4096},
		{"rounded up to 1024", Config{N: 1024, DType: kernel.F32, MinLaunchBytes: 48*4096 + 1, MaxN: 1 << 20}, 0, 5120},
		{"capped at MaxN", Config{N: 1024, DType: kernel.F64, MinLaunchBytes: 1 << 40, MaxN: 1 << 16}, 0, 1 << 16},
		{"never below N", Config{N: 1 << 20, DType: kernel.F64, MinLaunchBytes: 1, MaxN: 1 << 16}, 0, 1 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Runner{cfg: tc.cfg}
			if got := r.columns(small, tc.beta); got != tc.want {
				t.Errorf("columns = %d, want %d", got, tc.want)
			}
		})
	}
}
