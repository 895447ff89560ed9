package sparse

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/operator"
)

// DMMA: the blocked dense kernel (see Dense) on fp64 tensor cores: every
// product is a warp-level mma.sync (kernel.MMA) of one of the shapes
// kernel.MMAShapes lists (m8n8k4 from sm_80, the m16n8 ones from sm_90,
// which run at twice m8n8k4's rate there), so it runs on CUDA only, in fp64
// only.
//
// A block of W = Wm × Wn warps computes all m rows (padded to Wm·Mt·M) of
// tiles of Wn·Nt·8 adjacent columns. Warp (wr, wc) keeps Mt × Nt
// accumulator fragments (M×8 each): rows (wr·Mt + i)·M + …, columns j0 +
// (wc·Nt + j)·8 + …, i < Mt, j < Nt. α·A is kept in shared memory in the
// A-fragment order (ash: for each k-step s and band of M rows, the 32
// lanes' elements side by side, so that a fragment is one conflict-free
// read of consecutive addresses; zero past m and past k), the rows of B
// row by row with a padded stride (bsh: stride ≡ 4 mod 16 doubles, so
// that a B fragment's 4 rows by 8 columns hit 16 distinct bank pairs a
// half-warp; zero past k and past n). B goes through two buffers: every
// thread loads its share of the next chunk (Chunk rows) from global memory
// into registers before the warps compute on the current one, and stores
// it into the other buffer at the start of the next step (one barrier a
// chunk). A step is, for each k-step of the chunk, Mt A fragments and Nt B
// fragments read from shared memory and Mt·Nt mma. Rows past m and columns
// past n are never stored; C is read only when β ≠ 0, with two-element
// vector accesses where ldc is baked in and even.
//
// Two ways with α·A:
//
//   - streamed (Block = 0, "dmma/m16n8k8-r2-w4-x2-c8"): a block takes one
//     tile, and α·A goes through shared memory chunk by chunk beside B
//     (two buffers, at most 48 KiB in all). This form is bound by
//     latency: each chunk waits for its loads.
//   - resident (Block = T tiles, "…-c28-t16"): α·A is staged whole once,
//     and the block takes T tiles one after another, the chunks of B
//     running on from one tile into the next (the loads of a tile's first
//     chunk overlap the last chunk of the one before), each tile's sums
//     stored when its last chunk is done. Deep chunks (28 rows of B) give
//     the loads a step's worth of mma to hide behind. α·A and B take more
//     than 48 KiB: dynamic shared memory, up to dmmaSharedLimit.
//
// A third way, for operators whose α·A a warp's registers can hold
// (RegA, "-k", with B copied in stages): each warp loads its own α·A
// fragments of every k-step into registers once, the block takes one
// chunk of B a tile holding all of k, and every k-step is unrolled, so
// that the shared memory holds B alone and the k-steps read no α·A from
// it.
//
// The loop over a chunk's k-steps is unrolled only as far as the registers
// allow (see dmmaBuilder.unroll), and offsets into B and C are 32-bit where
// the baked leading dimensions allow. MMAParams' fields: MMA the shape,
// Rows Mt, Width Nt, Split Wn, Chunk the rows of B a chunk, Block T (0:
// streamed), Occupancy the blocks a multiprocessor its registers are
// capped for (-bN; by default two where the block has at most 256 threads
// and two fit in shared memory). docs/performance.md has where it stands
// against cuBLAS.
const DMMA Family = "dmma"

// dmmaMaxSums bounds the accumulator elements a thread keeps
// (Mt·Nt·M·8/32 doubles, two registers each).
const dmmaMaxSums = 64

// dmmaMaxCandidateThreads bounds the block of an offered candidate: 512
// threads leave 128 registers a thread.
const dmmaMaxCandidateThreads = 512

// dmmaPad is the padding of bsh's rows, in elements (see DMMA).
const dmmaPad = 4

// dmmaMaxShared is the shared memory a resident variant may take: the
// most a block of an sm_90 device opts in to (227 KiB).
const dmmaMaxShared = 227 << 10

// dmmaSharedLimit is the shared memory a block may opt in to on a CUDA
// device of compute capability arch ×10: 227 KiB on sm_90 and later,
// 163 KiB on sm_80 and sm_87, 99 KiB on the others (sm_86, sm_89), as
// CUDA's programming guide gives them.
func dmmaSharedLimit(arch int) int {
	switch {
	case arch >= 90:
		return 227 << 10
	case arch == 80 || arch == 87:
		return 163 << 10
	}
	return 99 << 10
}

// dmmaTiles is the tiles a block of an offered resident variant takes:
// α·A staged once for 16 tiles, and enough blocks (n/16 tiles) that the
// last wave of them leaves little idle.
const dmmaTiles = 16

// MMAParams are the parameters of dmma and tmma (Kind), the kernels on
// mma.sync tensor cores (see DMMA and TMMA):
// "dmma/SHAPE-rR-wW-xX-cC[-tT][-aS|-pS][-s][-h][-yY][-g][-bB][-k]".
type MMAParams struct {
	Kind Family // DMMA or TMMA
	// MMA is the tensor-core shape, e.g. "m8n8k4".
	MMA   string
	Rows  int // fragments a warp along the rows (Mt, -r)
	Width int // fragments a warp along the columns (Nt, -w)
	Split int // warps along the columns (-x)
	Chunk int // rows of B a chunk (-c)
	// Block (-t) is the tiles a block takes with α·A resident; 0 streams
	// α·A chunk by chunk, one tile a block.
	Block int
	// Stages (with α·A resident, -a) is the buffers of B in shared
	// memory, filled by asynchronous copies (kernel.CopyAsync, cp.async)
	// that many chunks ahead; 0 stages B through registers into two
	// buffers.
	Stages int
	// StreamA (with Stages, -p) copies α·A chunk by chunk beside B into
	// the Stages buffers instead of keeping it resident: for operators
	// whose α·A would fill the shared memory.
	StreamA bool
	// SplitA (tmma only, -s) keeps α·A in shared memory as it is and
	// splits its fragments into TF32 hi and lo parts as they are read,
	// instead of staging both parts: half the shared memory (see TMMA).
	SplitA bool
	// StageB (tmma only, -h) splits B into its TF32 hi and lo parts as it
	// is staged, both kept in shared memory side by side, instead of as
	// each warp reads its fragments (see TMMA).
	StageB bool
	// RowGroups (-y) splits the rows of C over that many blocks a tile of
	// columns, each with its share of α·A: less shared memory a block
	// where α·A is large, B read by each (the later reads from L2: the
	// blocks of a tile are adjacent). 0 or 1: one block.
	RowGroups int
	// Apart (-g) has each column group of warps copy its own columns of
	// B and wait at a chunk only for its own threads
	// (kernel.Barrier.Threads), not for the block's.
	Apart bool
	// Occupancy (-b) is the blocks per multiprocessor the CUDA compiler
	// must allow (capping registers); 0: two where they fit (see DMMA).
	Occupancy int
	// RegA (dmma with B copied in stages, -k) keeps each warp's α·A
	// fragments in its registers for all its tiles instead of in shared
	// memory: one chunk of B a tile (every k-step unrolled, so that the
	// fragments are named at compile time), shared memory for B alone,
	// and no shared-memory reads of α·A (see DMMA).
	RegA bool
	// Producer (with B copied in stages, -q) gives the copies of B to
	// one more warp of the block, the producer: it copies each row of a
	// chunk as one bulk copy (kernel.BulkCopy) counted on the stage's
	// transaction barrier, and the other warps, the consumers, wait on
	// that barrier, compute, and arrive on the stage's second barrier to
	// give the buffer back. No block-wide barrier a chunk, and no copy
	// instructions among the mma (see dmmaBuilder.producerBody). With
	// the column groups apart (-g) each group has a producer and
	// barriers of its own. That form is not offered: it is verified in
	// the interpreter and not yet measured.
	Producer bool
}

// Family is the strategy v belongs to.
func (v MMAParams) Family() Family { return v.Kind }

// String is v's name.
func (v MMAParams) String() string { return v.Name() }

// dmmaDefault is the variant a bare "dmma" names: m8n8k4 (any sm_80+),
// 32×32 sums a warp, two warps along the columns, chunks of 8, α·A
// streamed.
var dmmaDefault = MMAParams{Kind: DMMA, MMA: "m8n8k4", Rows: 4, Width: 4, Split: 2, Chunk: 8}

// Name is e.g. "dmma/m16n8k4-r2-w4-x2-c28-t16".
func (v MMAParams) Name() string {
	s := fmt.Sprintf("%s/%s-r%d-w%d-x%d-c%d", v.Kind, v.MMA, v.Rows, v.Width, v.Split, v.Chunk)
	if v.Block > 0 {
		s += fmt.Sprintf("-t%d", v.Block)
	}
	switch {
	case v.Stages > 0 && v.StreamA:
		s += fmt.Sprintf("-p%d", v.Stages)
	case v.Stages > 0:
		s += fmt.Sprintf("-a%d", v.Stages)
	}
	if v.SplitA {
		s += "-s"
	}
	if v.StageB {
		s += "-h"
	}
	if v.RowGroups > 0 {
		s += fmt.Sprintf("-y%d", v.RowGroups)
	}
	if v.Apart {
		s += "-g"
	}
	if v.Occupancy > 0 {
		s += fmt.Sprintf("-b%d", v.Occupancy)
	}
	if v.RegA {
		s += "-k"
	}
	if v.Producer {
		s += "-q"
	}
	return s
}

// isMMAShape says whether s reads as an mma shape, "mMnNkK".
func isMMAShape(s string) bool {
	for _, key := range []byte("mnk") {
		if len(s) < 2 || s[0] != key {
			return false
		}
		s = s[1:]
		i := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == 0 {
			return false
		}
		s = s[i:]
	}
	return s == ""
}

// parseMMA reads "dmma/SHAPE-rR-wW-xX-cC[-tT][-bB]": the mma shape, R × W
// fragments a warp, X warps along the columns, C columns of A a chunk,
// with -t T tiles a block with α·A resident, and with -b registers capped
// for B blocks a multiprocessor (CUDA launch bounds; without it, two where
// the block has at most 256 threads and two fit in shared memory); and
// "tmma" (TMMA) alike, with -s (after -t) for α·A split as it is read and
// -h for B split as it is staged; -a N (after -t) for B copied
// asynchronously into N buffers (-p N: α·A copied beside it); -k (last,
// dmma with -a) for α·A kept in registers.
func parseMMA(def Variant, name string, opts []string) (Variant, error) {
	v := def.(MMAParams)
	var async, copyA int
	has, err := readOptions(name, opts, "dmma/m16n8k4-r2-w4-x2-c28-t16 or tmma/m16n8k8-r2-w8-x1-c32-t16: mma shape, fragments a warp along rows and columns, warps along columns, k-chunk, tiles a block with α·A resident",
		option{key: "shape", word: &v.MMA, isWord: isMMAShape, required: true},
		need("r", &v.Rows), need("w", &v.Width), need("x", &v.Split), need("c", &v.Chunk), num("t", &v.Block),
		num("a", &async), num("p", &copyA), flag("s", &v.SplitA), flag("h", &v.StageB), num("y", &v.RowGroups),
		flag("g", &v.Apart), num("b", &v.Occupancy), flag("k", &v.RegA), flag("q", &v.Producer))
	switch {
	case err != nil:
		return nil, err
	case has["a"] && has["p"]:
		return nil, fmt.Errorf("variant %q: B copied in stages takes -a or -p, not both", name)
	case has["t"] && v.Block == 0:
		return nil, fmt.Errorf("variant %q: -t takes at least one tile", name)
	case (has["a"] || has["p"]) && async+copyA == 0:
		return nil, fmt.Errorf("variant %q: -a and -p take at least 2 stages", name)
	case has["y"] && v.RowGroups == 0:
		return nil, fmt.Errorf("variant %q: -y takes at least one group of rows", name)
	case has["b"] && v.Occupancy == 0:
		return nil, fmt.Errorf("variant %q: -b takes at least one block", name)
	}
	v.Stages, v.StreamA = async+copyA, has["p"]
	return v, nil
}

func (v MMAParams) launch() launchShape { return launchShape{v.Block, v.Split, v.Width, v.Occupancy} }

func (v MMAParams) build(g *gen) error {
	g.dmmaKernel()
	return nil
}

func (v MMAParams) sharedBytes(pb Problem) int { return v.dmmaShared(pb) }

// mmaType is the tensor cores' type of a dmma (fp64) or tmma (TF32)
// variant.
func (v MMAParams) mmaType() kernel.MMAType {
	if v.Kind == TMMA {
		return kernel.MMATF32
	}
	return kernel.MMAF64
}

