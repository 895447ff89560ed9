package sparse

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/operator"
)

// WGMMA: the dense kernel in fp32 on Hopper's warpgroup tensor cores
// (kernel.WGMMA: wgmma.mma_async m64nNk8 TF32, sm_90a only), as 3×TF32
// like TMMA (each product A_lo·B_hi + A_hi·B_lo + A_hi·B_hi, small ones
// first, hi = tf32(x), lo = tf32(x − hi), both rounded to nearest). mma.sync's TF32 rate on sm_90 is
// half of what wgmma reaches, and 3×TF32 through it kept the p5–p6 tets
// well below the roof (see TMMA).
//
// wgmma multiplies a 64×8 A from registers by an 8×N B from shared
// memory, N up to 256, so the kernel computes Cᵀ: a warpgroup's 64 rows
// of the product are 64 columns of the panel, its N columns the m rows of
// the operator (padded to a multiple of 8, np ≤ 256; with -y the rows are
// split over that many blocks a tile, each np of them). α·A is the
// shared-memory operand, staged once a block as its hi and lo parts in
// the K-major layout without swizzling (kernel.WGMMA; element (r, c) at
// (c/4)·4np + 4r + c%4: LBO 16·np bytes, SBO 128), zero past m and k.
// Each thread keeps np/2 fp32 sums.
//
// A block of X warpgroups takes tiles of 64·X columns, Block (-t) of them
// in turn; their rows of B, Chunk (-c) at a time, are copied
// asynchronously (16-byte cp.async where ldb allows) into Stages (-a)
// buffers, Stages − 1 chunks ahead, as DMMA's -a forms do. For a chunk
// each thread reads its A fragments from the buffer, two pairs of floats
// a k-step (the rows of the product map to the panel's columns as g → 2g
// and g + 8 → 2g + 1, so that a fragment's two rows are adjacent
// columns), splits them into hi and lo, and its warpgroup issues 3 wgmma
// a k-step. A tile's chunks are unrolled; with -o each chunk's wait leaves
// its own group in flight while the next chunk is read, and with -w each
// warpgroup copies its own 64 columns and waits at a chunk at a barrier of
// its 128 threads only, not the block's. The sums of row g and g + 8 of
// the product are then adjacent columns of C, stored (and with β ≠ 0
// read) as pairs.
//
// Names: "wgmma/x4-c8-t16-a4[-y2][-o][-w][-b1]": warpgroups a block, rows
// of B a chunk, tiles a block, buffers of B, blocks a tile's rows are
// split over, chunks overlapped, warpgroups apart, blocks a
// multiprocessor the registers are capped for.
const WGMMA Family = "wgmma"

// WGMMAParams are the parameters of wgmma (see WGMMA):
// "wgmma/xX-cC-tT-aS[-yY][-o][-w][-bB]".
type WGMMAParams struct {
	Split  int // warpgroups a block (-x)
	Chunk  int // rows of B a chunk (-c)
	Block  int // tiles a block (-t)
	Stages int // buffers of B (-a)
	// RowGroups (-y) splits the rows of C over that many blocks a tile
	// of columns, each with its share of α·A; 0 or 1: one block.
	RowGroups int
	// Overlap (-o) lets a chunk's wgmma run on while the next chunk's
	// fragments are read and split: each chunk's wait leaves its own
	// group in flight.
	Overlap bool
	// Apart (-w) has each warpgroup copy its own columns of B and wait at
	// a chunk only for its own threads (kernel.Barrier.Threads), not for
	// the block's.
	Apart bool
	// Occupancy (-b) is the blocks per multiprocessor the CUDA compiler
	// must allow (capping registers); 0 leaves it free.
	Occupancy int
}

// Family is the strategy v belongs to.
func (v WGMMAParams) Family() Family { return WGMMA }

// String is v's name.
func (v WGMMAParams) String() string { return v.Name() }

// wgmmaDefault is the variant a bare "wgmma" names.
var wgmmaDefault = WGMMAParams{Split: 2, Chunk: 32, Block: dmmaTiles, Stages: 3}

