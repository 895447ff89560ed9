package tensor

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/bespoke-hpc/bespoke/fem"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/interp"
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

// copyKernel reads u into the private block tu (readIn), dumps tu
// lane-fastest to w (batch g at g·n·L), and copies x's block of the batch
// (the same layout) to v (writeOut).
func copyKernel(n, l int, owned bool) *kernel.Kernel {
	el := kernel.Apply(kernel.Min, kernel.Add(kernel.Mul(gx, kernel.Const(l)), kernel.Ref("l")), kernel.Sub(kernel.Ref(Elements), kernel.Const(1)))
	blk := func(j kernel.Expr) kernel.Expr { return kernel.Add(kernel.Mul(gx, kernel.Const(n*l)), j) }
	tu, tv := lanes{name: "tu", l: l}, lanes{name: "tv", l: l}
	u, v := lanes{name: "u", glob: "ub", l: l}, lanes{name: "v", glob: "ub", l: l}
	i := kernel.Ref("i")
	dump := func(s kernel.Stmt) kernel.Stmt {
		return kernel.For{Var: "i", From: kernel.Const(0), To: kernel.Const(n), Body: []kernel.Stmt{laneLoop(l, []kernel.Stmt{s})}}
	}
	body := []kernel.Stmt{
		kernel.Decl{Type: kernel.Index, Name: "ub", Dims: []int{l}},
		laneLoop(l, []kernel.Stmt{kernel.Put("ub", kernel.Mul(el, kernel.Const(n)), kernel.Ref("l"))}),
		kernel.Decl{Type: kernel.Real, Name: "tu", Dims: []int{n * l}},
		kernel.Decl{Type: kernel.Real, Name: "tv", Dims: []int{n * l}},
	}
	body = append(body, readIn(u, tu, n)...)
	body = append(body,
		dump(kernel.Put("w", tu.at(i), blk(tu.index(i)))),
		dump(tv.put(kernel.At("x", blk(tv.index(i))), i)))
	return &kernel.Kernel{
		Name: "copies", DType: kernel.F64,
		Params: []kernel.Param{
			{Name: "u", Kind: kernel.BufferParam, Type: kernel.Real, Const: true},
			{Name: "x", Kind: kernel.BufferParam, Type: kernel.Real, Const: true},
			{Name: "w", Kind: kernel.BufferParam, Type: kernel.Real},
			{Name: "v", Kind: kernel.BufferParam, Type: kernel.Real},
			{Name: Elements, Kind: kernel.ScalarParam, Type: kernel.Index},
		},
		Launch: kernel.Launch{Block: [3]int{1, 1, 1}, Grid: [3]kernel.Axis{kernel.Over(Elements, l)}},
		Body:   append(body, writeOut(tv, v, n, owned)...),
	}
}

// readIn and writeOut copy 8 lanes of at least blockedFrom values in
// blocks of L values of each lane (a loop along the element, vectorised,
// inside a loop over the blocks; a scalar tail of fewer than L values),
// other copies a lane at a time, and the values land in their lanes: value
// i of lane l at i·L + l, lanes past the last element repeating it, with
// n shorter than, equal to and not a multiple of L, and a short last
// batch.
func TestCPUVecCopyBlocks(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 7))
	tests := []struct{ n, l, elements int }{
		{3, 4, 4}, {3, 8, 5}, {8, 8, 8}, {27, 4, 6}, {125, 8, 17}, {216, 8, 8}, {216, 4, 11},
		{343, 8, 13}, {512, 8, 17}, {729, 8, 3},
	}
	for _, tc := range tests {
		for _, owned := range []bool{false, true} {
			name := fmt.Sprintf("n=%d L=%d E=%d owned=%v", tc.n, tc.l, tc.elements, owned)
			k := copyKernel(tc.n, tc.l, owned)
			want := tc.l == 8 && tc.n >= 216 // blockedFrom
			// The blocked form: each copy has a vectorised loop along the
			// element (k) touching u or v, and any loop over single values
			// (i, outside the dumps) runs fewer than L times.
			along := map[string]bool{}
			kernel.WalkStmts(k.Body, func(s kernel.Stmt) bool {
				f, ok := s.(kernel.For)
				if !ok {
					return true
				}
				if f.Var == "k" && f.Vectorize {
					kernel.WalkStmts(f.Body, func(s kernel.Stmt) bool {
						if st, ok := s.(kernel.Store); ok && st.Buf == "v" {
							along["v"] = true
						}
						kernel.StmtExprs(s, func(e kernel.Expr) {
							kernel.WalkExpr(e, func(e kernel.Expr) {
								if ld, ok := e.(kernel.Load); ok && ld.Buf == "u" {
									along["u"] = true
								}
							})
						})
						return true
					})
				}
				if f.Var == "i" {
					from, _ := f.From.(kernel.Int)
					to, ok := f.To.(kernel.Int)
					if _, dump := f.Body[0].(kernel.For); !dump && want && (!ok || to.V-from.V >= int64(tc.l)) {
						t.Errorf("%s: a scalar copy loop of %v…%v", name, from.V, to.V)
					}
				}
				return true
			})
			if along["u"] != want || along["v"] != want {
				t.Errorf("%s: copies of u, v along the element %v, want %v", name, along, want)
			}
			batches := (tc.elements + tc.l - 1) / tc.l
			u := make([]float64, tc.elements*tc.n)
			x := make([]float64, batches*tc.n*tc.l)
			w := make([]float64, len(x))
			v := make([]float64, len(u))
			for j := range u {
				u[j] = rng.Float64()
			}
			// x holds each lane's element's values, lane-fastest.
			for g := range batches {
				for ln := range tc.l {
					e := min(g*tc.l+ln, tc.elements-1)
					for j := range tc.n {
						x[(g*tc.n+j)*tc.l+ln] = float64(e*tc.n+j) + 0.5
					}
				}
			}
			err := interp.Run(k, [3]int{batches, 1, 1}, map[string]any{"u": u, "x": x, "w": w, "v": v, Elements: tc.elements})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			for g := range batches {
				for ln := range tc.l {
					e := min(g*tc.l+ln, tc.elements-1)
					for j := range tc.n {
						if got, want := w[(g*tc.n+j)*tc.l+ln], u[e*tc.n+j]; got != want {
							t.Fatalf("%s: readIn batch %d value %d lane %d = %v, want %v", name, g, j, ln, got, want)
						}
					}
				}
			}
			for j := range v {
				if want := float64(j) + 0.5; v[j] != want {
					t.Fatalf("%s: writeOut v[%d] = %v, want %v", name, j, v[j], want)
				}
			}
		}
	}
}
