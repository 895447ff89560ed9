// Package kerneltest holds sample kernels that exercise every construct of
// the IR, for the tests of the interpreter, the passes and the printer.
//
// It may import kernel only.
package kerneltest

import "github.com/bespoke-hpc/bespoke/kernel"

// Shorthand (kernel's builders).
var (
	lx, ly, lz, gx = kernel.LocalX, kernel.LocalY, kernel.LocalZ, kernel.GroupX
	v, i, bin      = kernel.Ref, kernel.Const, kernel.Op
)

// Slab dimensions of Slabs: a block of SlabX × SlabY × SlabZ threads, one
// element per z thread, SlabX·SlabY values per element and layer.
const (
	SlabX, SlabY, SlabZ = 4, 3, 2
)

// Slabs is the shape of kernel the tensor-product families use: a block of
// (4, 3, 2) threads, a loop over layers with barriers inside it, a shared
// slab, a thread-private array and variables declared at the loop's level,
// which must survive its barriers. x and y hold elements × depth layers of
// SlabX·SlabY values; each layer of y gets a weighted row sum of the layer
// of x less a mirrored value, and layer 0 then the sum over layers plus a
// running total.
func Slabs() *kernel.Kernel {
	const nx, ny, nz = SlabX, SlabY, SlabZ
	elem := bin("+", bin("*", gx, i(nz)), lz)
	return &kernel.Kernel{
		Name: "slabs", Variant: "sample", DType: kernel.F64,
		Params: []kernel.Param{{Name: "depth", Kind: kernel.ScalarParam, Type: kernel.Index},
			{Name: "x", Kind: kernel.BufferParam, Type: kernel.Real, Const: true},
			{Name: "y", Kind: kernel.BufferParam, Type: kernel.Real}},
		Shared: []kernel.Shared{{Name: "s", Type: kernel.Real, Dims: []int{nz, ny, nx}}},
		Launch: kernel.Launch{Block: [3]int{nx, ny, nz}, Grid: [3]kernel.Axis{kernel.Over("e", nz)}},
		Doc:    "a sample of loops with barriers inside them",
		Body: []kernel.Stmt{
			kernel.Decl{Type: kernel.Index, Name: "e", Init: elem},
			kernel.Decl{Type: kernel.Real, Name: "acc", Init: kernel.Lit{V: 0}},
			kernel.Decl{Type: kernel.Real, Name: "hist", Dims: []int{3}},
			kernel.For{Var: "q", From: i(0), To: i(3), Unroll: true, Body: []kernel.Stmt{kernel.Put("hist", kernel.Lit{V: 0}, v("q"))}},
			kernel.For{Var: "z", From: i(0), To: v("depth"), Body: []kernel.Stmt{
				kernel.Decl{Type: kernel.Index, Name: "at", Init: bin("+", bin("*", bin("+", bin("*", v("e"), v("depth")), v("z")), i(nx*ny)), bin("+", bin("*", ly, i(nx)), lx))},
				kernel.Put("s", kernel.At("x", v("at")), lz, ly, lx),
				kernel.Barrier{},
				kernel.Decl{Type: kernel.Real, Name: "t", Init: kernel.Lit{V: 0}},
				kernel.For{Var: "k", From: i(0), To: i(nx), Body: []kernel.Stmt{
					kernel.Assign{Name: "t", Value: bin("+", v("t"), bin("*", kernel.Cast{To: kernel.Real, X: bin("+", v("k"), i(1))}, kernel.At("s", lz, ly, v("k"))))},
				}},
				kernel.If{Cond: bin("<", lx, i(2)), Then: []kernel.Stmt{
					kernel.Decl{Type: kernel.Real, Name: "w", Init: kernel.At("s", lz, bin("-", i(ny-1), ly), lx)},
					kernel.Assign{Name: "t", Value: bin("-", v("t"), v("w"))},
				}},
				kernel.Put("hist", bin("+", kernel.At("hist", bin("%", v("z"), i(3))), v("t")), bin("%", v("z"), i(3))),
				kernel.Barrier{},
				kernel.Assign{Name: "acc", Value: bin("+", v("acc"), v("t"))},
				kernel.Put("y", v("t"), v("at")),
			}},
			kernel.Put("y", bin("+", v("acc"), kernel.At("hist", i(1))), bin("+", bin("*", bin("*", v("e"), v("depth")), i(nx*ny)), bin("+", bin("*", ly, i(nx)), lx))),
		},
	}
}