// Name is e.g. "wgmma/x4-c8-t16-a4-o-w".
func (v WGMMAParams) Name() string {
	s := fmt.Sprintf("%s/x%d-c%d-t%d-a%d", WGMMA, v.Split, v.Chunk, v.Block, v.Stages)
	if v.RowGroups > 0 {
		s += fmt.Sprintf("-y%d", v.RowGroups)
	}
	if v.Overlap {
		s += "-o"
	}
	if v.Apart {
		s += "-w"
	}
	if v.Occupancy > 0 {
		s += fmt.Sprintf("-b%d", v.Occupancy)
	}
	return s
}

// parseWGMMA reads "wgmma/xX-cC-tT-aS[-yY][-o][-w][-bB]".
func parseWGMMA(def Variant, name string, opts []string) (Variant, error) {
	v := def.(WGMMAParams)
	has, err := readOptions(name, opts, "wgmma/x4-c8-t16-a4-o-w: warpgroups a block, rows of B a chunk, tiles a block, buffers of B, then -yY rows split over Y blocks, -o chunks overlapped, -w warpgroups apart, -bB blocks a multiprocessor",
		need("x", &v.Split), need("c", &v.Chunk), need("t", &v.Block), need("a", &v.Stages),
		num("y", &v.RowGroups), flag("o", &v.Overlap), flag("w", &v.Apart), num("b", &v.Occupancy))
	if err != nil {
		return nil, err
	}
	for _, key := range []string{"x", "c", "t", "a", "y", "b"} {
		if n := map[string]int{"x": v.Split, "c": v.Chunk, "t": v.Block, "a": v.Stages, "y": v.RowGroups, "b": v.Occupancy}[key]; has[key] && n < 1 {
			return nil, fmt.Errorf("variant %q: each number must be ≥ 1", name)
		}
	}
	return v, nil
}

func (v WGMMAParams) launch() launchShape { return launchShape{v.Block, v.Split, 0, v.Occupancy} }

func (v WGMMAParams) build(g *gen) error {
	g.wgmmaKernel()
	return nil
}

func (v WGMMAParams) sharedBytes(pb Problem) int { return v.wgmmaShared(pb) }

func (v WGMMAParams) valid() error {
	switch {
	case v.Split < 1 || v.Split > 8:
		return fmt.Errorf("variant %s: warpgroups a block (-x) must be 1..8", v.Name())
	case v.Chunk < 8 || v.Chunk%8 != 0 || v.Chunk > 128:
		return fmt.Errorf("variant %s: chunk (-c) must be a multiple of 8, at most 128", v.Name())
	case v.Block < 1 || v.Block > dmmaMaxBlockTiles:
		return fmt.Errorf("variant %s: tiles a block (-t) must be 1..4096", v.Name())
	case v.Stages < 2 || v.Stages > dmmaMaxStages:
		return fmt.Errorf("variant %s: buffers of B (-a) must be 2..%d", v.Name(), dmmaMaxStages)
	case v.RowGroups < 0 || v.RowGroups > 16:
		return fmt.Errorf("variant %s: groups of rows (-y) must be 1..16", v.Name())
	case v.Occupancy < 0 || v.Occupancy > 8:
		return fmt.Errorf("variant %s: blocks a multiprocessor (-b) must be 1..8", v.Name())
	}
	return nil
}

// wgmmaLayout is the shape of a wgmma kernel's block and shared arrays.
type wgmmaLayout struct {
	groups  int // blocks a tile's rows are split over
	np      int // rows of α·A a block holds: ⌈m / groups⌉ rounded up to 8 (the wgmma's N)
	kc      int // columns of α·A staged: k rounded up to whole chunks
	chunks  int // ⌈k / Chunk⌉
	steps   int // k-steps a chunk: Chunk / 8
	cols    int // columns a tile: 64 a warpgroup
	stride  int // row stride of a buffer of B: cols padded (see tmmaPad)
	threads int
	aLen    int // elements of ash: hi and lo parts, np·kc each
	bLen    int // elements of one buffer of B
}

func (v WGMMAParams) wgmmaLayout(pb Problem) wgmmaLayout {
	l := wgmmaLayout{groups: max(v.RowGroups, 1), steps: v.Chunk / 8, cols: 64 * v.Split}
	l.np = ((pb.Op.Rows+l.groups-1)/l.groups + 7) / 8 * 8
	l.chunks = (pb.Op.Cols + v.Chunk - 1) / max(v.Chunk, 1)
	l.kc = l.chunks * v.Chunk
	l.stride = l.cols + tmmaPad(l.cols)
	l.threads = 128 * v.Split
	l.aLen = 2 * l.np * l.kc
	l.bLen = v.Chunk * l.stride
	return l
}

