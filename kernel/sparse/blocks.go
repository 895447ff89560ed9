package sparse

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/bespoke-hpc/bespoke/kernel"
)

// Blocks: the sum-factorised kernel for operators made of many copies of a
// few small dense blocks — the tensor-product operators of hexahedra and
// quadrilaterals, whose gradient (M460) is the 1-D derivative matrix applied
// along every line of points, whose divergence (M132) is the sum of those
// along three directions, and whose interpolation to and lifting from the
// faces (M0, M3, M6) act on lines too.
//
// The structure is found in A itself, with no hint from the element:
// grouping the rows of A by their support (or the columns by the rows
// they touch) cuts A into dense blocks rows × cols; blocks whose rows and
// columns have the same offsets from their first and the same values are
// one class, and the blocks of a class whose first row and column are
// affine in the block's number t (base + a·⌊t/q⌋ + b·(t mod q), q the
// length of a line of lines) are one run-time loop. A p6 hexahedron's
// gradient is then 3 loops of 49 lines with a 7×7 literal matrix each,
// instead of 7,056 unrolled multiply-adds; the work per column grows as
// p⁴ instead of p⁶ and a thread keeps only a block's values live.
//
// A block of the grid holds Block × Split threads (tx, ty) and Block
// adjacent columns: the rows of B the kernel reads are staged in shared
// memory (bsh[row][tx], zero past n), then every y thread takes every
// Split-th block of each loop (rotated so that the threads end within one
// block of each other), reads its columns from bsh, and writes its rows
// of C. Where blocks share rows (the divergence sums three directions) the
// sums go to a shared accumulator csh[row][tx] instead, in phases whose
// blocks have disjoint rows, with a barrier between phases, and csh is
// written to C at the end; a phase restages only the rows of B it reads
// when the whole of B and csh would not fit.
const Blocks Family = "blocks"

// Bounds on a plan: a block's literal tile, the loops of the kernel's code,
// and the least number of blocks per loop (on average) for the family to
// be worth offering.
const (
	blocksMaxRows    = 32
	blocksMaxCols    = 32
	blocksMaxTile    = 512
	blocksMaxLoops   = 64
	blocksMinReuse   = 4
	blocksMaxThreads = 1024
	blocksMaxTiles   = 16
	// blocksLargeShared bounds the shared memory of a -l variant: what an
	// sm_80 block may opt in to (163 KiB; sm_90: 227 KiB).
	blocksLargeShared = 160 << 10
)

// blockTask is one dense block of A: rows × cols, both ascending; strays
// are the entries (row, column of A) outside every block that it adds to
// its rows (near.go), and class is its class in a plan.
type blockTask struct {
	rows, cols []int
	strays     [][2]int
	class      int
}

// blockClass is a tile shape and its values: row i of a block is its first
// row plus rowOff[i], column j its first column plus colOff[j], and the
// entry α·A there is vals[i·len(colOff)+j].
type blockClass struct {
	rowOff, colOff []int
	vals           []float64
}

// affine is base + a·⌊t/q⌋ + b·(t mod q) for t < count (q = count: b·t).
type affine struct{ base, a, b int }

func (f affine) at(t, q int) int { return f.base + f.a*(t/q) + f.b*(t%q) }

// blockLoop is a run of blocks of one class: block t < count has its first
// row at row.at(t, q) and its first column at col.at(t, q). In a plan of
// near classes (near.go) its blocks share the tile of the class of its
// first block but for the entries vary, and add the strays; variant[t]
// is block t's row of variants, the values of the entries vary and of the
// strays (zero where block t has none).
type blockLoop struct {
	class, count, q int
	row, col        affine
	blocks          []blockTask // in the order of t
	vary            []int       // entries of the tile
	strays          [][2]int    // (row of the tile, column of A)
	variant         []int
	variants        [][]float64
}

// blockPhase is a set of loops whose blocks write disjoint rows; lo and hi
// bound the rows of B they read.
type blockPhase struct {
	loops  []blockLoop
	lo, hi int
	covers bool // writes every row of C
}

// blockPlan is how a Blocks kernel covers A.
type blockPlan struct {
	by         string // "rows" or "cols": how A was cut into blocks
	classes    []blockClass
	phases     []blockPhase
	accumulate bool // some row is written by blocks of different phases
	zeroRows   []int
	tasks      int
	lo, hi     int // rows of B read by any phase
}

// loops counts the plan's loops.
func (p *blockPlan) loops() int {
	n := 0
	for _, ph := range p.phases {
		n += len(ph.loops)
	}
	return n
}

// stagedRows is the most rows of B the kernel holds in shared memory at
// once, for Block columns of w bytes and at most limit bytes: all it reads
// (staged once) when they fit beside the accumulator and either fit in
// MaxSharedBytes or the phases read most of them each (the lifting: every
// phase reaches across the faces); else each phase its own rows, which
// leaves room for more blocks on a multiprocessor and lets the next
// phase's rows load during this one's work (the divergence, whose phases
// read a third of B each: p7/hex/m132 in fp32 at 51 % staged once, 79 %
// staged by phase).
//
// With two buffers (-a2) every phase is staged on its own, the next one's
// rows copied into the other buffer while this one's are worked on.
func (p *blockPlan) stagedRows(m, block, w, limit, buffers int) (rows int, once bool) {
	acc := 0
	if p.accumulate {
		acc = m
	}
	if len(p.phases) == 1 {
		return p.hi - p.lo, true
	}
	sum, widest := 0, 0
	for _, ph := range p.phases {
		sum += ph.hi - ph.lo
		widest = max(widest, ph.hi-ph.lo)
	}
	if buffers > 1 {
		return widest, false
	}
	whole := (p.hi - p.lo + acc) * block * w
	if whole <= MaxSharedBytes || (whole <= limit && 2*sum >= 3*(p.hi-p.lo)) {
		return p.hi - p.lo, true
	}
	return widest, false
}

