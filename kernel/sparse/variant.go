package sparse

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Family is a kernel strategy.
type Family string

// The families.
const (
	// CStream: one thread per column; each output row is evaluated and
	// stored in turn, loading the B values it needs on first use.
	CStream Family = "cstream"
	// BStream: one thread per column; each used row of B is loaded once
	// and added into the partial sums of every row that needs it; a row
	// is stored as soon as its last non-zero is consumed.
	BStream Family = "bstream"
	// BStreamMSplit: rows of A split across the block's y threads; B
	// staged in chunks of rows through double-buffered shared memory, or
	// with no chunk (-c omitted, Chunk 0) read straight from global
	// memory by each y thread for its contiguous group of rows, as in
	// cstream-msplit but accumulating as bstream does: every row of B a
	// thread needs is loaded once, for few live values besides the sums.
	BStreamMSplit Family = "bstream-msplit"
	// CStreamKSplit: columns of A split across the block's y threads;
	// partial sums reduced through double-buffered shared memory.
	CStreamKSplit Family = "cstream-ksplit"
	// CStreamMSplit: rows of A cut into contiguous groups, one per y
	// thread, each evaluated as in cstream; B is read straight from
	// global memory (the y threads of a column share it through the
	// cache), so there is no shared memory and no barrier. Each thread
	// keeps fewer values live than cstream, for higher occupancy.
	CStreamMSplit Family = "cstream-msplit"
)

// Families lists every family in a stable order.
var Families = []Family{CStream, BStream, BStreamMSplit, CStreamKSplit, CStreamMSplit}

// splits says whether the family spreads a column over y threads.
func (f Family) splits() bool {
	return f == BStreamMSplit || f == CStreamKSplit || f == CStreamMSplit
}

// rowSplit says whether v cuts the rows into contiguous (or grouped) sets,
// one per y thread, reading B from global memory: cstream-msplit, and
// bstream-msplit without staging (no chunk).
func (v Variant) rowSplit() bool {
	return v.Family == CStreamMSplit || (v.Family == BStreamMSplit && v.Chunk == 0)
}

// chunked says whether the family stages its work in chunks (-c).
func (f Family) chunked() bool { return f == BStreamMSplit || f == CStreamKSplit }

// Variant is one point of a family's parameter space.
type Variant struct {
	Family Family `json:"family"`
	Block  int    `json:"block"`           // threads per block along x
	Width  int    `json:"width"`           // columns per thread: 1 or 2
	Split  int    `json:"split,omitempty"` // threads along y (msplit, ksplit)
	Chunk  int    `json:"chunk,omitempty"` // B rows per stage (msplit), C rows per reduction (ksplit)
	// Grouped (cstream-msplit only, -g) deals rows to y threads by the
	// rows of B they read instead of in their natural order.
	Grouped bool `json:"grouped,omitempty"`
	// Occupancy is the blocks per multiprocessor the CUDA compiler must
	// allow (capping registers); 0 leaves it free. Other dialects ignore it.
	Occupancy int `json:"occupancy,omitempty"`
	// Rows (dense only) is the rows of C each thread computes; Width is
	// then its columns, Block its threads along x, Chunk the columns of
	// A staged per step (see Dense).
	Rows int `json:"rows,omitempty"`
	// Large (blocks only, -l) lets the kernel hold up to
	// blocksLargeShared bytes of shared memory: CUDA only, sm_80+.
	Large bool `json:"large_shared,omitempty"`
	// Tiles (blocks only, -t) is the tiles of Block columns a block does
	// in turn, the next one's B loaded while the current one computes.
	Tiles int `json:"tiles,omitempty"`
	// MMA (dmma and tmma only) is the tensor-core shape, e.g. "m8n8k4"
	// (see DMMA, TMMA).
	MMA string `json:"mma,omitempty"`
	// SplitA (tmma only, -s) keeps α·A in shared memory as it is and
	// splits its fragments into TF32 hi and lo parts as they are read,
	// instead of staging both parts: half the shared memory (see TMMA).
	SplitA bool `json:"split_a,omitempty"`
	// StageB (tmma only, -h) splits B into its TF32 hi and lo parts as it
	// is staged, both kept in shared memory side by side, instead of as
	// each warp reads its fragments (see TMMA).
	StageB bool `json:"stage_b,omitempty"`
	// Stages (dmma and tmma with α·A resident, -a) is the buffers of B
	// in shared memory, filled by asynchronous copies (kernel.CopyAsync,
	// cp.async) that many chunks ahead; 0 stages B through registers
	// into two buffers.
	Stages int `json:"stages,omitempty"`
	// StreamA (with Stages, -p) copies α·A chunk by chunk beside B into
	// the Stages buffers instead of keeping it resident: for operators
	// whose α·A would fill the shared memory.
	StreamA bool `json:"stream_a,omitempty"`
	// RowGroups (dmma and tmma, -y) splits the rows of C over that many
	// blocks a tile of columns, each with its share of α·A: less shared
	// memory a block where α·A is large, B read by each (the later reads
	// from L2: the blocks of a tile are adjacent). 0 or 1: one block.
	RowGroups int `json:"row_groups,omitempty"`
	// Overlap (wgmma only, -o) lets a chunk's wgmma run on while the
	// next chunk's fragments are read and split: each chunk's wait leaves
	// its own group in flight (see WGMMA).
	Overlap bool `json:"overlap,omitempty"`
	// Apart (wgmma -w, dmma and tmma -g) has each warpgroup (dmma: each
	// column group of warps) copy its own columns of B and wait at a
	// chunk only for its own threads (kernel.Barrier.Threads), not for
	// the block's.
	Apart bool `json:"apart,omitempty"`
	// RegA (dmma with B copied in stages, -k) keeps each warp's α·A
	// fragments in its registers for all its tiles instead of in shared
	// memory: one chunk of B a tile (every k-step unrolled, so that the
	// fragments are named at compile time), shared memory for B alone,
	// and no shared-memory reads of α·A (see DMMA).
	RegA bool `json:"reg_a,omitempty"`
	// Stream (cstream and bstream, -nt) stages the block's rows of C in
	// shared memory and writes them out a cache line at a time with
	// streamed stores (kernel.VecStore.Stream): on CPUs non-temporal
	// stores, which do not read C's lines before writing them. β = 0
	// only (C is not read).
	Stream bool `json:"stream,omitempty"`
	// Prefetch (dense CPU form only, -pf) has each tile prefetch the
	// next tile's rows of C and its share of the next block's rows of
	// B (kernel.Prefetch): those rows lie n apart, too many streams for
	// a CPU's hardware prefetchers (see denseHostPrefetch).
	Prefetch bool `json:"prefetch,omitempty"`
}