// Misc exercises the rest of the IR in a kernel without barriers: integer
// buffers, intrinsics, casts, selects, atomic adds, vector accesses, a
// thread-private array, a loop with a step, and inactive threads (Active).
// Thread g < n adds s or −s to y[to[g]], where s = sqrt(fma(r2, 2, r1))
// with r_q = q·g, and copies x's pair g into y's pair from 2·Len.
func Misc(dt kernel.DType) *kernel.Kernel {
	return &kernel.Kernel{
		Name: "misc_" + dt.String(), Variant: "sample", DType: dt,
		Params: []kernel.Param{{Name: "n", Kind: kernel.ScalarParam, Type: kernel.Index},
			{Name: "to", Kind: kernel.BufferParam, Type: kernel.Int32, Const: true},
			{Name: "x", Kind: kernel.BufferParam, Type: kernel.Real, Const: true},
			{Name: "y", Kind: kernel.BufferParam, Type: kernel.Real}},
		Launch: kernel.Launch{Block: [3]int{4, 1, 1}, Grid: [3]kernel.Axis{kernel.Over("n", 4)}},
		Active: v("n"),
		Doc:    "a sample of the IR's other statements",
		Body: []kernel.Stmt{
			kernel.Decl{Type: kernel.Index, Name: "g", Init: bin("+", bin("*", gx, i(4)), lx)},
			kernel.Decl{Type: kernel.Real, Name: "r", Dims: []int{3}},
			kernel.For{Var: "q", From: i(0), To: i(3), Body: []kernel.Stmt{kernel.Put("r", kernel.Cast{To: kernel.Real, X: bin("*", v("q"), v("g"))}, v("q"))}},
			kernel.For{Var: "q", From: i(0), To: i(6), Step: 2, Body: []kernel.Stmt{kernel.Comment{Text: "a loop with a step"}}},
			kernel.Decl{Type: kernel.Real, Name: "s", Init: kernel.Call{Fn: kernel.Sqrt, Args: []kernel.Expr{kernel.Call{Fn: kernel.Fma, Args: []kernel.Expr{kernel.At("r", i(2)), kernel.Lit{V: 2}, kernel.At("r", i(1))}}}}},
			kernel.Decl{Type: kernel.Index, Name: "lo", Init: kernel.Call{Fn: kernel.Min, Args: []kernel.Expr{v("g"), bin("-", v("n"), i(1))}}},
			kernel.AtomicAdd{Buf: "y", Index: []kernel.Expr{kernel.At("to", v("lo"))}, Value: kernel.Select{Cond: bin(">", v("s"), kernel.Lit{V: 2}), Then: v("s"), Else: kernel.Unary{Op: "-", X: v("s")}}},
			kernel.Decl{Type: kernel.Real, Name: "a"},
			kernel.Decl{Type: kernel.Real, Name: "b"},
			kernel.VecLoad{Dst: []string{"a", "b"}, Buf: "x", Index: bin("*", v("g"), i(2))},
			kernel.VecStore{Buf: "y", Index: bin("+", bin("*", v("g"), i(2)), i(2*MiscLen)), Src: []kernel.Expr{
				kernel.Call{Fn: kernel.Max, Args: []kernel.Expr{v("a"), kernel.Call{Fn: kernel.Fabs, Args: []kernel.Expr{v("b")}}}},
				bin("*", v("b"), kernel.Call{Fn: kernel.Rsqrt, Args: []kernel.Expr{bin("+", bin("*", v("a"), v("a")), kernel.Lit{V: 1})}}),
			}},
		},
	}
}

// MiscLen is how many slots of y Misc adds into; y holds 2·MiscLen + 2·n
// values.
const MiscLen = 2

// Streamed-store sizes: each of Stream's threads writes StreamWidth
// consecutive values of each of StreamRows rows.
const (
	StreamWidth, StreamRows = 8, 3
)

