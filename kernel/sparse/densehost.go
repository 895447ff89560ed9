package sparse

import (
	"fmt"
	"strings"

	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/operator"
)

// Dense without staging (Chunk 0, named dense/xX-rR-wW): the blocked
// dense kernel in the loop order a CPU wants, for the C backend. The GPU
// form stages B and A through shared memory behind barriers; lowered to
// CPU loops (pass.HostLoops) every sum then lives in memory across the
// barriers, and it ran at 1–2 % of the roof on the tets
// (docs/rationale.md#cpu-dense-loop-order).
//
// Here a block is Block threads along x and nothing else: thread tx
// computes the columns j0 + tx + c·Block (c < Width, j0 =
// blockIdx.x·Block·Width) of every row of C, Rows rows at a time: for
// each tile of Rows rows it keeps Rows × Width sums, runs over the k
// columns of α·A (read from the buffer a, the same for every thread, so a
// CPU broadcasts it) and the matching rows of B (straight from memory),
// and stores the tile. The tiles follow each other in a loop that is
// uniform over the block, with a barrier at the end of each, so that the
// host lowering turns it into
//
//	for each tile { for each thread (SIMD lanes) { Rows×Width sums over k } }
//
// which gcc vectorises across the threads: a sum is a vector register, an
// entry of α·A a broadcast, a row of B's block a vector load, and the
// block's k × Block·Width values of B stay in the L1 cache across the
// tiles. (A barrier between tiles is all the GPU form needs too: the
// kernel is valid, if slow, in every dialect.) The last tile takes the
// m mod Rows rows left. Where a tile's rows of α·A are zero in runs of
// columns (PyFR's tet lifting, m6), each run of tiles with the same
// columns from first non-zero to last gets a loop of its own over those
// only (denseHostSpans). A block whose columns all lie below n runs code
// without any column guard; only the last block of a launch checks its
// columns (loads of B at the last column, stores skipped).
//
// Where it pays: compute-bound nearly dense operators (tets at p ≥ 4) on a
// CPU with wide vectors, so the kernel asks for them (Hints.WideVectors:
// AVX-512 on the C backend).

// denseHost says whether v is the CPU form (no staging).
func (v DenseParams) denseHost() bool { return v.Chunk == 0 }

// DenseHostCandidates lists the CPU dense variants worth trying for the
// problem (on a CPU target; see Instance.Candidates): the operators
// DenseCandidates takes (density ≥ 0.3, m·k ≥ 4096), register tiles of
// Rows × Width vectors that fit AVX-512's 32 registers with the Width
// vectors of B and a broadcast of A (20–24 sums), one vector of threads
// per block (8 in fp64, 16 in fp32) or two. In the L1 cache the 5×4 tile
// reaches the FMA peak; 6×4 spills two sums (gcc loads the six broadcasts
// first), yet leads on some operators at full size, where the loads of B
// and stores of C from and to memory, not the FMAs, bound the kernels.
// Every candidate prefetches (-pf), which was faster than the plain form
// on every operator tried (docs/rationale.md#cpu-dense-prefetch).
func DenseHostCandidates(pb Problem) []Variant {
	st := operator.Analyze(pb.Op)
	if st.Density < denseMinDensity || pb.Op.Rows*pb.Op.Cols < denseMinEntries {
		return nil
	}
	lanes := 64 / pb.DType.Bytes() // one 512-bit vector
	var out []Variant
	for _, t := range []struct{ x, r, w int }{
		{1, 5, 4}, {1, 4, 5}, {1, 6, 4}, {1, 7, 3}, {1, 10, 2}, {2, 5, 2},
	} {
		v := DenseParams{Block: t.x * lanes, Rows: t.r, Width: t.w, Prefetch: true}
		if pb.Check(v) == nil {
			out = append(out, v)
		}
	}
	return out
}