// wgmmaShared is the shared memory of a wgmma kernel: α·A's parts and
// Stages buffers of B.
func (v WGMMAParams) wgmmaShared(pb Problem) int {
	l := v.wgmmaLayout(pb)
	return (l.aLen + v.Stages*l.bLen) * 4
}

// check reports why v does not fit the problem.
func (v WGMMAParams) check(pb Problem) error {
	if pb.DType != kernel.F32 {
		return fmt.Errorf("variant %s: fp32 only (3×TF32 on wgmma; in fp64 use dmma/…)", v.Name())
	}
	l := v.wgmmaLayout(pb)
	switch {
	case l.np > kernel.WGMMAMaxN:
		return fmt.Errorf("variant %s: %d rows a block, more than a wgmma's %d (split them with -y)", v.Name(), l.np, kernel.WGMMAMaxN)
	case l.threads > kernel.MaxThreads:
		return fmt.Errorf("variant %s needs %d threads per block (at most %d)", v.Name(), l.threads, kernel.MaxThreads)
	case 16*l.np >= 1<<18:
		return fmt.Errorf("variant %s: α·A's stride %d bytes is past a descriptor's", v.Name(), 16*l.np)
	case v.wgmmaRegisters(l) > min(255, 65536/l.threads):
		return fmt.Errorf("variant %s needs about %d registers a thread, more than %d threads allow", v.Name(), v.wgmmaRegisters(l), l.threads)
	}
	if s := v.wgmmaShared(pb); s > dmmaMaxShared {
		return fmt.Errorf("variant %s needs %d bytes of shared memory (limit %d; split the rows with -y)", v.Name(), s, dmmaMaxShared)
	}
	return nil
}

// wgmmaRegisters estimates the registers a thread of v holds: its sums,
// the TF32 parts of a chunk's fragments (two chunks' with Overlap) and
// the rest (dmmaRegsBase).
func (v WGMMAParams) wgmmaRegisters(l wgmmaLayout) int {
	frags := 8 * l.steps
	if v.Overlap {
		frags *= 2
	}
	return l.np/2 + frags + dmmaRegsBase
}

// wgmmaStages is the buffers of B every candidate that holds more also
// gets a twin with.
const wgmmaStages = 4

// wgmmaMinEntries is the least m·k for which WGMMACandidates offers the
// family (as dmma's floor).
const wgmmaMinEntries = dmmaMinEntries

// WGMMACandidates lists the wgmma variants worth trying for the problem on
// a CUDA device of compute capability arch ×10: fp32, sm_90 only (sm_90a's
// wgmma), the dense operators DMMACandidates takes; four and two
// warpgroups a block, chunks of 8, 16 and 24 rows of B, chunks
// overlapped, warpgroups apart (faster on some tets, slower on none beyond
// the spread between runs), as many buffers of B (up to six) as the shared
// memory holds beside α·A and, where that is more, four, 16 tiles a block,
// the rows split over the fewest blocks whose share of α·A fits. Each of
// these shapes won somewhere among the p5–p6 tets
// (docs/rationale.md#wgmma-shapes).
func WGMMACandidates(pb Problem, arch int, fill Fill) []Variant {
	if pb.DType != kernel.F32 || arch != 90 {
		return nil
	}
	st := operator.Analyze(pb.Op)
	if !mmaPays(pb.Op, st) || pb.Op.Rows*pb.Op.Cols < wgmmaMinEntries {
		return nil
	}
	var out []Variant
	for _, x := range []int{4, 2} {
		for _, c := range []int{8, 16, 24} {
		groups:
			for g := 1; g <= 4; g++ {
				for s := dmmaMaxStages; s >= 3; s-- {
					v := WGMMAParams{Split: x, Chunk: c, Block: dmmaTiles, Stages: s, Overlap: true, Apart: true}
					if g > 1 {
						v.RowGroups = g
					}
					if fill.known() { // one wave (see MMAParams.fillTiles)
						l := v.wgmmaLayout(pb)
						v.Block = waveTiles(fill.Columns, l.cols, l.groups, fill.Units)
					}
					if pb.Check(v) != nil {
						continue
					}
					out = append(out, v)
					if s > wgmmaStages {
						// Deep prefetch did not always pay:
						// p6/tet/m3 x4-c16 ran at 81–83 % of
						// the roof with four buffers, 75 with
						// six.
						v.Stages = wgmmaStages
						out = append(out, v)
					}
					break groups
				}
			}
		}
	}
	return out
}

