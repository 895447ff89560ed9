package sparse

import (
	"fmt"

	"github.com/bespoke-hpc/bespoke/operator"
)

// KSplitParams are the parameters of cstream-ksplit: the columns of A
// shared out over Split y threads a column, partial sums reduced Chunk
// rows at a time, "cstream-ksplit/x64-y2-c16[-bB]".
type KSplitParams struct {
	Block int // threads per block along x
	Split int // threads along y
	Chunk int // rows of C a reduction
	// Occupancy is the blocks per multiprocessor the CUDA compiler must
	// allow (capping registers); 0 leaves it free.
	Occupancy int
}

func (v KSplitParams) Family() Family { return CStreamKSplit }
func (v KSplitParams) String() string { return v.Name() }

// Name is e.g. "cstream-ksplit/x64-y2-c16".
func (v KSplitParams) Name() string {
	return simtName(CStreamKSplit, v.Block, v.Split, v.Chunk, false, 1, v.Occupancy, false)
}

func parseKSplit(def Variant, name string, opts []string) (Variant, error) {
	v := def.(KSplitParams)
	width := 1
	has, err := readOptions(name, opts, "cstream-ksplit/x64-y2-c16",
		need("x", &v.Block), num("y", &v.Split), numAfter("c", "y", &v.Chunk), num("w", &width), num("b", &v.Occupancy))
	switch {
	case err != nil:
		return nil, err
	case has["c"] && v.Chunk < 1:
		return nil, fmt.Errorf("variant %q: chunk must be ≥ 1", name)
	case !has["c"]:
		return nil, fmt.Errorf("variant %q: %s needs -yS-cC", name, CStreamKSplit)
	case width != 1:
		return nil, fmt.Errorf("variant %q: %s takes one column a thread (no -w)", name, CStreamKSplit)
	}
	return v, nil
}

func (v KSplitParams) valid() error {
	switch {
	case v.Block < 1 || v.Block > 1024:
		return fmt.Errorf("variant %s: block %d out of 1..1024", v.Name(), v.Block)
	case v.Split < 0 || v.Split > 1024 || v.Chunk < 0 || v.Chunk > maxChunk: // bounded before any product
		return fmt.Errorf("variant %s: split out of 0..1024 or chunk out of 0..%d", v.Name(), maxChunk)
	case v.Split < 2 || v.Chunk < 1:
		return fmt.Errorf("variant %s: split must be ≥ 2, chunk ≥ 1 and width 1", v.Name())
	case v.Occupancy < 0 || v.Occupancy > 32:
		return fmt.Errorf("variant %s: occupancy must be 0..32 blocks", v.Name())
	case v.Block*v.Split > 1024:
		return fmt.Errorf("variant %s: more than 1024 threads per block", v.Name())
	}
	return nil
}

func (v KSplitParams) check(pb Problem) error { return checkSIMT(pb, v, 1) }

func (v KSplitParams) sharedBytes(pb Problem) int {
	return 2 * v.Split * v.Chunk * v.Block * pb.DType.Bytes()
}

func (v KSplitParams) launch() launchShape { return launchShape{v.Block, v.Split, 1, v.Occupancy} }

func (v KSplitParams) build(g *gen) error {
	g.ksplitKernel(v)
	return nil
}

// liveValues: the values of B a y thread holds.
func (v KSplitParams) liveValues(pb Problem) int {
	return (operator.Analyze(pb.Op).UsedCols + v.Split - 1) / v.Split
}