// denseHostKernel builds the CPU form of Dense (see denseHost).
func (g *gen) denseHostKernel() {
	k, v, pb := g.kern, g.v.(DenseParams), g.pb
	m, kk := g.m, g.k
	nb := v.Block * v.Width
	k.Launch.Block = [3]int{v.Block, 1, 1}
	k.Launch.Grid = [3]kernel.Axis{kernel.Over(Columns, nb)}
	k.Launch.SharedBytes = 0
	k.Shared = nil
	k.Params = append([]kernel.Param{denseParam}, k.Params...)
	k.Hints.WideVectors = true
	k.Doc = strings.Replace(k.Doc, fmt.Sprintf("one thread per %d column(s)", v.Width),
		fmt.Sprintf("blocks of %d columns, %d×%d sums a thread over tiles of rows, α·A from the buffer a", nb, v.Rows, v.Width), 1)
	n, ldb, ldc := g.nExpr(), g.ldbExpr(), g.ldcExpr()
	always := func(body []kernel.Stmt) kernel.Stmt { return kernel.If{Cond: kernel.Const(1), Then: body} }
	// tile computes rows r0 … r0+rows-1 of the thread's columns; guarded,
	// it loads B at column min(col, n-1) and stores only below n.
	// q runs over the columns cols[0] … cols[1]-1 of α·A.
	tile := func(rows int, r0 kernel.Expr, guarded bool, cols [2]int) kernel.Stmt {
		acc := func(r, c int) string { return fmt.Sprintf("acc%d_%d", r, c) }
		col := func(c int) kernel.Expr { return plus(c*v.Block, kernel.Ref("j")) }
		body := []kernel.Stmt{kernel.DeclIndex("j", kernel.Add(kernel.Mul(kernel.GroupX, kernel.Const(nb)), kernel.LocalX))}
		for r := 0; r < rows; r++ {
			for c := 0; c < v.Width; c++ {
				body = append(body, kernel.Decl{Type: kernel.Real, Name: acc(r, c), Init: kernel.Float(0)})
			}
		}
		q := kernel.Ref("q")
		var inner []kernel.Stmt
		for c := 0; c < v.Width; c++ {
			at := col(c)
			if guarded {
				at = kernel.Select{Cond: kernel.Lt(at, n), Then: at, Else: kernel.Sub(n, kernel.Const(1))}
			}
			inner = append(inner, kernel.Decl{Type: kernel.Real, Name: fmt.Sprintf("bv%d", c),
				Init: kernel.At("b", kernel.Add(kernel.Mul(q, ldb), at))})
		}
		for r := 0; r < rows; r++ {
			inner = append(inner, kernel.Decl{Type: kernel.Real, Name: fmt.Sprintf("av%d", r),
				Init: kernel.At("a", kernel.Add(kernel.Mul(plus(r, r0), kernel.Const(kk)), q))})
		}
		for r := 0; r < rows; r++ {
			for c := 0; c < v.Width; c++ {
				inner = append(inner, kernel.Assign{Name: acc(r, c), Value: kernel.Add(kernel.Ref(acc(r, c)),
					kernel.Mul(kernel.Ref(fmt.Sprintf("av%d", r)), kernel.Ref(fmt.Sprintf("bv%d", c))))})
			}
		}
		if cols[1] > cols[0] {
			body = append(body, kernel.For{Var: "q", From: kernel.Const(cols[0]), To: kernel.Const(cols[1]), Body: inner})
		}
		for c := 0; c < v.Width; c++ {
			var stores []kernel.Stmt
			for r := 0; r < rows; r++ {
				off := kernel.Add(kernel.Mul(plus(r, r0), ldc), col(c))
				var val kernel.Expr = kernel.Ref(acc(r, c))
				switch beta := pb.Beta; {
				case beta == 1:
					val = kernel.Add(val, kernel.At("c", off))
				case beta != 0:
					val = kernel.Add(val, kernel.Mul(kernel.Float(beta), kernel.At("c", off)))
				}
				stores = append(stores, kernel.Put("c", val, off))
			}
			if guarded {
				stores = []kernel.Stmt{kernel.If{Cond: kernel.Lt(col(c), n), Then: stores}}
			}
			body = append(body, stores...)
		}
		return always(body)
	}
	// With Prefetch each tile is preceded by its prefetches, thread 0's
	// alone, behind a barrier of their own (lowered for the host, a loop
	// of their own outside the vectorised one).
	tileP := func(rows int, r0 kernel.Expr, guarded bool, cols [2]int) []kernel.Stmt {
		t := tile(rows, r0, guarded, cols)
		if !v.Prefetch {
			return []kernel.Stmt{t}
		}
		return []kernel.Stmt{kernel.If{Cond: kernel.Eq(kernel.LocalX, kernel.Const(0)), Then: g.denseHostPrefetch(r0)}, kernel.Barrier{}, t}
	}
	full := m / v.Rows * v.Rows
	spans, skip := g.denseHostSpans(v.Rows)
	all := [2]int{0, kk}
	tiles := func(guarded bool) []kernel.Stmt {
		var out []kernel.Stmt
		if skip {
			// Each run of tiles with the same columns of α·A in a loop
			// of its own over them (one tile: no loop). Written out one
			// by one, p5/tet/m6's tiles made 350 KB of C, which the C
			// device compiles without the passes that slow huge sources
			// (largeFlags), and it ran 2× slower.
			for i := 0; i < len(spans); {
				r0 := i * v.Rows
				if r0+v.Rows > m { // the last tile, short
					out = append(append(out, tileP(m-r0, kernel.Const(r0), guarded, spans[i])...), kernel.Barrier{})
					break
				}
				j := i + 1
				for j < len(spans) && (j+1)*v.Rows <= m && spans[j] == spans[i] {
					j++
				}
				if j == i+1 {
					out = append(append(out, tileP(v.Rows, kernel.Const(r0), guarded, spans[i])...), kernel.Barrier{})
				} else {
					out = append(out, kernel.For{Var: "t", From: kernel.Const(r0), To: kernel.Const(j * v.Rows), Step: int64(v.Rows),
						Body: append(tileP(v.Rows, kernel.Ref("t"), guarded, spans[i]), kernel.Barrier{})})
				}
				i = j
			}
			return out
		}
		switch {
		case full == v.Rows:
			out = append(append(out, tileP(v.Rows, kernel.Const(0), guarded, all)...), kernel.Barrier{})
		case full > 0:
			out = append(out, kernel.For{Var: "t", From: kernel.Const(0), To: kernel.Const(full), Step: int64(v.Rows),
				Body: append(tileP(v.Rows, kernel.Ref("t"), guarded, all), kernel.Barrier{})})
		}
		if m > full {
			out = append(append(out, tileP(m-full, kernel.Const(full), guarded, all)...), kernel.Barrier{})
		}
		return out
	}
	if pb.N > 0 && pb.N%nb == 0 {
		k.Body = tiles(false)
	} else {
		whole := kernel.Le(kernel.Mul(kernel.Add(kernel.GroupX, kernel.Const(1)), kernel.Const(nb)), n)
		k.Body = []kernel.Stmt{kernel.If{Cond: whole, Then: tiles(false), Else: tiles(true)}}
	}
	k.Meta["tile"] = fmt.Sprintf("%d×%d", v.Rows, v.Width)
	k.Meta["order"] = "host"
}

