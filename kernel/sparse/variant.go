package sparse

import (
	"fmt"
	"strings"
)

// Family is a kernel strategy's name: the part of a variant's name before
// the slash.
type Family string

// The families whose parameters are StreamParams, MSplitParams and
// KSplitParams (the other families are declared beside their parameters).
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

// Families lists the one-thread-a-column families and their splits in a
// stable order (AllFamilies lists every family).
var Families = []Family{CStream, BStream, BStreamMSplit, CStreamKSplit, CStreamMSplit}

// Variant is one point of a family's parameter space: a value of the
// family's parameter struct (StreamParams, MSplitParams, KSplitParams,
// DenseParams, BlocksParams, MMAParams or WGMMAParams). Each struct
// prints its own name, checks its own parameters and builds its own
// kernel; the strategies table reads the names back.
type Variant interface {
	// Name is the variant's stable name, e.g. "bstream-msplit/x64-y4-c16".
	Name() string
	String() string
	// Family is the strategy the variant belongs to.
	Family() Family

	// valid reports what is wrong with the parameters themselves.
	valid() error
	// check reports why the variant does not fit the problem's shape,
	// precision or the device limits (after valid and CheckOperator).
	check(pb Problem) error
	// sharedBytes is the shared memory the kernel takes (blocks: 0 here,
	// its builder sets it from the operator's block plan).
	sharedBytes(pb Problem) int
	// launch is the block and columns newGen starts every kernel from
	// (builders that lay out their threads otherwise override it).
	launch() launchShape
	// build fills in g's kernel.
	build(g *gen) error
}

// launchShape is the launch newGen gives a kernel before its builder
// runs: x·y threads a block, width columns a thread along x, and the
// blocks a multiprocessor CUDA must allow (0: free).
type launchShape struct{ x, y, width, occupancy int }

// strategy is one family's entry in the strategies table: its defaults
// (what a bare family name means) and how the rest of a name reads.
type strategy struct {
	family   Family
	defaults Variant
	// parse reads the options after "family/" into a copy of the
	// defaults; the result is checked by valid afterwards.
	parse func(defaults Variant, name string, opts []string) (Variant, error)
}

// strategies lists every family, in the order AllFamilies gives.
var strategies = []strategy{
	{CStream, StreamParams{Kind: CStream, Block: 128, Width: 1}, parseStream},
	{BStream, StreamParams{Kind: BStream, Block: 128, Width: 1}, parseStream},
	{BStreamMSplit, MSplitParams{Kind: BStreamMSplit, Block: 64, Width: 1, Split: 4, Chunk: 16}, parseMSplit},
	{CStreamKSplit, KSplitParams{Block: 64, Split: 2, Chunk: 16}, parseKSplit},
	{CStreamMSplit, MSplitParams{Kind: CStreamMSplit, Block: 64, Width: 1, Split: 2}, parseMSplit},
	{Dense, DenseParams{Block: 8, Rows: 8, Width: 4, Chunk: 8}, parseDense},
	{Blocks, BlocksParams{Block: 16, Split: 16}, parseBlocks},
	{DMMA, dmmaDefault, parseMMA},
	{TMMA, tmmaDefault, parseMMA},
	{WGMMA, wgmmaDefault, parseWGMMA},
}

// AllFamilies lists every family in a stable order.
func AllFamilies() []Family {
	out := make([]Family, len(strategies))
	for i, s := range strategies {
		out[i] = s.family
	}
	return out
}

func strategyOf(f Family) (strategy, bool) {
	for _, s := range strategies {
		if s.family == f {
			return s, true
		}
	}
	return strategy{}, false
}

// ParseVariant reads a name as printed by Name. A bare family name takes
// its defaults.
func ParseVariant(s string) (Variant, error) {
	fam, rest, slash := strings.Cut(s, "/")
	st, ok := strategyOf(Family(fam))
	if !ok {
		return nil, fmt.Errorf("unknown variant %q (want a family, %s, with its options, e.g. cstream, bstream/x128-w2, bstream-msplit/x64-y4-c16)", s, familyList())
	}
	v := st.defaults
	if slash {
		var err error
		if v, err = st.parse(v, s, strings.Split(rest, "-")); err != nil {
			return nil, err
		}
	}
	if err := v.valid(); err != nil {
		return nil, err
	}
	return v, nil
}

func familyList() string {
	var names []string
	for _, f := range AllFamilies() {
		names = append(names, string(f))
	}
	return strings.Join(names, ", ")
}

// Defaults returns a family's default parameters (nil for an unknown
// family).
func Defaults(f Family) Variant {
	st, _ := strategyOf(f)
	return st.defaults
}
