package kernel

import (
	"math"
	"strings"
	"testing"
)

func TestCheckRange(t *testing.T) {
	tests := []struct {
		dt   DType
		xs   []float64
		want string // "" for in range
	}{
		{F64, []float64{0, 1e300, -math.MaxFloat64}, ""},
		{F32, []float64{0, 3e38, -3.4e38, 1e-300}, ""},
		{F32, []float64{1, 2, 1e300}, "u.npy: value 1e+300 at index 2 is beyond the f32 range (3.4e+38)"},
		{F32, []float64{-1e39}, "index 0 is beyond the f32 range"},
		{F64, []float64{math.Inf(1)}, "not finite"},
		{F32, []float64{math.NaN()}, "not finite"},
	}
	for _, tc := range tests {
		err := tc.dt.CheckRange("u.npy", tc.xs)
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s %v: %v, want %q", tc.dt, tc.xs, err, tc.want)
		}
	}
}