// plan returns the problem's block plan (computed once per gen).
func (g *gen) plan() (*blockPlan, error) {
	if g.blocks == nil && g.blocksErr == nil {
		g.blocks, g.blocksErr = plans.get(g)
	}
	return g.blocks, g.blocksErr
}

// planBlocks cuts A into blocks both ways (rows by support, columns by the
// rows they touch) and keeps the plan with fewer loops, then fewer loads.
func planBlocks(g *gen) (*blockPlan, error) {
	rowNZ, colNZ, _ := g.structure()
	var best *blockPlan
	var errs []string
	for _, by := range []string{"rows", "cols"} {
		var tasks []blockTask
		if by == "rows" {
			tasks = groupBySupport(rowNZ, false)
		} else {
			tasks = groupBySupport(colNZ, true)
		}
		p, err := g.planTasks(by, tasks)
		if err != nil {
			errs = append(errs, fmt.Sprintf("by %s: %v", by, err))
			continue
		}
		if best == nil || p.loops() < best.loops() || (p.loops() == best.loops() && p.loads() < best.loads()) {
			best = p
		}
	}
	if best == nil {
		// Blocks over a tile's bounds, cut into pieces (kron.go).
		p, err := g.planPieces()
		if err != nil {
			errs = append(errs, err.Error())
		}
		best = p
	}
	// Loops of few blocks: classes that differ by rounding, or strays
	// (near.go), may have cut a factor's copies apart.
	if best == nil || best.shortLoops() {
		if p, err := g.planNear(); err == nil && (best == nil || p.loops() < best.loops()) {
			return p, nil
		} else if best == nil {
			return nil, fmt.Errorf("no block structure (%s; near classes: %v)", strings.Join(errs, "; "), err)
		}
	}
	return best, nil
}

// shortLoops says whether some loop runs over fewer than blocksMinReuse
// blocks.
func (p *blockPlan) shortLoops() bool {
	for _, ph := range p.phases {
		for _, l := range ph.loops {
			if l.count < blocksMinReuse {
				return true
			}
		}
	}
	return false
}

// loads is the values a column's blocks read from shared memory.
func (p *blockPlan) loads() int {
	n := 0
	for _, ph := range p.phases {
		for _, l := range ph.loops {
			n += l.count * len(p.classes[l.class].colOff)
		}
	}
	return n
}

// groupBySupport groups the lines (rows, or with transposed the columns)
// of A with the same non-empty support into blocks, in order of their first
// line.
// supportKey spells a support as a map key (fmt.Sprint's cost showed in
// every candidate list).
func supportKey(s []int) string {
	b := make([]byte, 0, 4*len(s))
	for _, x := range s {
		b = strconv.AppendInt(b, int64(x), 10)
		b = append(b, ',')
	}
	return string(b)
}

func groupBySupport(support [][]int, transposed bool) []blockTask {
	index := map[string]int{}
	var tasks []blockTask
	for i, s := range support {
		if len(s) == 0 {
			continue
		}
		key := supportKey(s)
		t, ok := index[key]
		if !ok {
			t = len(tasks)
			index[key] = t
			if transposed {
				tasks = append(tasks, blockTask{rows: s})
			} else {
				tasks = append(tasks, blockTask{cols: s})
			}
		}
		if transposed {
			tasks[t].cols = append(tasks[t].cols, i)
		} else {
			tasks[t].rows = append(tasks[t].rows, i)
		}
	}
	return mergeSubsets(tasks, transposed)
}

// mergeSubsets joins a group whose support lies within a wider group's into
// that group, as zeros of its block: the middle point of an odd line of
// Gauss points has a zero derivative, which would otherwise split every
// line into two blocks and two classes.
func mergeSubsets(tasks []blockTask, transposed bool) []blockTask {
	support := func(t *blockTask) *[]int {
		if transposed {
			return &t.rows
		}
		return &t.cols
	}
	lines := func(t *blockTask) *[]int {
		if transposed {
			return &t.cols
		}
		return &t.rows
	}
	order := make([]int, len(tasks))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Compare(len(*support(&tasks[b])), len(*support(&tasks[a])))
	})
	into := make([]int, len(tasks))
	for i := range into {
		into[i] = -1
	}
	for oi, small := range order {
		for _, big := range order[:oi] {
			if into[big] < 0 && len(*support(&tasks[big])) > len(*support(&tasks[small])) && isSubset(*support(&tasks[small]), *support(&tasks[big])) {
				into[small] = big
				break
			}
		}
	}
	var out []blockTask
	for i := range tasks {
		if into[i] >= 0 {
			continue
		}
		t := tasks[i]
		for j := range tasks {
			if into[j] == i {
				*lines(&t) = append(*lines(&t), *lines(&tasks[j])...)
			}
		}
		slices.Sort(*lines(&t))
		out = append(out, t)
	}
	return out
}