// denseHostPrefetch is what the tile at row r0 prefetches (Prefetch):
// its share of the next block's rows of B (the k rows dealt evenly over
// the tiles, a block's columns of each) and the next tile's rows of C
// (past the last tile, the next block's first), every cache line of the
// block's columns, clamped into the matrices. B's and C's rows lie n
// apart, one stream each: too many for a CPU's hardware prefetchers,
// which left the dense form waiting on memory with the FMA units half
// idle (docs/rationale.md#cpu-dense-prefetch).
func (g *gen) denseHostPrefetch(r0 kernel.Expr) []kernel.Stmt {
	v, m, kk := g.v.(DenseParams), g.m, g.k
	nb := v.Block * v.Width
	line := max(1, 64/g.pb.DType.Bytes()) // elements a cache line
	n, ldb, ldc := g.nExpr(), g.ldbExpr(), g.ldcExpr()
	imin := func(x, y kernel.Expr) kernel.Expr {
		return kernel.Call{Fn: kernel.Min, Args: []kernel.Expr{x, y}}
	}
	col := func(base kernel.Expr, l int) kernel.Expr {
		return imin(plus(l*line, base), kernel.Sub(n, kernel.Const(1)))
	}
	tiles := (m + v.Rows - 1) / v.Rows
	share := (kk + tiles - 1) / tiles
	next := kernel.Mul(kernel.Add(kernel.GroupX, kernel.Const(1)), kernel.Const(nb))
	var bRow []kernel.Stmt
	for l := 0; l*line < nb; l++ {
		bRow = append(bRow, kernel.Prefetch{Buf: "b", Index: kernel.Add(kernel.Mul(kernel.Ref("pq"), ldb), col(next, l))})
	}
	first := kernel.Mul(kernel.Div(r0, kernel.Const(v.Rows)), kernel.Const(share))
	out := []kernel.Stmt{kernel.For{Var: "pq", From: first, To: imin(kernel.Add(first, kernel.Const(share)), kernel.Const(kk)), Body: bRow}}
	// The next tile: rows r0 + Rows … of this block, or past the last
	// tile rows 0 … of the next.
	wrap := kernel.Ge(plus(v.Rows, r0), kernel.Const(m))
	base := kernel.Select{Cond: wrap, Then: next, Else: kernel.Mul(kernel.GroupX, kernel.Const(nb))}
	for r := range v.Rows {
		row := kernel.Select{Cond: wrap, Then: kernel.Const(min(r, m-1)), Else: imin(plus(v.Rows+r, r0), kernel.Const(m-1))}
		for l := 0; l*line < nb; l++ {
			out = append(out, kernel.Prefetch{Buf: "c", Index: kernel.Add(kernel.Mul(row, ldc), col(base, l)), Write: true})
		}
	}
	return out
}