// Stream exercises streamed stores (kernel.VecStore with Stream), as an
// output written once is streamed: thread g (of m = ⌈n/StreamWidth⌉,
// blocks of 4) writes y[r·n + w·g + j] = (r+1)·x[w·g + j] + j for each row
// r < StreamRows and j < w = StreamWidth, the pieces one streamed store
// each (the rows start n apart, so most are not aligned to the width
// unless n is a multiple of it) and, past n, one by one; then y[rows·n + g]
// = g as a streamed store of one element. y holds rows·n + m values. A
// thread whose first element lies below n prefetches it in x (to read)
// and in y (to write) first.
func Stream(dt kernel.DType) *kernel.Kernel {
	const w, rows = StreamWidth, StreamRows
	val := func(r int, at kernel.Expr, j kernel.Expr) kernel.Expr {
		return bin("+", bin("*", kernel.Lit{V: float64(r + 1)}, kernel.At("x", at)), kernel.Cast{To: kernel.Real, X: j})
	}
	body := []kernel.Stmt{
		kernel.Decl{Type: kernel.Index, Name: "g", Init: bin("+", bin("*", gx, i(4)), lx)},
		kernel.Decl{Type: kernel.Index, Name: "e", Init: bin("*", v("g"), i(w))},
		kernel.If{Cond: bin("<", v("e"), v("n")), Then: []kernel.Stmt{
			kernel.Prefetch{Buf: "x", Index: v("e")},
			kernel.Prefetch{Buf: "y", Index: v("e"), Write: true},
		}},
	}
	for r := range rows {
		row := bin("*", i(r), v("n"))
		var src []kernel.Expr
		for j := range w {
			src = append(src, val(r, bin("+", v("e"), i(j)), i(j)))
		}
		body = append(body, kernel.If{
			Cond: bin("<=", bin("+", v("e"), i(w)), v("n")),
			Then: []kernel.Stmt{kernel.VecStore{Buf: "y", Index: bin("+", row, v("e")), Src: src, Stream: true}},
			Else: []kernel.Stmt{kernel.For{Var: "j", From: i(0), To: i(w), Body: []kernel.Stmt{
				kernel.If{Cond: bin("<", bin("+", v("e"), v("j")), v("n")), Then: []kernel.Stmt{
					kernel.Put("y", val(r, bin("+", v("e"), v("j")), v("j")), bin("+", row, bin("+", v("e"), v("j")))),
				}},
			}}},
		})
	}
	body = append(body, kernel.VecStore{Buf: "y", Index: bin("+", bin("*", i(rows), v("n")), v("g")), Src: []kernel.Expr{kernel.Cast{To: kernel.Real, X: v("g")}}, Stream: true})
	return &kernel.Kernel{
		Name: "stream_" + dt.String(), Variant: "sample", DType: dt,
		Params: []kernel.Param{{Name: "n", Kind: kernel.ScalarParam, Type: kernel.Index},
			{Name: "m", Kind: kernel.ScalarParam, Type: kernel.Index},
			{Name: "x", Kind: kernel.BufferParam, Type: kernel.Real, Const: true},
			{Name: "y", Kind: kernel.BufferParam, Type: kernel.Real}},
		Launch: kernel.Launch{Block: [3]int{4, 1, 1}, Grid: [3]kernel.Axis{kernel.Over("m", 4)}},
		Active: v("m"),
		Doc:    "a sample of streamed stores",
		Body:   body,
	}
}

// Tickets exercises atomic fetch-adds: thread g < n draws a ticket from
// count[0] (its old value), and after a barrier (so that the ticket lives
// across it) writes slot[ticket] = g and adds g + 1 to count[1] without
// keeping the old value. slot ends a permutation of 0…n−1, count holds n
// and n(n+1)/2.
func Tickets() *kernel.Kernel {
	const bx = 4
	one := []kernel.Expr{i(1)}
	return &kernel.Kernel{
		Name: "tickets", Variant: "sample", DType: kernel.F64,
		Params: []kernel.Param{{Name: "n", Kind: kernel.ScalarParam, Type: kernel.Index},
			{Name: "count", Kind: kernel.BufferParam, Type: kernel.Int32},
			{Name: "slot", Kind: kernel.BufferParam, Type: kernel.Int32}},
		Launch: kernel.Launch{Block: [3]int{bx, 1, 1}, Grid: [3]kernel.Axis{kernel.Over("n", bx)}},
		Doc:    "a sample of atomic fetch-adds (tickets)",
		Body: []kernel.Stmt{
			kernel.Decl{Type: kernel.Index, Name: "g", Init: bin("+", bin("*", gx, i(bx)), lx)},
			kernel.Decl{Type: kernel.Index, Name: "ticket", Init: i(-1)},
			kernel.If{Cond: bin("<", v("g"), v("n")), Then: []kernel.Stmt{
				kernel.AtomicFetchAdd{Old: "ticket", Buf: "count", Index: []kernel.Expr{i(0)}, Value: i(1)},
			}},
			kernel.Barrier{},
			kernel.If{Cond: bin(">=", v("ticket"), i(0)), Then: []kernel.Stmt{
				kernel.Put("slot", kernel.Cast{To: kernel.Int32, X: v("g")}, v("ticket")),
				kernel.AtomicFetchAdd{Buf: "count", Index: one, Value: bin("+", v("g"), i(1))},
			}},
		},
	}
}