// isSubset says whether the ascending list a lies within the ascending list b.
func isSubset(a, b []int) bool {
	j := 0
	for _, x := range a {
		for j < len(b) && b[j] < x {
			j++
		}
		if j == len(b) || b[j] != x {
			return false
		}
	}
	return true
}

// planTasks classes the blocks, deals them into phases of disjoint rows
// and the classes of each phase into affine loops.
func (g *gen) planTasks(by string, tasks []blockTask) (*blockPlan, error) {
	return g.planWith(by, tasks, false)
}

// planWith is planTasks; with near, the loops of a phase run over the
// blocks of near classes together (near.go).
func (g *gen) planWith(by string, tasks []blockTask, near bool) (*blockPlan, error) {
	tasks = slices.Clone(tasks)
	p := &blockPlan{by: by, tasks: len(tasks)}
	classOf := make([]int, len(tasks))
	index := map[string]int{}
	for ti, t := range tasks {
		if len(t.rows) > blocksMaxRows || len(t.cols) > blocksMaxCols || len(t.rows)*len(t.cols) > blocksMaxTile {
			return nil, fmt.Errorf("a block of %d×%d (at most %d×%d, %d entries)", len(t.rows), len(t.cols), blocksMaxRows, blocksMaxCols, blocksMaxTile)
		}
		c := blockClass{rowOff: offsets(t.rows), colOff: offsets(t.cols)}
		for _, i := range t.rows {
			for _, r := range t.cols {
				c.vals = append(c.vals, g.at(i, r))
			}
		}
		var key strings.Builder
		fmt.Fprint(&key, c.rowOff, c.colOff)
		for _, x := range c.vals {
			fmt.Fprintf(&key, " %x", math.Float64bits(x))
		}
		id, ok := index[key.String()]
		if !ok {
			id = len(p.classes)
			index[key.String()] = id
			p.classes = append(p.classes, c)
		}
		classOf[ti] = id
		tasks[ti].class = id
	}
	group := classOf // the loops' classes: each its own, or near ones together
	if near {
		group = nearGroups(p.classes, classOf)
	}
	// Phases: each block goes to the first phase none of whose blocks
	// writes one of its rows, in order of the rows of B they read (so
	// that a phase reads a narrow range of B).
	order := make([]int, len(tasks))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(tasks[a].cols[0], tasks[b].cols[0]), cmp.Compare(tasks[a].rows[0], tasks[b].rows[0]))
	})
	var written []map[int]bool
	phaseOf := make([]int, len(tasks))
	for _, ti := range order {
		ph := 0
		for ; ph < len(written); ph++ {
			free := true
			for _, i := range tasks[ti].rows {
				if written[ph][i] {
					free = false
					break
				}
			}
			if free {
				break
			}
		}
		if ph == len(written) {
			written = append(written, map[int]bool{})
		}
		for _, i := range tasks[ti].rows {
			written[ph][i] = true
		}
		phaseOf[ti] = ph
	}
	p.accumulate = len(written) > 1
	p.lo, p.hi = g.k, 0
	for ph := range written {
		phase := blockPhase{lo: g.k}
		for c := range p.classes {
			var run []blockTask
			for _, ti := range order {
				if phaseOf[ti] == ph && group[ti] == c {
					run = append(run, tasks[ti])
					phase.lo = min(phase.lo, tasks[ti].cols[0])
					phase.hi = max(phase.hi, tasks[ti].cols[len(tasks[ti].cols)-1]+1)
					for _, s := range tasks[ti].strays {
						phase.lo, phase.hi = min(phase.lo, s[1]), max(phase.hi, s[1]+1)
					}
				}
			}
			for _, l := range affineLoops(run) {
				l.class = l.blocks[0].class
				if near {
					if err := g.variants(p, &l); err != nil {
						return nil, err
					}
				}
				phase.loops = append(phase.loops, l)
			}
		}
		phase.covers = len(written[ph]) == g.m
		p.lo, p.hi = min(p.lo, phase.lo), max(p.hi, phase.hi)
		p.phases = append(p.phases, phase)
	}
	if n := p.loops(); n > blocksMaxLoops {
		return nil, fmt.Errorf("%d loops (at most %d)", n, blocksMaxLoops)
	}
	rowNZ, _, _ := g.structure()
	for i, nz := range rowNZ {
		if len(nz) == 0 {
			p.zeroRows = append(p.zeroRows, i)
		}
	}
	return p, nil
}

// offsets is xs less its first element.
func offsets(xs []int) []int {
	out := make([]int, len(xs))
	for i, x := range xs {
		out[i] = x - xs[0]
	}
	return out
}

// affineLoops cuts a class's blocks into as few loops as it can: all of
// them in one loop when their first rows and columns are affine in the
// block's number (in their order by column, or by row), else the longest
// affine runs in order.
func affineLoops(run []blockTask) []blockLoop {
	if len(run) == 0 {
		return nil
	}
	byRow := slices.Clone(run)
	slices.SortStableFunc(byRow, func(a, b blockTask) int {
		return cmp.Or(cmp.Compare(a.rows[0], b.rows[0]), cmp.Compare(a.cols[0], b.cols[0]))
	})
	for _, order := range [][]blockTask{run, byRow} {
		if l, ok := fitAffine(order); ok {
			l.blocks = order
			return []blockLoop{l}
		}
	}
	var out []blockLoop
	for s := 0; s < len(run); {
		e := s + 1
		for e < len(run) {
			if _, ok := fitLine(run[s : e+1]); !ok {
				break
			}
			e++
		}
		l, _ := fitLine(run[s:e])
		l.blocks = run[s:e]
		out = append(out, l)
		s = e
	}
	return out
}

