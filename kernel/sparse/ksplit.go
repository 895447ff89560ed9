package sparse

import (
	"fmt"

	"github.com/bespoke-hpc/bespoke/kernel"
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

// Family is the strategy v belongs to.
func (v KSplitParams) Family() Family { return CStreamKSplit }

// String is v's name.
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

// ksplitKernel: the used columns of A are cut into Split contiguous groups
// of about equal non-zeros; y thread t holds its group's B values in
// registers and writes partial sums for a chunk of rows to shared memory;
// after a barrier, the threads reduce the partials of that chunk (rows dealt
// round-robin) while writing the next chunk's partials to the other buffer.
func (g *gen) ksplitKernel(v KSplitParams) {
	k := g.kern
	rowNZ, colNZ, used := g.structure()
	colGroup := balanceCols(used, colNZ, v.Split)
	j := kernel.Ref("j")
	inRange := kernel.Lt(j, g.nExpr())
	k.Shared = []kernel.Shared{{Name: "psh", Type: kernel.Real, Dims: []int{2 * v.Split * v.Chunk * v.Block}}}
	k.Body = []kernel.Stmt{kernel.DeclIndex("j", threadX(v.Block))}
	bname := map[int]string{}
	loads := make([][]kernel.Stmt, v.Split)
	perY := make([]int, v.Split)
	for _, r := range used {
		y := colGroup[r]
		bname[r] = fmt.Sprintf("bv%d", perY[y])
		perY[y]++
		loads[y] = append(loads[y], kernel.Assign{Name: bname[r], Value: kernel.At("b", elem(r, g.ldbExpr(), j))})
	}
	slots := 0
	for y := range loads {
		slots = max(slots, perY[y])
		if len(loads[y]) > 0 {
			loads[y] = []kernel.Stmt{kernel.If{Cond: inRange, Then: loads[y]}}
		}
	}
	for s := 0; s < slots; s++ {
		k.Body = append(k.Body, kernel.Decl{Type: kernel.Real, Name: fmt.Sprintf("bv%d", s)})
	}
	k.Body = append(k.Body, byThreadY(loads)...)
	var rows []int
	var empty []kernel.Stmt
	for i, nz := range rowNZ {
		if len(nz) == 0 {
			empty = append(empty, g.guardedStore(i, nil)...)
		} else {
			rows = append(rows, i)
		}
	}
	k.Body = append(k.Body, byThreadY([][]kernel.Stmt{empty})...)
	var chunks [][]int
	for len(rows) > 0 {
		n := min(v.Chunk, len(rows))
		chunks, rows = append(chunks, rows[:n]), rows[n:]
	}
	pIdx := func(buf, y, ri int) kernel.Expr {
		return plus(((buf*v.Split+y)*v.Chunk+ri)*v.Block, kernel.LocalX)
	}
	// contrib[i] lists the y threads holding a non-zero of row i.
	contrib := func(i int) []int {
		var ys []int
		for _, r := range rowNZ[i] {
			if y := colGroup[r]; len(ys) == 0 || ys[len(ys)-1] != y {
				ys = append(ys, y)
			}
		}
		return ys
	}
	// For β ≠ 0 the thread that will store a row loads its old C value
	// before the barrier, so the load overlaps the wait.
	beta := g.pb.Beta != 0
	if beta {
		for s := 0; s < (v.Chunk+v.Split-1)/v.Split; s++ {
			k.Body = append(k.Body, kernel.Decl{Type: kernel.Real, Name: fmt.Sprintf("old%d", s), Init: kernel.Float(0)})
		}
	}
	partial := func(ci int) []kernel.Stmt {
		per := make([][]kernel.Stmt, v.Split)
		if beta {
			for ri, i := range chunks[ci] {
				y := ri % v.Split
				per[y] = append(per[y], guarded(inRange, []kernel.Stmt{kernel.Assign{Name: fmt.Sprintf("old%d", ri/v.Split), Value: kernel.At("c", elem(i, g.ldcExpr(), j))}})...)
			}
		}
		for ri, i := range chunks[ci] {
			sums := make([]kernel.Expr, v.Split)
			for _, r := range rowNZ[i] {
				y := colGroup[r]
				sums[y] = accumulate(sums[y], term(g.at(i, r), kernel.Ref(bname[r])))
			}
			for y, s := range sums {
				if s != nil {
					per[y] = append(per[y], kernel.Store{Buf: "psh", Index: []kernel.Expr{pIdx(ci%2, y, ri)}, Value: s})
				}
			}
		}
		return byThreadY(per)
	}
	reduce := func(ci int) []kernel.Stmt {
		per := make([][]kernel.Stmt, v.Split)
		for ri, i := range chunks[ci] {
			var sum kernel.Expr
			for _, y := range contrib(i) {
				sum = accumulate(sum, kernel.At("psh", pIdx(ci%2, y, ri)))
			}
			var old kernel.Expr
			if beta {
				old = kernel.Ref(fmt.Sprintf("old%d", ri/v.Split))
			}
			per[ri%v.Split] = append(per[ri%v.Split], g.guardedStoreOld(i, []kernel.Expr{sum}, old)...)
		}
		return byThreadY(per)
	}
	for ci := range chunks {
		if ci == 0 {
			k.Body = append(k.Body, partial(0)...)
		}
		k.Body = append(k.Body, kernel.Barrier{})
		k.Body = append(k.Body, reduce(ci)...)
		if ci+1 < len(chunks) {
			k.Body = append(k.Body, partial(ci+1)...)
		}
	}
}

// balanceCols cuts the used columns into ways contiguous groups with about
// equal numbers of non-zeros.
func balanceCols(used []int, colNZ [][]int, ways int) map[int]int {
	total := 0
	for _, r := range used {
		total += len(colNZ[r])
	}
	group := map[int]int{}
	acc, y := 0, 0
	for idx, r := range used {
		// Move on once this group has its share, keeping one column
		// for each group still to come where possible.
		if y < ways-1 && acc*ways >= (y+1)*total && len(used)-idx >= ways-y-1 {
			y++
		}
		group[r] = y
		acc += len(colNZ[r])
	}
	return group
}
