package sparse

import (
	"fmt"
	"strings"

	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/operator"
)

// Dense: a blocked kernel for nearly dense operators (PyFR's tets at p ≥ 4),
// where literal kernels spill or overflow the instruction cache. A's entries
// come at run time from the buffer "a" (α·A row-major, see Instance.Data)
// through shared memory instead of being unrolled as immediates.
//
// A block holds Block × ⌈m/Rows⌉ threads (tx, ty) and computes all m rows
// of Block·Width adjacent columns (j0 = blockIdx.x·Block·Width). Thread
// (tx, ty) keeps a register tile of Rows × Width sums: rows ty·Rows + r,
// columns j0 + tx + c·Block. The rows of B are staged Chunk at a time in
// shared memory (bsh, Chunk × Block·Width; one barrier per chunk), and so
// are the matching Chunk columns of α·A (ash, transposed: ash[kk][row]),
// unless the whole of α·A fits beside the chunk of B in at most
// denseWholeA bytes, in which case it is staged once per block. For every
// column kk of a chunk a thread reads Width values of B and Rows of A from
// shared memory and does Rows·Width multiply-adds.
//
// Zero tiles are skipped at build time: a chunk whose columns of A are all
// zero is never staged, and a thread whose Rows × Chunk tile of A is zero
// does no arithmetic for it (a condition on ty; runs of chunks with the
// same pattern are one run-time loop, so the code stays a few loop bodies
// long). Any m and k: the last chunk is shorter (its own loop bound), rows
// past m are zero in ash and never stored, columns past n are neither
// staged nor stored.
const Dense Family = "dense"

// denseWholeA is the most shared memory (bytes, α·A and one chunk of B)
// for which a dense kernel stages all of α·A once instead of chunk by
// chunk.
const denseWholeA = 24 << 10

// denseMaxTile bounds Rows·Width, the sums a thread keeps live.
const denseMaxTile = 64

// denseMinEntries and denseMinDensity decide where DenseCandidates offers the
// blocked kernel: operators of at least that many entries (m·k) and that
// density. Below, the unrolled kernels keep everything in registers.
const (
	denseMinEntries = 4096
	denseMinDensity = 0.3
)

// denseMaxCandidateThreads bounds the block of an offered dense candidate
// (CUDA's launch bound then leaves at least 128 registers a thread).
const denseMaxCandidateThreads = 512

// DenseCandidates lists the dense variants worth trying for the problem: a
// handful of register tiles (8×4, 4×4, 8×2, 8×1, 4×2, 16×2), offered only
// for operators with density ≥ 0.3 and m·k ≥ 4096 whose block fits.
func DenseCandidates(pb Problem) []Variant {
	st := operator.Analyze(pb.Op)
	if st.Density < denseMinDensity || pb.Op.Rows*pb.Op.Cols < denseMinEntries {
		return nil
	}
	var out []Variant
	for _, v := range []DenseParams{
		{Block: 8, Rows: 8, Width: 4, Chunk: 8},
		{Block: 16, Rows: 4, Width: 4, Chunk: 8},
		{Block: 16, Rows: 8, Width: 2, Chunk: 8},
		{Block: 32, Rows: 8, Width: 1, Chunk: 16},
		{Block: 16, Rows: 4, Width: 2, Chunk: 16},
		{Block: 8, Rows: 16, Width: 2, Chunk: 8},
	} {
		if pb.Check(v) == nil && v.denseThreads(pb.Op.Rows) <= denseMaxCandidateThreads {
			out = append(out, v)
		}
	}
	return out
}

// denseThreads is the block size for an operator of m rows (the CPU form,
// Chunk 0, has no y threads: see denseHost).
func (v DenseParams) denseThreads(m int) int {
	if v.Chunk == 0 {
		return v.Block
	}
	return v.Block * v.denseY(m)
}

// denseY is the threads along y: ⌈m / Rows⌉.
func (v DenseParams) denseY(m int) int { return (m + v.Rows - 1) / max(v.Rows, 1) }