// fitLine fits the blocks' first rows and columns as base + b·t.
func fitLine(run []blockTask) (blockLoop, bool) {
	return fitQ(run, len(run))
}

// fitAffine fits base + a·⌊t/q⌋ + b·(t mod q) for the smallest line
// length q that works (q = len(run) first: no division).
func fitAffine(run []blockTask) (blockLoop, bool) {
	if l, ok := fitQ(run, len(run)); ok {
		return l, true
	}
	for q := 2; q < len(run); q++ {
		if l, ok := fitQ(run, q); ok {
			return l, true
		}
	}
	return blockLoop{}, false
}

func fitQ(run []blockTask, q int) (blockLoop, bool) {
	n := len(run)
	fit := func(first func(blockTask) int) (affine, bool) {
		f := affine{base: first(run[0])}
		if q > 1 && n > 1 {
			f.b = first(run[1]) - f.base
		}
		if q < n {
			f.a = first(run[q]) - f.base
		}
		for t, task := range run {
			if f.at(t, q) != first(task) {
				return f, false
			}
		}
		return f, true
	}
	row, ok1 := fit(func(t blockTask) int { return t.rows[0] })
	col, ok2 := fit(func(t blockTask) int { return t.cols[0] })
	return blockLoop{count: n, q: q, row: row, col: col}, ok1 && ok2
}

// blocksShared is the shared memory of a Blocks kernel: the staged rows of
// B and the accumulator, Block columns each.
func blocksShared(pb Problem, v BlocksParams, p *blockPlan) int {
	w := pb.DType.Bytes()
	rows, _ := p.stagedRows(pb.Op.Rows, v.Block, w, v.sharedLimit(), v.blocksBuffers())
	rows *= v.blocksBuffers()
	if p.accumulate {
		rows += pb.Op.Rows
	}
	return rows * v.Block * w
}

// BlocksCandidates lists the Blocks variants worth trying: offered where A
// has a block plan with at least blocksMinReuse blocks per loop (on
// average), or whose factor repeats in another order (repeatsLarge), for
// the shapes whose shared memory fits.
func BlocksCandidates(pb Problem) []Variant {
	g := newGen(pb, BlocksParams{Block: 16, Split: 16})
	p, err := g.plan()
	// A plan's loops reuse their code, or a large operator's measured
	// structure repeats a factor in another order (kron.go).
	if err != nil || (p.tasks < blocksMinReuse*p.loops() && !repeatsLarge(pb.Op)) {
		return nil
	}
	var out []Variant
	for _, v := range []BlocksParams{
		{Block: 64, Split: 8},
		{Block: 32, Split: 8},
		{Block: 32, Split: 16},
		{Block: 16, Split: 16},
		{Block: 16, Split: 32},
		{Block: 8, Split: 32},
		{Block: 8, Split: 64},
		{Block: 32, Split: 16, Tiles: 2},
		{Block: 16, Split: 32, Tiles: 2},
		{Block: 8, Split: 64, Tiles: 2},
	} {
		if pb.Check(v) == nil {
			out = append(out, v)
		}
	}
	if len(out) > 0 {
		return out
	}
	// Four columns a block (32-byte rows of B, a DRAM sector) where eight
	// need more shared memory: a p8 hexahedron's divergence in fp64.
	for _, v := range []BlocksParams{
		{Block: 4, Split: 64},
		{Block: 4, Split: 128},
	} {
		if pb.Check(v) == nil {
			out = append(out, v)
		}
	}
	return out
}

// BlocksLargeCandidates lists the -l Blocks variants (more than 48 KiB of
// shared memory, CUDA sm_80+ only) whose shape has no 48 KiB twin: wider
// blocks of columns for the p6–p8 hexahedra.
func BlocksLargeCandidates(pb Problem) []Variant {
	small := BlocksCandidates(pb)
	if len(small) == 0 {
		return nil
	}
	var out []Variant
	for _, v := range []BlocksParams{
		{Block: 64, Split: 8, Large: true},
		{Block: 64, Split: 16, Large: true},
		{Block: 32, Split: 8, Large: true},
		{Block: 32, Split: 16, Large: true},
		{Block: 16, Split: 16, Large: true},
		{Block: 16, Split: 32, Large: true},
		{Block: 8, Split: 32, Large: true},
		// Deeper blocks for the widest phases (p8/hex/m132;
		// docs/rationale.md#blocks-async).
		{Block: 16, Split: 64, Large: true},
		{Block: 8, Split: 64, Large: true},
		{Block: 32, Split: 8, Large: true, Tiles: 2},
		{Block: 32, Split: 16, Large: true, Tiles: 2},
		{Block: 16, Split: 32, Large: true, Tiles: 2},
	} {
		twin := v
		twin.Large = false
		if !slices.Contains(small, Variant(twin)) && pb.Check(twin) != nil && pb.Check(v) == nil {
			out = append(out, v)
		}
	}
	return out
}

