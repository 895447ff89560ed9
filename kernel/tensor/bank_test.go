package tensor

import (
	"testing"

	"github.com/bespoke-hpc/bespoke/fem"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
)

// The bank model on hand-worked warps: word addresses, -1 for a lane
// that takes no part.
func TestWavefronts(t *testing.T) {
	seq := func(from, n, stride int64) []int64 {
		out := make([]int64, n)
		for i := range out {
			out[i] = from + int64(i)*stride
		}
		return out
	}
	cat := func(parts ...[]int64) (out [warpLanes]int64) {
		for i := range out {
			out[i] = unknownAddr
		}
		l := 0
		for _, p := range parts {
			for _, a := range p {
				out[l] = a
				l++
			}
		}
		return out
	}
	for _, c := range []struct {
		name       string
		addrs      [warpLanes]int64
		word       int
		got, ideal int
	}{
		{"doubles in a row", cat(seq(0, 32, 1)), 8, 2, 2},
		{"one double broadcast", cat(seq(5, 32, 0)), 8, 2, 2},
		{"doubles 16 apart: one bank group", cat(seq(0, 16, 16)), 8, 16, 1},
		{"doubles 2 apart: two-way", cat(seq(0, 32, 2)), 8, 4, 2},
		{"odd stride of doubles", cat(seq(0, 32, 9)), 8, 2, 2},
		// BK1 N = 1 (Q = 3), the z stage: the half-warp's lanes 0–8 on
		// element 0 (words 0–8), 9–15 on element 1 (27–33), which meets
		// words 0 and 1 mod 16; lanes 16, 17 (34, 35) alone.
		{"BK1 N=1 stride 27", cat(seq(0, 9, 1), seq(27, 9, 1)), 8, 3, 2},
		// An element stride ≡ 9 (mod 16) puts element 1 on words 9–15.
		{"BK1 N=1 stride 25", cat(seq(0, 9, 1), seq(25, 9, 1)), 8, 2, 2},
		{"a broadcast half-warp, then a row", cat(seq(0, 16, 0), seq(3, 16, 1)), 8, 2, 2},
		{"floats in a row", cat(seq(0, 32, 1)), 4, 1, 1},
		{"floats 32 apart", cat(seq(0, 32, 32)), 4, 32, 1},
		{"floats 2 apart", cat(seq(0, 32, 2)), 4, 2, 1},
		{"no lane", cat(), 8, 0, 0},
	} {
		got, ideal := wavefronts(&c.addrs, c.word)
		if got != c.got || ideal != c.ideal {
			t.Errorf("%s: %d wavefronts (%d ideal), want %d (%d)", c.name, got, ideal, c.got, c.ideal)
		}
	}
	// A half-warp with no active lane costs nothing.
	a := [warpLanes]int64{}
	for i := range a {
		a[i] = unknownAddr
		if i >= 16 {
			a[i] = int64(i)
		}
	}
	if got, ideal := wavefronts(&a, 8); got != 1 || ideal != 1 {
		t.Errorf("second half-warp only: %d (%d ideal), want 1 (1)", got, ideal)
	}
}