// Ring sizes: a block of RingThreads threads streams RingChunks chunks of
// RingThreads elements through RingStages shared buffers.
const (
	RingThreads, RingChunks, RingStages = 32, 5, 3
)

// Ring exercises asynchronous copies into shared memory (kernel.CopyAsync;
// cp.async on CUDA from sm_80, plain copies elsewhere): block b streams
// chunks q < RingChunks of x (elements from (b·RingChunks + q)·RingThreads,
// zero past n) through RingStages buffers, each copied RingStages − 1
// chunks ahead of its use, one group a chunk, a wait and a barrier before
// each; thread t sums (q + 1)·chunk_q[RingThreads − 1 − t] (another
// thread's copy) into y[b·RingThreads + t].
func Ring(dt kernel.DType) *kernel.Kernel {
	const T, C, S = RingThreads, RingChunks, RingStages
	issue := func(q kernel.Expr) kernel.Stmt {
		at := bin("+", bin("*", bin("+", bin("*", gx, i(C)), q), i(T)), lx)
		return kernel.CopyAsync{Dst: "ring", DstIndex: []kernel.Expr{bin("%", q, i(S)), lx}, Src: "x", SrcIndex: at, Cond: bin("<", at, v("n"))}
	}
	body := []kernel.Stmt{kernel.Decl{Type: kernel.Real, Name: "acc", Init: kernel.Lit{V: 0}}}
	for q := 0; q < S-1; q++ {
		body = append(body, issue(i(q)), kernel.AsyncCommit{})
	}
	body = append(body,
		kernel.For{Var: "q", From: i(0), To: i(C), Body: []kernel.Stmt{
			kernel.AsyncWait{Pending: S - 2},
			kernel.Barrier{},
			kernel.If{Cond: bin("<", bin("+", v("q"), i(S-1)), i(C)), Then: []kernel.Stmt{issue(bin("+", v("q"), i(S-1)))}},
			kernel.AsyncCommit{},
			kernel.Assign{Name: "acc", Value: bin("+", v("acc"), bin("*", kernel.Cast{To: kernel.Real, X: bin("+", v("q"), i(1))},
				kernel.At("ring", bin("%", v("q"), i(S)), bin("-", i(T-1), lx))))},
		}},
		kernel.Put("y", v("acc"), bin("+", bin("*", gx, i(T)), lx)),
	)
	return &kernel.Kernel{
		Name: "ring_" + dt.String(), Variant: "sample", DType: dt,
		Params: []kernel.Param{{Name: "n", Kind: kernel.ScalarParam, Type: kernel.Index},
			{Name: "x", Kind: kernel.BufferParam, Type: kernel.Real, Const: true},
			{Name: "y", Kind: kernel.BufferParam, Type: kernel.Real}},
		Shared: []kernel.Shared{{Name: "ring", Type: kernel.Real, Dims: []int{S, T}}},
		Launch: kernel.Launch{Block: [3]int{T, 1, 1}, Grid: [3]kernel.Axis{kernel.Over("blocks", 1)}},
		Hints:  kernel.Hints{MinArch: 80},
		Doc:    "a sample of asynchronous copies through a ring of shared buffers",
		Body:   body,
	}
}

// MMATiles is how many tiles one block of MMA's kernels takes: one a warp,
// the warps stacked along y.
const MMATiles = 2

