package sparse

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/emit"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/operator"
	"github.com/bespoke-hpc/bespoke/verify"
)

// wgmmaEdge are wgmma variants whose tiles divide neither m nor k nor n:
// one and two warpgroups, chunks that leave a partial last chunk, two to
// four buffers, rows split over blocks, registers capped.
var wgmmaEdge = []string{
	"wgmma/x1-c8-t2-a2",
	"wgmma/x2-c16-t1-a3",
	"wgmma/x1-c24-t3-a4-y2",
	"wgmma/x2-c8-t2-a3-y3-b1",
	"wgmma/x1-c16-t3-a3-o",
	"wgmma/x2-c8-t2-a2-y2-o",
	// Warpgroups apart: each its own columns of B and barriers.
	"wgmma/x2-c16-t2-a3-o-w",
	"wgmma/x3-c8-t1-a2-y2-w",
}

// wgmmaCases builds the wgmma variants (those offered on sm_90, or names)
// for each instance of op's Checks at n columns, in fp32.
func wgmmaCases(t *testing.T, rng *rand.Rand, op *operator.Operator, beta float64, n int, names []string) []verify.Case {
	t.Helper()
	return variantCases(t, rng, op, kernel.F32, beta, n, func(pb Problem) []Variant { return WGMMACandidates(pb, 90, Fill{}) }, names)
}

// Every wgmma variant matches the float64 reference within TolF32 in the
// interpreter, which emulates each warpgroup's wgmma (A's and B's TF32
// parts, exact products, fp32 sums) reading B from shared memory by the
// descriptor's layout: a PyFR tet (the candidates), random operators whose
// m and k no tile divides (one with zero bands), β = 0 (C NaN-poisoned), 1
// and 0.5, n, ldb and ldc baked in (pairs of C) and at run time (scalars),
// n not a multiple of a tile.
func TestWGMMAInterpret(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 9))
	banded := randomDense(t, rng, 45, 70, func(i, r int) bool { return (i < 20) != (r < 33) })
	total, worst := 0, 0.0
	copies := map[string]int{} // scalar, vector, vector cut short
	for _, oc := range []mmaOpCase{
		{pyfrOp(t, "p4/tet/m460"), nil, []float64{0, 1}, 200},
		{randomDense(t, rng, 37, 29, nil), wgmmaEdge, []float64{0, 1}, 150},
		{banded, wgmmaEdge[1:3], []float64{0.5}, 130},
	} {
		for _, beta := range oc.betas {
			cs := wgmmaCases(t, rng, oc.op, beta, oc.n, oc.names)
			if len(cs) == 0 {
				t.Fatalf("%s: no kernels", oc.op.Name)
			}
			for _, c := range cs {
				res, err := verify.Interpret(c)
				if err != nil || !res.OK() {
					t.Fatalf("%s %s: %+v, %v", c.Label, c.Kernel.Variant, res, err)
				}
				total++
				worst = max(worst, res.MaxRelErr)
				kernel.WalkStmts(c.Kernel.Body, func(s kernel.Stmt) bool {
					if cp, ok := s.(kernel.CopyAsync); ok {
						copies[map[bool]string{false: "scalar", true: "vector"}[cp.Width > 1]+map[bool]string{false: "", true: " cut short"}[cp.Valid != nil]]++
						return false
					}
					return true
				})
			}
		}
	}
	// ldb and ldc baked in (16-byte copies of B, pairs of C), n a
	// multiple of 4 baked in (whole vectors) and n odd at run time (the
	// last vector of B cut short, the last column of C alone), as the
	// bench times: β = 1, whose old C the last column must read too.
	for _, shape := range []struct{ pbN, n, ldb, ldc int }{{256, 256, 260, 264}, {0, 251, 260, 262}} {
		pb := NewOperator(pyfrOp(t, "p4/tet/m3"), kernel.F32, 0.75, 1).Spec()
		pb.N, pb.LDB, pb.LDC = shape.pbN, shape.ldb, shape.ldc
		in := &Instance{Problem: pb, N: shape.n, LDB: pb.LDB, LDC: pb.LDC}
		wgmmaBaked(t, rng, in, copies)
	}
	for _, kind := range []string{"scalar", "vector", "vector cut short"} {
		if copies[kind] == 0 {
			t.Errorf("no kernel with %s copies of B", kind)
		}
	}
	t.Logf("%d kernels interpreted (copies of B: %v), largest error %.3g (tolerance %g)", total, copies, worst, TolF32)
	// hi and lo rounded to nearest keep the error near fp32's own; the
	// parts the tensor cores truncate left 6e-7 here
	// (docs/rationale.md#tf32-split).
	if worst > wgmmaSplitErr {
		t.Errorf("largest error %.3g, above the rounded split's %g", worst, wgmmaSplitErr)
	}
}

