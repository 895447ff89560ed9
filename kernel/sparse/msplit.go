package sparse

import (
	"fmt"
)

// MSplitParams are the parameters of the row splits, cstream-msplit and
// bstream-msplit (Kind): the rows of A shared out over Split y threads a
// column, "cstream-msplit/x32-y8[-g][-w2][-bB]" or
// "bstream-msplit/x64-y4[-c16][-bB]".
type MSplitParams struct {
	Kind  Family // CStreamMSplit or BStreamMSplit
	Block int    // threads per block along x
	Width int    // columns per thread: 1 or 2 (cstream-msplit)
	Split int    // threads along y
	// Chunk (bstream-msplit, -c) is the rows of B staged a step in
	// shared memory; 0 reads B from global memory (see rowSplitKernel).
	Chunk int
	// Grouped (cstream-msplit only, -g) deals rows to y threads by the
	// rows of B they read instead of in their natural order.
	Grouped bool
	// Occupancy is the blocks per multiprocessor the CUDA compiler must
	// allow (capping registers); 0 leaves it free.
	Occupancy int
}

func (v MSplitParams) Family() Family { return v.Kind }
func (v MSplitParams) String() string { return v.Name() }

// Name is e.g. "cstream-msplit/x32-y8-g" or "bstream-msplit/x64-y4-c16".
func (v MSplitParams) Name() string {
	return simtName(v.Kind, v.Block, v.Split, v.Chunk, v.Grouped, v.Width, v.Occupancy, false)
}

func parseMSplit(def Variant, name string, opts []string) (Variant, error) {
	v := def.(MSplitParams)
	has, err := readOptions(name, opts, "cstream-msplit/x32-y8-g or bstream-msplit/x64-y4-c16",
		need("x", &v.Block), num("y", &v.Split), numAfter("c", "y", &v.Chunk), flag("g", &v.Grouped),
		num("w", &v.Width), num("b", &v.Occupancy))
	switch {
	case err != nil:
		return nil, err
	case has["c"] && v.Chunk < 1:
		return nil, fmt.Errorf("variant %q: chunk must be ≥ 1 (leave out -c for no staging)", name)
	case v.Kind == CStreamMSplit && has["c"]:
		return nil, fmt.Errorf("variant %q: %s takes no -c", name, v.Kind)
	case v.Kind == BStreamMSplit && !has["y"]:
		return nil, fmt.Errorf("variant %q: %s needs -yS (and -cC to stage B in shared memory)", name, v.Kind)
	case v.Kind == BStreamMSplit && !has["c"]:
		v.Chunk = 0 // no staging
	}
	return v, nil
}

// rowSplit says whether v cuts the rows into contiguous (or grouped) sets,
// one per y thread, reading B from global memory: cstream-msplit, and
// bstream-msplit without staging (no chunk).
func (v MSplitParams) rowSplit() bool { return v.Kind == CStreamMSplit || v.Chunk == 0 }

func (v MSplitParams) valid() error {
	switch {
	case v.Kind != CStreamMSplit && v.Kind != BStreamMSplit:
		return fmt.Errorf("variant %s: row-split parameters are for cstream-msplit and bstream-msplit", v.Name())
	case v.Block < 1 || v.Block > 1024:
		return fmt.Errorf("variant %s: block %d out of 1..1024", v.Name(), v.Block)
	case v.Split < 0 || v.Split > 1024 || v.Chunk < 0 || v.Chunk > maxChunk: // bounded before any product
		return fmt.Errorf("variant %s: split out of 0..1024 or chunk out of 0..%d", v.Name(), maxChunk)
	case v.Width != 1 && v.Width != 2:
		return fmt.Errorf("variant %s: width must be 1 or 2", v.Name())
	case v.Kind == BStreamMSplit && (v.Split < 2 || v.Width != 1):
		return fmt.Errorf("variant %s: split must be ≥ 2, chunk ≥ 1 (bstream-msplit: ≥ 0) and width 1", v.Name())
	case v.Kind == CStreamMSplit && (v.Split < 2 || v.Chunk != 0):
		return fmt.Errorf("variant %s: split must be ≥ 2 and no chunk", v.Name())
	case v.Grouped && v.Kind != CStreamMSplit:
		return fmt.Errorf("variant %s: only cstream-msplit groups rows (-g)", v.Name())
	case v.Occupancy < 0 || v.Occupancy > 32:
		return fmt.Errorf("variant %s: occupancy must be 0..32 blocks", v.Name())
	case v.Block*v.Split > 1024:
		return fmt.Errorf("variant %s: more than 1024 threads per block", v.Name())
	}
	return nil
}

func (v MSplitParams) check(pb Problem) error { return checkSIMT(pb, v, v.Width) }

func (v MSplitParams) sharedBytes(pb Problem) int {
	if v.Kind == BStreamMSplit {
		return 2 * v.Chunk * v.Block * pb.DType.Bytes()
	}
	return 0
}

func (v MSplitParams) launch() launchShape {
	return launchShape{v.Block, v.Split, v.Width, v.Occupancy}
}

func (v MSplitParams) build(g *gen) error {
	if v.rowSplit() { // B from global memory
		g.rowSplitKernel(v)
	} else {
		g.msplitKernel(v)
	}
	return nil
}

// liveValues: the open sums of the busiest group (row splits), or a y
// thread's share of the sums and of the prefetched chunk (staged).
func (v MSplitParams) liveValues(pb Problem) int {
	if v.Kind != BStreamMSplit {
		return 0
	}
	rowNZ := rowSupports(pb)
	if v.rowSplit() {
		most := 0
		for _, rows := range contiguousRows(rowNZ, v.Split) {
			most = max(most, openSums(rowNZ, rows, pb.Op.Cols))
		}
		return most
	}
	peak := openSums(rowNZ, allRows(pb.Op.Rows), pb.Op.Cols)
	return (peak+v.Split-1)/v.Split + (v.Chunk+v.Split-1)/v.Split
}

// maxChunk bounds a split's chunk (-c), far above any k.
const maxChunk = 1 << 16