// MMA exercises the warp-level multiply-accumulate of shape sh (fp64, CUDA
// only): tile p < tiles (tiles a multiple of MMATiles) is taken by warp y
// of block p / MMATiles, whose lanes load their elements of A_p (M×2K), B_p
// (2K×N) and C_p (M×N), row-major and packed tile after tile in a, b and c,
// by the fragment layouts, written out here as PTX defines them (g =
// lane/4, t = lane%4, R = M/8: A's element v at row g + 8(v mod R),
// column t + 4⌊v/R⌋; B's at row t + 4v, column g; C's at row g + 8⌊v/2⌋,
// column 2t + v mod 2), and store D_p = A_p·B_p + C_p into d, as two mma
// of depth K: D = A₁·B₁ + (A₀·B₀ + C).
func MMA(sh kernel.MMAShape) *kernel.Kernel { return mmaSample(sh, kernel.MMAF64, false) }

// TF32MMA is MMA's sample in fp32 on TF32 tensor cores (sh one of
// kernel.MMATF32Shapes), as 3×TF32: each lane splits its elements x of A
// and B into x_hi = tf32(x) and x_lo = x − x_hi (A's rounded to TF32 too,
// B's left for the tensor cores to truncate), and each depth-K step is
// three mma, D += A_hi·B_lo, A_lo·B_hi, A_hi·B_hi: D_p = A_p·B_p + C_p
// within a few fp32 roundings.
func TF32MMA(sh kernel.MMAShape) *kernel.Kernel { return mmaSample(sh, kernel.MMATF32, true) }

// TF32RawMMA is MMA's sample in fp32 on TF32 tensor cores with the fp32
// elements as they are: D_p = trunc(A_p)·trunc(B_p) + C_p, each element
// of A and B truncated to TF32 by the tensor cores (mma.TruncTF32), an
// error of ~1e-3 that a device which rounded them instead would not match.
func TF32RawMMA(sh kernel.MMAShape) *kernel.Kernel { return mmaSample(sh, kernel.MMATF32, false) }

