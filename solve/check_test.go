package solve_test

import (
	"math"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/fem"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/solve"
)

// A solve is judged: no iteration, a value that is not finite, or an
// error no better than x = 0 is a failure, whatever the timing.
func TestResultCheck(t *testing.T) {
	good := solve.Result{Iterations: 5, Residual: 1e-3, Error: 0.02, X: []float64{0, 0.5, 1}, Unknowns: 1}
	tests := []struct {
		name string
		edit func(r *solve.Result)
		want string // "" for no error
	}{
		{"good", func(*solve.Result) {}, ""},
		{"no iteration", func(r *solve.Result) { r.Iterations = 0 }, "no CG iteration"},
		{"no interior node", func(r *solve.Result) { r.Unknowns = 0 }, "no interior node"},
		{"error of x = 0", func(r *solve.Result) { r.Error = 1 }, "no better than x = 0"},
		{"error above", func(r *solve.Result) { r.Error = 3 }, "no better than x = 0"},
		{"NaN error", func(r *solve.Result) { r.Error = math.NaN() }, "not finite"},
		{"infinite solution", func(r *solve.Result) { r.X = []float64{0, math.Inf(1)} }, "not finite"},
		{"infinite residual", func(r *solve.Result) { r.Residual = math.Inf(1) }, "residual"},
	}
	for _, tc := range tests {
		r := good
		r.X = append([]float64(nil), good.X...)
		tc.edit(&r)
		err := r.Check()
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// CheckScale refuses a λ whose right-hand side the precision cannot hold
// (CG would start from an infinite ‖b‖ and stop at once, x = 0).
func TestCheckScale(t *testing.T) {
	m, err := fem.NewMesh(2, 2, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := fem.NewBasis(fem.BK3, 1)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		lambda float64
		dt     kernel.DType
		want   string
	}{
		{1, kernel.F64, ""},
		{1e100, kernel.F64, ""},
		{1e300, kernel.F64, "beyond the f64 range"},
		{1, kernel.F32, ""},
		{1e15, kernel.F32, ""},
		{1e30, kernel.F32, "beyond the f32 range"},
		{1e300, kernel.F32, "beyond the f32 range"},
	}
	for _, tc := range tests {
		a, err := fem.NewAssembly(b, m, tc.lambda)
		if err != nil {
			t.Fatal(err)
		}
		err = solve.CheckScale(a, tc.dt)
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("λ = %g %s: %v, want %q", tc.lambda, tc.dt, err, tc.want)
		}
	}
}