// wgmmaSplitErr bounds TestWGMMAInterpret's largest relative error with
// the split rounded to nearest (1.6e-7 measured).
const wgmmaSplitErr = 3e-7

// The interpreter's wgmma is not the identity: with one product (A_hi·B_hi,
// the lo parts' wgmma dropped) a kernel fails TolF32, and with the
// descriptor's strides swapped it fails outright.
func TestWGMMAMutantsFail(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 10))
	cs := wgmmaCases(t, rng, pyfrOp(t, "p4/tet/m460"), 0, 130, nil)
	if len(cs) == 0 {
		t.Fatal("no wgmma kernels")
	}
	for _, tc := range []struct {
		name   string
		mutate func(kernel.WGMMA) (kernel.WGMMA, bool)
	}{
		{"hi only", func(x kernel.WGMMA) (kernel.WGMMA, bool) {
			// A lo part's product made zero (not dropped: the first
			// wgmma of a tile starts its sums).
			if strings.HasPrefix(x.A[0].(kernel.Var).Name, "fl") || isLoPart(x) {
				x.A = []kernel.Expr{kernel.Lit{}, kernel.Lit{}, kernel.Lit{}, kernel.Lit{}}
				return x, true
			}
			return x, false
		}},
		{"strides swapped", func(x kernel.WGMMA) (kernel.WGMMA, bool) {
			x.LBO, x.SBO = x.SBO, x.LBO
			return x, true
		}},
	} {
		c := cs[0]
		k := *c.Kernel
		changed := 0
		k.Body = kernel.RewriteStmts(k.Body, func(s kernel.Stmt) []kernel.Stmt {
			if x, ok := s.(kernel.WGMMA); ok {
				y, ok := tc.mutate(x)
				if ok {
					changed++
				}
				return []kernel.Stmt{y}
			}
			return []kernel.Stmt{s}
		})
		if changed == 0 {
			t.Fatalf("%s: no wgmma changed", tc.name)
		}
		c.Kernel = &k
		res, err := verify.Interpret(c)
		if err == nil && res.OK() {
			t.Errorf("%s (%s) passed: %+v", tc.name, k.Variant, res)
		}
		t.Logf("%s (%s, %d wgmma changed): %+v, %v", tc.name, k.Variant, changed, res, err)
	}
}

// isLoPart says whether a wgmma reads α·A's lo part (its offset adds the
// half of ash past the hi part: a literal at the top of BAt).
func isLoPart(x kernel.WGMMA) bool {
	b, ok := x.BAt.(kernel.Bin)
	if !ok {
		return false
	}
	_, lit := b.R.(kernel.Int)
	inner, nested := b.L.(kernel.Bin)
	return lit && nested && inner.Op == "+"
}

func TestWGMMAParse(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"wgmma", "wgmma/x2-c32-t16-a3"},
		{"wgmma/x1-c16-t16-a4", "wgmma/x1-c16-t16-a4"},
		{"wgmma/x2-c32-t16-a3-y2", "wgmma/x2-c32-t16-a3-y2"},
		{"wgmma/x2-c32-t16-a3-y2-b1", "wgmma/x2-c32-t16-a3-y2-b1"},
		{"wgmma/x4-c8-t16-a4-o-w", "wgmma/x4-c8-t16-a4-o-w"},
		{"wgmma/x4-c8-t16-a4-y2-w-b1", "wgmma/x4-c8-t16-a4-y2-w-b1"},
		{"wgmma/x4-c8-t16-a4-w-o", ""}, // -o before -w
		{"wgmma/x2-c12-t16-a3", ""},    // chunk not a multiple of 8
		{"wgmma/x9-c32-t16-a3", ""},    // too many warpgroups
		{"wgmma/x2-c32-t16-a1", ""},    // one buffer
		{"wgmma/x2-c32-t0-a3", ""},
		{"wgmma/x2-c32", ""},
	} {
		v, err := ParseVariant(tc.in)
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("%s: parsed as %s, want an error", tc.in, v.Name())
		case tc.want != "" && err != nil:
			t.Errorf("%s: %v", tc.in, err)
		case tc.want != "" && v.Name() != tc.want:
			t.Errorf("%s: named %s, want %s", tc.in, v.Name(), tc.want)
		}
	}
}

