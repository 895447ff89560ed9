package kernel

import (
	"strings"
	"testing"
)

// The shapes MMA takes, in which type, from which architecture.
func TestMMAShapes(t *testing.T) {
	for _, sh := range MMAShapes {
		if sh.Arch() != map[bool]int{true: 80, false: 90}[sh == M8N8K4] || !sh.Valid() {
			t.Errorf("%s: arch %d, valid %v", sh, sh.Arch(), sh.Valid())
		}
	}
	if (MMAShape{M: 8, N: 8, K: 8}).Valid() {
		t.Error("m8n8k8 taken")
	}
	// TF32 takes the two shapes whose layouts CuTe gives its TF32 atoms
	// (SM80_16x8x4_F32TF32TF32F32_TN, SM80_16x8x8_F32TF32TF32F32_TN) as
	// they are for fp64 (kernel/mma's test), from sm_80.
	for _, sh := range MMAShapes {
		want := sh == M16N8K4 || sh == M16N8K8
		if MMATF32.Takes(sh) != want || (want && MMATF32.Arch(sh) != 80) || (!want && MMATF32.Arch(sh) != 0) {
			t.Errorf("tf32 %s: takes %v, arch %d", sh, MMATF32.Takes(sh), MMATF32.Arch(sh))
		}
		if MMAF64.Arch(sh) != sh.Arch() || !MMAF64.Takes(sh) {
			t.Errorf("f64 %s: arch %d", sh, MMAF64.Arch(sh))
		}
	}
	if MMATF32.DType() != F32 || MMAF64.DType() != F64 || MMATF32.String() != "tf32" {
		t.Error("MMAType's precision or name")
	}
}

// mmaKernel is one warp's m8n8k4 on elements of x, under body's control.
func mmaKernel(block int, dt DType, wrap func(MMA) []Stmt) *Kernel {
	m := MMA{Shape: M8N8K4, D: []string{"d0", "d1"}, A: []Expr{At("x", lx)}, B: []Expr{At("x", lx)}, C: []Expr{v("d0"), v("d1")}}
	body := []Stmt{Decl{Type: Real, Name: "d0", Init: Lit{V: 0}}, Decl{Type: Real, Name: "d1", Init: Lit{V: 0}}}
	body = append(body, wrap(m)...)
	body = append(body, Put("y", v("d0"), lx))
	return &Kernel{
		Name: "k", DType: dt,
		Params: []Param{{Name: "x", Kind: BufferParam, Type: Real, Const: true},
			{Name: "y", Kind: BufferParam, Type: Real}},
		Launch: Launch{Block: [3]int{block, 1, 1}},
		Hints:  Hints{MinArch: 80},
		Body:   body,
	}
}

// tf32MMA turns mmaKernel's m8n8k4 into a TF32 m16n8k8 (A's elements
// rounded to TF32, B's not, which only the interpreter would see).
func tf32MMA(m MMA) Stmt {
	a := Call{Fn: TF32, Args: []Expr{m.A[0]}}
	m.Shape, m.Type = M16N8K8, MMATF32
	m.A, m.B = []Expr{a, a, a, a}, []Expr{m.B[0], m.B[0]}
	m.C, m.D = []Expr{v("d0"), v("d1"), v("d1"), v("d0")}, []string{"d1", "d0", "d2", "d3"}
	return If{Cond: Int{V: 1}, Then: []Stmt{Decl{Type: Real, Name: "d2"}, Decl{Type: Real, Name: "d3"}, m}}
}