// mmaShape is the shape v names, if kernel.MMA takes it in v's type.
func (v MMAParams) mmaShape() (kernel.MMAShape, bool) {
	for _, sh := range v.mmaType().Shapes() {
		if sh.String() == v.MMA {
			return sh, true
		}
	}
	return kernel.MMAShape{}, false
}

// maxSums bounds the accumulator elements a thread of v keeps.
func (v MMAParams) maxSums() int {
	if v.Kind == TMMA {
		return tmmaMaxSums
	}
	return dmmaMaxSums
}

func (v MMAParams) valid() error {
	sh, ok := v.mmaShape()
	if !ok {
		var names []string
		for _, s := range v.mmaType().Shapes() {
			names = append(names, s.String())
		}
		return fmt.Errorf("variant %s: mma shape %q (want %s)", v.Name(), v.MMA, strings.Join(names, ", "))
	}
	_, _, nc := sh.Elements()
	switch {
	case v.Rows < 1 || v.Width < 1 || v.Rows > v.maxSums() || v.Width > v.maxSums() || v.Rows*v.Width*nc > v.maxSums():
		return fmt.Errorf("variant %s: fragments a warp must be ≥ 1 with at most %d sums a thread (rows·width·%d)", v.Name(), v.maxSums(), nc)
	case v.Split < 1 || v.Split > 32:
		return fmt.Errorf("variant %s: warps along the columns must be 1..32", v.Name())
	case v.Chunk < sh.K || v.Chunk%sh.K != 0 || v.Chunk > 128:
		return fmt.Errorf("variant %s: chunk must be a multiple of %d, at most 128", v.Name(), sh.K)
	case v.Block < 0 || v.Block > dmmaMaxBlockTiles:
		return fmt.Errorf("variant %s: tiles a block must be 0 (α·A streamed) to 4096", v.Name())
	case v.Occupancy < 0 || v.Occupancy > 8:
		return fmt.Errorf("variant %s: blocks a multiprocessor (-b) must be 1..8", v.Name())
	case v.Kind != DMMA && v.Kind != TMMA:
		return fmt.Errorf("variant %s: mma parameters are for dmma and tmma", v.Name())
	case (v.SplitA || v.StageB) && v.Kind != TMMA:
		return fmt.Errorf("variant %s: only tmma splits α·A as it is read (-s) or B as it is staged (-h)", v.Name())
	case v.Stages != 0 && (v.Stages < 2 || v.Stages > dmmaMaxStages):
		return fmt.Errorf("variant %s: stages (-a, -p) must be 2..%d", v.Name(), dmmaMaxStages)
	case v.Stages != 0 && (v.Block == 0 || v.StageB):
		return fmt.Errorf("variant %s: copies in stages (-a, -p) take tiles a block (-t) and B staged as it is (not -h)", v.Name())
	case v.RowGroups < 0 || v.RowGroups > 16:
		return fmt.Errorf("variant %s: groups of rows (-y) must be 1..16", v.Name())
	case v.Apart && (v.Stages == 0 || v.StreamA || v.Split < 2):
		return fmt.Errorf("variant %s: column groups apart (-g) take B copied in stages (-a) and two or more warps along the columns", v.Name())
	case v.RegA && (v.Kind != DMMA || v.Stages == 0 || v.StreamA):
		return fmt.Errorf("variant %s: α·A in registers (-k) takes dmma with B copied in stages (-a)", v.Name())
	case v.Producer && (v.Stages == 0 || v.StreamA || v.RegA):
		return fmt.Errorf("variant %s: a producer warp (-q) takes B copied in stages (-a) with α·A resident in shared memory (not -p or -k)", v.Name())
	case v.StreamA && (v.Stages == 0 || (v.Kind == TMMA && !v.SplitA)):
		return fmt.Errorf("variant %s: α·A copied in stages (-p) takes stages and α·A staged as it is (tmma: -s)", v.Name())
	}
	return nil
}

// producers is the producer warps of v (see MMAParams.Producer): one, or
// with the column groups apart (-g) one a group.
func (v MMAParams) producers() int {
	switch {
	case !v.Producer:
		return 0
	case v.Apart:
		return v.Split
	}
	return 1
}

// resident says whether v keeps α·A in shared memory for several tiles.
// With StreamA the block takes Block tiles but α·A goes through shared
// memory chunk by chunk beside B.
func (v MMAParams) resident() bool { return v.Block > 0 && !v.StreamA }

// dmmaMaxStages bounds the buffers of B an asynchronous variant (-a)
// keeps.
const dmmaMaxStages = 6

// bBuffers is the buffers of B in shared memory: v.Stages with
// asynchronous copies, else two.
func (v MMAParams) bBuffers() int { return max(2, v.Stages) }

// dmmaLayout is the shape of a dmma (or tmma) kernel's block and shared
// arrays.
type dmmaLayout struct {
	sh         kernel.MMAShape
	typ        kernel.MMAType
	na, nb, nc int  // elements of A, B and C a lane holds
	hiLo       bool // TF32 with ash holding α·A's hi and lo parts (not SplitA)
	stageB     bool // TF32 with bsh holding B's hi and lo parts side by side (StageB)
	aw         int  // elements of ash a lane holds a fragment: na, or 2·na with hiLo
	vec        int  // elements of ash a lane reads side by side: na, or 4 with hiLo
	wm, wn     int  // warps along rows and columns
	bands      int  // bands of sh.M rows: wm·Mt
	mp         int  // rows a block covers: bands·sh.M
	groups     int  // blocks a tile of columns (RowGroups), each mp rows
	cols       int  // columns a tile: wn·Nt·8
	stride     int  // row stride of bsh: cols padded (see DMMA, TMMA), in pairs with stageB
	steps      int  // k-steps a chunk: Chunk / sh.K
	chunks     int  // ⌈k / Chunk⌉
	threads    int
	aLen, bLen int // elements of ash (one buffer of it when streamed) and of one buffer of bsh
	bytes      int // of an element
}

func (v MMAParams) dmmaLayout(pb Problem) dmmaLayout {
	sh, _ := v.mmaShape()
	l := dmmaLayout{sh: sh, typ: v.mmaType(), wn: v.Split, steps: v.Chunk / max(sh.K, 1), bytes: 8}
	l.na, l.nb, l.nc = sh.Elements()
	l.aw, l.vec = l.na, l.na
	rowsPerWarp := v.Rows * sh.M
	l.groups = max(v.RowGroups, 1)
	l.wm = ((pb.Op.Rows+l.groups-1)/l.groups + rowsPerWarp - 1) / max(rowsPerWarp, 1)
	l.bands = l.wm * v.Rows
	l.mp = l.bands * sh.M
	l.cols = l.wn * v.Width * sh.N
	l.stride = l.cols + dmmaPad
	if l.typ == kernel.MMATF32 {
		l.bytes = 4
		l.stride = l.cols + tmmaPad(l.cols)
		if l.hiLo = !v.SplitA; l.hiLo {
			l.aw, l.vec = 2*l.na, 4
		}
		if l.stageB = v.StageB; l.stageB {
			// Pairs of floats, read 8 bytes a lane: padded as
			// dmma's doubles, stride ≡ 4 mod 16 pairs.
			l.stride = l.cols + (20-l.cols%16)%16
		}
	}
	l.chunks = (pb.Op.Cols + v.Chunk - 1) / max(v.Chunk, 1)
	l.threads = 32 * (l.wm*l.wn + v.producers())
	l.aLen = l.bands * 32 * l.aw * l.steps
	if v.resident() { // every chunk's k-steps, zero past k
		l.aLen *= l.chunks
	}
	if v.RegA { // in registers, not in shared memory
		l.aLen = 0
	}
	l.bLen = v.Chunk * l.stride
	if l.stageB {
		l.bLen *= 2
	}
	return l
}

// dmmaShared is the shared memory of a dmma or tmma kernel: ash (two
// buffers of a chunk when streamed, all of α·A when resident) and two
// buffers of bsh.
func (v MMAParams) dmmaShared(pb Problem) int {
	l := v.dmmaLayout(pb)
	switch {
	case v.StreamA:
		return v.Stages * (l.aLen + l.bLen) * l.bytes
	case v.Producer: // and two 8-byte barriers a buffer and producer
		return (l.aLen+v.bBuffers()*l.bLen)*l.bytes + 16*v.Stages*v.producers()
	case v.resident():
		return (l.aLen + v.bBuffers()*l.bLen) * l.bytes
	}
	return 2 * (l.aLen + l.bLen) * l.bytes
}

// check reports why v does not fit the problem: the other precision,
// too many threads for the operator's rows, too much shared memory.
func (v MMAParams) check(pb Problem) error {
	switch {
	case v.Kind == DMMA && pb.DType != kernel.F64:
		return fmt.Errorf("variant %s: fp64 only (the tensor cores' fp64 mma; in fp32 use tmma/…, 3×TF32)", v.Name())
	case v.Kind == TMMA && pb.DType != kernel.F32:
		return fmt.Errorf("variant %s: fp32 only (3×TF32; in fp64 use dmma/…)", v.Name())
	}
	l := v.dmmaLayout(pb)
	if l.threads > kernel.MaxThreads {
		return fmt.Errorf("variant %s needs %d threads per block for %d rows (at most %d)", v.Name(), l.threads, pb.Op.Rows, kernel.MaxThreads)
	}
	if v.RegA {
		if l.chunks != 1 {
			return fmt.Errorf("variant %s: α·A in registers (-k) takes all %d columns of A in one chunk (-c%d or more)", v.Name(), pb.Op.Cols, (pb.Op.Cols+l.sh.K-1)/l.sh.K*l.sh.K)
		}
		if need, most := v.regANeed(l), dmmaMaxRegisters(l.threads); need > most {
			return fmt.Errorf("variant %s: α·A in registers (-k) needs about %d registers a thread (at most %d with %d threads): fewer fragments a warp", v.Name(), need, most, l.threads)
		}
	}
	if v.Producer {
		// Each row of a chunk is one bulk copy: 16-byte aligned in B
		// and in bsh.
		vec := 16 / l.bytes
		switch {
		case pb.LDB <= 0 || pb.LDB%vec != 0:
			return fmt.Errorf("variant %s: bulk copies of B's rows (-q) take ldb baked in, a multiple of %d (ldb=%d)", v.Name(), vec, pb.LDB)
		case l.stride%vec != 0 || l.cols%vec != 0:
			return fmt.Errorf("variant %s: bulk copies of B's rows (-q) take rows of bsh 16-byte aligned", v.Name())
		}
	}
	limit := MaxSharedBytes
	if v.resident() || v.Stages > 0 {
		limit = dmmaMaxShared
	}
	if s := v.dmmaShared(pb); s > limit {
		return fmt.Errorf("variant %s needs %d bytes of shared memory (limit %d)", v.Name(), s, limit)
	}
	return nil
}

// DMMACandidates lists the tensor-core variants worth trying for the
// problem on a CUDA device of compute capability arch (×10): the operators
// DenseCandidates takes, in fp64, on sm_80+ (m8n8k4) and sm_90+ (the m16n8
// shapes, twice m8n8k4's rate there). Each shape gets warp tiles of
// up to 32×32 sums, with the rows a warp takes chosen to pad m least and
// 32: resident variants (α·A staged once for dmmaTiles tiles, where it
// fits the device's shared memory) over two, four or one warps along the
// columns with the deepest chunk of B up to 64 rows that fits, and
// streamed ones over one, two or four warps with chunks up to 16 (at most
// 512 threads a block; the more columns a block takes, the fewer times α·A
// is read).
// dmmaMinEntries is the least m·k for which DMMACandidates offers tensor
// cores: low enough for PyFR's p3 and p4 tets and p6/tri/m132, where the
// tensor cores beat the unrolled kernels (docs/rationale.md#dmma-threshold).
const dmmaMinEntries = 1200

