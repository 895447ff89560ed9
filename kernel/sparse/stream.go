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

// Family is the strategy v belongs to.
func (v StreamParams) Family() Family { return v.Kind }

// String is v's name.
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

// streamKernel builds cstream and bstream: no shared memory, no barriers.
// With width 2 the last thread of an odd n takes a scalar path.
func (g *gen) streamKernel(v StreamParams) {
	if v.Stream {
		g.streamedKernel(v)
		return
	}
	k, w := g.kern, v.Width
	jInit := threadX(v.Block)
	if w > 1 {
		jInit = kernel.Mul(jInit, kernel.Const(w))
	}
	k.Body = []kernel.Stmt{kernel.DeclIndex("j", jInit)}
	j, n := kernel.Ref("j"), g.nExpr()
	switch {
	case w == 1:
		k.Active = n
		k.Body = append(k.Body, g.streamBody(v, 1, j)...)
	default:
		if g.pb.N > 0 {
			k.Active = kernel.Const((g.pb.N + 1) / 2)
		} else {
			k.Active = kernel.Div(kernel.Add(n, kernel.Const(1)), kernel.Const(2))
		}
		if g.pb.N > 0 && g.pb.N%2 == 0 {
			k.Body = append(k.Body, g.streamBody(v, 2, j)...)
		} else {
			k.Body = append(k.Body, kernel.If{
				Cond: kernel.Lt(kernel.Add(j, kernel.Const(1)), n),
				Then: g.streamBody(v, 2, j),
				Else: g.streamBody(v, 1, j),
			})
		}
	}
}

// streamedKernel is cstream or bstream with C streamed (StreamParams.Stream):
// every thread of a block computes its column into the shared stage cstage
// (row i at i·Block), a block cut short by the panel's end taking the
// panel's last Block columns instead (so that no thread branches around
// its column), and the block then writes its rows of C from column first
// on a cache line at a time (kernel.StreamRows).
func (g *gen) streamedKernel(v StreamParams) {
	k, bx := g.kern, v.Block
	first := kernel.Mul(kernel.GroupX, kernel.Const(bx))
	n := g.nExpr()
	k.Shared = append(k.Shared, kernel.Shared{Name: "cstage", Type: kernel.Real, Dims: []int{g.m * bx}})
	k.Body = []kernel.Stmt{
		kernel.DeclIndex("base", kernel.Call{Fn: kernel.Min, Args: []kernel.Expr{first, kernel.Sub(n, kernel.Const(bx))}}),
		kernel.DeclIndex("j", kernel.Add(kernel.Ref("base"), kernel.LocalX)),
	}
	k.Body = append(k.Body, g.streamBody(v, 1, kernel.Ref("j"))...)
	skip := kernel.Sub(kernel.Ref("first"), kernel.Ref("base"))
	k.Body = append(k.Body, kernel.Barrier{},
		kernel.DeclIndex("first", first),
		kernel.DeclIndex("nlive", kernel.Call{Fn: kernel.Min, Args: []kernel.Expr{kernel.Const(bx), kernel.Sub(n, kernel.Ref("first"))}}),
	)
	k.Body = append(k.Body, kernel.StreamRows{
		Buf: "c", Stage: "cstage", Rows: g.m, RowLen: bx, Width: g.pb.streamWidth(), Threads: bx,
		Dst: func(row kernel.Expr) kernel.Expr {
			return kernel.Add(kernel.Mul(row, g.ldcExpr()), kernel.Ref("first"))
		},
		Src:    func(row kernel.Expr) kernel.Expr { return kernel.Add(kernel.Mul(row, kernel.Const(bx)), skip) },
		Live:   kernel.Ref("nlive"),
		Prefix: "s",
	}.Statements()...)
}

func (g *gen) streamBody(v StreamParams, w int, j kernel.Expr) []kernel.Stmt {
	c := &cols{g: g, w: w, j: j}
	if v.Stream {
		c.stage = v.Block
	}
	if v.Kind == CStream {
		c.cstream()
	} else {
		c.bstream()
	}
	return c.out
}