// DenseParams are the parameters of dense: "dense/xX-rR-wW-cC", or the
// CPU form without a chunk, "dense/xX-rR-wW[-pf]" (see denseHost).
type DenseParams struct {
	Block int // threads per block along x
	Rows  int // rows of C a thread computes
	Width int // columns of C a thread computes
	Chunk int // columns of A staged a step; 0: the CPU form
	// Prefetch (the CPU form only, -pf) has each tile prefetch the next
	// tile's rows of C and its share of the next block's rows of B
	// (kernel.Prefetch): those rows lie n apart, too many streams for a
	// CPU's hardware prefetchers (see denseHostPrefetch).
	Prefetch bool
}

// Family is the strategy v belongs to.
func (v DenseParams) Family() Family { return Dense }

// String is v's name.
func (v DenseParams) String() string { return v.Name() }

// Name is e.g. "dense/x8-r8-w4-c8" or "dense/x8-r5-w4-pf".
func (v DenseParams) Name() string {
	if v.Chunk == 0 { // the CPU form: no staging
		s := fmt.Sprintf("%s/x%d-r%d-w%d", Dense, v.Block, v.Rows, v.Width)
		if v.Prefetch {
			s += "-pf"
		}
		return s
	}
	return fmt.Sprintf("%s/x%d-r%d-w%d-c%d", Dense, v.Block, v.Rows, v.Width, v.Chunk)
}

// parseDense reads "dense/xX-rR-wW-cC", or "dense/xX-rR-wW[-pf]" (no
// chunk: the CPU form, see denseHost; -pf with prefetches).
func parseDense(def Variant, name string, opts []string) (Variant, error) {
	v := def.(DenseParams)
	v.Chunk = 0
	has, err := readOptions(name, opts, "dense/x8-r8-w4-c8: threads along x, rows and columns per thread, k-chunk; without -c the CPU form, -pf with prefetches",
		need("x", &v.Block), need("r", &v.Rows), need("w", &v.Width), num("c", &v.Chunk), flag("pf", &v.Prefetch))
	switch {
	case err != nil:
		return nil, err
	case has["c"] && v.Chunk == 0:
		return nil, fmt.Errorf("variant %q: chunk must be ≥ 1 (leave out -c for the CPU form)", name)
	case has["c"] && v.Prefetch:
		return nil, fmt.Errorf("variant %q: only the dense CPU form (dense/xX-rR-wW) prefetches (-pf)", name)
	}
	return v, nil
}

func (v DenseParams) valid() error {
	switch {
	case v.Block < 1 || v.Block > 1024:
		return fmt.Errorf("variant %s: block %d out of 1..1024", v.Name(), v.Block)
	case v.Rows < 1 || v.Width < 1 || v.Rows > denseMaxTile || v.Width > denseMaxTile || v.Rows*v.Width > denseMaxTile:
		return fmt.Errorf("variant %s: rows and width must be ≥ 1 with rows·width ≤ %d", v.Name(), denseMaxTile)
	case v.Chunk < 0 || v.Chunk > 256:
		return fmt.Errorf("variant %s: chunk must be 1..256 (or left out: the CPU form)", v.Name())
	case v.Prefetch && !v.denseHost():
		return fmt.Errorf("variant %s: only the dense CPU form (dense/xX-rR-wW) prefetches (-pf)", v.Name())
	}
	return nil
}

func (v DenseParams) launch() launchShape { return launchShape{v.Block, 1, v.Width, 0} }

func (v DenseParams) build(g *gen) error {
	if v.denseHost() {
		g.denseHostKernel()
	} else {
		g.denseKernel()
	}
	return nil
}

func (v DenseParams) sharedBytes(pb Problem) int { return v.denseShared(pb) }

// check reports why v does not fit the problem: too many threads for
// the operator's rows, or too much shared memory.
func (v DenseParams) check(pb Problem) error {
	if t := v.denseThreads(pb.Op.Rows); t > 1024 {
		return fmt.Errorf("variant %s needs %d threads per block for %d rows (at most 1024)", v.Name(), t, pb.Op.Rows)
	}
	if s := v.sharedBytes(pb); s > MaxSharedBytes {
		return fmt.Errorf("variant %s needs %d bytes of shared memory (limit %d)", v.Name(), s, MaxSharedBytes)
	}
	return nil
}

// denseLayout is the shape of a dense kernel's shared arrays.
type denseLayout struct {
	nb     int  // columns per block: Block·Width
	mp     int  // rows covered by the threads: ⌈m/Rows⌉·Rows
	stride int  // row stride of ash: mp rounded up to an odd number of 16-byte units
	ka     int  // columns of A held in ash: k (whole) or Chunk
	whole  bool // α·A staged once
}