func DMMACandidates(pb Problem, arch int, fill Fill) []Variant {
	if pb.DType != kernel.F64 || arch < 80 {
		return nil
	}
	out := variants(mmaCandidates(pb, arch, fill, DMMA, []kernel.MMAShape{kernel.M8N8K4, kernel.M16N8K4, kernel.M16N8K8},
		func(mt, nc int, _ bool) []MMAParams {
			// Up to 32 columns and 32 sums a warp; where one warp
			// takes every row, also half as many columns (more warps
			// for the same tile), which pays on the small
			// operators (docs/rationale.md#dmma-small-tiles).
			w := min(4, 32/(mt*nc))
			if rows := mt * nc * 4; w > 1 && pb.Op.Rows <= rows { // a fragment is M×8: nc = M/4 a lane
				return []MMAParams{{Width: w}, {Width: w / 2}}
			}
			return []MMAParams{{Width: w}}
		}))
	if len(out) == 0 {
		return out
	}
	out = append(out, dmmaRegACandidates(pb, arch, fill)...)
	if arch < 90 || pb.Op.Rows*pb.Op.Cols > dmmaSmallEntries {
		return out
	}
	// Small operators: the least tile (a warp's 16×8 sums, four warps
	// along the columns), half the tiles a block and four buffers of B.
	for _, sh := range []kernel.MMAShape{kernel.M16N8K4, kernel.M16N8K8} {
		for _, kc := range dmmaAsyncChunks(pb.Op.Cols, sh.K) {
			v := MMAParams{Kind: DMMA, MMA: sh.String(), Rows: 1, Width: 1, Split: 4, Chunk: kc, Block: dmmaTiles / 2, Stages: 4}
			v.Block = v.fillTiles(pb, fill, v.blocksPerUnit(pb), v.Block)
			if pb.Check(v) == nil && v.dmmaLayout(pb).threads <= dmmaMaxCandidateThreads && v.dmmaShared(pb) <= dmmaSharedLimit(arch) {
				if !slices.ContainsFunc(out, func(o Variant) bool { return o.Name() == v.Name() }) {
					out = append(out, v)
				}
				break
			}
		}
	}
	return out
}

// dmmaRegACandidates are the dmma variants with α·A in registers (-k)
// that DMMACandidates offers, for operators of at most dmmaRegAMaxCols
// columns: two warps along the columns, 32 tiles a block, and each of
// three forms (fragments down and along a warp, buffers of B) whose
// estimated registers stay within dmmaRegACandidateRegs. They win on some
// operators with k ≤ 64 and lose where k is 84 or more
// (docs/rationale.md#dmma-a-in-registers).
func dmmaRegACandidates(pb Problem, arch int, fill Fill) []Variant {
	if pb.Op.Cols > dmmaRegAMaxCols {
		return nil
	}
	var out []Variant
	for _, f := range []struct {
		sh                  kernel.MMAShape
		rows, width, stages int
	}{{kernel.M16N8K4, 2, 4, 3}, {kernel.M16N8K4, 2, 2, 3}, {kernel.M16N8K8, 1, 4, 4}} {
		if (MMAParams{Kind: DMMA}).mmaType().Arch(f.sh) > arch {
			continue
		}
		kc := (pb.Op.Cols + f.sh.K - 1) / f.sh.K * f.sh.K
		v := MMAParams{Kind: DMMA, MMA: f.sh.String(), Rows: f.rows, Width: f.width, Split: 2, Chunk: kc, Block: 2 * dmmaTiles, Stages: f.stages, RegA: true}
		v.Block = v.fillTiles(pb, fill, 1, v.Block)
		if pb.Check(v) != nil {
			continue
		}
		if l := v.dmmaLayout(pb); l.threads <= dmmaMaxCandidateThreads && v.regANeed(l) <= dmmaRegACandidateRegs && v.dmmaShared(pb) <= dmmaSharedLimit(arch) {
			out = append(out, v)
		}
	}
	return out
}

// dmmaRegAMaxCols is the most columns (k) of an operator that gets the
// -k candidates: beyond it (k = 84) they lost to the shared-memory kernels
// (docs/rationale.md#dmma-a-in-registers).
const dmmaRegAMaxCols = 64

// dmmaRegACandidateRegs is the most registers regANeed may estimate for a
// -k candidate. The estimate runs 20–35 % below what ptxas allots, so
// this is the last estimate whose kernels were seen not to spill
// (docs/rationale.md#dmma-a-in-registers).
const dmmaRegACandidateRegs = 184

// dmmaSmallEntries is the most m·k for which DMMACandidates adds the
// least tiles: for a small α·A, many small blocks a multiprocessor hide
// more of B's latency than fewer large ones
// (docs/rationale.md#dmma-small-tiles).
const dmmaSmallEntries = 2048

// mmaCandidates lists the variants of family fam (dmma or tmma) for
// DMMACandidates and TMMACandidates: for each of shapes the device has
// (m16n8k4 resident only), the warps' rows as DMMACandidates says, each
// of the widths (fragments along the columns, and SplitA) forms gives for
// Mt and the elements nc of a C fragment, resident or not.
func mmaCandidates(pb Problem, arch int, fill Fill, fam Family, shapes []kernel.MMAShape, forms func(mt, nc int, resident bool) []MMAParams) []MMAParams {
	st := operator.Analyze(pb.Op)
	if !mmaPays(pb.Op, st) || pb.Op.Rows*pb.Op.Cols < dmmaMinEntries {
		return nil
	}
	typ := MMAParams{Kind: fam}.mmaType()
	var out []MMAParams
	seen := map[string]bool{}
	// first adds the first variant of vs that fits.
	first := func(vs []MMAParams) {
		for _, v := range vs {
			if pb.Check(v) != nil || v.dmmaLayout(pb).threads > dmmaMaxCandidateThreads ||
				((v.resident() || v.Stages > 0) && v.dmmaShared(pb) > dmmaSharedLimit(arch)) {
				continue
			}
			if !seen[v.Name()] {
				seen[v.Name()] = true
				out = append(out, v)
			}
			return
		}
	}
	for _, resident := range []bool{true, false} {
		for _, sh := range shapes {
			if typ.Arch(sh) > arch || (!resident && sh == kernel.M16N8K4) {
				continue
			}
			_, _, nc := sh.Elements()
			for _, rows := range []int{32, dmmaWarpRows(pb.Op.Rows, sh.M, 32)} {
				mt := rows / sh.M
				for _, f := range forms(mt, nc, resident) {
					wns := []int{4, 2, 1}
					groups := 0
					if resident {
						wns = []int{2, 4, 1}
						groups = dmmaRowGroups(pb, arch, fam, sh, mt, f)
					}
					for _, wn := range wns {
						var vs []MMAParams
						if resident {
							for _, kc := range dmmaDeepChunks(pb.Op.Cols, sh.K) {
								v := MMAParams{Kind: fam, MMA: sh.String(), Rows: mt, Width: f.Width, SplitA: f.SplitA, StageB: f.StageB, Split: wn, Chunk: kc, Block: dmmaTiles, RowGroups: groups}
								v.Block = v.fillTiles(pb, fill, 1, v.Block)
								vs = append(vs, v)
							}
							// B copied asynchronously, where
							// the device has cp.async (dmma
							// only: 3×TF32 is bound by its mma,
							// and gained nothing from it).
							for _, a := range dmmaAsync {
								if fam != DMMA || arch < 80 {
									break
								}
								var as []MMAParams
								for _, kc := range dmmaAsyncChunks(pb.Op.Cols, sh.K) {
									v := MMAParams{Kind: fam, MMA: sh.String(), Rows: mt, Width: f.Width, SplitA: f.SplitA, Split: wn, Chunk: kc, Block: a.tiles, Stages: a.stages, RowGroups: groups}
									if v.Block = v.fillTiles(pb, fill, a.perUnit, v.Block); fill.known() && v.blocksPerUnit(pb) < a.perUnit {
										continue
									}
									as = append(as, v)
								}
								n := len(out)
								first(as)
								if len(out) == n {
									continue
								}
								// Its twins, offered before it: with
								// a producer warp's bulk copies (-q,
								// sm_90; not m8n8k4, at half rate
								// there), which won most of the
								// p5–p6 tets and pyramids
								// (docs/rationale.md#dmma-producer);
								// with the column groups apart and a
								// producer a group (-g-q), which beat
								// both on many operators at PyFR's
								// panels (ibid.); and apart (-g),
								// which pays on the large tets' β = 1
								// operators (docs/rationale.md#dmma-async).
								base := out[n]
								bulk := arch >= 90 && sh != kernel.M8N8K4
								var twins []MMAParams
								if bulk {
									q := base
									q.Producer = true
									twins = append(twins, q)
								}
								if wn > 1 {
									g := base
									g.Apart = true
									if bulk {
										gq := g
										gq.Producer = true
										twins = append(twins, gq)
									}
									twins = append(twins, g)
								}
								out = out[:n]
								delete(seen, base.Name())
								for _, v := range append(twins, base) {
									first([]MMAParams{v})
								}
							}
						} else {
							for _, kc := range dmmaChunks(pb.Op.Cols, sh.K) {
								vs = append(vs, MMAParams{Kind: fam, MMA: sh.String(), Rows: mt, Width: f.Width, SplitA: f.SplitA, StageB: f.StageB, Split: wn, Chunk: kc})
							}
						}
						first(vs)
					}
				}
			}
		}
	}
	return out
}

// dmmaRowGroups is the groups of rows (RowGroups, 0 for one) the resident
// dmma candidates of shape sh, mt fragments a warp and form f split the
// rows over: one where α·A fits the device's shared memory whole beside
// the least B, else the fewest of up to four that fit: staging α·A beats
// streaming it (docs/rationale.md#dmma-row-groups), while operators whose
// α·A fits gain nothing from groups (B is read once a group), so they get
// none. tmma keeps one.
func dmmaRowGroups(pb Problem, arch int, fam Family, sh kernel.MMAShape, mt int, f MMAParams) int {
	if fam != DMMA {
		return 0
	}
	for g := 1; g <= 4; g++ {
		probe := MMAParams{Kind: fam, MMA: sh.String(), Rows: mt, Width: f.Width, Split: 1, Chunk: max(8, sh.K), Block: dmmaTiles, RowGroups: g}
		if pb.Check(probe) == nil && probe.dmmaShared(pb) <= dmmaSharedLimit(arch) {
			if g == 1 {
				return 0
			}
			return g
		}
	}
	return 0
}

// dmmaAsync are the buffers of B and tiles a block the asynchronous
// candidates (-a) try: three or four buffers hide B's latency; five or six
// gained nothing more (docs/rationale.md#dmma-async). Where the columns
// and the device's multiprocessors are known, the tiles are those that
// fill the device in one wave of perUnit blocks a multiprocessor (see
// fillTiles); else the fixed count. Four buffers come first: they ran as
// fast as three or faster on most of the p5–p6 tets and pyramids, and
// the order is the one clients such as PyFR try them in.
var dmmaAsync = []struct{ stages, tiles, perUnit int }{{4, dmmaTiles, 1}, {3, dmmaTiles, 1}, {3, 2 * dmmaTiles, 2}}

// Fill is what sizes the runs of tiles of the resident tensor-core
// candidates: the columns n the kernel will be launched on (baked in or
// not) and the device's multiprocessors. Zero where either is unknown:
// the candidates then take fixed runs.
type Fill struct{ Columns, Units int }

func (f Fill) known() bool { return f.Columns > 0 && f.Units > 0 }

// fillTiles is the tiles a block of resident variant v takes so that
// its blocks fill the device in one wave, perUnit blocks to each
// multiprocessor (every block stages α·A once and then runs its tiles
// back to back): at PyFR's column counts a partial second wave, or a
// wave that leaves multiprocessors idle, cost up to half the time
// (docs/rationale.md#dmma-waves). def where the fill is not known.
func (v MMAParams) fillTiles(pb Problem, fill Fill, perUnit, def int) int {
	if !fill.known() {
		return def
	}
	l := v.dmmaLayout(pb)
	return waveTiles(fill.Columns, l.cols, l.groups, fill.Units*perUnit)
}

// waveTiles is the tiles of cols columns (of n) a block takes so that
// the blocks, groups to each tile, number at most slots: one wave.
func waveTiles(n, cols, groups, slots int) int {
	tiles := (n + cols - 1) / cols
	blocks := max(1, slots/max(1, groups))
	return min(dmmaMaxBlockTiles, max(1, (tiles+blocks-1)/blocks))
}

// dmmaMaxBlockTiles is the most tiles a block takes (-t).
const dmmaMaxBlockTiles = 4096

// unitThreads is the most threads a multiprocessor holds (sm_80, sm_90).
const unitThreads = 1 << 11

// blocksPerUnit is how many blocks of v a multiprocessor holds by its
// shared memory (228 KiB on sm_90, 1 KiB of it reserved a block) and
// threads (unitThreads).
func (v MMAParams) blocksPerUnit(pb Problem) int {
	return max(1, min((dmmaMaxShared+1024)/(v.dmmaShared(pb)+1024), unitThreads/max(32, v.dmmaLayout(pb).threads)))
}