// wgmmaBuilder holds what the pieces of a wgmma kernel share.
type wgmmaBuilder struct {
	g *gen
	v WGMMAParams
	l wgmmaLayout
}

func (b *wgmmaBuilder) acc(e int) string { return fmt.Sprintf("acc%d", e) }

func (b *wgmmaBuilder) accs() []string {
	out := make([]string, b.l.np/2)
	for e := range out {
		out[e] = b.acc(e)
	}
	return out
}

// stageA stores α·A's hi and lo parts into ash (see WGMMA): element e of
// part p is column (e/4np)·4 + e%4 and row e%4np / 4 of the block's rows.
func (b *wgmmaBuilder) stageA() kernel.Stmt {
	l, m, k := b.l, b.g.m, b.g.k
	half := l.np * l.kc
	e := kernel.Ref("e")
	in := kernel.Rem(e, kernel.Const(half))
	row := kernel.Div(kernel.Rem(in, kernel.Const(4*l.np)), kernel.Const(4))
	if l.groups > 1 {
		row = kernel.Add(kernel.Ref("row0"), row)
	}
	col := kernel.Add(kernel.Mul(kernel.Div(in, kernel.Const(4*l.np)), kernel.Const(4)), kernel.Rem(in, kernel.Const(4)))
	cond := kernel.Lt(kernel.Ref("acol"), kernel.Const(k))
	if l.groups*l.np > m {
		cond = kernel.And(kernel.Lt(kernel.Ref("arow"), kernel.Const(m)), cond)
	}
	body := []kernel.Stmt{
		dmmaI32("arow", row), dmmaI32("acol", col),
		dmmaReal("aval", kernel.Select{Cond: cond, Then: kernel.At("a", kernel.Add(kernel.Mul(kernel.Ref("arow"), kernel.Const(k)), kernel.Ref("acol"))), Else: kernel.Float(0)}),
		dmmaReal("ahi", tf32Of(kernel.Ref("aval"))),
		kernel.Put("ash", kernel.Select{Cond: kernel.Lt(e, kernel.Const(half)), Then: kernel.Ref("ahi"), Else: tf32Of(kernel.Sub(kernel.Ref("aval"), kernel.Ref("ahi")))}, e),
	}
	return kernel.For{Var: "e", From: kernel.Ref("tid"), To: kernel.Const(l.aLen), Step: int64(l.threads), Body: body}
}

// copyB copies chunk q (an expression) of the block's sequence into its
// buffer of bsh: rows (q % chunks)·Chunk… of the block's tile q / chunks (tileCol), zero
// past k and n; four elements a copy where ldb is baked in and a multiple
// of 4 (16-byte copies: a quarter of the instructions, which the
// schedulers issue beside the wgmma), a vector at the end of the
// columns cut short.
func (b *wgmmaBuilder) copyB(q kernel.Expr) []kernel.Stmt {
	v, l := b.v, b.l
	n, ldb := b.g.nExpr(), b.g.ldbExpr()
	w := 1
	if b.g.pb.LDB > 0 && b.g.pb.LDB%4 == 0 {
		w = 4
	}
	// With Apart each warpgroup copies its own 64 columns: its threads
	// (wtid) and column offset (wcol).
	span, threads, tid := l.cols, l.threads, kernel.Expr(kernel.Ref("tid"))
	if v.Apart {
		span, threads, tid = 64, 128, kernel.Ref("wtid")
	}
	cols := span / w // copies a row
	decl := dmmaIdx
	if offset32(l.kc, b.g.pb.LDB) {
		decl = dmmaI32
	}
	buf := kernel.Mul(kernel.Rem(q, kernel.Const(v.Stages)), kernel.Const(l.bLen))
	row0 := kernel.Mul(kernel.Rem(q, kernel.Const(l.chunks)), kernel.Const(v.Chunk))
	col0 := tileCol(kernel.Div(q, kernel.Const(l.chunks)), l.cols)
	if v.Apart {
		buf = kernel.Add(buf, kernel.Ref("wcol"))
		col0 = kernel.Add(col0, kernel.Ref("wcol"))
	}
	total := v.Chunk * cols
	var out []kernel.Stmt
	for r := 0; r < (total+threads-1)/threads; r++ {
		e := plus(r*threads, tid)
		cp := kernel.CopyAsync{Dst: "bsh", DstIndex: []kernel.Expr{kernel.Add(buf, kernel.Add(kernel.Mul(kernel.Div(e, kernel.Const(cols)), kernel.Const(l.stride)), kernel.Mul(kernel.Rem(e, kernel.Const(cols)), kernel.Const(w))))},
			Src: "b", SrcIndex: kernel.Add(kernel.Mul(kernel.Ref("brow"), ldb), kernel.Ref("bcol")),
			Cond: kernel.And(kernel.Lt(kernel.Ref("brow"), kernel.Const(b.g.k)), kernel.Lt(kernel.Ref("bcol"), n))}
		if w > 1 {
			cp.Width = w
			if b.g.pb.N == 0 || b.g.pb.N%w != 0 {
				left := kernel.Sub(n, kernel.Ref("bcol"))
				cp.Valid = kernel.Select{Cond: kernel.Lt(left, kernel.Const(w)), Then: left, Else: kernel.Const(w)}
			}
		}
		st := dmmaScope(
			decl("brow", kernel.Add(row0, kernel.Div(e, kernel.Const(cols)))),
			decl("bcol", kernel.Add(col0, kernel.Mul(kernel.Rem(e, kernel.Const(cols)), kernel.Const(w)))),
			cp,
		)
		if (r+1)*threads > total {
			st = kernel.If{Cond: kernel.Lt(e, kernel.Const(total)), Then: []kernel.Stmt{st}}
		}
		out = append(out, st)
	}
	return out
}