// The tracer on a kernel written out by hand: a block of 3×3×2 threads
// (two elements of BK1 N = 1) reading s[z][0][y][x], lanes with x < 2
// writing s[z][x][y][0].
func TestBankTrace(t *testing.T) {
	k := &kernel.Kernel{
		Name:   "trace",
		DType:  kernel.F64,
		Launch: kernel.Launch{Block: [3]int{3, 3, 2}},
		Params: []kernel.Param{{Name: "v", Kind: kernel.BufferParam, Type: kernel.Real}},
		Shared: []kernel.Shared{{Name: "s", Type: kernel.Real, Dims: []int{2, 3, 3, 3}}},
		Body: []kernel.Stmt{
			kernel.Decl{Type: kernel.Real, Name: "x", Init: kernel.At("s", lz, kernel.Const(0), ly, lx)},
			kernel.If{Cond: kernel.Lt(lx, kernel.Const(2)), Then: []kernel.Stmt{
				kernel.Put("s", kernel.Ref("x"), lz, lx, ly, kernel.Const(0)),
			}},
		},
	}
	c, err := BankConflicts(k)
	if err != nil {
		t.Fatal(err)
	}
	// The load: see "BK1 N=1 stride 27" above. The store: lanes (x, y, z)
	// with x < 2 at 27z + 9x + 3y: half-warp 0 holds (0..1, 0..2, 0) at
	// 0 3 6 9 12 15 and (0..1, 0..1, 1) at 27 30 36 39 (≡ 11 14 4 7):
	// distinct; half-warp 1 (lanes 16, 17: (1, 2, 1), (2, 2, 1)) holds
	// (1, 2, 1) at 42 alone.
	want := BankCount{Loads: 1, LoadWavefronts: 3, LoadIdeal: 2, Stores: 1, StoreWavefronts: 2, StoreIdeal: 2}
	if c != want {
		t.Errorf("got %+v, want %+v", c, want)
	}
	// Laid out with an element stride of 25 the load is conflict-free;
	// the store's element 1 (25 34 28 37 31 ≡ 9 2 12 5 15) now meets
	// element 0 at 9, 12 and 15.
	layCube(k, cubeStrides{se: 25, sc: 9, sb: 3}, 2)
	c, err = BankConflicts(k)
	if err != nil {
		t.Fatal(err)
	}
	want = BankCount{Loads: 1, LoadWavefronts: 2, LoadIdeal: 2, Stores: 1, StoreWavefronts: 3, StoreIdeal: 2}
	if c != want {
		t.Errorf("element stride 25: got %+v, want %+v", c, want)
	}
	if k.Shared[0].Dims[0] != 2 || k.Shared[0].Dims[1] != 25 {
		t.Errorf("s declared %v, want [2 25]", k.Shared[0].Dims)
	}
}

// cubeGPU are the targets whose candidates the padding covers.
var cubeGPU = family.Target{GPU: true, MinBlocks: true, CUDAArch: 90}