// dmmaAsyncChunks lists the chunks to try for an asynchronous variant,
// best first: multiples of kk from 24 down to 16 that divide k rounded up
// to kk, then 28 and 32 where they divide it, then the others from 24
// down, then 8 (or kk). Chunks of 16–24 rows did best (28 as well where
// nothing smaller divides k); deeper ones cost registers and shared
// memory (a buffer each).
func dmmaAsyncChunks(k, kk int) []int {
	kp := (k + kk - 1) / kk * kk
	var div, deep, rest []int
	for c := 32 / kk * kk; c >= 16; c -= kk {
		switch {
		case kp%c == 0 && c <= 24:
			div = append(div, c)
		case kp%c == 0:
			deep = append([]int{c}, deep...)
		case c <= 24:
			rest = append(rest, c)
		}
	}
	out := append(append(div, deep...), rest...)
	if last := max(8, kk); !slices.Contains(out, last) {
		out = append(out, last)
	}
	return out
}

// dmmaWarpRows is the rows a warp takes, a multiple of the fragment's
// height fm and at most most: the one that pads m to the fewest rows
// (ties: the taller).
func dmmaWarpRows(m, fm, most int) int {
	best, pad := fm, 1<<30
	for r := fm; r <= most; r += fm {
		p := (m+r-1)/r*r - m
		if p <= pad {
			best, pad = r, p
		}
	}
	return best
}

// dmmaChunks lists the chunks to try for a streamed variant, for k
// columns of A and k-steps of kk, best first: multiples of kk from 8 to 16
// that divide k rounded up to kk (no k-step of zeros computed), then those
// that do not, then kk.
func dmmaChunks(k, kk int) []int {
	kp := (k + kk - 1) / kk * kk
	var div, rest []int
	for c := 16 / kk * kk; c >= max(8, kk); c -= kk {
		if kp%c == 0 {
			div = append(div, c)
		} else {
			rest = append(rest, c)
		}
	}
	if kk < 8 {
		rest = append(rest, kk)
	}
	return append(div, rest...)
}

// dmmaDeepChunks lists the chunks to try for a resident variant, best
// first: multiples of kk from 16 to 64 that divide k rounded up to kk,
// deepest first, then the others from 32 down, then 8.
func dmmaDeepChunks(k, kk int) []int {
	kp := (k + kk - 1) / kk * kk
	var div, rest []int
	for c := 64 / kk * kk; c >= 16; c -= kk {
		switch {
		case kp%c == 0:
			div = append(div, c)
		case c <= 32:
			rest = append(rest, c)
		}
	}
	return append(append(div, rest...), max(8, kk))
}

// dmmaBuilder holds what the pieces of a dmma kernel share.
type dmmaBuilder struct {
	g *gen
	v MMAParams
	l dmmaLayout
}

// dmmaIdx, dmmaI32 and dmmaReal declare an index, a 32-bit integer and
// a real: thread and shared-memory indices stay 32-bit in kernels whose
// offsets into B and C need 64 bits.
func dmmaIdx(name string, init kernel.Expr) kernel.Stmt {
	return kernel.DeclIndex(name, init)
}

func dmmaI32(name string, init kernel.Expr) kernel.Stmt {
	return kernel.Decl{Type: kernel.Int32, Name: name, Init: init}
}

func dmmaReal(name string, init kernel.Expr) kernel.Stmt {
	return kernel.DeclReal(name, init)
}

// dmmaScope wraps statements in a block of their own (names declared in it
// end with it).
func dmmaScope(ss ...kernel.Stmt) kernel.Stmt { return kernel.If{Cond: kernel.Const(1), Then: ss} }

func (b *dmmaBuilder) acc(i, j, e int) string { return fmt.Sprintf("acc%d_%d_%d", i, j, e) }

// elem is element tid + q·threads of a per-thread loop.
func (b *dmmaBuilder) elem(q int) kernel.Expr { return plus(q*b.l.threads, kernel.Ref("tid")) }

// guard wraps st in e < total where the q-th round has idle threads.
func (b *dmmaBuilder) guard(q, total int, st ...kernel.Stmt) []kernel.Stmt {
	if (q+1)*b.l.threads <= total {
		return st
	}
	return []kernel.Stmt{kernel.If{Cond: kernel.Lt(b.elem(q), kernel.Const(total)), Then: st}}
}

// aValue is element e of ash in the A-fragment order: (k-step s, band,
// lane, value x) = e in mixed radix (…, bands, 32, na), which holds α·A's
// row band·M + AAt(lane, x).row and column c0 + s·K + AAt(lane, x).col,
// zero past m and k. It declares arow and acol before the value. In TF32
// (tmma) a lane's 2·na values are A's hi parts (x < na) then its lo parts
// (see TMMA), in groups of vec = 4: (s, band, x / 4, lane, x % 4), unless
// α·A is split as it is read (SplitA).
func (b *dmmaBuilder) aValue(e, c0 kernel.Expr) ([]kernel.Stmt, kernel.Expr) {
	l, sh := b.l, b.l.sh
	m, kk := b.g.m, b.g.k
	r := sh.M / 8
	x := kernel.Rem(e, kernel.Const(l.na))
	ln := kernel.Rem(kernel.Div(e, kernel.Const(l.na)), kernel.Const(32))
	band := kernel.Rem(kernel.Div(e, kernel.Const(32*l.na)), kernel.Const(l.bands))
	step := kernel.Div(e, kernel.Const(32*l.na*l.bands))
	tf32 := l.hiLo
	if tf32 {
		// x = (e / 128 mod aw/4)·4 + e mod 4: hi while x < na.
		x = kernel.Add(kernel.Mul(kernel.Rem(kernel.Div(e, kernel.Const(32*l.vec)), kernel.Const(l.aw/l.vec)), kernel.Const(l.vec)), kernel.Rem(e, kernel.Const(l.vec)))
		ln = kernel.Rem(kernel.Div(e, kernel.Const(l.vec)), kernel.Const(32))
		band = kernel.Rem(kernel.Div(e, kernel.Const(32*l.aw)), kernel.Const(l.bands))
		step = kernel.Div(e, kernel.Const(32*l.aw*l.bands))
	}
	var decls []kernel.Stmt
	if tf32 {
		decls = append(decls, dmmaI32("ax", x))
		x = kernel.Rem(kernel.Ref("ax"), kernel.Const(l.na))
	}
	row := kernel.Add(kernel.Add(kernel.Mul(band, kernel.Const(sh.M)), kernel.Div(ln, kernel.Const(4))), kernel.Mul(kernel.Rem(x, kernel.Const(r)), kernel.Const(8)))
	col := kernel.Add(kernel.Add(kernel.Mul(step, kernel.Const(sh.K)), kernel.Rem(ln, kernel.Const(4))), kernel.Mul(kernel.Div(x, kernel.Const(r)), kernel.Const(4)))
	acol := kernel.Expr(kernel.Ref("acol"))
	if c0 != nil {
		acol = kernel.Add(c0, acol)
	}
	cond := kernel.Lt(acol, kernel.Const(kk))
	if l.groups*l.mp > m {
		cond = kernel.And(kernel.Lt(kernel.Ref("arow"), kernel.Const(m)), cond)
	}
	if l.groups > 1 {
		row = kernel.Add(kernel.Ref("row0"), row)
	}
	load := kernel.At("a", kernel.Add(kernel.Mul(kernel.Ref("arow"), kernel.Const(kk)), acol))
	decls = append(decls, dmmaI32("arow", row), dmmaI32("acol", col))
	val := kernel.Expr(kernel.Select{Cond: cond, Then: load, Else: kernel.Float(0)})
	if !tf32 {
		return decls, val
	}
	// The split: hi = tf32(a), lo = tf32(a − hi).
	decls = append(decls, dmmaReal("aval", val), dmmaReal("ahi", tf32Of(kernel.Ref("aval"))))
	return decls, kernel.Select{Cond: kernel.Lt(kernel.Ref("ax"), kernel.Const(l.na)), Then: kernel.Ref("ahi"),
		Else: tf32Of(kernel.Sub(kernel.Ref("aval"), kernel.Ref("ahi")))}
}

// copyA copies the chunk of α·A from column c0 into buffer buf of ash
// asynchronously, element e of the chunk (e < aLen) as aValue places it
// (α·A as it is: dmma, or tmma with SplitA).
func (b *dmmaBuilder) copyA(buf, c0 kernel.Expr) []kernel.Stmt {
	var out []kernel.Stmt
	rounds := (b.l.aLen + b.l.threads - 1) / b.l.threads
	for q := 0; q < rounds; q++ {
		decls, val := b.aValue(b.elem(q), c0)
		sel := val.(kernel.Select) // where α·A holds the element: a[index], else zero
		cp := kernel.CopyAsync{Dst: "ash", DstIndex: []kernel.Expr{buf, b.elem(q)}, Src: "a", SrcIndex: sel.Then.(kernel.Load).Index[0], Cond: sel.Cond}
		out = append(out, b.guard(q, b.l.aLen, dmmaScope(append(decls, cp)...))...)
	}
	return out
}

// tf32Of is x rounded to TF32.
func tf32Of(x kernel.Expr) kernel.Expr { return kernel.Call{Fn: kernel.TF32, Args: []kernel.Expr{x}} }

// bChunk is how many elements of B a chunk holds, bRounds how many rounds
// of the block's threads load them.
func (b *dmmaBuilder) bChunk() int  { return b.v.Chunk * b.l.cols }
func (b *dmmaBuilder) bRounds() int { return (b.bChunk() + b.l.threads - 1) / b.l.threads }

// offset32 says whether offsets into a panel of rows rows (padding
// included) and a leading dimension ld baked in stay below 2³¹ (with a row
// to spare for the columns of a last tile), so that they can be 32-bit
// whatever the kernel's index width: fewer registers and less address
// arithmetic.
func offset32(rows, ld int) bool { return ld > 0 && int64(rows+1)*int64(ld) <= math.MaxInt32 }

// forB builds, for each round q of the block's threads over a chunk of B,
// a scope that declares element e's row brow = row0 + e / cols and column
// bcol = col0 + e % cols, then what put makes of q, e, whether the element
// lies in B (brow < k and bcol < n) and its offset in b.
func (b *dmmaBuilder) forB(row0, col0 kernel.Expr, put func(q int, e, in, at kernel.Expr) kernel.Stmt) []kernel.Stmt {
	n, ldb := b.g.nExpr(), b.g.ldbExpr()
	decl := dmmaIdx
	if offset32(b.l.chunks*b.v.Chunk, b.g.pb.LDB) {
		decl = dmmaI32
	}
	in := kernel.And(kernel.Lt(kernel.Ref("brow"), kernel.Const(b.g.k)), kernel.Lt(kernel.Ref("bcol"), n))
	at := kernel.Add(kernel.Mul(kernel.Ref("brow"), ldb), kernel.Ref("bcol"))
	var out []kernel.Stmt
	if b.v.Apart {
		// Each column group (the wm warps of one wc) copies its own
		// columns: its element eg, the tile's element e.
		gcols, gthreads := b.l.cols/b.l.wn, 32*b.l.wm
		total := b.v.Chunk * gcols
		for q := 0; q < (total+gthreads-1)/gthreads; q++ {
			eg := plus(q*gthreads, kernel.Ref("gtid"))
			e := kernel.Add(kernel.Mul(kernel.Div(eg, kernel.Const(gcols)), kernel.Const(b.l.cols)), kernel.Add(kernel.Mul(kernel.Ref("wc"), kernel.Const(gcols)), kernel.Rem(eg, kernel.Const(gcols))))
			st := dmmaScope(
				decl("brow", kernel.Add(row0, kernel.Div(e, kernel.Const(b.l.cols)))),
				decl("bcol", kernel.Add(col0, kernel.Rem(e, kernel.Const(b.l.cols)))),
				put(q, e, in, at),
			)
			if (q+1)*gthreads > total {
				st = kernel.If{Cond: kernel.Lt(eg, kernel.Const(total)), Then: []kernel.Stmt{st}}
			}
			out = append(out, st)
		}
		return out
	}
	for q := 0; q < b.bRounds(); q++ {
		e := b.elem(q)
		out = append(out, b.guard(q, b.bChunk(), dmmaScope(
			decl("brow", kernel.Add(row0, kernel.Div(e, kernel.Const(b.l.cols)))),
			decl("bcol", kernel.Add(col0, kernel.Rem(e, kernel.Const(b.l.cols)))),
			put(q, e, in, at),
		))...)
	}
	return out
}

// loadB reads a chunk of B into the registers set0, set1, …: element e is
// row row0 + e / cols, column col0 + e % cols, zero past k and n.
func (b *dmmaBuilder) loadB(set string, row0, col0 kernel.Expr) []kernel.Stmt {
	return b.forB(row0, col0, func(q int, _, in, at kernel.Expr) kernel.Stmt {
		return kernel.Assign{Name: fmt.Sprintf("%s%d", set, q), Value: kernel.Select{Cond: in, Then: kernel.At("b", at), Else: kernel.Float(0)}}
	})
}