// maxSpanTiles bounds the tiles whose columns of α·A are looked at one by
// one.
const maxSpanTiles = 256

// denseHostSpans lists, for each tile of rows rows of α·A, the columns
// [lo, hi) from its first non-zero to its last ({0, 0} for a zero tile);
// skip reports whether any tile leaves columns out (and there are at
// most maxSpanTiles tiles). PyFR's tet lifting operators (m6) are half
// zero in runs: a tile of the first third of the rows meets only the last
// half of the columns, one of the second third the last three quarters
// (in two runs), so a quarter of the steps goes. One loop from the first
// column to the last, not one a run: gcc vectorises the threads' loop
// around one inner loop only ("loop nest containing two or more
// consecutive inner loops"; written so, or as one loop over both runs
// with the column found by a select, the tiles of p5/tet/m6 ran scalar,
// 2× slower).
func (g *gen) denseHostSpans(rows int) (spans [][2]int, skip bool) {
	m, k := g.m, g.k
	if (m+rows-1)/rows > maxSpanTiles {
		return nil, false
	}
	for r0 := 0; r0 < m; r0 += rows {
		lo, hi := k, 0
		for r := r0; r < min(r0+rows, m); r++ {
			for q := 0; q < k; q++ {
				if g.a[r*k+q] != 0 {
					lo, hi = min(lo, q), max(hi, q+1)
				}
			}
		}
		if lo >= hi {
			lo, hi = 0, 0
		}
		skip = skip || lo != 0 || hi != k
		spans = append(spans, [2]int{lo, hi})
	}
	return spans, skip
}
