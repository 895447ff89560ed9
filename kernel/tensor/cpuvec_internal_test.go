package tensor

import (
	"testing"

	"github.com/bespoke-hpc/bespoke/fem"
	"github.com/bespoke-hpc/bespoke/kernel"
)

// The 1-D matrices mirror as even–odd needs (interpolation +1, derivatives
// −1, transposes alike), a matrix without the symmetry does not, and the
// even–odd contraction multiplies about half as often as the plain one.
func TestCPUVecEvenOdd(t *testing.T) {
	p5, err := New(fem.BK5, 5, 1, kernel.F64)
	if err != nil {
		t.Fatal(err)
	}
	p3, err := New(fem.BK3, 4, 1, kernel.F64)
	if err != nil {
		t.Fatal(err)
	}
	d := rowsOf("md", p5.d, 6, 6, kernel.F64)
	b := rowsOf("mb", p3.b, 6, 5, kernel.F64)
	dq := rowsOf("md", p3.d, 6, 6, kernel.F64)
	skew := append([]float64(nil), p3.b...)
	skew[1] += 0.25
	tests := []struct {
		name      string
		m         matrix
		sign      float64
		plainMuls int // per pencil: outs × ins less the zero entries
	}{
		{"GLL derivative", d, -1, 36},
		{"its transpose", d.t("mdt"), -1, 36},
		{"interpolation to Gauss points", b, 1, 30},
		{"its transpose", b.t("mbt"), 1, 30},
		{"Gauss point derivative", dq, -1, 36},
		{"no symmetry", rowsOf("mx", skew, 6, 5, kernel.F64), 0, 30},
	}
	for _, tc := range tests {
		if got := tc.m.mirror(); got != tc.sign {
			t.Errorf("%s: mirror %g, want %g", tc.name, got, tc.sign)
		}
		src := lanes{name: "x", l: 8}
		shape := [3]int{1, 1, tc.m.ins}
		muls := 0
		kernel.WalkStmts([]kernel.Stmt{contractVec(lanes{name: "y", l: 8}, src, nil, tc.m, 0, shape, kernel.F64)}, func(s kernel.Stmt) bool {
			kernel.StmtExprs(s, func(e kernel.Expr) {
				kernel.WalkExpr(e, func(e kernel.Expr) {
					if b, ok := e.(kernel.Bin); ok && b.Op == "*" {
						if _, lit := b.L.(kernel.Lit); lit {
							muls++
						}
					}
				})
			})
			return true
		})
		want := tc.plainMuls
		if tc.sign != 0 {
			want = (tc.plainMuls + 1) / 2 // even–odd halves them
		}
		if muls > want {
			t.Errorf("%s: %d multiplications by the matrix a pencil, want at most %d", tc.name, muls, want)
		}
	}
}