// copyB copies a chunk of B into buffer buf of bsh asynchronously
// (kernel.CopyAsync): element e as loadB reads it, at e / cols · stride +
// e % cols.
func (b *dmmaBuilder) copyB(buf, row0, col0 kernel.Expr) []kernel.Stmt {
	return b.forB(row0, col0, func(_ int, e, in, at kernel.Expr) kernel.Stmt {
		dst := kernel.Add(kernel.Mul(kernel.Div(e, kernel.Const(b.l.cols)), kernel.Const(b.l.stride)), kernel.Rem(e, kernel.Const(b.l.cols)))
		return kernel.CopyAsync{Dst: "bsh", DstIndex: []kernel.Expr{buf, dst}, Src: "b", SrcIndex: at, Cond: in}
	})
}

// storeB puts the registers set0, set1, … into buffer buf of bsh; with
// stageB their TF32 hi and lo parts, side by side.
func (b *dmmaBuilder) storeB(set string) []kernel.Stmt {
	var out []kernel.Stmt
	for q := 0; q < b.bRounds(); q++ {
		e := b.elem(q)
		at := kernel.Add(kernel.Mul(kernel.Div(e, kernel.Const(b.l.cols)), kernel.Const(b.l.stride)), kernel.Rem(e, kernel.Const(b.l.cols)))
		val := kernel.Ref(fmt.Sprintf("%s%d", set, q))
		var st kernel.Stmt = kernel.Put("bsh", val, kernel.Ref("buf"), at)
		if b.l.stageB {
			st = dmmaScope(dmmaReal("bhi", tf32Of(val)),
				kernel.Put("bsh", kernel.Ref("bhi"), kernel.Ref("buf"), kernel.Mul(at, kernel.Const(2))),
				kernel.Put("bsh", tf32Of(kernel.Sub(val, kernel.Ref("bhi"))), kernel.Ref("buf"), plus(1, kernel.Mul(at, kernel.Const(2)))))
		}
		out = append(out, b.guard(q, b.bChunk(), st)...)
	}
	return out
}

// step is the body of the loop over a chunk's k-steps s: the warp's A
// fragments of k-step aStep (an expression of s) from ash (at aBuf's
// buffer when streamed), its B fragments of rows s·K… of buffer buf of
// bsh, and their Mt·Nt mma; in TF32 (tmma) A's hi and lo fragments (read,
// or split as read with SplitA), B's split into hi and lo, and three mma a
// fragment (see TMMA).
func (b *dmmaBuilder) step(aStep kernel.Expr, aBuf kernel.Expr) []kernel.Stmt {
	v, l, sh := b.v, b.l, b.l.sh
	tf32 := l.typ == kernel.MMATF32
	var out []kernel.Stmt
	av := func(i, x int) string { return fmt.Sprintf("av%d_%d", i, x) }
	bv := func(j, x int) string { return fmt.Sprintf("bv%d_%d", j, x) }
	for i := 0; i < v.Rows; i++ {
		// ash[((step·bands + wr·Mt + i)·32 + lane)·na + x], in TF32
		// ash[(((step·bands + wr·Mt + i)·aw/4 + x/4)·32 + lane)·4 + x%4]
		band := kernel.Add(kernel.Mul(aStep, kernel.Const(l.bands)), plus(i, kernel.Mul(kernel.Ref("wr"), kernel.Const(v.Rows))))
		base := kernel.Mul(kernel.Add(kernel.Mul(band, kernel.Const(32)), kernel.Ref("lane")), kernel.Const(l.na))
		for x := 0; x < l.aw; x++ {
			at := []kernel.Expr{plus(x, base)}
			if l.hiLo {
				at = []kernel.Expr{plus(x%l.vec, kernel.Mul(kernel.Add(kernel.Mul(plus(x/l.vec, kernel.Mul(band, kernel.Const(l.aw/l.vec))), kernel.Const(32)), kernel.Ref("lane")), kernel.Const(l.vec)))}
			}
			if aBuf != nil {
				at = append([]kernel.Expr{aBuf}, at...)
			}
			if v.RegA { // areg[(step·Mt + i)·na + x]
				out = append(out, dmmaReal(av(i, x), kernel.At("areg", b.aReg(aStep, i, x))))
				continue
			}
			out = append(out, dmmaReal(av(i, x), kernel.At("ash", at...)))
		}
	}
	for j := 0; j < v.Width; j++ {
		// bsh[buf][(s·K + tig + 4x)·stride + (wc·Nt + j)·8 + grp]
		col := kernel.Add(kernel.Mul(plus(j, kernel.Mul(kernel.Ref("wc"), kernel.Const(v.Width))), kernel.Const(sh.N)), kernel.Ref("grp"))
		for x := 0; x < l.nb; x++ {
			row := plus(4*x, kernel.Add(kernel.Mul(kernel.Ref("s"), kernel.Const(sh.K)), kernel.Ref("tig")))
			at := kernel.Add(kernel.Mul(row, kernel.Const(l.stride)), col)
			if l.stageB { // hi and lo, as bh… and bl… below
				out = append(out, dmmaReal(fmt.Sprintf("bh%d_%d", j, x), kernel.At("bsh", kernel.Ref("buf"), kernel.Mul(at, kernel.Const(2)))),
					dmmaReal(fmt.Sprintf("bl%d_%d", j, x), kernel.At("bsh", kernel.Ref("buf"), plus(1, kernel.Mul(at, kernel.Const(2))))))
				continue
			}
			out = append(out, dmmaReal(bv(j, x), kernel.At("bsh", kernel.Ref("buf"), at)))
		}
	}
	// mma is fragment (i, j)'s product of A's elements from a0 and B's
	// from b0 (their names av… or bv… with x appended).
	mma := func(i, j int, a0, b0 func(int) string) kernel.MMA {
		m := kernel.MMA{Shape: sh, Type: l.typ}
		for x := 0; x < l.na; x++ {
			m.A = append(m.A, kernel.Ref(a0(x)))
		}
		for x := 0; x < l.nb; x++ {
			m.B = append(m.B, kernel.Ref(b0(x)))
		}
		for e := 0; e < l.nc; e++ {
			m.D = append(m.D, b.acc(i, j, e))
			m.C = append(m.C, kernel.Ref(b.acc(i, j, e)))
		}
		return m
	}
	if !tf32 {
		for i := 0; i < v.Rows; i++ {
			for j := 0; j < v.Width; j++ {
				out = append(out, mma(i, j, func(x int) string { return av(i, x) }, func(x int) string { return bv(j, x) }))
			}
		}
	} else {
		bh := func(j, x int) string { return fmt.Sprintf("bh%d_%d", j, x) }
		bl := func(j, x int) string { return fmt.Sprintf("bl%d_%d", j, x) }
		for j := 0; j < v.Width && !l.stageB; j++ {
			for x := 0; x < l.nb; x++ {
				out = append(out, dmmaReal(bh(j, x), tf32Of(kernel.Ref(bv(j, x)))),
					dmmaReal(bl(j, x), tf32Of(kernel.Sub(kernel.Ref(bv(j, x)), kernel.Ref(bh(j, x))))))
			}
		}
		hi := func(i int) func(int) string { return func(x int) string { return av(i, x) } }
		lo := func(i int) func(int) string { return func(x int) string { return av(i, l.na+x) } }
		if !l.hiLo { // split A's fragments too
			ah := func(i, x int) string { return fmt.Sprintf("ah%d_%d", i, x) }
			al := func(i, x int) string { return fmt.Sprintf("al%d_%d", i, x) }
			for i := 0; i < v.Rows; i++ {
				for x := 0; x < l.na; x++ {
					out = append(out, dmmaReal(ah(i, x), tf32Of(kernel.Ref(av(i, x)))),
						dmmaReal(al(i, x), tf32Of(kernel.Sub(kernel.Ref(av(i, x)), kernel.Ref(ah(i, x))))))
				}
			}
			hi = func(i int) func(int) string { return func(x int) string { return ah(i, x) } }
			lo = func(i int) func(int) string { return func(x int) string { return al(i, x) } }
		}
		// The small products first, every fragment's, then the large.
		for _, part := range []struct {
			a func(int) func(int) string
			b func(int, int) string
		}{{lo, bh}, {hi, bl}, {hi, bh}} {
			for i := 0; i < v.Rows; i++ {
				for j := 0; j < v.Width; j++ {
					out = append(out, mma(i, j, part.a(i), func(x int) string { return part.b(j, x) }))
				}
			}
		}
	}
	loop := kernel.For{Var: "s", From: kernel.Const(0), To: kernel.Const(l.steps), Body: out}
	if u := b.unroll(); u == 0 || v.RegA { // RegA: areg's indices known at compile time
		loop.Unroll = true
	} else {
		loop.UnrollBy = u
	}
	return []kernel.Stmt{loop}
}

// aReg is the index in areg of element x of fragment i of k-step step
// (RegA): (step·Mt + i)·na + x.
func (b *dmmaBuilder) aReg(step kernel.Expr, i, x int) kernel.Expr {
	return plus(x, kernel.Mul(plus(i, kernel.Mul(step, kernel.Const(b.v.Rows))), kernel.Const(b.l.na)))
}

// fillRegA declares areg, a thread's α·A fragments of every k-step
// (RegA), and fills it from the buffer a: element x of fragment i of
// k-step s is the value ash would hold at ((s·bands + wr·Mt + i)·32 +
// lane)·na + x (aValue), zero past m and k.
func (b *dmmaBuilder) fillRegA() []kernel.Stmt {
	v, l := b.v, b.l
	n := v.Rows * l.steps * l.na
	// f = (s·Mt + i)·na + x
	s := kernel.Div(kernel.Ref("f"), kernel.Const(v.Rows*l.na))
	i := kernel.Rem(kernel.Div(kernel.Ref("f"), kernel.Const(l.na)), kernel.Const(v.Rows))
	x := kernel.Rem(kernel.Ref("f"), kernel.Const(l.na))
	band := kernel.Add(kernel.Mul(s, kernel.Const(l.bands)), kernel.Add(kernel.Mul(kernel.Ref("wr"), kernel.Const(v.Rows)), i))
	e := kernel.Add(kernel.Mul(kernel.Add(kernel.Mul(band, kernel.Const(32)), kernel.Ref("lane")), kernel.Const(l.na)), x)
	decls, val := b.aValue(e, nil)
	return []kernel.Stmt{
		kernel.Comment{Text: fmt.Sprintf("alpha*A, %d×%d: this warp's fragments of all %d k-steps into its registers, once", b.g.m, b.g.k, l.steps)},
		kernel.Decl{Type: kernel.Real, Name: "areg", Dims: []int{n}},
		kernel.For{Var: "f", From: kernel.Const(0), To: kernel.Const(n), Unroll: true, Body: append(decls, kernel.Put("areg", val, kernel.Ref("f")))},
	}
}

// unroll is how far the loop over a chunk's k-steps is unrolled: 0
// (completely) where the registers allow, else 2 or 1. An unrolled loop
// lets the compiler read every k-step's fragments ahead of the mma, which
// took the 512-thread blocks past their 128 registers (spills to local
// memory, through L2 once the shared memory left L1 small).
func (b *dmmaBuilder) unroll() int {
	v, l := b.v, b.l
	budget := b.registers()
	sums := v.Rows * v.Width * l.nc
	frags := v.Rows*l.aw + v.Width*l.nb
	if l.typ == kernel.MMATF32 {
		frags += v.Width * 2 * l.nb // B's hi and lo
		if l.stageB {
			frags -= v.Width * l.nb // read as hi and lo
		}
		if !l.hiLo {
			frags += v.Rows * 2 * l.na // A's
		}
	}
	regs := l.bytes / 4
	staged := b.bRounds()
	if v.Stages > 0 {
		staged = 0 // copied straight into shared memory
	}
	need := func(steps int) int { return regs*(sums+frags*steps+staged) + dmmaRegsBase }
	switch {
	case need(l.steps) <= budget:
		return 0
	case l.steps > 2 && need(2) <= budget:
		return 2
	}
	return 1
}

// registers is what a thread may hold: 255, or less where the block's
// threads and the blocks a multiprocessor asks for share 64 Ki.
func (b *dmmaBuilder) registers() int {
	budget := min(255, 65536/b.l.threads)
	if b.g.kern.Hints.MinBlocksPerUnit > 1 {
		budget = min(budget, 65536/(b.l.threads*b.g.kern.Hints.MinBlocksPerUnit))
	}
	return budget
}