// plainOf is v's kernel with s as built (no padding): its /rm twin.
func plainOf(t *testing.T, p *Problem, v Variant) *kernel.Kernel {
	t.Helper()
	v.RowMajor = true
	k, err := (&Instance{Problem: p, E: 100}).Build(v)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// The chosen maps and layouts of s against the kernel as first written
// (s[E][Q][Q][Q|1]): never more conflict wavefronts (loads and stores)
// for any offered candidate, the bank model able to follow every one
// (else padCube keeps it as written), the block within MaxShared; and,
// for the best layouts of the profiled kernels at N = 1–12
// (docs/results/h200/ncu-fem-f64.csv), at most the conflicts per load
// given: below those as written at N = 1–8 (BK1 0.30–1.08, BK3
// 0.04–0.40). -v prints them before and after.
func TestCubePadding(t *testing.T) {
	for _, c := range []struct {
		op      fem.Kernel
		n       int
		variant string
		perLoad float64 // the most conflict wavefronts per load after
	}{
		{fem.BK1, 1, "cube-lit/e32", 0.3},
		{fem.BK1, 2, "cube-lit/e8", 0},
		{fem.BK1, 3, "cube-lit/e4", 0},
		{fem.BK1, 4, "cube-lit/e4", 0.4},
		{fem.BK1, 5, "cube-lit/e4", 0.7},
		{fem.BK1, 6, "cube-lit/e1", 0},
		{fem.BK1, 7, "cube-fold/e1", 0},
		{fem.BK1, 8, "cube-fold/e1", 0},
		{fem.BK3, 1, "cube-lit/e16", 0.05},
		{fem.BK3, 2, "cube-lit/e4", 0},
		{fem.BK3, 3, "cube-lit/e8", 0},
		{fem.BK3, 4, "cube-lit/e4", 0.06},
		{fem.BK3, 5, "cube-pair/e1", 0.06},
		{fem.BK3, 6, "cube-pair/e2", 0},
		{fem.BK3, 7, "cube-pair/e2", 0.04},
		{fem.BK3, 8, "cube-pair/e1", 0.015},
		{fem.BK1, 9, "cube-fold/e1", 0.52},
		{fem.BK1, 10, "cube-fold/e1", 0.42},
		{fem.BK1, 11, "cube-fold/e1", 0.59},
		{fem.BK1, 12, "cube-fold/e1", 0.47},
		{fem.BK3, 9, "cube-fold/e1", 0.032},
		{fem.BK3, 10, "cube-pair/e1", 0.04},
		{fem.BK3, 11, "cube-fold/e1", 0.027},
		{fem.BK3, 12, "cube-fold/e1", 0.022},
	} {
		if testing.Short() && c.n > 4 && c.n != 8 {
			continue // -short: the orders the padding clears, and N = 8
		}
		p, err := New(c.op, c.n, 0.7, kernel.F64)
		if err != nil {
			t.Fatal(err)
		}
		v, err := ParseVariant(c.variant)
		if err != nil {
			t.Fatal(err)
		}
		in := &Instance{Problem: p, E: 100}
		k, err := in.Build(v)
		if err != nil {
			t.Fatal(err)
		}
		before, err := BankConflicts(plainOf(t, p, v))
		if err != nil {
			t.Fatal(err)
		}
		after, err := BankConflicts(k)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s N=%d %s: %.3f conflict wavefronts per load before, %.3f after (%.1f %% → %.1f %% of the loads' wavefronts); per store %.3f → %.3f; s %v",
			c.op, c.n, c.variant, before.PerLoad(), after.PerLoad(), 100*before.Share(), 100*after.Share(),
			float64(before.StoreConflicts())/float64(before.Stores), float64(after.StoreConflicts())/float64(after.Stores), k.Shared[0].Dims)
		if after.PerLoad() > c.perLoad || after.LoadConflicts()+after.StoreConflicts() > before.LoadConflicts()+before.StoreConflicts() {
			t.Errorf("%s N=%d %s: %.3f conflict wavefronts per load (before %.3f), want at most %.3f, and no more in all", c.op, c.n, c.variant, after.PerLoad(), before.PerLoad(), c.perLoad)
		}
	}
	orders, f32Up := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, 4
	if testing.Short() {
		orders, f32Up = []int{1, 7, 15}, 1 // 15: the most shared memory
	}
	for _, op := range []fem.Kernel{fem.BK1, fem.BK3} {
		for _, n := range orders {
			for _, dt := range []kernel.DType{kernel.F64, kernel.F32} {
				if dt == kernel.F32 && n > f32Up {
					continue
				}
				p, err := New(op, n, 0.7, dt)
				if err != nil {
					t.Fatal(err)
				}
				in := &Instance{Problem: p, E: 100}
				for _, cand := range in.Candidates(cubeGPU) {
					v := cand.(Variant)
					if !isCubeKind(v.Kind) || v.RowMajor || v.Geo != Stored {
						continue
					}
					plain := plainOf(t, p, v)
					if _, err := traceShared(plain); err != nil {
						t.Errorf("%s %s: %v", p.Label(), v.Name(), err)
						continue
					}
					k, err := in.Build(v)
					if err != nil {
						t.Fatal(err)
					}
					before, _ := BankConflicts(plain)
					after, err := BankConflicts(k)
					if err != nil {
						t.Fatal(err)
					}
					if a, b := after.LoadConflicts()+after.StoreConflicts(), before.LoadConflicts()+before.StoreConflicts(); a > b {
						t.Errorf("%s %s: %d conflict wavefronts padded, %d plain", p.Label(), v.Name(), a, b)
					}
					bytes := 0
					for _, sh := range k.Shared {
						bytes += sh.Len() * k.TypeBytes(sh.Type)
					}
					if bytes > MaxShared {
						t.Errorf("%s %s: %d bytes of shared memory (at most %d)", p.Label(), v.Name(), bytes, MaxShared)
					}
				}
			}
		}
	}
}