// BlocksAsyncCandidates lists the Blocks variants that stage B by
// asynchronous copies (CUDA sm_80+): a one-buffer twin (-a) of every
// Blocks candidate, and a two-buffer one (-a2, with -l where it needs the
// room) where the operator is applied in phases. They win on the largest
// hexahedra and lose to the register pipeline elsewhere, so both kinds
// stay candidates (docs/rationale.md#blocks-async).
func BlocksAsyncCandidates(pb Problem) []Variant {
	var out []Variant
	for _, v := range append(BlocksCandidates(pb), BlocksLargeCandidates(pb)...) {
		for _, stages := range []int{1, 2} {
			w := v.(BlocksParams)
			w.Stages = stages
			if stages == 2 && !w.Large && pb.Check(w) != nil {
				w.Large = true
			}
			if pb.Check(w) == nil && !slices.Contains(out, Variant(w)) {
				out = append(out, w)
			}
		}
	}
	return out
}

// blocksMaxPrefetch bounds the values of B a thread holds in registers
// while the block computes (the software pipeline of blocksKernel).
const blocksMaxPrefetch = 32

// blocksStep is one staging of rows lo..hi-1 of B: tile's phase.
type blocksStep struct{ tile, phase, lo, hi int }

// blocksBuild is the shape of one Blocks kernel, shared by the stages
// that write it.
type blocksBuild struct {
	g     *gen
	p     *blockPlan
	v     BlocksParams
	pb    Problem
	m, bw int
	tiles int
	// threads is the block's size; staged the rows of B one staging holds
	// (once: every phase's rows in one staging).
	threads, staged int
	once            bool
	double          bool // -a2: a phase's rows copied while the previous one's are worked on
	async           bool // B staged by asynchronous copies
	pipelined       bool // B's next staging loaded into registers during this one
	prefetch        int  // values of one staging a thread holds
	steps           []blocksStep
	// first and last are the modes of the first and last phase.
	first, last blockMode
	n, ldb, ldc kernel.Expr
	tile        kernel.Expr // the tile's number (0 where a block does one)
}

// blocksKernel builds the Blocks kernel (see Blocks). A block does Tiles
// tiles of Block columns in turn. Where it stages B more than once (by
// phase, or by tile) the next staging is loaded into registers while the
// current one is computed on (at most blocksMaxPrefetch values a thread),
// so that a block keeps memory busy between its barriers.
func (g *gen) blocksKernel() error {
	p, err := g.plan()
	if err != nil {
		return err
	}
	b := newBlocksBuild(g, p)
	b.header()
	body := []kernel.Stmt{
		kernel.DeclIndex("tx", kernel.LocalX),
		kernel.DeclIndex("ty", kernel.LocalY),
		kernel.DeclIndex("tid", kernel.Add(kernel.Mul(kernel.Ref("ty"), kernel.Const(b.bw)), kernel.Ref("tx"))),
	}
	if b.pipelined {
		for i := 0; i < b.prefetch; i++ {
			body = append(body, kernel.DeclReal(prefetchReg(i), kernel.Float(0)))
		}
		body = append(body, b.load(b.steps[0], b.colBase(kernel.Const(0)))...)
	}
	tb := append(b.tileStart(), b.phases()...)
	tb = append(tb, b.tileEnd()...)
	if b.tiles > 1 {
		body = append(body, kernel.For{Var: "tile", From: kernel.Const(0), To: kernel.Const(b.tiles), Body: tb})
	} else {
		body = append(body, tb...)
	}
	g.kern.Body = body
	return nil
}

// newBlocksBuild sizes the kernel of plan p: its stagings of B and how
// they are loaded.
func newBlocksBuild(g *gen, p *blockPlan) *blocksBuild {
	v := g.v.(BlocksParams)
	b := &blocksBuild{g: g, p: p, v: v, pb: g.pb, m: g.m, bw: v.Block, tiles: max(v.Tiles, 1), threads: v.Block * v.Split}
	b.staged, b.once = p.stagedRows(b.m, v.Block, b.pb.DType.Bytes(), v.sharedLimit(), v.blocksBuffers())
	b.double = v.Stages == 2 // BlocksParams.check: phases, one tile
	// The stagings of one tile (the next tile's are the same rows).
	for pi, ph := range p.phases {
		switch {
		case b.once && pi == 0:
			b.steps = append(b.steps, blocksStep{phase: pi, lo: p.lo, hi: p.hi})
		case !b.once:
			b.steps = append(b.steps, blocksStep{phase: pi, lo: ph.lo, hi: ph.hi})
		}
	}
	b.prefetch = (b.staged*b.bw + b.threads - 1) / b.threads
	// -a stages B by asynchronous copies instead: every copy in flight at
	// once and none through registers, so no register pipeline; -a2
	// copies the next phase's rows while this one's are worked on.
	b.async = v.Stages > 0
	b.pipelined = !b.async && (len(b.steps) > 1 || b.tiles > 1) && b.prefetch <= blocksMaxPrefetch
	// The first phase sets the accumulator and the last adds it into C
	// when they write every row; otherwise it starts at zero and goes to
	// C at the end.
	b.first, b.last = blockAdd, blockAdd
	if p.accumulate && p.phases[0].covers {
		b.first = blockSet
	}
	if p.accumulate && p.phases[len(p.phases)-1].covers {
		b.last = blockFinish
	}
	b.n, b.ldb, b.ldc = g.nExpr(), g.ldbExpr(), g.ldcExpr()
	b.tile = kernel.Const(0)
	if b.tiles > 1 {
		b.tile = kernel.Ref("tile")
	}
	return b
}