func mmaSample(sh kernel.MMAShape, typ kernel.MMAType, split bool) *kernel.Kernel {
	na, nb, nc := sh.Elements()
	r, kk := sh.M/8, 2*sh.K
	name := func(s string, i, j int) string { return s + string(rune('0'+i)) + "_" + string(rune('0'+j)) }
	add := func(e kernel.Expr, c int) kernel.Expr { // e + c, or e
		if c == 0 {
			return e
		}
		return bin("+", e, i(c))
	}
	body := []kernel.Stmt{
		kernel.Decl{Type: kernel.Index, Name: "p", Init: bin("+", bin("*", gx, i(MMATiles)), ly)},
		kernel.Decl{Type: kernel.Index, Name: "g", Init: bin("/", lx, i(4))},
		kernel.Decl{Type: kernel.Index, Name: "t", Init: bin("%", lx, i(4))},
	}
	cAt := func(e int) kernel.Expr { // p·M·N + row·N + column of C's element e
		row := add(v("g"), 8*(e/2))
		col := add(bin("*", v("t"), i(2)), e%2)
		return bin("+", bin("*", v("p"), i(sh.M*sh.N)), bin("+", bin("*", row, i(sh.N)), col))
	}
	aAt := func(s, x int) kernel.Expr {
		row := add(v("g"), 8*(x%r))
		col := add(v("t"), s*sh.K+4*(x/r))
		return kernel.At("a", bin("+", bin("*", v("p"), i(sh.M*kk)), bin("+", bin("*", row, i(kk)), col)))
	}
	bAt := func(s, x int) kernel.Expr {
		row := add(v("t"), s*sh.K+4*x)
		return kernel.At("b", bin("+", bin("*", v("p"), i(kk*sh.N)), bin("+", bin("*", row, i(sh.N)), v("g"))))
	}
	// mma is step s's product of A's and B's elements as a and b give them.
	mma := func(a, b func(x int) kernel.Expr) kernel.MMA {
		m := kernel.MMA{Shape: sh, Type: typ}
		for x := 0; x < na; x++ {
			m.A = append(m.A, a(x))
		}
		for x := 0; x < nb; x++ {
			m.B = append(m.B, b(x))
		}
		for e := 0; e < nc; e++ {
			m.D = append(m.D, name("d", 0, e))
			m.C = append(m.C, v(name("d", 0, e)))
		}
		return m
	}
	for e := 0; e < nc; e++ {
		body = append(body, kernel.Decl{Type: kernel.Real, Name: name("d", 0, e), Init: kernel.At("c", cAt(e))})
	}
	for s := 0; s < 2; s++ {
		if !split {
			body = append(body, mma(func(x int) kernel.Expr { return aAt(s, x) }, func(x int) kernel.Expr { return bAt(s, x) }))
			continue
		}
		// The split, hi and lo of A's elements (names a…) and B's (b…).
		split := func(op string, n int, at func(s, x int) kernel.Expr) {
			for x := 0; x < n; x++ {
				hi, lo := name(op+"h", s, x), name(op+"l", s, x)
				tf32 := func(e kernel.Expr) kernel.Expr { return kernel.Call{Fn: kernel.TF32, Args: []kernel.Expr{e}} }
				var lov kernel.Expr = bin("-", at(s, x), v(hi))
				if op == "a" {
					lov = tf32(lov)
				}
				body = append(body,
					kernel.Decl{Type: kernel.Real, Name: hi, Init: tf32(at(s, x))},
					kernel.Decl{Type: kernel.Real, Name: lo, Init: lov})
			}
		}
		split("a", na, aAt)
		split("b", nb, bAt)
		part := func(op, hl string) func(x int) kernel.Expr {
			return func(x int) kernel.Expr { return v(name(op+hl, s, x)) }
		}
		body = append(body, mma(part("a", "h"), part("b", "l")), mma(part("a", "l"), part("b", "h")), mma(part("a", "h"), part("b", "h")))
	}
	for e := 0; e < nc; e++ {
		body = append(body, kernel.Put("d", v(name("d", 0, e)), cAt(e)))
	}
	kname, dt, doc := "mma_"+sh.String(), kernel.F64, "a sample of warp-level fp64 mma "+sh.String()
	switch {
	case split:
		kname, dt, doc = "mma_tf32_"+sh.String(), kernel.F32, "a sample of warp-level 3xTF32 mma "+sh.String()
	case typ == kernel.MMATF32:
		kname, dt, doc = "mma_tf32raw_"+sh.String(), kernel.F32, "a sample of warp-level TF32 mma "+sh.String()+" on fp32 values"
	}
	return &kernel.Kernel{
		Name: kname, Variant: "sample", DType: dt,
		Params: []kernel.Param{{Name: "a", Kind: kernel.BufferParam, Type: kernel.Real, Const: true},
			{Name: "b", Kind: kernel.BufferParam, Type: kernel.Real, Const: true},
			{Name: "c", Kind: kernel.BufferParam, Type: kernel.Real, Const: true},
			{Name: "d", Kind: kernel.BufferParam, Type: kernel.Real}},
		Launch: kernel.Launch{Block: [3]int{32, MMATiles, 1}, Grid: [3]kernel.Axis{kernel.Over("tiles", MMATiles)}},
		Hints:  kernel.Hints{MinArch: typ.Arch(sh)},
		Doc:    doc,
		Body:   body,
	}
}

// WGMMAN is the N of WGMMA's sample: three core matrices along n.
const WGMMAN = 24