func TestValidateMMA(t *testing.T) {
	one := func(m MMA) []Stmt { return []Stmt{m} }
	if err := Validate(mmaKernel(64, F64, one)); err != nil {
		t.Fatalf("a good mma: %v", err)
	}
	if got := NeedsArch(mmaKernel(64, F64, one).Body); got != 80 {
		t.Errorf("NeedsArch = %d, want 80", got)
	}
	tf32 := func(m MMA) []Stmt { return []Stmt{tf32MMA(m)} }
	if err := Validate(mmaKernel(64, F32, tf32)); err != nil {
		t.Fatalf("a good tf32 mma: %v", err)
	}
	// TF32 rounding alone needs sm_80, but no whole warps.
	round := func(MMA) []Stmt { return []Stmt{Assign{Name: "d0", Value: Call{Fn: TF32, Args: []Expr{At("x", lx)}}}} }
	if k := mmaKernel(48, F32, round); NeedsArch(k.Body) != 80 || HasMMA(k.Body) || Validate(k) != nil {
		t.Errorf("tf32 rounding alone: needs sm_%d, mma %v, %v", NeedsArch(k.Body), HasMMA(k.Body), Validate(k))
	}
	uniform := func(m MMA) []Stmt {
		return []Stmt{For{Var: "q", From: Int{V: 0}, To: Int{V: 3}, Body: []Stmt{If{Cond: Bin{Op: "<", L: v("q"), R: Int{V: 2}}, Then: []Stmt{m}}}}}
	}
	if err := Validate(mmaKernel(32, F64, uniform)); err != nil {
		t.Errorf("an mma under uniform control flow: %v", err)
	}
	// A warp's index (the thread index over a multiple of 32, directly
	// or through a variable that holds the thread index) is the same on
	// its lanes: an mma may depend on it, a barrier may not.
	tid := Decl{Type: Int32, Name: "tid", Init: Cast{To: Int32, X: lx}}
	byWarp := func(cond Expr) func(MMA) []Stmt {
		return func(m MMA) []Stmt {
			return []Stmt{tid, Decl{Type: Int32, Name: "w", Init: Bin{Op: "/", L: v("tid"), R: Int{V: 32}}},
				If{Cond: cond, Then: []Stmt{m}}}
		}
	}
	for _, cond := range []Expr{
		Bin{Op: "==", L: v("w"), R: Int{V: 1}},
		Bin{Op: "<", L: Bin{Op: "/", L: lx, R: Int{V: 64}}, R: Int{V: 1}},
		Select{Cond: Bin{Op: "==", L: v("w"), R: Int{V: 0}}, Then: Int{V: 1}, Else: Int{V: 0}},
	} {
		if err := Validate(mmaKernel(128, F64, byWarp(cond))); err != nil {
			t.Errorf("an mma under a warp's condition %v: %v", cond, err)
		}
	}
	for _, tc := range []struct {
		name string
		k    *Kernel
		want string
	}{
		{"fp32", mmaKernel(32, F32, one), "f64 mma in a f32 kernel"},
		{"tf32 in fp64", mmaKernel(32, F64, func(m MMA) []Stmt { return []Stmt{tf32MMA(m)} }), "tf32 mma in a f64 kernel"},
		{"tf32 m8n8k4", mmaKernel(32, F32, func(m MMA) []Stmt { m.Type = MMATF32; return []Stmt{m} }), "tf32 mma of shape m8n8k4"},
		{"tf32 rounding in fp64", mmaKernel(32, F64, func(m MMA) []Stmt {
			return []Stmt{m, Assign{Name: "d0", Value: Call{Fn: TF32, Args: []Expr{v("d1")}}}}
		}), "tf32 rounding in a f64 kernel"},
		{"tf32 of an integer", mmaKernel(32, F32, func(m MMA) []Stmt {
			return []Stmt{tf32MMA(m), Assign{Name: "d0", Value: Call{Fn: TF32, Args: []Expr{lx}}}}
		}), "tf32 takes reals"},
		{"half a warp", mmaKernel(48, F64, one), "whole warps"},
		{"divergent", mmaKernel(32, F64, func(m MMA) []Stmt {
			return []Stmt{If{Cond: Bin{Op: "<", L: lx, R: Int{V: 16}}, Then: []Stmt{m}}}
		}), "differs between threads"},
		{"lanes of a warp", mmaKernel(64, F64, func(m MMA) []Stmt {
			return []Stmt{If{Cond: Bin{Op: "<", L: Bin{Op: "/", L: lx, R: Int{V: 16}}, R: Int{V: 1}}, Then: []Stmt{m}}}
		}), "differs between threads"},
		{"lane of a warp", mmaKernel(64, F64, func(m MMA) []Stmt {
			return []Stmt{If{Cond: Bin{Op: "==", L: Bin{Op: "%", L: lx, R: Int{V: 32}}, R: Int{V: 0}}, Then: []Stmt{m}}}
		}), "differs between threads"},
		{"warp's index reassigned", mmaKernel(64, F64, func(m MMA) []Stmt {
			return []Stmt{Decl{Type: Int32, Name: "tid", Init: Cast{To: Int32, X: lx}}, Assign{Name: "tid", Value: Bin{Op: "+", L: v("tid"), R: Int{V: 16}}},
				If{Cond: Bin{Op: "==", L: Bin{Op: "/", L: v("tid"), R: Int{V: 32}}, R: Int{V: 0}}, Then: []Stmt{m}}}
		}), "differs between threads"},
		{"warp over two rows", func() *Kernel {
			k := mmaKernel(16, F64, func(m MMA) []Stmt {
				return []Stmt{If{Cond: Bin{Op: "==", L: Bin{Op: "/", L: lx, R: Int{V: 32}}, R: Int{V: 0}}, Then: []Stmt{m}}}
			})
			k.Launch.Block = [3]int{16, 2, 1}
			return k
		}(), "differs between threads"},
		{"barrier under a warp's condition", mmaKernel(64, F64, func(m MMA) []Stmt {
			return []Stmt{m, If{Cond: Bin{Op: "==", L: Bin{Op: "/", L: lx, R: Int{V: 32}}, R: Int{V: 0}}, Then: []Stmt{Barrier{}}}}
		}), "barrier under a condition"},
		{"varying loop", mmaKernel(32, F64, func(m MMA) []Stmt {
			return []Stmt{For{Var: "q", From: lx, To: Int{V: 40}, Step: 32, Body: []Stmt{m}}}
		}), "differs between threads"},
		{"shape", mmaKernel(32, F64, func(m MMA) []Stmt { m.Shape = MMAShape{8, 8, 8}; return []Stmt{m} }), "shape m8n8k8"},
		{"count", mmaKernel(32, F64, func(m MMA) []Stmt { m.B = append(m.B, Lit{V: 1}); return []Stmt{m} }), "takes 1, 1, 2 and 2"},
		{"undeclared D", mmaKernel(32, F64, func(m MMA) []Stmt { m.D = []string{"d0", "e"}; return []Stmt{m} }), `"e"`},
		{"D twice", mmaKernel(32, F64, func(m MMA) []Stmt { m.D = []string{"d0", "d0"}; return []Stmt{m} }), "twice"},
		{"D a buffer", mmaKernel(32, F64, func(m MMA) []Stmt { m.D = []string{"d0", "x"}; return []Stmt{m} }), "not a declared real variable"},
		{"integer A", mmaKernel(32, F64, func(m MMA) []Stmt { m.A = []Expr{lx}; return []Stmt{m} }), "index value"},
		{"no arch", func() *Kernel { k := mmaKernel(32, F64, one); k.Hints.MinArch = 0; return k }(), "Hints.MinArch"},
		{"active", func() *Kernel { k := mmaKernel(32, F64, one); k.Active = Int{V: 3}; return k }(), "Active must be nil"},
		{"unroll twice", mmaKernel(32, F64, func(m MMA) []Stmt {
			return []Stmt{For{Var: "q", From: Int{V: 0}, To: Int{V: 3}, Unroll: true, UnrollBy: 2, Body: []Stmt{m}}}
		}), "unroll by 2"},
		{"m16 on sm_80", mmaKernel(32, F64, func(m MMA) []Stmt {
			m.Shape, m.A, m.C, m.D = M16N8K4, []Expr{Lit{V: 1}, Lit{V: 2}}, []Expr{v("d0"), v("d1"), v("d0"), v("d1")}, []string{"d0", "d1", "d2", "d3"}
			return []Stmt{Decl{Type: Real, Name: "d2"}, Decl{Type: Real, Name: "d3"}, m}
		}), "needs sm_90"},
	} {
		err := Validate(tc.k)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
}