// epilogueGroup is how many pairs of C a thread loads before it stores
// any: the pairs split evenly into as few groups as the registers left
// beside the sums hold (about five a pair: two reals and an offset; at
// the epilogue the fragments are dead): groups too small leave loads of C
// waiting, too large spill (docs/rationale.md#dmma-epilogue).
func (b *dmmaBuilder) epilogueGroup(pairs int) int {
	sums := b.v.Rows * b.v.Width * b.l.nc * b.l.bytes / 4
	most := max(1, (b.registers()-16-sums)/5)
	groups := (pairs + most - 1) / most
	return (pairs + groups - 1) / groups
}

// regANeed estimates the registers a thread of a RegA variant takes: its
// α·A fragments of every k-step, its sums, one k-step's B fragments and
// dmmaRegsBase.
func (v MMAParams) regANeed(l dmmaLayout) int {
	regs := l.bytes / 4
	return regs*(v.Rows*l.steps*l.na+v.Rows*v.Width*l.nc+v.Width*l.nb) + dmmaRegsBase
}

// dmmaMaxRegisters is the most registers a thread of a RegA variant may
// need: CUDA's limit, and no more than 64 Ki a block.
func dmmaMaxRegisters(threads int) int { return min(255, 65536/max(threads, 1)) }

// dmmaRegsBase is the registers a dmma thread needs besides its sums,
// fragments and staged values: indices, addresses, loop state.
const dmmaRegsBase = 40

// epilogue stores the sums of the tile whose first column is j0: element
// e of fragment (i, j) is row (wr·Mt + i)·M + grp + 8⌊e/2⌋, column j0 +
// (wc·Nt + j)·8 + 2·tig + e%2; rows past m and columns past n are left
// alone. With β ≠ 0 and two-element vector accesses the pairs of C go in
// groups (epilogueGroup): the group's loads first, then its stores,
// so that the loads are in flight together. Loaded and stored pair by
// pair, each load waited behind the branch and the store before it, a
// global-memory latency per pair (the β = 1 tets' epilogue).
func (b *dmmaBuilder) epilogue(j0 kernel.Expr) []kernel.Stmt {
	v, l, sh, pb := b.v, b.l, b.l.sh, b.g.pb
	n, ldc := b.g.nExpr(), b.g.ldcExpr()
	vec := pb.LDC > 0 && pb.LDC%2 == 0
	beta := pb.Beta
	decl := dmmaIdx
	if offset32(l.groups*l.mp, pb.LDC) {
		decl = dmmaI32
	}
	type pair struct {
		i, j, p int
		q       string // suffix of the pair's names
	}
	var pairs []pair
	for i := 0; i < v.Rows; i++ {
		for j := 0; j < v.Width; j++ {
			for p := 0; p < l.nc/2; p++ {
				pairs = append(pairs, pair{i, j, p, ""})
			}
		}
	}
	// where declares the pair's row, column and offset into C.
	where := func(pr pair) []kernel.Stmt {
		row := kernel.Add(kernel.Mul(plus(pr.i, kernel.Mul(kernel.Ref("wr"), kernel.Const(v.Rows))), kernel.Const(sh.M)), plus(8*pr.p, kernel.Ref("grp")))
		if l.groups > 1 {
			row = kernel.Add(kernel.Ref("row0"), row)
		}
		col := kernel.Add(j0, kernel.Add(kernel.Mul(plus(pr.j, kernel.Mul(kernel.Ref("wc"), kernel.Const(v.Width))), kernel.Const(sh.N)), kernel.Mul(kernel.Ref("tig"), kernel.Const(2))))
		return []kernel.Stmt{decl("crow"+pr.q, row), decl("ccol"+pr.q, col),
			decl("cat"+pr.q, kernel.Add(kernel.Mul(kernel.Ref("crow"+pr.q), ldc), kernel.Ref("ccol"+pr.q)))}
	}
	// guard keeps rows past m out.
	guard := func(pr pair, inner []kernel.Stmt) []kernel.Stmt {
		if l.groups*l.mp > b.g.m {
			return []kernel.Stmt{kernel.If{Cond: kernel.Lt(kernel.Ref("crow"+pr.q), kernel.Const(b.g.m)), Then: inner}}
		}
		return inner
	}
	// store writes the pair's sums, with β·old added (old: the pair's C
	// values, or nil for β = 0).
	store := func(pr pair, old []kernel.Expr) []kernel.Stmt {
		vals := [2]kernel.Expr{kernel.Ref(b.acc(pr.i, pr.j, 2*pr.p)), kernel.Ref(b.acc(pr.i, pr.j, 2*pr.p+1))}
		withBeta := func(x int, old kernel.Expr) kernel.Expr {
			switch {
			case beta == 1:
				return kernel.Add(vals[x], old)
			case beta != 0:
				return kernel.Add(vals[x], kernel.Mul(kernel.Float(beta), old))
			}
			return vals[x]
		}
		cat := kernel.Ref("cat" + pr.q)
		scalar := func(x int) kernel.Stmt {
			at := plus(x, cat)
			return kernel.Put("c", withBeta(x, kernel.At("c", at)), at)
		}
		ccol := kernel.Ref("ccol" + pr.q)
		if !vec {
			return []kernel.Stmt{
				kernel.If{Cond: kernel.Lt(ccol, n), Then: []kernel.Stmt{scalar(0)}},
				kernel.If{Cond: kernel.Lt(plus(1, ccol), n), Then: []kernel.Stmt{scalar(1)}},
			}
		}
		src := []kernel.Expr{withBeta(0, nil), withBeta(1, nil)}
		if old != nil {
			src = []kernel.Expr{withBeta(0, old[0]), withBeta(1, old[1])}
		}
		// Two conditions, not an if/else: a compiler that sees the
		// first element stored on both paths splits the vector store
		// to share it.
		return []kernel.Stmt{
			kernel.If{Cond: kernel.Lt(plus(1, ccol), n), Then: []kernel.Stmt{kernel.VecStore{Buf: "c", Index: cat, Src: src}}},
			kernel.If{Cond: kernel.Eq(plus(1, ccol), n), Then: []kernel.Stmt{scalar(0)}},
		}
	}
	var out []kernel.Stmt
	if beta == 0 || !vec {
		for _, pr := range pairs {
			out = append(out, dmmaScope(append(where(pr), guard(pr, store(pr, nil))...)...))
		}
		return out
	}
	per := b.epilogueGroup(len(pairs))
	for g0 := 0; g0 < len(pairs); g0 += per {
		group := pairs[g0:min(g0+per, len(pairs))]
		var loads, stores []kernel.Stmt
		for q := range group {
			pr := &group[q]
			pr.q = fmt.Sprint(q)
			c0, c1 := "cv"+pr.q+"_0", "cv"+pr.q+"_1"
			loads = append(loads, where(*pr)...)
			loads = append(loads, dmmaReal(c0, kernel.Float(0)), dmmaReal(c1, kernel.Float(0)))
			loads = append(loads, guard(*pr, []kernel.Stmt{kernel.If{Cond: kernel.Lt(plus(1, kernel.Ref("ccol"+pr.q)), n),
				Then: []kernel.Stmt{kernel.VecLoad{Dst: []string{c0, c1}, Buf: "c", Index: kernel.Ref("cat" + pr.q)}}}})...)
			stores = append(stores, guard(*pr, store(*pr, []kernel.Expr{kernel.Ref(c0), kernel.Ref(c1)}))...)
		}
		out = append(out, dmmaScope(append(loads, stores...)...))
	}
	return out
}

// dmmaKernel builds the tensor-core dense kernel (see DMMA).
func (g *gen) dmmaKernel() {
	k, v, pb := g.kern, g.v.(MMAParams), g.pb
	b := &dmmaBuilder{g: g, v: v, l: v.dmmaLayout(pb)}
	l, sh := b.l, b.l.sh
	T := l.threads
	k.Launch.Block = [3]int{T, 1, 1}
	k.Launch.Grid = [3]kernel.Axis{kernel.Over(Columns, l.cols*max(v.Block, 1))}
	if l.groups > 1 {
		k.Launch.Grid[0].Fixed = l.groups
	}
	k.Launch.SharedBytes = v.dmmaShared(pb)
	k.Hints = kernel.Hints{MinArch: l.typ.Arch(sh), MinBlocksPerUnit: v.Occupancy}
	if v.Occupancy == 0 && T <= 256 && 2*(k.Launch.SharedBytes+1024) <= dmmaMaxShared+1024 && (!v.RegA || v.regANeed(l) <= 65536/(2*T)) {
		// Registers for two blocks a multiprocessor, where their
		// shared memory lets them (228 KiB a multiprocessor, 1 KiB
		// of it reserved a block, on sm_90).
		k.Hints.MinBlocksPerUnit = 2
	}
	k.Params = append([]kernel.Param{denseParam}, k.Params...)
	how := "α·A from the buffer a through shared memory chunk by chunk"
	switch {
	case v.StreamA:
		how = fmt.Sprintf("α·A and B copied asynchronously chunk by chunk into %d buffers, %d tiles a block", v.Stages, v.Block)
	case v.RegA:
		how = fmt.Sprintf("each warp's α·A fragments kept in its registers for %d tiles a block, B copied asynchronously into %d buffers", v.Block, v.Stages)
	case v.Producer:
		how = fmt.Sprintf("α·A staged whole in shared memory for %d tiles a block, B's rows bulk-copied by a producer warp into %d buffers on transaction barriers", v.Block, v.Stages)
	case v.resident() && v.Stages > 0:
		how = fmt.Sprintf("α·A staged whole in shared memory for %d tiles a block, B copied asynchronously into %d buffers", v.Block, v.Stages)
	case v.resident():
		how = fmt.Sprintf("α·A staged whole in shared memory for %d tiles a block", v.Block)
	}
	cores := "fp64 tensor cores"
	if l.typ == kernel.MMATF32 {
		cores = "TF32 tensor cores as 3xTF32 (α·A and B split into hi and lo parts)"
	}
	k.Doc = strings.Replace(k.Doc, fmt.Sprintf("one thread per %d column(s)", v.Width),
		fmt.Sprintf("tiles of %d columns on %s (mma %s), %d×%d sums a warp, %s", l.cols, cores, sh, v.Rows*sh.M, v.Width*sh.N, how), 1)
	ash := kernel.Shared{Name: "ash", Type: kernel.Real, Dims: []int{2, l.aLen}}
	switch {
	case v.resident():
		ash.Dims = []int{l.aLen}
	case v.StreamA:
		ash.Dims = []int{v.Stages, l.aLen}
	}
	k.Shared = []kernel.Shared{ash, {Name: "bsh", Type: kernel.Real, Dims: []int{v.bBuffers(), l.bLen}}}
	if v.RegA {
		k.Shared = k.Shared[1:]
	}
	if v.Producer { // producer g's full[s] = bar[2Sg + s], empty[s] = bar[2Sg + S + s]
		k.Shared = append(k.Shared, kernel.Shared{Name: "bar", Type: kernel.Int64, Dims: []int{2 * v.Stages * v.producers()}})
	}
	body := []kernel.Stmt{
		dmmaI32("tid", kernel.LocalX),
		dmmaI32("lane", kernel.Rem(kernel.Ref("tid"), kernel.Const(32))),
		dmmaI32("warp", kernel.Div(kernel.Ref("tid"), kernel.Const(32))),
		dmmaI32("grp", kernel.Div(kernel.Ref("lane"), kernel.Const(4))),
		dmmaI32("tig", kernel.Rem(kernel.Ref("lane"), kernel.Const(4))),
		dmmaI32("wr", kernel.Div(kernel.Ref("warp"), kernel.Const(l.wn))),
		dmmaI32("wc", kernel.Rem(kernel.Ref("warp"), kernel.Const(l.wn))),
	}
	if v.Apart {
		// A column group's warps are adjacent, so that its barrier
		// takes consecutive threads.
		body[5] = dmmaI32("wr", kernel.Rem(kernel.Ref("warp"), kernel.Const(l.wm)))
		body[6] = dmmaI32("wc", kernel.Div(kernel.Ref("warp"), kernel.Const(l.wm)))
		body = append(body, dmmaI32("gtid", kernel.Rem(kernel.Ref("tid"), kernel.Const(32*l.wm))))
	}
	if l.groups > 1 {
		// The block's group of rows: the groups of a tile of columns
		// are adjacent blocks, so that the later ones read B from L2.
		body = append(body, dmmaI32("row0", kernel.Mul(kernel.Cast{To: kernel.Int32, X: kernel.Rem(kernel.GroupX, kernel.Const(l.groups))}, kernel.Const(l.mp))))
	}
	for i := 0; i < v.Rows; i++ {
		for j := 0; j < v.Width; j++ {
			for e := 0; e < l.nc; e++ {
				body = append(body, dmmaReal(b.acc(i, j, e), kernel.Float(0)))
			}
		}
	}
	for q := 0; q < b.bRounds() && v.Stages == 0; q++ {
		body = append(body, dmmaReal(fmt.Sprintf("pb%d", q), nil))
	}
	switch {
	case v.Producer:
		body = append(body, b.producerBody()...)
	case v.Stages > 0:
		body = append(body, b.asyncBody()...)
	case v.resident():
		body = append(body, b.residentBody()...)
	default:
		body = append(body, b.streamedBody()...)
	}
	k.Body = body
	k.Hints.MinArch = max(k.Hints.MinArch, kernel.NeedsArch(body)) // bulk copies: sm_90
	k.Meta["tile"] = fmt.Sprintf("%d×%d a warp, %d×%d warps", v.Rows*sh.M, v.Width*sh.N, l.wm, l.wn)
	k.Meta["mma"] = sh.String()
	k.Meta["a_resident"] = v.resident()
	if n := v.producers(); n > 0 {
		// warps that only copy (a client ranking by block size
		// leaves them out)
		k.Meta["producer_warps"] = n
	}
	if l.typ != kernel.MMAF64 {
		k.Meta["mma_type"] = l.typ.String()
	}
}