// chunk is the work of chunk kc of a tile, its fragments at bbase: each
// k-step's A fragments read as two pairs and split, one fence, three wgmma
// a k-step, a commit, and a wait that leaves pending groups in flight.
func (b *wgmmaBuilder) chunk(kc, pending int) []kernel.Stmt {
	v, l := b.v, b.l
	var out, mmas []kernel.Stmt
	half := l.np * l.kc
	for s := 0; s < l.steps; s++ {
		name := func(part string, x int) string { return fmt.Sprintf("f%s%d_%d", part, s, x) }
		for h := 0; h < 2; h++ { // rows tig and tig + 4 of the k-step
			at := kernel.Add(kernel.Ref("bbase"), kernel.Const((8*s+4*h)*l.stride))
			out = append(out, dmmaReal(name("", 2*h), nil), dmmaReal(name("", 2*h+1), nil),
				kernel.VecLoad{Dst: []string{name("", 2*h), name("", 2*h+1)}, Buf: "bsh", Index: at})
		}
		// hi and lo rounded to the nearest TF32 (the tensor cores
		// would truncate): the rest lo·lo that 3×TF32 drops and lo's
		// own rounding are each under 2⁻²² of the product, a quarter of
		// what truncated parts leave (docs/rationale.md#tf32-split).
		for x := 0; x < 4; x++ {
			out = append(out, dmmaReal(name("h", x), tf32Of(kernel.Ref(name("", x)))),
				dmmaReal(name("l", x), tf32Of(kernel.Sub(kernel.Ref(name("", x)), kernel.Ref(name("h", x))))))
		}
		// Fragment element x: (row g + 8(x%2), k tig + 4(x/2)): the
		// pairs read are (x = 0, 1) and (2, 3).
		frag := func(part string) []kernel.Expr {
			return []kernel.Expr{kernel.Ref(name(part, 0)), kernel.Ref(name(part, 1)), kernel.Ref(name(part, 2)), kernel.Ref(name(part, 3))}
		}
		// The k-step's first element: k = 8·step, at (k/4)·4np.
		step := kernel.Const((kc*v.Chunk + 8*s) * l.np)
		for _, p := range []struct {
			a  string
			lo bool
		}{{"l", false}, {"h", true}, {"h", false}} {
			at := step
			if p.lo {
				at = kernel.Const((kc*v.Chunk+8*s)*l.np + half)
			}
			m := kernel.WGMMA{N: l.np, D: b.accs(), A: frag(p.a), B: "ash", BAt: at, LBO: 16 * l.np, SBO: 128}
			if len(mmas) == 0 && kc == 0 {
				// A tile's first wgmma starts its sums.
				m.Accumulate = kernel.Const(0)
			}
			mmas = append(mmas, m)
		}
	}
	out = append(out, kernel.WGMMASync{Kind: kernel.WGMMAFence})
	out = append(out, mmas...)
	return append(out, kernel.WGMMASync{Kind: kernel.WGMMACommit}, kernel.WGMMASync{Kind: kernel.WGMMAWait, Pending: pending})
}