// Name is the variant's stable name, e.g. "bstream-msplit/x64-y4-c16".
func (v Variant) Name() string {
	switch v.Family {
	case Dense:
		return v.denseName()
	case Blocks:
		return v.blocksName()
	case DMMA, TMMA:
		return v.dmmaName()
	case WGMMA:
		return v.wgmmaName()
	}
	s := fmt.Sprintf("%s/x%d", v.Family, v.Block)
	if v.Split > 0 {
		s += fmt.Sprintf("-y%d", v.Split)
	}
	if v.Chunk > 0 {
		s += fmt.Sprintf("-c%d", v.Chunk)
	}
	if v.Grouped {
		s += "-g"
	}
	if v.Width > 1 {
		s += fmt.Sprintf("-w%d", v.Width)
	}
	if v.Occupancy > 0 {
		s += fmt.Sprintf("-b%d", v.Occupancy)
	}
	if v.Stream {
		s += "-nt"
	}
	return s
}

func (v Variant) String() string { return v.Name() }

var variantRE = regexp.MustCompile(`^(cstream|bstream|bstream-msplit|cstream-ksplit|cstream-msplit)(?:/x(\d+)(?:-y(\d+)(?:-c(\d+))?)?(-g)?(?:-w(\d+))?(?:-b(\d+))?(-nt)?)?$`)

// ParseVariant reads a name as printed by Name. A bare family name takes
// its defaults.
func ParseVariant(s string) (Variant, error) {
	if s == string(Dense) || strings.HasPrefix(s, string(Dense)+"/") {
		return parseDense(s)
	}
	if s == string(Blocks) || strings.HasPrefix(s, string(Blocks)+"/") {
		return parseBlocks(s)
	}
	if s == string(DMMA) || strings.HasPrefix(s, string(DMMA)+"/") || s == string(TMMA) || strings.HasPrefix(s, string(TMMA)+"/") {
		return parseDMMA(s)
	}
	if s == string(WGMMA) || strings.HasPrefix(s, string(WGMMA)+"/") {
		return parseWGMMA(s)
	}
	m := variantRE.FindStringSubmatch(s)
	if m == nil {
		return Variant{}, fmt.Errorf("unknown variant %q (want e.g. cstream, bstream/x128-w2, bstream-msplit/x64-y4-c16)", s)
	}
	v := Defaults(Family(m[1]))
	num := func(s string, dst *int) {
		if s != "" {
			*dst, _ = strconv.Atoi(s)
		}
	}
	num(m[2], &v.Block)
	num(m[3], &v.Split)
	num(m[4], &v.Chunk)
	v.Grouped = m[5] != ""
	num(m[6], &v.Width)
	num(m[7], &v.Occupancy)
	v.Stream = m[8] != ""
	if !v.Family.splits() && v.Split != 0 {
		return Variant{}, fmt.Errorf("variant %q: %s takes no -y/-c", s, v.Family)
	}
	switch {
	case m[4] != "" && v.Chunk < 1:
		return Variant{}, fmt.Errorf("variant %q: chunk must be ≥ 1 (leave out -c for no staging)", s)
	case v.Family == BStreamMSplit && m[2] != "" && m[3] == "":
		return Variant{}, fmt.Errorf("variant %q: %s needs -yS (and -cC to stage B in shared memory)", s, v.Family)
	case v.Family == BStreamMSplit && m[3] != "" && m[4] == "":
		v.Chunk = 0 // no staging
	case v.Family.chunked() && m[2] != "" && m[4] == "":
		return Variant{}, fmt.Errorf("variant %q: %s needs -yS-cC", s, v.Family)
	}
	if v.Family == CStreamMSplit && m[4] != "" {
		return Variant{}, fmt.Errorf("variant %q: %s takes no -c", s, v.Family)
	}
	return v, v.valid()
}