// colBlock is the block's index among the tiles of columns: its group
// index with the rows split over RowGroups blocks.
func (b *dmmaBuilder) colBlock() kernel.Expr {
	if b.l.groups > 1 {
		return kernel.Div(kernel.GroupX, kernel.Const(b.l.groups))
	}
	return kernel.GroupX
}

// streamedBody is a block's one tile with α·A streamed beside B.
func (b *dmmaBuilder) streamedBody() []kernel.Stmt {
	v, l := b.v, b.l
	T := l.threads
	pa := (l.aLen + T - 1) / T
	body := []kernel.Stmt{dmmaIdx("j0", kernel.Mul(b.colBlock(), kernel.Const(l.cols)))}
	for q := 0; q < pa; q++ {
		body = append(body, dmmaReal(fmt.Sprintf("pa%d", q), nil))
	}
	// load reads the chunk of columns c0… of α·A (elements tid + q·T of
	// one buffer of ash) and rows c0… of B into the registers.
	load := func(c0 kernel.Expr) []kernel.Stmt {
		var out []kernel.Stmt
		for q := 0; q < pa; q++ {
			decls, val := b.aValue(b.elem(q), c0)
			out = append(out, b.guard(q, l.aLen, dmmaScope(append(decls, kernel.Assign{Name: fmt.Sprintf("pa%d", q), Value: val})...))...)
		}
		return append(out, b.loadB("pb", c0, kernel.Ref("j0"))...)
	}
	body = append(body, kernel.Comment{Text: fmt.Sprintf("columns 0..%d of alpha*A and rows of B, %d at a time, through two buffers", b.g.k-1, v.Chunk)})
	body = append(body, load(kernel.Const(0))...)
	chunk := []kernel.Stmt{dmmaI32("buf", kernel.Rem(kernel.Ref("kc"), kernel.Const(2)))}
	for q := 0; q < pa; q++ {
		chunk = append(chunk, b.guard(q, l.aLen, kernel.Put("ash", kernel.Ref(fmt.Sprintf("pa%d", q)), kernel.Ref("buf"), b.elem(q)))...)
	}
	chunk = append(chunk, b.storeB("pb")...)
	chunk = append(chunk, kernel.Barrier{})
	if l.chunks > 1 {
		chunk = append(chunk, kernel.If{Cond: kernel.Lt(kernel.Ref("kc"), kernel.Const(l.chunks-1)),
			Then: load(kernel.Mul(plus(1, kernel.Ref("kc")), kernel.Const(v.Chunk)))})
	}
	chunk = append(chunk, b.step(kernel.Ref("s"), kernel.Ref("buf"))...)
	body = append(body, kernel.For{Var: "kc", From: kernel.Const(0), To: kernel.Const(l.chunks), Body: chunk})
	return append(body, b.epilogue(kernel.Ref("j0"))...)
}

// blockTiles declares t0, ts and tiles for the block (see tileRun).
func (b *dmmaBuilder) blockTiles() []kernel.Stmt {
	return tileRun(b.g, b.colBlock(), b.l.cols, b.v.Block, !b.v.Apart)
}

// tileRun declares t0, the block's first tile of columns, ts, the tiles
// from one of its tiles to its next, and tiles, how many it takes: block,
// or fewer at the end of the columns. Interleaved, the tiles go to the
// blocks in turn (ts is the blocks), so that the blocks of a wave read
// adjacent columns of each row of B at once; else each block takes a run
// of adjacent tiles (ts = 1). Runs put a wave's reads a run apart, which
// with a leading dimension of a multiple of 512 elements (PyFR's) fell on
// a few memory channels and ran far slower; interleaved, the
// kernels whose column groups run apart (-g) ran slower there instead
// (docs/rationale.md#tile-order). The cap on tiles is a select, not min:
// CUDA's min of an int and a long long is ambiguous.
func tileRun(g *gen, colBlock kernel.Expr, cols, block int, interleave bool) []kernel.Stmt {
	if !interleave {
		return []kernel.Stmt{
			dmmaIdx("t0", kernel.Mul(colBlock, kernel.Const(block))),
			dmmaIdx("ts", kernel.Const(1)),
			dmmaIdx("tiles", kernel.Div(kernel.Sub(plus(cols-1, g.nExpr()), kernel.Mul(kernel.Ref("t0"), kernel.Const(cols))), kernel.Const(cols))),
			kernel.If{Cond: kernel.Gt(kernel.Ref("tiles"), kernel.Const(block)), Then: []kernel.Stmt{kernel.Assign{Name: "tiles", Value: kernel.Const(block)}}},
		}
	}
	per := cols * block
	ts := kernel.Div(plus(per-1, g.nExpr()), kernel.Const(per))
	if g.pb.N > 0 {
		ts = kernel.Const((g.pb.N + per - 1) / per)
	}
	ntiles := kernel.Div(plus(cols-1, g.nExpr()), kernel.Const(cols))
	return []kernel.Stmt{
		dmmaIdx("t0", colBlock),
		dmmaIdx("ts", ts),
		// the grid is ts blocks (a group of rows), so t0 < ts ≤ ntiles
		dmmaIdx("tiles", kernel.Div(kernel.Add(kernel.Sub(ntiles, kernel.Ref("t0")), kernel.Sub(kernel.Ref("ts"), kernel.Const(1))), kernel.Ref("ts"))),
		kernel.If{Cond: kernel.Gt(kernel.Ref("tiles"), kernel.Const(block)), Then: []kernel.Stmt{kernel.Assign{Name: "tiles", Value: kernel.Const(block)}}},
	}
}

// tileCol is the first column of the block's tile i (see tileRun).
func tileCol(i kernel.Expr, cols int) kernel.Expr {
	return kernel.Mul(kernel.Add(kernel.Ref("t0"), kernel.Mul(i, kernel.Ref("ts"))), kernel.Const(cols))
}

// tileDone stores a tile's sums after the last chunk kc of step q and
// zeroes them for the next tile.
func (b *dmmaBuilder) tileDone() kernel.Stmt {
	v, l := b.v, b.l
	last := b.epilogue(tileCol(kernel.Div(kernel.Ref("q"), kernel.Const(l.chunks)), l.cols))
	for i := 0; i < v.Rows; i++ {
		for j := 0; j < v.Width; j++ {
			for e := 0; e < l.nc; e++ {
				last = append(last, kernel.Assign{Name: b.acc(i, j, e), Value: kernel.Float(0)})
			}
		}
	}
	return kernel.If{Cond: kernel.Eq(kernel.Ref("kc"), kernel.Const(l.chunks-1)), Then: last}
}

// residentBody stages α·A once, then runs the chunks of B of the block's
// tiles as one sequence q = tile·chunks + chunk, storing each tile's sums
// after its last chunk.
func (b *dmmaBuilder) residentBody() []kernel.Stmt {
	v, l := b.v, b.l
	T, cols, chunks := l.threads, l.cols, l.chunks
	decls, val := b.aValue(kernel.Ref("e"), nil)
	body := append(b.blockTiles(),
		kernel.Comment{Text: fmt.Sprintf("alpha*A, %d×%d, into shared memory once, in the A-fragment order (zero past m and k)", b.g.m, b.g.k)},
		kernel.For{Var: "e", From: kernel.Ref("tid"), To: kernel.Const(l.aLen), Step: int64(T), Body: append(decls, kernel.Put("ash", val, kernel.Ref("e")))},
		kernel.Comment{Text: fmt.Sprintf("the tiles' rows of B, %d at a time, through two buffers; chunk q is rows (q %% %d)·%d… of the block's tile q / %d (see tileRun)", v.Chunk, chunks, v.Chunk, chunks)},
	)
	body = append(body, b.loadB("pb", kernel.Const(0), kernel.Mul(kernel.Ref("t0"), kernel.Const(cols)))...)
	chunk := []kernel.Stmt{
		dmmaI32("buf", kernel.Rem(kernel.Ref("q"), kernel.Const(2))),
		dmmaIdx("kc", kernel.Rem(kernel.Ref("q"), kernel.Const(chunks))),
	}
	chunk = append(chunk, b.storeB("pb")...)
	chunk = append(chunk, kernel.Barrier{})
	chunk = append(chunk, kernel.If{Cond: kernel.Lt(plus(1, kernel.Ref("q")), kernel.Mul(kernel.Ref("tiles"), kernel.Const(chunks))), Then: append(
		[]kernel.Stmt{dmmaIdx("q1", plus(1, kernel.Ref("q")))},
		b.loadB("pb", kernel.Mul(kernel.Rem(kernel.Ref("q1"), kernel.Const(chunks)), kernel.Const(v.Chunk)), tileCol(kernel.Div(kernel.Ref("q1"), kernel.Const(chunks)), cols))...)})
	chunk = append(chunk, b.step(kernel.Add(kernel.Mul(kernel.Ref("kc"), kernel.Const(l.steps)), kernel.Ref("s")), nil)...)
	chunk = append(chunk, b.tileDone())
	return append(body, kernel.For{Var: "q", From: kernel.Const(0), To: kernel.Mul(kernel.Ref("tiles"), kernel.Const(chunks)), Body: chunk})
}

