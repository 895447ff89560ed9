package kernel

import (
	"strings"
	"testing"
)

// wgmmaKernel is an fp32 kernel of one warpgroup with a wgmma of N = 8.
func wgmmaKernel(body ...Stmt) *Kernel {
	return &Kernel{
		Name: "w", DType: F32,
		Params: []Param{{Name: "x", Kind: BufferParam, Type: Real, Const: true}},
		Shared: []Shared{{Name: "bs", Type: Real, Dims: []int{64}}, {Name: "b2", Type: Real, Dims: []int{8, 8}}},
		Launch: Launch{Block: [3]int{128, 1, 1}},
		Hints:  Hints{MinArch: 90},
		Body:   body,
	}
}

func TestValidateWGMMA(t *testing.T) {
	decls := []Stmt{Decl{Type: Real, Name: "d0", Init: Lit{}}, Decl{Type: Real, Name: "d1", Init: Lit{}},
		Decl{Type: Real, Name: "d2", Init: Lit{}}, Decl{Type: Real, Name: "d3", Init: Lit{}}}
	a := []Expr{Lit{V: 1}, Lit{V: 2}, Lit{V: 3}, Lit{V: 4}}
	mma := WGMMA{N: 8, D: []string{"d0", "d1", "d2", "d3"}, A: a, B: "bs", BAt: Int{}, LBO: 128, SBO: 256, Accumulate: Int{V: 1}}
	body := func(ss ...Stmt) []Stmt { return append(append([]Stmt{}, decls...), ss...) }
	sync := []Stmt{WGMMASync{Kind: ProxyFence}, Barrier{}, WGMMASync{Kind: WGMMAFence}, mma, WGMMASync{Kind: WGMMACommit}, WGMMASync{Kind: WGMMAWait}}
	if err := Validate(wgmmaKernel(body(sync...)...)); err != nil {
		t.Fatalf("a good kernel: %v", err)
	}
	if NeedsArch(sync) != 90 || !ArchSpecific(sync) || !HasMMA(sync) {
		t.Errorf("a wgmma: arch %d, arch-specific %v, mma %v", NeedsArch(sync), ArchSpecific(sync), HasMMA(sync))
	}
	with := func(f func(*WGMMA)) Stmt { m := mma; f(&m); return m }
	for _, tc := range []struct {
		name string
		k    *Kernel
		want string
	}{
		{"N not a multiple of 8", wgmmaKernel(body(with(func(m *WGMMA) { m.N = 12 }))...), "N = 12"},
		{"N past 256", wgmmaKernel(body(with(func(m *WGMMA) { m.N = 264 }))...), "N = 264"},
		{"too few D", wgmmaKernel(body(with(func(m *WGMMA) { m.D = m.D[:3] }))...), "takes 4 elements of A and 4 of D"},
		{"D twice", wgmmaKernel(body(with(func(m *WGMMA) { m.D = []string{"d0", "d1", "d2", "d0"} }))...), "twice"},
		{"stride not of 16 bytes", wgmmaKernel(body(with(func(m *WGMMA) { m.LBO = 8 }))...), "strides"},
		{"B not shared", wgmmaKernel(body(with(func(m *WGMMA) { m.B = "x" }))...), "not a real 1-D shared array"},
		{"B in a 2-D array", wgmmaKernel(body(with(func(m *WGMMA) { m.B = "b2" }))...), "not a real 1-D shared array"},
		{"real offset", wgmmaKernel(body(with(func(m *WGMMA) { m.BAt = Lit{V: 1} }))...), "not an integer"},
		{"divergent", wgmmaKernel(body(If{Cond: Bin{Op: "<", L: Special{Kind: LocalID}, R: Int{V: 64}}, Then: []Stmt{mma}})...), "differs between threads"},
		{"wait for too many", wgmmaKernel(body(WGMMASync{Kind: WGMMAWait, Pending: 9})...), "pending groups"},
		{"fence with a count", wgmmaKernel(body(WGMMASync{Kind: WGMMAFence, Pending: 1})...), "with a count"},
		{"not whole warpgroups", func() *Kernel {
			k := wgmmaKernel(body(mma)...)
			k.Launch.Block = [3]int{96, 1, 1}
			return k
		}(), "whole warpgroups"},
		{"fp64", func() *Kernel { k := wgmmaKernel(body(mma)...); k.DType = F64; return k }(), "fp32 only"},
		{"arch below 90", func() *Kernel { k := wgmmaKernel(body(mma)...); k.Hints.MinArch = 80; return k }(), "sm_90"},
	} {
		err := Validate(tc.k)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
}

// Barriers of part of a block: whole warps dividing a 1-D block into at
// most 15 groups, one size a kernel.
func TestValidatePartBarrier(t *testing.T) {
	k := func(block int, bs ...Stmt) *Kernel {
		w := wgmmaKernel(bs...)
		w.Launch.Block = [3]int{block, 1, 1}
		return w
	}
	if err := Validate(k(256, Barrier{Threads: 128}, Barrier{}, Barrier{Threads: 128})); err != nil {
		t.Fatalf("a good kernel: %v", err)
	}
	two := k(128, Barrier{Threads: 64})
	two.Launch.Block = [3]int{64, 2, 1}
	for _, tc := range []struct {
		name string
		k    *Kernel
		want string
	}{
		{"not whole warps", k(256, Barrier{Threads: 48}), "multiple of 32"},
		{"not dividing", k(320, Barrier{Threads: 128}), "multiple of 32"},
		{"16 groups", k(512, Barrier{Threads: 32}), "at most 15"},
		{"two sizes", k(256, Barrier{Threads: 128}, Barrier{Threads: 64}), "different sizes"},
		{"2-D block", two, "want 1-D"},
	} {
		if err := Validate(tc.k); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
}

// A vector copy: its width 1, 2 or 4, a count of valid elements only with a
// vector; Value zero-fills past the count and where the condition fails.
func TestCopyAsyncVector(t *testing.T) {
	k := func(cp CopyAsync) *Kernel {
		return wgmmaKernel(cp, AsyncCommit{}, AsyncWait{})
	}
	cp := CopyAsync{Dst: "bs", DstIndex: []Expr{Int{V: 4}}, Src: "x", SrcIndex: Int{V: 8}, Width: 4, Valid: Int{V: 3}}
	if err := Validate(k(cp)); err != nil {
		t.Fatalf("a good copy: %v", err)
	}
	bad := cp
	bad.Width = 3
	if err := Validate(k(bad)); err == nil || !strings.Contains(err.Error(), "want 1, 2 or 4") {
		t.Errorf("width 3: %v", err)
	}
	bad = cp
	bad.Width = 1
	if err := Validate(k(bad)); err == nil || !strings.Contains(err.Error(), "valid elements") {
		t.Errorf("a count with one element: %v", err)
	}
	if cp.Elements() != 4 {
		t.Errorf("a copy of 4: %d elements", cp.Elements())
	}
	if _, ok := cp.Value(3).(Select); !ok {
		t.Errorf("element 3 of 3 valid: %v, want a select", cp.Value(3))
	}
}