// The candidates: fp32 on sm_90 only; rows split where α·A would not fit
// (p6/tet/m6, 252×112); every one fits; none for fp64 or sm_80 or sm_100;
// CUDA prints them for sm_90a and the other dialects refuse them.
func TestWGMMACandidates(t *testing.T) {
	for _, tc := range []struct {
		op     string
		dt     kernel.DType
		arch   int
		groups int // want every candidate's rows split over at least this many blocks; -1: none offered
	}{
		{"p6/tet/m6", kernel.F32, 90, 2},
		{"p6/tet/m132", kernel.F32, 90, 1},
		{"p5/tet/m460", kernel.F32, 90, 1},
		{"p6/tet/m132", kernel.F64, 90, -1},
		{"p6/tet/m132", kernel.F32, 80, -1},
		{"p6/tet/m132", kernel.F32, 100, -1},
		{"p1/hex/m0", kernel.F32, 90, -1}, // sparse
	} {
		pb := Problem{Op: pyfrOp(t, tc.op), DType: tc.dt, Alpha: 1, N: 1 << 20, LDB: 1 << 20, LDC: 1 << 20}
		vs := WGMMACandidates(pb, tc.arch, Fill{})
		if tc.groups < 0 {
			if len(vs) > 0 {
				t.Errorf("%s %s sm_%d: offered %v", tc.op, tc.dt, tc.arch, vs)
			}
			continue
		}
		if len(vs) == 0 {
			t.Fatalf("%s: no candidates", tc.op)
		}
		for _, v := range vs {
			if err := pb.Check(v); err != nil {
				t.Errorf("%s: %v", tc.op, err)
			}
			if max(v.(WGMMAParams).RowGroups, 1) < tc.groups {
				t.Errorf("%s: %s keeps the rows in fewer than %d blocks", tc.op, v.Name(), tc.groups)
			}
		}
		k, err := Build(pb, vs[0])
		if err != nil {
			t.Fatal(err)
		}
		src, err := emit.Render(emit.CUDA, k)
		if err != nil {
			t.Fatal(err)
		}
		if !src.ArchSpecific || src.MinArch != 90 || !strings.Contains(src.Text, "wgmma.mma_async.sync.aligned.m64n") {
			t.Errorf("%s: CUDA source not for sm_90a wgmma (arch-specific %v, sm_%d)", tc.op, src.ArchSpecific, src.MinArch)
		}
		for _, d := range []emit.Dialect{emit.OpenCL, emit.C} {
			if _, err := emit.Render(d, k); err == nil {
				t.Errorf("%s rendered a wgmma kernel", d)
			}
		}
	}
}

// wgmmaBaked interprets two wgmma variants on the instance, counting its
// kinds of copies of B into copies.
func wgmmaBaked(t *testing.T, rng *rand.Rand, in *Instance, copies map[string]int) {
	t.Helper()
	d, err := in.Data(rng)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"wgmma/x1-c16-t2-a3", "wgmma/x2-c8-t1-a4-o"} {
		v, err := ParseVariant(name)
		if err != nil {
			t.Fatal(err)
		}
		k, err := in.Build(v)
		if err != nil {
			t.Fatal(err)
		}
		res, err := verify.Interpret(verify.Case{Kernel: k, Data: d, Label: in.Name()})
		if err != nil || !res.OK() {
			t.Fatalf("%s %s: %+v, %v", in.Name(), name, res, err)
		}
		kernel.WalkStmts(k.Body, func(s kernel.Stmt) bool {
			if cp, ok := s.(kernel.CopyAsync); ok && cp.Width == 4 {
				copies[map[bool]string{false: "vector", true: "vector cut short"}[cp.Valid != nil]]++
			}
			return true
		})
	}
}