// asyncBody is residentBody with B copied asynchronously (Stages): S =
// Stages buffers of bsh, the copies of chunk q + S − 1 issued while chunk
// q is computed. Each chunk's copies are one group (committed even where
// empty, so that the groups count chunks): before chunk q a thread waits
// until at most S − 2 of its groups (q + 1 … q + S − 2) are in flight, and
// the barrier after the wait both shows every thread's copies of chunk q
// and ends every warp's work on chunk q − 1, whose buffer the next copies
// fill. One barrier a chunk, and B never passes through registers. With
// StreamA each chunk's columns of α·A are copied beside its rows of B
// (into Stages buffers of ash), for operators whose α·A would take most
// of the shared memory resident and leave one block a multiprocessor.
func (b *dmmaBuilder) asyncBody() []kernel.Stmt {
	v, l := b.v, b.l
	T, cols, chunks, S := l.threads, l.cols, l.chunks, v.Stages
	decls, val := b.aValue(kernel.Ref("e"), nil)
	total := kernel.Mul(kernel.Ref("tiles"), kernel.Const(chunks))
	// issue copies chunk q (an expression) of the block's sequence: its
	// rows of B, and with StreamA its columns of α·A.
	issue := func(q kernel.Expr) []kernel.Stmt {
		c0 := kernel.Mul(kernel.Rem(q, kernel.Const(chunks)), kernel.Const(v.Chunk))
		out := b.copyB(kernel.Rem(q, kernel.Const(S)), c0, tileCol(kernel.Div(q, kernel.Const(chunks)), cols))
		if v.StreamA {
			out = append(b.copyA(kernel.Rem(q, kernel.Const(S)), c0), out...)
		}
		return out
	}
	body := append(b.blockTiles(),
		kernel.Comment{Text: fmt.Sprintf("the tiles' rows of B, %d at a time, copied asynchronously into %d buffers, %d chunks ahead; chunk q is rows (q %% %d)·%d… of the block's tile q / %d (see tileRun)", v.Chunk, S, S-1, chunks, v.Chunk, chunks)},
	)
	for q := 0; q < S-1; q++ {
		body = append(body, kernel.If{Cond: kernel.Lt(kernel.Const(q), total), Then: issue(kernel.Const(q))}, kernel.AsyncCommit{})
	}
	switch {
	case v.RegA:
		body = append(body, b.fillRegA()...)
	case !v.StreamA:
		body = append(body,
			kernel.Comment{Text: fmt.Sprintf("alpha*A, %d×%d, into shared memory once, in the A-fragment order (zero past m and k), while they fly", b.g.m, b.g.k)},
			kernel.For{Var: "e", From: kernel.Ref("tid"), To: kernel.Const(l.aLen), Step: int64(T), Body: append(decls, kernel.Put("ash", val, kernel.Ref("e")))},
		)
	}
	// With Apart a chunk's barrier is its column group's (the columns
	// of B it copied and reads), α·A's the block's, once.
	var barrier kernel.Stmt = kernel.Barrier{}
	if v.Apart {
		body = append(body, kernel.Barrier{})
		barrier = kernel.Barrier{Threads: 32 * l.wm}
	}
	chunk := []kernel.Stmt{
		dmmaI32("buf", kernel.Rem(kernel.Ref("q"), kernel.Const(S))),
		dmmaIdx("kc", kernel.Rem(kernel.Ref("q"), kernel.Const(chunks))),
		kernel.AsyncWait{Pending: S - 2},
		barrier,
		dmmaIdx("q1", plus(S-1, kernel.Ref("q"))),
		kernel.If{Cond: kernel.Lt(kernel.Ref("q1"), total), Then: issue(kernel.Ref("q1"))},
		kernel.AsyncCommit{},
	}
	switch {
	case v.StreamA:
		chunk = append(chunk, b.step(kernel.Ref("s"), kernel.Ref("buf"))...)
	case v.RegA: // one chunk a tile: k-step s of α·A
		chunk = append(chunk, b.step(kernel.Ref("s"), nil)...)
	default:
		chunk = append(chunk, b.step(kernel.Add(kernel.Mul(kernel.Ref("kc"), kernel.Const(l.steps)), kernel.Ref("s")), nil)...)
	}
	chunk = append(chunk, b.tileDone())
	return append(body, kernel.For{Var: "q", From: kernel.Const(0), To: total, Body: chunk})
}

// producerBody is asyncBody with the copies given to a producer warp (the
// block's last; see MMAParams.Producer). Stage s of S has two transaction
// barriers: full[s], which the producer arms with the chunk's bytes and
// its rows' bulk copies count down, and empty[s], on which every consumer
// thread arrives when it has read the buffer. The producer waits on
// empty[s] before it refills the buffer (not the first time round), the
// consumers on full[s] before they read it: chunk q uses stage q % S in
// its (q / S)-th phase. The only block-wide barrier is the one after
// α·A is staged and the barriers initialised. With the column groups
// apart (-g) each group has a producer warp and barriers of its own: the
// producer copies the group's columns of each row, and the group's
// warps wait for it alone.
func (b *dmmaBuilder) producerBody() []kernel.Stmt {
	v, l := b.v, b.l
	T, cols, chunks, S, P := l.threads, l.cols, l.chunks, v.Stages, v.producers()
	consumers := T - 32*P
	gc := cols / P // a producer's columns of a tile
	decls, val := b.aValue(kernel.Ref("e"), nil)
	total := kernel.Mul(kernel.Ref("tiles"), kernel.Const(chunks))
	// Producer pg's barriers follow those of the ones before it.
	barAt := func(at kernel.Expr) kernel.Expr {
		if P > 1 {
			return kernel.Add(kernel.Mul(kernel.Ref("pg"), kernel.Const(2*S)), at)
		}
		return at
	}
	bar := func(op kernel.TxOp, at kernel.Expr) kernel.TxBarrier {
		return kernel.TxBarrier{Op: op, Bar: "bar", Index: barAt(at)}
	}
	var init []kernel.Stmt
	for g := 0; g < P; g++ {
		for s := 0; s < S; s++ {
			full := kernel.TxBarrier{Op: kernel.TxInit, Bar: "bar", Index: kernel.Const(2*S*g + s), Count: 32}
			empty := kernel.TxBarrier{Op: kernel.TxInit, Bar: "bar", Index: kernel.Const(2*S*g + S + s), Count: consumers / P}
			init = append(init, full, empty)
		}
	}
	body := append(b.blockTiles(),
		kernel.If{Cond: kernel.Eq(kernel.Ref("tid"), kernel.Const(0)), Then: init},
		kernel.Comment{Text: fmt.Sprintf("alpha*A, %d×%d, into shared memory once, in the A-fragment order (zero past m and k)", b.g.m, b.g.k)},
		kernel.For{Var: "e", From: kernel.Ref("tid"), To: kernel.Const(l.aLen), Step: int64(T), Body: append(decls, kernel.Put("ash", val, kernel.Ref("e")))},
		kernel.Barrier{},
	)
	// The producer: chunk q is rows (q % chunks)·Chunk… of tile
	// q / chunks (tileCol), w of its columns in B (a last tile may hold
	// fewer): the first wb (a multiple of 16 bytes) a bulk copy a row,
	// the rest loaded and stored by the lane, and zeros in the rows past
	// k of a last chunk (α·A's columns there are zero, but the buffer
	// may hold anything). Lane 0 expects the copies' bytes first; every
	// lane arrives after its copies and stores, so that the phase
	// completes with all of them seen, and a lane that stored fences
	// them from the bulk copies that later refill the buffer.
	vec := 16 / l.bytes
	kk := b.g.k
	wait := bar(kernel.TxWait, plus(S, kernel.Ref("buf")))
	wait.Parity = kernel.Rem(plus(1, kernel.Div(kernel.Ref("q"), kernel.Const(S))), kernel.Const(2))
	expect := bar(kernel.TxExpect, kernel.Ref("buf"))
	expect.Bytes = kernel.Mul(kernel.Mul(kernel.Ref("wb"), kernel.Ref("rows")), kernel.Const(l.bytes))
	rowAt := func(c kernel.Expr) kernel.Expr {
		return kernel.Add(kernel.Mul(kernel.Add(kernel.Ref("brow0"), kernel.Ref("r")), b.g.ldbExpr()), kernel.Add(kernel.Ref("j0"), c))
	}
	// Column c of producer pg's group.
	inGroup := func(c kernel.Expr) kernel.Expr {
		if P > 1 {
			return kernel.Add(c, kernel.Mul(kernel.Ref("pg"), kernel.Const(gc)))
		}
		return c
	}
	bshAt := func(c kernel.Expr) kernel.Expr {
		return kernel.Add(kernel.Mul(kernel.Ref("r"), kernel.Const(l.stride)), inGroup(c))
	}
	copyRow := []kernel.Stmt{
		kernel.If{Cond: kernel.Gt(kernel.Ref("wb"), kernel.Const(0)), Then: []kernel.Stmt{
			kernel.BulkCopy{Dst: "bsh", DstIndex: []kernel.Expr{kernel.Ref("buf"), bshAt(kernel.Const(0))},
				Src: "b", SrcIndex: rowAt(kernel.Const(0)), Elements: kernel.Ref("wb"), Bar: "bar", BarIndex: barAt(kernel.Ref("buf"))},
		}},
		kernel.For{Var: "col", From: kernel.Ref("wb"), To: kernel.Ref("w"), Body: []kernel.Stmt{
			kernel.Put("bsh", kernel.At("b", rowAt(kernel.Ref("col"))), kernel.Ref("buf"), bshAt(kernel.Ref("col"))),
		}},
	}
	var row kernel.Stmt = dmmaScope(copyRow...)
	stored := kernel.Expr(kernel.Lt(kernel.Ref("wb"), kernel.Ref("w")))
	if kk%v.Chunk != 0 {
		row = kernel.If{Cond: kernel.Lt(kernel.Ref("r"), kernel.Ref("rows")), Then: copyRow, Else: []kernel.Stmt{
			kernel.For{Var: "col", From: kernel.Const(0), To: kernel.Ref("w"), Body: []kernel.Stmt{
				kernel.Put("bsh", kernel.Float(0), kernel.Ref("buf"), bshAt(kernel.Ref("col"))),
			}},
		}}
		stored = kernel.Or(stored, kernel.Lt(kernel.Ref("rows"), kernel.Const(v.Chunk)))
	}
	j0 := inGroup(tileCol(kernel.Div(kernel.Ref("q"), kernel.Const(chunks)), cols))
	produce := []kernel.Stmt{
		dmmaI32("buf", kernel.Rem(kernel.Ref("q"), kernel.Const(S))),
		kernel.If{Cond: kernel.Ge(kernel.Ref("q"), kernel.Const(S)), Then: []kernel.Stmt{wait}},
		dmmaIdx("j0", j0),
		dmmaIdx("w", kernel.Sub(b.g.nExpr(), kernel.Ref("j0"))),
		kernel.If{Cond: kernel.Gt(kernel.Ref("w"), kernel.Const(gc)), Then: []kernel.Stmt{kernel.Assign{Name: "w", Value: kernel.Const(gc)}}},
	}
	if P > 1 { // a group's columns may all lie past n in a last tile
		produce = append(produce, kernel.If{Cond: kernel.Lt(kernel.Ref("w"), kernel.Const(0)), Then: []kernel.Stmt{kernel.Assign{Name: "w", Value: kernel.Const(0)}}})
	}
	produce = append(produce,
		dmmaIdx("wb", kernel.Mul(kernel.Div(kernel.Ref("w"), kernel.Const(vec)), kernel.Const(vec))),
		dmmaIdx("brow0", kernel.Mul(kernel.Rem(kernel.Ref("q"), kernel.Const(chunks)), kernel.Const(v.Chunk))),
		dmmaIdx("rows", kernel.Sub(kernel.Const(kk), kernel.Ref("brow0"))),
		kernel.If{Cond: kernel.Gt(kernel.Ref("rows"), kernel.Const(v.Chunk)), Then: []kernel.Stmt{kernel.Assign{Name: "rows", Value: kernel.Const(v.Chunk)}}},
		kernel.If{Cond: kernel.Eq(kernel.Ref("lane"), kernel.Const(0)), Then: []kernel.Stmt{expect}},
		kernel.For{Var: "r", From: kernel.Ref("lane"), To: kernel.Const(v.Chunk), Step: 32, Body: []kernel.Stmt{row}},
		kernel.If{Cond: stored, Then: []kernel.Stmt{kernel.WGMMASync{Kind: kernel.ProxyFence}}},
		bar(kernel.TxArrive, kernel.Ref("buf")),
	)
	// The consumers.
	ready := bar(kernel.TxWait, kernel.Ref("buf"))
	ready.Parity = kernel.Rem(kernel.Div(kernel.Ref("q"), kernel.Const(S)), kernel.Const(2))
	consume := []kernel.Stmt{
		dmmaI32("buf", kernel.Rem(kernel.Ref("q"), kernel.Const(S))),
		dmmaIdx("kc", kernel.Rem(kernel.Ref("q"), kernel.Const(chunks))),
		ready,
	}
	consume = append(consume, b.step(kernel.Add(kernel.Mul(kernel.Ref("kc"), kernel.Const(l.steps)), kernel.Ref("s")), nil)...)
	consume = append(consume, bar(kernel.TxArrive, plus(S, kernel.Ref("buf"))), b.tileDone())
	first := kernel.Const(consumers / 32) // the (first) producer warp
	doc := fmt.Sprintf("warp %d copies the tiles' rows of B, %d a chunk, into %d buffers; the others compute", consumers/32, v.Chunk, S)
	isProducer := kernel.Expr(kernel.Eq(kernel.Ref("warp"), first))
	var producer, consumer []kernel.Stmt
	if P > 1 { // pg: the producer's group, or the consumer's
		doc = fmt.Sprintf("warps %d… each copy their column group's %d columns of the tiles' rows of B, %d a chunk, into %d buffers; the others compute", consumers/32, gc, v.Chunk, S)
		isProducer = kernel.Ge(kernel.Ref("warp"), first)
		producer = []kernel.Stmt{dmmaI32("pg", kernel.Sub(kernel.Ref("warp"), first))}
		consumer = []kernel.Stmt{dmmaI32("pg", kernel.Ref("wc"))}
	}
	return append(body, kernel.Comment{Text: doc}, kernel.If{Cond: isProducer,
		Then: append(producer, kernel.For{Var: "q", From: kernel.Const(0), To: total, Body: produce}),
		Else: append(consumer, kernel.For{Var: "q", From: kernel.Const(0), To: total, Body: consume}),
	})
}