func (v DenseParams) denseLayout(pb Problem) denseLayout {
	m, k, w := pb.Op.Rows, pb.Op.Cols, pb.DType.Bytes()
	l := denseLayout{nb: v.Block * v.Width, mp: v.denseY(m) * v.Rows}
	// The row stride of ash keeps a thread's Rows values 16-byte aligned
	// (so that a compiler may read them with vector loads when Rows is
	// even) and is an odd number of 16-byte units (so that staging, which
	// writes a column of ash per thread, spreads over the banks).
	vec := 16 / w
	l.stride = (l.mp + vec - 1) / vec * vec
	if (l.stride/vec)%2 == 0 {
		l.stride += vec
	}
	chunk := min(v.Chunk, k)
	l.whole = (k*l.stride+chunk*l.nb)*w <= denseWholeA
	l.ka = chunk
	if l.whole {
		l.ka = k
	}
	return l
}

func (v DenseParams) denseShared(pb Problem) int {
	if v.Chunk == 0 { // the CPU form stages nothing
		return 0
	}
	l := v.denseLayout(pb)
	return (min(v.Chunk, pb.Op.Cols)*l.nb + l.ka*l.stride) * pb.DType.Bytes()
}

// denseParam is the buffer of α·A the dense kernels read.
var denseParam = kernel.Param{Name: "a", Kind: kernel.BufferParam, Type: kernel.Real, Const: true, Doc: "α·A, m×k row-major"}

// denseRun is a run of chunks staged and computed by one loop: chunks of
// size columns starting at from, from+Chunk, … below to; ys says which y
// threads have a non-zero tile in them (nil: all).
type denseRun struct {
	from, to, size int
	ys             []bool
}

// denseRuns cuts the columns of A into chunks, drops those that are all
// zero and joins neighbours of the same size and pattern.
func (g *gen) denseRuns() []denseRun {
	v, m, k := g.v.(DenseParams), g.m, g.k
	ty := v.denseY(m)
	var runs []denseRun
	for c0 := 0; c0 < k; c0 += v.Chunk {
		size := min(v.Chunk, k-c0)
		ys := make([]bool, ty)
		anyNZ, all := false, true
		for y := range ys {
			for i := y * v.Rows; i < min((y+1)*v.Rows, m) && !ys[y]; i++ {
				for r := c0; r < c0+size; r++ {
					if g.pb.Op.At(i, r) != 0 {
						ys[y] = true
						break
					}
				}
			}
			anyNZ = anyNZ || ys[y]
			all = all && ys[y]
		}
		if !anyNZ {
			continue
		}
		if all {
			ys = nil
		}
		if n := len(runs); n > 0 && runs[n-1].to == c0 && runs[n-1].size == size && fmt.Sprint(runs[n-1].ys) == fmt.Sprint(ys) {
			runs[n-1].to = c0 + size
			continue
		}
		runs = append(runs, denseRun{from: c0, to: c0 + size, size: size, ys: ys})
	}
	return runs
}

// yCondition is true for the y threads marked in ys (ranges of ty).
func yCondition(ys []bool) kernel.Expr {
	ty := kernel.Ref("ty")
	var cond kernel.Expr
	for y := 0; y < len(ys); {
		if !ys[y] {
			y++
			continue
		}
		e := y
		for e < len(ys) && ys[e] {
			e++
		}
		var c kernel.Expr
		switch {
		case y == 0 && e == len(ys):
			return nil
		case e == y+1:
			c = kernel.Eq(ty, kernel.Const(y))
		case y == 0:
			c = kernel.Lt(ty, kernel.Const(e))
		case e == len(ys):
			c = kernel.Ge(ty, kernel.Const(y))
		default:
			c = kernel.And(kernel.Ge(ty, kernel.Const(y)), kernel.Lt(ty, kernel.Const(e)))
		}
		if cond == nil {
			cond = c
		} else {
			cond = kernel.Or(cond, c)
		}
		y = e
	}
	return cond
}

