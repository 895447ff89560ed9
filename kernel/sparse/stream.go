package sparse

import (
	"fmt"

	"github.com/bespoke-hpc/bespoke/kernel"
)

// StreamParams are the parameters of cstream and bstream (Kind): one
// thread a column, or two (Width 2), "cstream/x128[-w2][-bB][-nt]".
type StreamParams struct {
	Kind  Family // CStream or BStream
	Block int    // threads per block along x
	Width int    // columns per thread: 1 or 2
	// Occupancy is the blocks per multiprocessor the CUDA compiler must
	// allow (capping registers); 0 leaves it free. Other dialects ignore it.
	Occupancy int
	// Stream (-nt) stages the block's rows of C in shared memory and
	// writes them out a cache line at a time with streamed stores
	// (kernel.VecStore.Stream): on CPUs non-temporal stores, which do not
	// read C's lines before writing them. β = 0 only (C is not read).
	Stream bool
}

func (v StreamParams) Family() Family { return v.Kind }
func (v StreamParams) String() string { return v.Name() }

// Name is e.g. "bstream/x128-w2".
func (v StreamParams) Name() string {
	return simtName(v.Kind, v.Block, 0, 0, false, v.Width, v.Occupancy, v.Stream)
}

// simtName prints the names of the one-thread-a-column families and their
// splits: "FAMILY/xX[-yY][-cC][-g][-wW][-bB][-nt]".
func simtName(f Family, block, split, chunk int, grouped bool, width, occupancy int, stream bool) string {
	s := fmt.Sprintf("%s/x%d", f, block)
	if split > 0 {
		s += fmt.Sprintf("-y%d", split)
	}
	if chunk > 0 {
		s += fmt.Sprintf("-c%d", chunk)
	}
	if grouped {
		s += "-g"
	}
	if width > 1 {
		s += fmt.Sprintf("-w%d", width)
	}
	if occupancy > 0 {
		s += fmt.Sprintf("-b%d", occupancy)
	}
	if stream {
		s += "-nt"
	}
	return s
}

func parseStream(def Variant, name string, opts []string) (Variant, error) {
	v := def.(StreamParams)
	_, err := readOptions(name, opts, "cstream/x128-w2, bstream/x128-b4 or cstream/x64-nt",
		need("x", &v.Block), num("w", &v.Width), num("b", &v.Occupancy), flag("nt", &v.Stream))
	return v, err
}

func (v StreamParams) valid() error {
	switch {
	case v.Kind != CStream && v.Kind != BStream:
		return fmt.Errorf("variant %s: stream parameters are for cstream and bstream", v.Name())
	case v.Block < 1 || v.Block > 1024:
		return fmt.Errorf("variant %s: block %d out of 1..1024", v.Name(), v.Block)
	case v.Width != 1 && v.Width != 2:
		return fmt.Errorf("variant %s: width must be 1 or 2", v.Name())
	case v.Stream && v.Width != 1:
		return fmt.Errorf("variant %s: only cstream and bstream of one column a thread stream C (-nt)", v.Name())
	case v.Occupancy < 0 || v.Occupancy > 32:
		return fmt.Errorf("variant %s: occupancy must be 0..32 blocks", v.Name())
	}
	return nil
}

func (v StreamParams) check(pb Problem) error {
	if v.Stream && pb.Beta != 0 {
		return fmt.Errorf("variant %s streams C, which β = %g reads", v.Name(), pb.Beta)
	}
	if v.Stream && v.Block%pb.streamWidth() != 0 {
		return fmt.Errorf("variant %s: a streaming block is a multiple of %d columns (a cache line of C)", v.Name(), pb.streamWidth())
	}
	if v.Stream && pb.N > 0 && pb.N < v.Block {
		return fmt.Errorf("variant %s: a streaming block takes %d columns, more than n = %d", v.Name(), v.Block, pb.N)
	}
	if s := v.sharedBytes(pb); v.Stream && s > kernel.StaticSharedLimit {
		return fmt.Errorf("variant %s stages %d bytes of C (at most %d)", v.Name(), s, kernel.StaticSharedLimit)
	}
	return checkSIMT(pb, v, v.Width)
}

// checkSIMT is what the one-thread-a-column families and their splits
// check alike: vector access, live values, shared memory.
func checkSIMT(pb Problem, v Variant, width int) error {
	if width == 2 && (pb.LDB <= 0 || pb.LDC <= 0 || pb.LDB%2 != 0 || pb.LDC%2 != 0) {
		return fmt.Errorf("variant %s needs ldb and ldc baked in and even (aligned vector access)", v.Name())
	}
	if regs := LiveValues(pb, v) * pb.DType.Bytes() / 4; regs > MaxLiveRegisters {
		return fmt.Errorf("variant %s keeps ~%d registers of values live (limit %d)", v.Name(), regs, MaxLiveRegisters)
	}
	if s := v.sharedBytes(pb); s > MaxSharedBytes {
		return fmt.Errorf("variant %s needs %d bytes of shared memory (limit %d)", v.Name(), s, MaxSharedBytes)
	}
	return nil
}

func (v StreamParams) sharedBytes(pb Problem) int {
	if v.Stream {
		return pb.Op.Rows * v.Block * pb.DType.Bytes()
	}
	return 0
}

func (v StreamParams) launch() launchShape { return launchShape{v.Block, 1, v.Width, v.Occupancy} }

func (v StreamParams) build(g *gen) error {
	g.streamKernel(v)
	return nil
}

// liveValues: bstream's open sums (cstream can reload instead).
func (v StreamParams) liveValues(pb Problem) int {
	if v.Kind != BStream {
		return 0
	}
	rowNZ := rowSupports(pb)
	return openSums(rowNZ, allRows(pb.Op.Rows), pb.Op.Cols) * v.Width
}

func allRows(m int) []int {
	all := make([]int, m)
	for i := range all {
		all[i] = i
	}
	return all
}