// header sets the kernel's launch, shared memory, doc and meta.
func (b *blocksBuild) header() {
	k, v, p := b.g.kern, b.v, b.p
	k.Launch.Block = [3]int{v.Block, v.Split, 1}
	k.Launch.Grid = [3]kernel.Axis{kernel.Over(Columns, b.bw*b.tiles)}
	k.Launch.SharedBytes = blocksShared(b.pb, v, p)
	k.Shared = []kernel.Shared{{Name: "bsh", Type: kernel.Real, Dims: []int{max(b.staged, 1) * v.blocksBuffers(), b.bw}}}
	if p.accumulate {
		k.Shared = append(k.Shared, kernel.Shared{Name: "csh", Type: kernel.Real, Dims: []int{b.m, b.bw}})
	}
	if b.async {
		k.Hints.MinArch = max(k.Hints.MinArch, 80)
	}
	k.Doc = strings.Replace(k.Doc, "one thread per 1 column(s)",
		fmt.Sprintf("blocks of %d columns (%d tiles a block), B staged in shared memory, A applied as %d classes of dense blocks in %d loops", b.bw, b.tiles, len(p.classes), p.loops()), 1)
	k.Meta["blocks"] = fmt.Sprintf("%d by %s, %d classes, %d loops, %d phases, pipelined %v", p.tasks, p.by, len(p.classes), p.loops(), len(p.phases), b.pipelined)
}

// colBase is the first column of tile t.
func (b *blocksBuild) colBase(t kernel.Expr) kernel.Expr {
	return kernel.Mul(kernel.Add(kernel.Mul(kernel.GroupX, kernel.Const(b.tiles)), t), kernel.Const(b.bw))
}

// stage fills bsh[dst+q][col] = B[lo+q][j0+col] for q < hi-lo (zero past
// n), by asynchronous copies with -a and -a2 (then committed, not waited
// for).
func (b *blocksBuild) stage(lo, hi, dst int) []kernel.Stmt {
	e := kernel.Ref("e")
	col := kernel.Add(kernel.Ref("j0"), kernel.Ref("col"))
	src := kernel.Add(kernel.Mul(plus(lo, kernel.Ref("q")), b.ldb), col)
	put := kernel.Stmt(kernel.If{Cond: kernel.Lt(col, b.n),
		Then: []kernel.Stmt{kernel.Put("bsh", kernel.At("b", src), plus(dst, kernel.Ref("q")), kernel.Ref("col"))},
		Else: []kernel.Stmt{kernel.Put("bsh", kernel.Float(0), plus(dst, kernel.Ref("q")), kernel.Ref("col"))}})
	if b.async {
		put = kernel.CopyAsync{Dst: "bsh", DstIndex: []kernel.Expr{plus(dst, kernel.Ref("q")), kernel.Ref("col")}, Src: "b", SrcIndex: src, Cond: kernel.Lt(col, b.n)}
	}
	out := []kernel.Stmt{
		kernel.Comment{Text: fmt.Sprintf("rows %d..%d of B into shared memory", lo, hi-1)},
		kernel.For{Var: "e", From: kernel.Ref("tid"), To: kernel.Const((hi - lo) * b.bw), Step: int64(b.threads), Body: []kernel.Stmt{
			kernel.DeclIndex("q", kernel.Div(e, kernel.Const(b.bw))),
			kernel.DeclIndex("col", kernel.Rem(e, kernel.Const(b.bw))),
			put,
		}},
	}
	if b.async {
		out = append(out, kernel.AsyncCommit{})
	}
	return out
}

// elem is element i of a thread's share of a staging: e = tid + i·threads.
func (b *blocksBuild) elem(i int) kernel.Expr { return plus(i*b.threads, kernel.Ref("tid")) }

// prefetchReg names the register holding element i of a staging.
func prefetchReg(i int) string { return fmt.Sprintf("pf%d", i) }

// load puts a staging's rows (from column j0e) into the prefetch
// registers.
func (b *blocksBuild) load(st blocksStep, j0e kernel.Expr) []kernel.Stmt {
	bw := b.bw
	out := []kernel.Stmt{kernel.Comment{Text: fmt.Sprintf("rows %d..%d of B into registers", st.lo, st.hi-1)}}
	size := (st.hi - st.lo) * bw
	for i := 0; i < b.prefetch && i*b.threads < size; i++ {
		e := b.elem(i)
		col := kernel.Add(j0e, kernel.Rem(e, kernel.Const(bw)))
		cond := kernel.Lt(col, b.n)
		if (i+1)*b.threads > size {
			cond = kernel.And(kernel.Lt(e, kernel.Const(size)), cond)
		}
		out = append(out, kernel.Assign{Name: prefetchReg(i), Value: kernel.Float(0)},
			kernel.If{Cond: cond, Then: []kernel.Stmt{
				kernel.Assign{Name: prefetchReg(i), Value: kernel.At("b", kernel.Add(kernel.Mul(plus(st.lo, kernel.Div(e, kernel.Const(bw))), b.ldb), col))},
			}})
	}
	return out
}

// put writes the prefetch registers of a staging into bsh.
func (b *blocksBuild) put(st blocksStep) []kernel.Stmt {
	var out []kernel.Stmt
	size := (st.hi - st.lo) * b.bw
	for i := 0; i < b.prefetch && i*b.threads < size; i++ {
		e := b.elem(i)
		var s kernel.Stmt = kernel.Put("bsh", kernel.Ref(prefetchReg(i)), kernel.Div(e, kernel.Const(b.bw)), kernel.Rem(e, kernel.Const(b.bw)))
		if (i+1)*b.threads > size {
			s = kernel.If{Cond: kernel.Lt(e, kernel.Const(size)), Then: []kernel.Stmt{s}}
		}
		out = append(out, s)
	}
	return out
}