// denseKernel builds the blocked dense kernel (see Dense).
func (g *gen) denseKernel() {
	k, v, pb := g.kern, g.v.(DenseParams), g.pb
	m, kk := g.m, g.k
	l := v.denseLayout(pb)
	ty := v.denseY(m)
	threads := v.Block * ty
	k.Launch.Block = [3]int{v.Block, ty, 1}
	k.Launch.Grid = [3]kernel.Axis{kernel.Over(Columns, l.nb)}
	k.Launch.SharedBytes = v.denseShared(pb)
	k.Params = append([]kernel.Param{denseParam}, k.Params...)
	k.Doc = strings.Replace(k.Doc, fmt.Sprintf("one thread per %d column(s)", v.Width),
		fmt.Sprintf("blocks of %d columns, %d×%d sums a thread, α·A from the buffer a through shared memory", l.nb, v.Rows, v.Width), 1)
	k.Shared = []kernel.Shared{
		{Name: "bsh", Type: kernel.Real, Dims: []int{min(v.Chunk, kk), l.nb}},
		{Name: "ash", Type: kernel.Real, Dims: []int{l.ka, l.stride}},
	}
	n, ldb, ldc := g.nExpr(), g.ldbExpr(), g.ldcExpr()
	body := []kernel.Stmt{
		kernel.DeclIndex("tx", kernel.LocalX),
		kernel.DeclIndex("ty", kernel.LocalY),
		kernel.DeclIndex("tid", kernel.Add(kernel.Mul(kernel.Ref("ty"), kernel.Const(v.Block)), kernel.Ref("tx"))),
		kernel.DeclIndex("j0", kernel.Mul(kernel.GroupX, kernel.Const(l.nb))),
		kernel.DeclIndex("rb", kernel.Mul(kernel.Ref("ty"), kernel.Const(v.Rows))),
	}
	acc := func(r, c int) string { return fmt.Sprintf("acc%d_%d", r, c) }
	for r := 0; r < v.Rows; r++ {
		for c := 0; c < v.Width; c++ {
			body = append(body, kernel.Decl{Type: kernel.Real, Name: acc(r, c), Init: kernel.Float(0)})
		}
	}
	// stageA fills ash[q][row] = α·A[row][c0+q] for q < cols, row < mp
	// (zero past m), c0 an expression.
	stageA := func(c0 kernel.Expr, cols int) []kernel.Stmt {
		e := kernel.Ref("e")
		var load kernel.Expr
		if l.whole { // e runs over A row-major: a[e] is (row, q)
			load = kernel.At("a", e)
		} else {
			load = kernel.At("a", kernel.Add(kernel.Add(kernel.Mul(kernel.Ref("row"), kernel.Const(kk)), c0), kernel.Ref("q")))
		}
		put := kernel.Put("ash", load, kernel.Ref("q"), kernel.Ref("row"))
		var st kernel.Stmt = put
		if l.mp > m {
			st = kernel.If{Cond: kernel.Lt(kernel.Ref("row"), kernel.Const(m)), Then: []kernel.Stmt{put},
				Else: []kernel.Stmt{kernel.Put("ash", kernel.Float(0), kernel.Ref("q"), kernel.Ref("row"))}}
		}
		return []kernel.Stmt{kernel.For{Var: "e", From: kernel.Ref("tid"), To: kernel.Const(l.mp * cols), Step: int64(threads), Body: []kernel.Stmt{
			kernel.DeclIndex("row", kernel.Div(e, kernel.Const(cols))),
			kernel.DeclIndex("q", kernel.Rem(e, kernel.Const(cols))),
			st,
		}}}
	}
	// stageB fills bsh[q][col] = B[c0+q][j0+col] for q < rows, col < nb,
	// j0+col < n.
	stageB := func(c0 kernel.Expr, rows int) []kernel.Stmt {
		e := kernel.Ref("e")
		col := kernel.Add(kernel.Ref("j0"), kernel.Ref("col"))
		return []kernel.Stmt{kernel.For{Var: "e", From: kernel.Ref("tid"), To: kernel.Const(rows * l.nb), Step: int64(threads), Body: []kernel.Stmt{
			kernel.DeclIndex("q", kernel.Div(e, kernel.Const(l.nb))),
			kernel.DeclIndex("col", kernel.Rem(e, kernel.Const(l.nb))),
			kernel.If{Cond: kernel.Lt(col, n), Then: []kernel.Stmt{
				kernel.Put("bsh", kernel.At("b", kernel.Add(kernel.Mul(kernel.Add(c0, kernel.Ref("q")), ldb), col)), kernel.Ref("q"), kernel.Ref("col")),
			}},
		}}}
	}
	// compute adds the chunk's products into the sums.
	compute := func(c0 kernel.Expr, size int, ys []bool) []kernel.Stmt {
		q := kernel.Ref("kk")
		aCol := kernel.Expr(q)
		if l.whole {
			aCol = kernel.Add(c0, q)
		}
		var inner []kernel.Stmt
		for c := 0; c < v.Width; c++ {
			inner = append(inner, kernel.Decl{Type: kernel.Real, Name: fmt.Sprintf("bv%d", c), Init: kernel.At("bsh", q, plus(c*v.Block, kernel.Ref("tx")))})
		}
		for r := 0; r < v.Rows; r++ {
			inner = append(inner, kernel.Decl{Type: kernel.Real, Name: fmt.Sprintf("av%d", r), Init: kernel.At("ash", aCol, plus(r, kernel.Ref("rb")))})
		}
		for r := 0; r < v.Rows; r++ {
			for c := 0; c < v.Width; c++ {
				inner = append(inner, kernel.Assign{Name: acc(r, c), Value: kernel.Add(kernel.Ref(acc(r, c)),
					kernel.Mul(kernel.Ref(fmt.Sprintf("av%d", r)), kernel.Ref(fmt.Sprintf("bv%d", c))))})
			}
		}
		loop := []kernel.Stmt{kernel.For{Var: "kk", From: kernel.Const(0), To: kernel.Const(size), Body: inner, Unroll: true}}
		if cond := yCondition(ys); cond != nil {
			return []kernel.Stmt{kernel.If{Cond: cond, Then: loop}}
		}
		return loop
	}
	if l.whole {
		body = append(body, kernel.Comment{Text: fmt.Sprintf("alpha*A, %d×%d, into shared memory once (transposed)", m, kk)})
		body = append(body, stageA(kernel.Const(0), kk)...)
	}
	for _, run := range g.denseRuns() {
		var c0 kernel.Expr = kernel.Ref("kc")
		single := run.to-run.from == run.size
		if single {
			c0 = kernel.Const(run.from)
		}
		chunk := []kernel.Stmt{kernel.Comment{Text: fmt.Sprintf("columns %d..%d of A, %d at a time", run.from, run.to-1, run.size)}}
		chunk = append(chunk, stageB(c0, run.size)...)
		if !l.whole {
			chunk = append(chunk, stageA(c0, run.size)...)
		}
		chunk = append(chunk, kernel.Barrier{})
		chunk = append(chunk, compute(c0, run.size, run.ys)...)
		chunk = append(chunk, kernel.Barrier{})
		if single {
			body = append(body, chunk...)
		} else {
			body = append(body, kernel.For{Var: "kc", From: kernel.Const(run.from), To: kernel.Const(run.to), Step: int64(run.size), Body: chunk})
		}
	}
	// Stores: columns past n and rows past m are left alone.
	beta := pb.Beta
	for c := 0; c < v.Width; c++ {
		col := fmt.Sprintf("jc%d", c)
		body = append(body, kernel.DeclIndex(col, kernel.Add(kernel.Ref("j0"), plus(c*v.Block, kernel.Ref("tx")))))
		var stores []kernel.Stmt
		for r := 0; r < v.Rows; r++ {
			off := kernel.Add(kernel.Mul(plus(r, kernel.Ref("rb")), ldc), kernel.Ref(col))
			var val kernel.Expr = kernel.Ref(acc(r, c))
			switch {
			case beta == 1:
				val = kernel.Add(val, kernel.At("c", off))
			case beta != 0:
				val = kernel.Add(val, kernel.Mul(kernel.Float(beta), kernel.At("c", off)))
			}
			var st kernel.Stmt = kernel.Put("c", val, off)
			if (ty-1)*v.Rows+r >= m { // only the last y thread has rows past m here
				st = kernel.If{Cond: kernel.Lt(plus(r, kernel.Ref("rb")), kernel.Const(m)), Then: []kernel.Stmt{st}}
			}
			stores = append(stores, st)
		}
		body = append(body, kernel.If{Cond: kernel.Lt(kernel.Ref(col), n), Then: stores})
	}
	k.Body = body
	k.Meta["tile"] = fmt.Sprintf("%d×%d", v.Rows, v.Width)
	k.Meta["a_whole"] = l.whole
}