// Defaults returns a family's default parameters.
func Defaults(f Family) Variant {
	switch f {
	case Dense:
		return Variant{Family: f, Block: 8, Rows: 8, Width: 4, Chunk: 8}
	case Blocks:
		return Variant{Family: f, Block: 16, Width: 1, Split: 16}
	case DMMA:
		return dmmaDefault
	case TMMA:
		return tmmaDefault
	case WGMMA:
		return wgmmaDefault
	case BStreamMSplit:
		return Variant{Family: f, Block: 64, Width: 1, Split: 4, Chunk: 16}
	case CStreamKSplit:
		return Variant{Family: f, Block: 64, Width: 1, Split: 2, Chunk: 16}
	case CStreamMSplit:
		return Variant{Family: f, Block: 64, Width: 1, Split: 2}
	}
	return Variant{Family: f, Block: 128, Width: 1}
}

// maxChunk bounds a streaming variant's chunk (-c), far above any k.
const maxChunk = 1 << 16

func (v Variant) valid() error {
	if v.RegA && v.Family != DMMA {
		return fmt.Errorf("variant %s: only dmma keeps α·A in registers (-k)", v.Name())
	}
	if v.Prefetch && !v.denseHost() {
		return fmt.Errorf("variant %s: only the dense CPU form (dense/xX-rR-wW) prefetches (-pf)", v.Name())
	}
	switch v.Family {
	case Dense:
		return v.validDense()
	case Blocks:
		return v.validBlocks()
	case DMMA, TMMA:
		if v.Overlap {
			return fmt.Errorf("variant %s: only wgmma overlaps chunks (-o)", v.Name())
		}
		return v.validDMMA()
	case WGMMA:
		return v.validWGMMA()
	}
	if v.Rows != 0 {
		return fmt.Errorf("variant %s: only dense takes rows per thread", v.Name())
	}
	switch {
	case v.Block < 1 || v.Block > 1024:
		return fmt.Errorf("variant %s: block %d out of 1..1024", v.Name(), v.Block)
	case v.Split < 0 || v.Split > 1024 || v.Chunk < 0 || v.Chunk > maxChunk: // bounded before any product
		return fmt.Errorf("variant %s: split out of 0..1024 or chunk out of 0..%d", v.Name(), maxChunk)
	case v.Width != 1 && v.Width != 2:
		return fmt.Errorf("variant %s: width must be 1 or 2", v.Name())
	case v.Family.chunked() && (v.Split < 2 || v.Chunk < 0 || (v.Chunk == 0 && v.Family != BStreamMSplit) || v.Width != 1):
		return fmt.Errorf("variant %s: split must be ≥ 2, chunk ≥ 1 (bstream-msplit: ≥ 0) and width 1", v.Name())
	case v.Family == CStreamMSplit && (v.Split < 2 || v.Chunk != 0):
		return fmt.Errorf("variant %s: split must be ≥ 2 and no chunk", v.Name())
	case v.Grouped && v.Family != CStreamMSplit:
		return fmt.Errorf("variant %s: only cstream-msplit groups rows (-g)", v.Name())
	case v.Stream && ((v.Family != CStream && v.Family != BStream) || v.Width != 1):
		return fmt.Errorf("variant %s: only cstream and bstream of one column a thread stream C (-nt)", v.Name())
	case !v.Family.splits() && (v.Split != 0 || v.Chunk != 0):
		return fmt.Errorf("variant %s: %s takes no split or chunk", v.Name(), v.Family)
	case v.Occupancy < 0 || v.Occupancy > 32:
		return fmt.Errorf("variant %s: occupancy must be 0..32 blocks", v.Name())
	case v.Block*max(v.Split, 1) > 1024:
		return fmt.Errorf("variant %s: more than 1024 threads per block", v.Name())
	}
	return nil
}