// store writes row i's value (a row expression) to C with β.
func (b *blocksBuild) store(row kernel.Expr, val kernel.Expr) kernel.Stmt {
	off := kernel.Add(kernel.Mul(row, b.ldc), kernel.Ref("j"))
	switch beta := b.pb.Beta; {
	case beta == 1:
		val = kernel.Add(val, kernel.At("c", off))
	case beta != 0:
		val = kernel.Add(val, kernel.Mul(kernel.Float(beta), kernel.At("c", off)))
	}
	return kernel.If{Cond: kernel.Lt(kernel.Ref("j"), b.n), Then: []kernel.Stmt{kernel.Put("c", val, off)}}
}

// tileStart opens a tile: its columns, the first -a2 staging, and the
// accumulator zeroed (or C's rows that A leaves zero written).
func (b *blocksBuild) tileStart() []kernel.Stmt {
	p, bw := b.p, b.bw
	tb := []kernel.Stmt{
		kernel.DeclIndex("j0", b.colBase(b.tile)),
		kernel.DeclIndex("j", kernel.Add(kernel.Ref("j0"), kernel.Ref("tx"))),
	}
	if b.double { // the first phase's rows into buffer 0
		tb = append(tb, b.stage(b.steps[0].lo, b.steps[0].hi, 0)...)
	}
	if p.accumulate && b.first != blockSet {
		if b.tiles > 1 {
			tb = append(tb, kernel.Barrier{}) // the previous tile's last reads of csh
		}
		tb = append(tb, kernel.Comment{Text: "zero the accumulator"},
			kernel.For{Var: "e", From: kernel.Ref("tid"), To: kernel.Const(b.m * bw), Step: int64(b.threads), Body: []kernel.Stmt{
				kernel.Put("csh", kernel.Float(0), kernel.Div(kernel.Ref("e"), kernel.Const(bw)), kernel.Rem(kernel.Ref("e"), kernel.Const(bw))),
			}})
	} else if !p.accumulate && len(p.zeroRows) > 0 && b.pb.Beta != 1 {
		var zs []kernel.Stmt
		for _, i := range p.zeroRows {
			zs = append(zs, b.store(kernel.Const(i), kernel.Float(0)))
		}
		tb = append(tb, kernel.Comment{Text: "rows of A with no non-zero"},
			kernel.If{Cond: kernel.Eq(kernel.Ref("ty"), kernel.Const(0)), Then: zs})
	}
	return tb
}

// phases are the tile's phases in turn, each staging its rows of B
// where it has a staging of its own, then running its loops.
func (b *blocksBuild) phases() []kernel.Stmt {
	var tb []kernel.Stmt
	lo := b.p.lo
	si := 0 // the tile's next staging
	for pi, ph := range b.p.phases {
		if si < len(b.steps) && b.steps[si].phase == pi {
			var ss []kernel.Stmt
			ss, lo = b.staging(si)
			tb = append(tb, ss...)
			si++
		} else if pi > 0 {
			tb = append(tb, kernel.Barrier{})
		}
		rot := 0 // deals each loop's first block to the thread after the previous loop's last
		for li, l := range ph.loops {
			tb = append(tb, b.g.blocksLoop(b.p, l, fmt.Sprintf("%d_%d", pi, li), rot, lo, b.mode(pi), b.store)...)
			rot = (rot + l.count) % b.v.Split
		}
	}
	return tb
}

// staging makes step si's rows of B ready in bsh, and returns the row of
// B that bsh's row 0 stands for.
func (b *blocksBuild) staging(si int) ([]kernel.Stmt, int) {
	st := b.steps[si]
	var tb []kernel.Stmt
	switch {
	case b.double:
		// Step si is in buffer si mod 2; the barrier ends the previous
		// phase's reads of the other buffer, which the next step's
		// copies then fill.
		if si > 0 {
			tb = append(tb, kernel.Barrier{})
		}
		if si+1 < len(b.steps) {
			nx := b.steps[si+1]
			tb = append(tb, b.stage(nx.lo, nx.hi, (si+1)%2*b.staged)...)
			tb = append(tb, kernel.AsyncWait{Pending: 1})
		} else {
			tb = append(tb, kernel.AsyncWait{})
		}
		tb = append(tb, kernel.Barrier{})
		return tb, st.lo - si%2*b.staged
	case b.pipelined:
		tb = append(tb, kernel.Barrier{})
		tb = append(tb, b.put(st)...)
		tb = append(tb, kernel.Barrier{})
		if si+1 < len(b.steps) {
			tb = append(tb, b.load(b.steps[si+1], kernel.Ref("j0"))...)
		} else if b.tiles > 1 {
			tb = append(tb, kernel.If{Cond: kernel.Lt(plus(1, b.tile), kernel.Const(b.tiles)), Then: b.load(b.steps[0], b.colBase(plus(1, b.tile)))})
		}
	default:
		if st.phase > 0 || b.tiles > 1 {
			tb = append(tb, kernel.Barrier{})
		}
		tb = append(tb, b.stage(st.lo, st.hi, 0)...)
		if b.async {
			tb = append(tb, kernel.AsyncWait{})
		}
		tb = append(tb, kernel.Barrier{})
	}
	return tb, st.lo
}

