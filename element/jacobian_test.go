package element

import (
	"math"
	"strings"
	"testing"
)

// JacobianCause accepts sound elements, however small or stretched, and
// names the cause for those no integration can use.
func TestJacobianCause(t *testing.T) {
	tet := func(top [3]float64, scale float64) [][3]float64 {
		x := [][3]float64{{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, top}
		for i := range x {
			for c := range 3 {
				x[i][c] *= scale
			}
		}
		return x
	}
	tests := []struct {
		name string
		x    [][3]float64
		want string // "" for no cause
	}{
		{"unit", tet([3]float64{0, 0, 1}, 1), ""},
		{"small", tet([3]float64{0, 0, 1}, 1e-90), ""},
		{"large", tet([3]float64{0, 0, 1}, 1e90), ""},
		{"thin but sound", tet([3]float64{0.3, 0.3, 1e-9}, 1), ""},
		{"sliver", tet([3]float64{0.3, 0.3, 1e-300}, 1), "zero"},
		{"flat to rounding", tet([3]float64{0.3, 0.3, 1e-16}, 1), "zero to rounding"},
		{"flat", tet([3]float64{0.3, 0.3, 0}, 1), "zero or underflows"},
		{"underflows", tet([3]float64{0, 0, 1}, 1e-110), "underflows"},
		{"overflows", tet([3]float64{0, 0, 1}, 1e110), "overflows"},
		{"inverted", tet([3]float64{0, 0, -1}, 1), "inverted"},
	}
	for _, tc := range tests {
		got := JacobianCause(Tet.Jacobian(tc.x, [3]float64{0.25, 0.25, 0.25}))
		if (got == "") != (tc.want == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: cause %q, want %q", tc.name, got, tc.want)
		}
		if strings.Contains(got, "NaN") && tc.want != "overflows" {
			t.Errorf("%s: cause %q reads NaN", tc.name, got)
		}
		// An element with no cause has a finite matrix.
		if got == "" {
			a := make([]float64, 16)
			c := LaplaceCoef(1)
			if err := Tet.Matrix(tc.x, &c, a); err != nil || CheckFinite(a, 4) != nil {
				t.Errorf("%s: matrix %v, %v", tc.name, a, err)
			}
		}
	}
	if err := CheckFinite([]float64{1, 2, 3, 4, 5, math.Inf(1), 0, 0}, 2); err == nil || !strings.Contains(err.Error(), "element 1's matrix entry [0, 1] is +Inf") {
		t.Errorf("CheckFinite: %v", err)
	}
}