// iteration is chunk kc of the block's tile t (chunk q = t·chunks + kc of
// its sequence): wait for its copies, the barrier, the copies of chunk
// q + S − 1, and the chunk's wgmma, pending groups left in flight.
func (b *wgmmaBuilder) iteration(kc, pending int) kernel.Stmt {
	l, S := b.l, b.v.Stages
	q := plus(kc, kernel.Ref("q0"))
	ss := []kernel.Stmt{
		dmmaI32("bbase", kernel.Add(kernel.Mul(kernel.Cast{To: kernel.Int32, X: kernel.Rem(q, kernel.Const(S))}, kernel.Const(l.bLen)), kernel.Ref("boff"))),
		kernel.AsyncWait{Pending: S - 2},
		b.barrier(),
		dmmaIdx("q1", plus(S-1, q)),
		kernel.If{Cond: kernel.Lt(kernel.Ref("q1"), kernel.Ref("total")), Then: b.copyB(kernel.Ref("q1"))},
		kernel.AsyncCommit{},
	}
	return dmmaScope(append(ss, b.chunk(kc, pending)...)...)
}

// barrier is the barrier of a chunk: the block's, or with Apart the
// warpgroup's (each reads only the columns of B it copied).
func (b *wgmmaBuilder) barrier() kernel.Stmt {
	if b.v.Apart {
		return kernel.Barrier{Threads: 128}
	}
	return kernel.Barrier{}
}

// epilogue stores the sums of the tile whose first column is j0: element
// 4j + e of a thread is row 8j + 2·tig + e%2 of the block's rows and
// column colw + 2·grp + e/2 of the tile, colw the warp's first; pairs of
// columns go as one vector where ldc is baked in and even. Rows past m
// and columns past n are left alone. With β ≠ 0 eight pairs are loaded
// before they are stored.
func (b *wgmmaBuilder) epilogue(j0 kernel.Expr) []kernel.Stmt {
	l, pb := b.l, b.g.pb
	n, ldc := b.g.nExpr(), b.g.ldcExpr()
	vec := pb.LDC > 0 && pb.LDC%2 == 0
	decl := dmmaIdx
	if offset32(l.groups*l.np, pb.LDC) {
		decl = dmmaI32
	}
	out := []kernel.Stmt{decl("ccol", kernel.Add(j0, kernel.Add(kernel.Ref("colw"), kernel.Mul(kernel.Ref("grp"), kernel.Const(2)))))}
	type pair struct{ j, e int }
	var pairs []pair
	for j := 0; j < l.np/8; j++ {
		for e := 0; e < 2; e++ {
			pairs = append(pairs, pair{j, e})
		}
	}
	withBeta := func(x, old kernel.Expr) kernel.Expr {
		switch {
		case old == nil || pb.Beta == 0:
			return x
		case pb.Beta == 1:
			return kernel.Add(x, old)
		}
		return kernel.Add(x, kernel.Mul(kernel.Float(pb.Beta), old))
	}
	const per = 8
	for g0 := 0; g0 < len(pairs); g0 += per {
		var loads, stores []kernel.Stmt
		for q, pr := range pairs[g0:min(g0+per, len(pairs))] {
			sfx := strconv.Itoa(q)
			row := plus(8*pr.j+pr.e, kernel.Ref("crow"))
			vals := [2]kernel.Expr{kernel.Ref(b.acc(4*pr.j + pr.e)), kernel.Ref(b.acc(4*pr.j + 2 + pr.e))}
			cat := kernel.Ref("cat" + sfx)
			loads = append(loads, decl("cr"+sfx, row), decl("cat"+sfx, kernel.Add(kernel.Mul(kernel.Ref("cr"+sfx), ldc), kernel.Ref("ccol"))))
			var old [2]kernel.Expr
			if pb.Beta != 0 {
				c0, c1 := "cv"+sfx+"_0", "cv"+sfx+"_1"
				loads = append(loads, dmmaReal(c0, kernel.Float(0)), dmmaReal(c1, kernel.Float(0)))
				var ld []kernel.Stmt
				if vec {
					ld = []kernel.Stmt{kernel.If{Cond: kernel.Lt(plus(1, kernel.Ref("ccol")), n), Then: []kernel.Stmt{kernel.VecLoad{Dst: []string{c0, c1}, Buf: "c", Index: cat}}}}
				} else {
					for x, cv := range []string{c0, c1} {
						ld = append(ld, kernel.If{Cond: kernel.Lt(plus(x, kernel.Ref("ccol")), n), Then: []kernel.Stmt{kernel.Assign{Name: cv, Value: kernel.At("c", plus(x, cat))}}})
					}
				}
				loads = append(loads, b.rowGuard(row, ld)...)
				old = [2]kernel.Expr{kernel.Ref(c0), kernel.Ref(c1)}
			}
			oldAt := func(at kernel.Expr) kernel.Expr {
				if pb.Beta == 0 {
					return nil
				}
				return kernel.At("c", at)
			}
			scalar := func(x int) kernel.Stmt {
				return kernel.If{Cond: kernel.Lt(plus(x, kernel.Ref("ccol")), n), Then: []kernel.Stmt{kernel.Put("c", withBeta(vals[x], old[x]), plus(x, cat))}}
			}
			st := []kernel.Stmt{scalar(0), scalar(1)}
			if vec {
				st = []kernel.Stmt{
					kernel.If{Cond: kernel.Lt(plus(1, kernel.Ref("ccol")), n), Then: []kernel.Stmt{kernel.VecStore{Buf: "c", Index: cat, Src: []kernel.Expr{withBeta(vals[0], old[0]), withBeta(vals[1], old[1])}}}},
					// The last column alone: its old value was not
					// loaded with a pair.
					kernel.If{Cond: kernel.Eq(plus(1, kernel.Ref("ccol")), n), Then: []kernel.Stmt{kernel.Put("c", withBeta(vals[0], oldAt(cat)), cat)}},
				}
			}
			stores = append(stores, b.rowGuard(row, st)...)
		}
		out = append(out, dmmaScope(append(loads, stores...)...))
	}
	return []kernel.Stmt{dmmaScope(out...)}
}