// mode is how phase pi writes its rows.
func (b *blocksBuild) mode(pi int) blockMode {
	switch {
	case !b.p.accumulate:
		return blockStore
	case pi == 0:
		return b.first
	case pi == len(b.p.phases)-1:
		return b.last
	default:
		return blockAdd
	}
}

// tileEnd adds the accumulator into C where no phase did.
func (b *blocksBuild) tileEnd() []kernel.Stmt {
	if !b.p.accumulate || b.last == blockFinish {
		return nil
	}
	return []kernel.Stmt{kernel.Barrier{}, kernel.Comment{Text: "the accumulator to C"},
		kernel.For{Var: "i", From: kernel.Ref("ty"), To: kernel.Const(b.m), Step: int64(b.v.Split), Body: []kernel.Stmt{
			b.store(kernel.Ref("i"), kernel.At("csh", kernel.Ref("i"), kernel.Ref("tx"))),
		}}}
}

// blocksLoop is one loop of a plan: each y thread takes blocks t = (ty −
// rot) mod Split, + Split, …, reads the block's columns from bsh (staged
// from row lo of B) and writes or accumulates its rows; the values that
// differ between the loop's blocks, and its strays, are chosen by the
// block's variant vk (near.go).
func (g *gen) blocksLoop(p *blockPlan, l blockLoop, tag string, rot, lo int, mode blockMode, store func(row, val kernel.Expr) kernel.Stmt) []kernel.Stmt {
	v := g.v.(BlocksParams)
	c := p.classes[l.class]
	t := kernel.Ref("t")
	first := func(f affine) kernel.Expr {
		var e kernel.Expr = kernel.Const(f.base)
		if f.a != 0 && l.q < l.count {
			e = kernel.Add(e, kernel.Mul(kernel.Const(f.a), kernel.Div(t, kernel.Const(l.q))))
		}
		if f.b != 0 {
			tr := kernel.Expr(t)
			if l.q < l.count {
				tr = kernel.Rem(t, kernel.Const(l.q))
			}
			e = kernel.Add(e, kernel.Mul(kernel.Const(f.b), tr))
		}
		return e
	}
	col0 := first(affine{base: l.col.base - lo, a: l.col.a, b: l.col.b})
	inner := []kernel.Stmt{kernel.DeclIndex("r0", first(l.row)), kernel.DeclIndex("c0", col0)}
	if len(l.variants) > 1 {
		inner = append(inner, kernel.DeclIndex("vk", variantIndex(l.variant, len(l.variants))))
	}
	vals := make([]string, len(c.colOff))
	for j, off := range c.colOff {
		vals[j] = fmt.Sprintf("v%d", j)
		inner = append(inner, kernel.DeclReal(vals[j], kernel.At("bsh", plus(off, kernel.Ref("c0")), kernel.Ref("tx"))))
	}
	strayVal := map[int]string{} // a stray's column of A: its value's name
	for _, s := range l.strays {
		if _, ok := strayVal[s[1]]; !ok {
			strayVal[s[1]] = fmt.Sprintf("s%d", len(strayVal))
			inner = append(inner, kernel.DeclReal(strayVal[s[1]], kernel.At("bsh", kernel.Const(s[1]-lo), kernel.Ref("tx"))))
		}
	}
	for i, off := range c.rowOff {
		var sum kernel.Expr
		add := func(term kernel.Expr) {
			if sum == nil {
				sum = term
			} else {
				sum = kernel.Add(sum, term)
			}
		}
		for j := range c.colOff {
			e := i*len(c.colOff) + j
			if k := slices.Index(l.vary, e); k >= 0 {
				add(kernel.Mul(l.variantValue(k), kernel.Ref(vals[j])))
				continue
			}
			a := c.vals[e]
			if a == 0 {
				continue
			}
			add(kernel.Mul(kernel.Float(a), kernel.Ref(vals[j])))
		}
		for k, s := range l.strays {
			if s[0] == i {
				add(kernel.Mul(l.variantValue(len(l.vary)+k), kernel.Ref(strayVal[s[1]])))
			}
		}
		if sum == nil {
			sum = kernel.Float(0)
		}
		row := plus(off, kernel.Ref("r0"))
		switch mode {
		case blockStore:
			inner = append(inner, store(row, sum))
		case blockSet:
			inner = append(inner, kernel.Put("csh", sum, row, kernel.Ref("tx")))
		case blockAdd:
			inner = append(inner, kernel.Put("csh", kernel.Add(kernel.At("csh", row, kernel.Ref("tx")), sum), row, kernel.Ref("tx")))
		case blockFinish:
			inner = append(inner, store(row, kernel.Add(kernel.At("csh", row, kernel.Ref("tx")), sum)))
		}
	}
	var from kernel.Expr = kernel.Ref("ty")
	if rot != 0 {
		from = kernel.Rem(kernel.Add(kernel.Ref("ty"), kernel.Const(v.Split-rot)), kernel.Const(v.Split))
	}
	return []kernel.Stmt{
		kernel.Comment{Text: fmt.Sprintf("loop %s: %d blocks of %d×%d", tag, l.count, len(c.rowOff), len(c.colOff))},
		kernel.For{Var: "t", From: from, To: kernel.Const(l.count), Step: int64(v.Split), Body: inner},
	}
}

// blockMode is where a loop's sums go.
type blockMode int

const (
	blockStore  blockMode = iota // to C (one phase)
	blockSet                     // into the accumulator (first phase, every row)
	blockAdd                     // added into the accumulator
	blockFinish                  // the accumulator's value plus the sums to C (last phase, every row)
)