// WGMMA exercises the warpgroup-level multiply-accumulate (kernel.WGMMA,
// CUDA sm_90a only) and vector asynchronous copies: block p (one
// warpgroup) copies B_p (16×WGMMAN, row-major) into shared memory four
// elements a copy, its columns from cols on zero-filled (a vector cut
// short by Valid, and whole vectors past it), rearranges it into the
// core-matrix layout, and computes d_p = A_p·B_p (A_p 64×16 from a, raw
// fp32 values whose TF32 parts the tensor cores take) in two k-steps, the
// first with new sums (Accumulate 0: the sums' initial ones are ignored).
func WGMMA() *kernel.Kernel {
	const N, T = WGMMAN, 128
	vecs := 16 * N / 4
	t := lx
	c4 := bin("*", bin("%", v("e"), i(N/4)), i(4))
	left := bin("-", v("cols"), c4)
	body := []kernel.Stmt{
		kernel.For{Var: "e", From: t, To: i(vecs), Step: T, Body: []kernel.Stmt{
			kernel.CopyAsync{Dst: "raw", DstIndex: []kernel.Expr{bin("*", v("e"), i(4))}, Src: "b",
				SrcIndex: bin("+", bin("*", gx, i(16*N)), bin("*", v("e"), i(4))),
				Cond:     bin("<", c4, v("cols")), Width: 4,
				Valid: kernel.Select{Cond: bin("<", left, i(4)), Then: left, Else: i(4)}},
		}},
		kernel.AsyncCommit{}, kernel.AsyncWait{}, kernel.Barrier{},
		// raw[k·N + n] into bs: k-step k/8 at 8N, then (k%8/4)·4N +
		// (n/8)·32 + (n%8)·4 + k%4 (LBO 16N bytes, SBO 128).
		kernel.For{Var: "e", From: t, To: i(16 * N), Step: T, Body: []kernel.Stmt{
			kernel.Decl{Type: kernel.Index, Name: "k", Init: bin("/", v("e"), i(N))},
			kernel.Decl{Type: kernel.Index, Name: "n", Init: bin("%", v("e"), i(N))},
			kernel.Put("bs", kernel.At("raw", v("e")), bin("+", bin("+", bin("*", bin("/", v("k"), i(4)), i(4*N)), bin("*", bin("/", v("n"), i(8)), i(32))),
				bin("+", bin("*", bin("%", v("n"), i(8)), i(4)), bin("%", v("k"), i(4))))),
		}},
		kernel.WGMMASync{Kind: kernel.ProxyFence},
		kernel.Barrier{},
		kernel.Decl{Type: kernel.Index, Name: "row", Init: bin("+", bin("*", bin("/", t, i(32)), i(16)), bin("/", bin("%", t, i(32)), i(4)))},
		kernel.Decl{Type: kernel.Index, Name: "q", Init: bin("%", t, i(4))},
	}
	var d []string
	for e := 0; e < N/2; e++ {
		name := "d" + string(rune('a'+e/10)) + string(rune('0'+e%10))
		d = append(d, name)
		body = append(body, kernel.Decl{Type: kernel.Real, Name: name, Init: kernel.Lit{V: 1}})
	}
	body = append(body, kernel.WGMMASync{Kind: kernel.WGMMAFence})
	for s := 0; s < 2; s++ {
		var a []kernel.Expr
		for x := 0; x < 4; x++ {
			row := bin("+", v("row"), i(8*(x%2)))
			col := bin("+", v("q"), i(8*s+4*(x/2)))
			a = append(a, kernel.At("a", bin("+", bin("*", gx, i(64*16)), bin("+", bin("*", row, i(16)), col))))
		}
		m := kernel.WGMMA{N: N, D: d, A: a, B: "bs", BAt: i(8 * N * s), LBO: 16 * N, SBO: 128}
		if s == 0 {
			m.Accumulate = i(0)
		}
		body = append(body, m)
	}
	body = append(body, kernel.WGMMASync{Kind: kernel.WGMMACommit}, kernel.WGMMASync{Kind: kernel.WGMMAWait})
	for e, name := range d {
		row := bin("+", v("row"), i(8*(e%4/2)))
		col := bin("+", bin("*", v("q"), i(2)), i(8*(e/4)+e%2))
		body = append(body, kernel.Put("d", v(name), bin("+", bin("*", gx, i(64*N)), bin("+", bin("*", row, i(N)), col))))
	}
	return &kernel.Kernel{
		Name: "wgmma_f32", Variant: "sample", DType: kernel.F32,
		Params: []kernel.Param{{Name: "cols", Kind: kernel.ScalarParam, Type: kernel.Index},
			{Name: "tiles", Kind: kernel.ScalarParam, Type: kernel.Index},
			{Name: "a", Kind: kernel.BufferParam, Type: kernel.Real, Const: true},
			{Name: "b", Kind: kernel.BufferParam, Type: kernel.Real, Const: true},
			{Name: "d", Kind: kernel.BufferParam, Type: kernel.Real}},
		Shared: []kernel.Shared{{Name: "raw", Type: kernel.Real, Dims: []int{16 * N}}, {Name: "bs", Type: kernel.Real, Dims: []int{16 * N}}},
		Launch: kernel.Launch{Block: [3]int{T, 1, 1}, Grid: [3]kernel.Axis{kernel.Over("tiles", 1)}},
		Hints:  kernel.Hints{MinArch: 90},
		Doc:    "a sample of Hopper's warpgroup multiply-accumulate and of vector asynchronous copies",
		Body:   body,
	}
}