// rowGuard keeps rows past m out where the blocks' rows pass it.
func (b *wgmmaBuilder) rowGuard(row kernel.Expr, ss []kernel.Stmt) []kernel.Stmt {
	if b.l.groups*b.l.np > b.g.m {
		return []kernel.Stmt{kernel.If{Cond: kernel.Lt(row, kernel.Const(b.g.m)), Then: ss}}
	}
	return ss
}

// wgmmaKernel builds the warpgroup tensor-core kernel (see WGMMA).
func (g *gen) wgmmaKernel() {
	k, v, pb := g.kern, g.v.(WGMMAParams), g.pb
	b := &wgmmaBuilder{g: g, v: v, l: v.wgmmaLayout(pb)}
	l := b.l
	T, S := l.threads, v.Stages
	k.Launch.Block = [3]int{T, 1, 1}
	k.Launch.Grid = [3]kernel.Axis{kernel.Over(Columns, l.cols*v.Block)}
	if l.groups > 1 {
		k.Launch.Grid[0].Fixed = l.groups
	}
	k.Launch.SharedBytes = v.wgmmaShared(pb)
	k.Hints = kernel.Hints{MinArch: 90, MinBlocksPerUnit: v.Occupancy}
	k.Params = append([]kernel.Param{denseParam}, k.Params...)
	k.Doc = strings.Replace(k.Doc, fmt.Sprintf("one thread per %d column(s)", v.launch().width),
		fmt.Sprintf("tiles of %d columns on Hopper's TF32 tensor cores as 3xTF32 (wgmma m64n%dk8, the product transposed), α·A staged whole in shared memory for %d tiles a block, B copied asynchronously into %d buffers", l.cols, l.np, v.Block, S), 1)
	k.Shared = []kernel.Shared{{Name: "ash", Type: kernel.Real, Dims: []int{l.aLen}}, {Name: "bsh", Type: kernel.Real, Dims: []int{S * l.bLen}}}
	body := []kernel.Stmt{
		dmmaI32("tid", kernel.LocalX),
		dmmaI32("lane", kernel.Rem(kernel.Ref("tid"), kernel.Const(32))),
		dmmaI32("grp", kernel.Div(kernel.Ref("lane"), kernel.Const(4))),
		dmmaI32("tig", kernel.Rem(kernel.Ref("lane"), kernel.Const(4))),
		// The warp's first column of a tile: 16 a warp, 64 a warpgroup.
		dmmaI32("colw", kernel.Mul(kernel.Div(kernel.Ref("tid"), kernel.Const(32)), kernel.Const(16))),
		// Where the thread's pairs of a chunk start in its buffer.
		dmmaI32("boff", kernel.Add(kernel.Mul(kernel.Ref("tig"), kernel.Const(l.stride)), kernel.Add(kernel.Ref("colw"), kernel.Mul(kernel.Ref("grp"), kernel.Const(2))))),
		dmmaI32("crow", kernel.Mul(kernel.Ref("tig"), kernel.Const(2))),
		dmmaI32("wtid", kernel.Rem(kernel.Ref("tid"), kernel.Const(128))),
		dmmaI32("wcol", kernel.Mul(kernel.Div(kernel.Ref("tid"), kernel.Const(128)), kernel.Const(64))),
	}
	colBlock := kernel.Expr(kernel.GroupX)
	if l.groups > 1 {
		body = append(body, dmmaI32("row0", kernel.Mul(kernel.Cast{To: kernel.Int32, X: kernel.Rem(kernel.GroupX, kernel.Const(l.groups))}, kernel.Const(l.np))))
		body = append(body, kernel.Assign{Name: "crow", Value: kernel.Add(kernel.Ref("crow"), kernel.Ref("row0"))})
		colBlock = kernel.Div(kernel.GroupX, kernel.Const(l.groups))
	}
	for _, a := range b.accs() {
		body = append(body, dmmaReal(a, kernel.Float(0)))
	}
	body = append(body, tileRun(g, colBlock, l.cols, v.Block, !v.Apart)...)
	body = append(body,
		dmmaIdx("total", kernel.Mul(kernel.Ref("tiles"), kernel.Const(l.chunks))),
		kernel.Comment{Text: fmt.Sprintf("the tiles' rows of B, %d at a time, copied asynchronously into %d buffers, %d chunks ahead", v.Chunk, S, S-1)},
	)
	for q := 0; q < S-1; q++ {
		body = append(body, kernel.If{Cond: kernel.Lt(kernel.Const(q), kernel.Ref("total")), Then: b.copyB(kernel.Const(q))}, kernel.AsyncCommit{})
	}
	body = append(body,
		kernel.Comment{Text: fmt.Sprintf("alpha*A's TF32 hi and lo parts, %d×%d, into shared memory once, K-major in core matrices, while they fly", g.m, g.k)},
		b.stageA(),
		kernel.WGMMASync{Kind: kernel.ProxyFence},
	)
	if v.Apart {
		// α·A is the block's: one barrier of all before the chunks'
		// barriers of warpgroups.
		body = append(body, kernel.Barrier{})
	}
	// A tile's chunks are unrolled, so that each chunk's fragments are
	// registers of their own: with Overlap a chunk's wgmma run on while
	// the next one's fragments are read and split (its wait leaves one
	// group in flight), and the only wait for all is the tile's end,
	// before its epilogue. (A loop over chunks whose wgmma stay in
	// flight across its back edge made ptxas wait there.)
	pending := 0
	if v.Overlap {
		pending = 1
	}
	tile := []kernel.Stmt{dmmaIdx("q0", kernel.Mul(kernel.Ref("t"), kernel.Const(l.chunks)))}
	for kc := 0; kc < l.chunks; kc++ {
		tile = append(tile, b.iteration(kc, pending))
	}
	tile = append(tile, kernel.WGMMASync{Kind: kernel.WGMMAWait})
	tile = append(tile, b.epilogue(tileCol(kernel.Ref("t"), l.cols))...)
	body = append(body, kernel.For{Var: "t", From: kernel.Const(0), To: kernel.Ref("tiles"), Body: tile})
	k.Body = body
	k.Meta["tile"] = fmt.Sprintf("%d columns, %d warpgroups", l.cols, v.Split)
	k.Meta["mma"] = fmt.Sprintf("wgmma m64n%dk8", l.np)
	k.Meta["mma_type"] = "tf32"
	k.Meta["a_resident"] = true
}
