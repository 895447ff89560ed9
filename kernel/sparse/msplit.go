package sparse

import (
	"fmt"
	"slices"
	"sort"

	"github.com/bespoke-hpc/bespoke/kernel"
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

// Family is the strategy v belongs to.
func (v MSplitParams) Family() Family { return v.Kind }

// String is v's name.
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

// msplitKernel: rows of A are shared out among the block's y threads
// (balanced by non-zeros); the block stages Chunk used rows of B at a time
// in shared memory. Loads are software-pipelined through registers: the
// next chunk of B (and, for β ≠ 0, the old C of the rows that chunk
// completes) is loaded while this chunk is computed, and written to the
// other shared buffer afterwards, so DRAM latency overlaps the arithmetic.
func (g *gen) msplitKernel(v MSplitParams) {
	k := g.kern
	rowNZ, colNZ, used := g.structure()
	group, slot, slots := balanceRows(rowNZ, v.Split)
	j := kernel.Ref("j")
	inRange := kernel.Lt(j, g.nExpr())
	beta := g.pb.Beta != 0
	k.Shared = []kernel.Shared{{Name: "bsh", Type: kernel.Real, Dims: []int{2 * v.Chunk * v.Block}}}
	k.Body = []kernel.Stmt{kernel.DeclIndex("j", threadX(v.Block))}
	for s := 0; s < slots; s++ {
		k.Body = append(k.Body, kernel.Decl{Type: kernel.Real, Name: fmt.Sprintf("acc%d", s)})
		if beta {
			k.Body = append(k.Body, kernel.Decl{Type: kernel.Real, Name: fmt.Sprintf("old%d", s), Init: kernel.Float(0)})
		}
	}
	for p := 0; p < (v.Chunk+v.Split-1)/v.Split; p++ {
		k.Body = append(k.Body, kernel.Decl{Type: kernel.Real, Name: fmt.Sprintf("pf%d", p), Init: kernel.Float(0)})
	}
	shIdx := func(buf, q int) kernel.Expr { return plus((buf*v.Chunk+q)*v.Block, kernel.LocalX) }
	var chunks [][]int
	chunkOf := map[int]int{}
	for len(used) > 0 {
		n := min(v.Chunk, len(used))
		for _, r := range used[:n] {
			chunkOf[r] = len(chunks)
		}
		chunks, used = append(chunks, used[:n]), used[n:]
	}
	// completes[ci]: the rows whose last non-zero lies in chunk ci.
	completes := make([][]int, len(chunks))
	for i, nz := range rowNZ {
		if len(nz) > 0 {
			ci := chunkOf[nz[len(nz)-1]]
			completes[ci] = append(completes[ci], i)
		}
	}
	// Chunk row q goes to y thread q % Split, register pf(q / Split).
	prefetch := func(ci int) [][]kernel.Stmt {
		per := make([][]kernel.Stmt, v.Split)
		for q, r := range chunks[ci] {
			per[q%v.Split] = append(per[q%v.Split], kernel.Assign{Name: fmt.Sprintf("pf%d", q/v.Split), Value: kernel.At("b", elem(r, g.ldbExpr(), j))})
		}
		if beta {
			for _, i := range completes[ci] {
				per[group[i]] = append(per[group[i]], kernel.Assign{Name: fmt.Sprintf("old%d", slot[i]), Value: kernel.At("c", elem(i, g.ldcExpr(), j))})
			}
		}
		for y := range per {
			per[y] = guarded(inRange, per[y])
		}
		return per
	}
	stash := func(ci int) [][]kernel.Stmt {
		per := make([][]kernel.Stmt, v.Split)
		for q := range chunks[ci] {
			per[q%v.Split] = append(per[q%v.Split], kernel.Store{Buf: "bsh", Index: []kernel.Expr{shIdx(ci%2, q)}, Value: kernel.Ref(fmt.Sprintf("pf%d", q/v.Split))})
		}
		return per
	}
	join := func(a, b [][]kernel.Stmt) [][]kernel.Stmt {
		for y := range a {
			a[y] = append(a[y], b[y]...)
		}
		return a
	}
	// All-zero rows of A are written up front, spread over the y threads.
	per := make([][]kernel.Stmt, v.Split)
	e := 0
	for i, nz := range rowNZ {
		if len(nz) == 0 {
			per[e%v.Split] = append(per[e%v.Split], g.guardedStore(i, nil)...)
			e++
		}
	}
	k.Body = append(k.Body, byThreadY(per)...)
	if len(chunks) > 0 {
		k.Body = append(k.Body, byThreadY(join(prefetch(0), stash(0)))...)
		k.Body = append(k.Body, kernel.Barrier{})
	}
	started := make([]bool, g.m)
	for ci, chunk := range chunks {
		per := make([][]kernel.Stmt, v.Split)
		if ci+1 < len(chunks) {
			per = prefetch(ci + 1)
		}
		for q, r := range chunk {
			sv := kernel.Ref(fmt.Sprintf("s%d", q))
			loaded := make([]bool, v.Split)
			for _, i := range colNZ[r] {
				y := group[i]
				if !loaded[y] {
					per[y] = append(per[y], kernel.DeclReal(sv.Name, kernel.At("bsh", shIdx(ci%2, q))))
					loaded[y] = true
				}
				acc := fmt.Sprintf("acc%d", slot[i])
				t := term(g.at(i, r), sv)
				if started[i] {
					t = accumulate(kernel.Ref(acc), t)
				}
				started[i] = true
				per[y] = append(per[y], kernel.Assign{Name: acc, Value: t})
				if rowNZ[i][len(rowNZ[i])-1] == r {
					var old kernel.Expr
					if beta {
						old = kernel.Ref(fmt.Sprintf("old%d", slot[i]))
					}
					per[y] = append(per[y], g.guardedStoreOld(i, []kernel.Expr{kernel.Ref(acc)}, old)...)
				}
			}
		}
		if ci+1 < len(chunks) {
			per = join(per, stash(ci+1))
		}
		k.Body = append(k.Body, byThreadY(per)...)
		if ci+1 < len(chunks) {
			k.Body = append(k.Body, kernel.Barrier{})
		}
	}
}

// rowSplitKernel (cstream-msplit, and bstream-msplit without staging):
// y thread t evaluates the t-th of Split groups of rows as cstream (or
// bstream) does, reading B from global memory, so each thread loads (and
// keeps live) only the part of B its rows read. The
// groups are contiguous rows (near rows of PyFR's operators read near rows
// of B) or, grouped (-g), rows ordered by the rows of B they read, which
// puts together the rows of a tensor-product line in any direction.
// Statements carry their own column guard (Active stays nil: a C block
// then loops over y as well).
func (g *gen) rowSplitKernel(v MSplitParams) {
	k := g.kern
	rowNZ, _, _ := g.structure()
	j, n := kernel.Ref("j"), g.nExpr()
	jInit := threadX(v.Block)
	if v.Width > 1 {
		jInit = kernel.Mul(jInit, kernel.Const(v.Width))
	}
	k.Body = []kernel.Stmt{kernel.DeclIndex("j", jInit)}
	groups := contiguousRows(rowNZ, v.Split)
	if v.Grouped {
		groups = supportRows(rowNZ, v.Split)
	}
	rowsOf := func(rows []int, w int) []kernel.Stmt {
		c := &cols{g: g, w: w, j: j}
		if v.Kind == BStreamMSplit {
			c.bstreamRows(rows)
		} else {
			c.cstreamRows(rows)
		}
		return c.out
	}
	per := make([][]kernel.Stmt, v.Split)
	for y, rows := range groups {
		switch {
		case v.Width == 1:
			per[y] = guarded(kernel.Lt(j, n), rowsOf(rows, 1))
		case g.pb.N > 0 && g.pb.N%2 == 0: // no odd tail
			per[y] = guarded(kernel.Lt(j, n), rowsOf(rows, 2))
		default: // a pair, or the last column alone
			per[y] = []kernel.Stmt{kernel.If{
				Cond: kernel.Lt(kernel.Add(j, kernel.Const(1)), n),
				Then: rowsOf(rows, 2),
				Else: guarded(kernel.Lt(j, n), rowsOf(rows, 1)),
			}}
		}
	}
	k.Body = append(k.Body, byThreadY(per)...)
}

// contiguousRows cuts rows 0..len(rowNZ)-1 into ways contiguous groups of
// about equal work (a row's non-zeros plus its store), none empty while
// rows remain.
func contiguousRows(rowNZ [][]int, ways int) [][]int {
	order := make([]int, len(rowNZ))
	for i := range order {
		order[i] = i
	}
	return cutRows(rowNZ, order, ways, false)
}

// supportRows orders the rows by the columns of A they use (compared as
// sorted lists), so that rows reading the same rows of B come together,
// and cuts that order into ways groups of about equal work, where the
// support changes unless that leaves a group a quarter share too heavy.
func supportRows(rowNZ [][]int, ways int) [][]int {
	order := make([]int, len(rowNZ))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return slices.Compare(rowNZ[order[a]], rowNZ[order[b]]) < 0 })
	return cutRows(rowNZ, order, ways, true)
}

// cutRows cuts the rows, taken in the given order, into ways groups of
// about equal work (a row's non-zeros plus its store), none empty while
// rows remain; atSupport prefers cuts between rows of different support.
func cutRows(rowNZ [][]int, order []int, ways int, atSupport bool) [][]int {
	total := 0
	for _, nz := range rowNZ {
		total += len(nz) + 1
	}
	groups := make([][]int, ways)
	acc, y := 0, 0
	for n, i := range order {
		// Move on once this group has its share, keeping a row for each
		// group still to come.
		if y < ways-1 && len(groups[y]) > 0 {
			due := (y + 1) * total
			if atSupport && slices.Equal(rowNZ[i], rowNZ[order[n-1]]) {
				due += total / 4 // same support as the last row: stay a while
			}
			if acc*ways >= due || len(order)-n <= ways-y-1 {
				y++
			}
		}
		groups[y] = append(groups[y], i)
		acc += len(rowNZ[i]) + 1
	}
	return groups
}

// balanceRows deals the non-empty rows to y threads, heaviest first to the
// least loaded, and numbers each thread's rows (its accumulator slots).
func balanceRows(rowNZ [][]int, ways int) (group, slot []int, slots int) {
	rows := []int{}
	for i, nz := range rowNZ {
		if len(nz) > 0 {
			rows = append(rows, i)
		}
	}
	sort.SliceStable(rows, func(a, b int) bool { return len(rowNZ[rows[a]]) > len(rowNZ[rows[b]]) })
	load := make([]int, ways)
	group, slot = make([]int, len(rowNZ)), make([]int, len(rowNZ))
	count := make([]int, ways)
	for _, i := range rows {
		y := 0
		for t := range load {
			if load[t] < load[y] {
				y = t
			}
		}
		group[i] = y
		load[y] += len(rowNZ[i])
	}
	for i, nz := range rowNZ { // slots in row order, so stores stay ordered
		if len(nz) > 0 {
			slot[i] = count[group[i]]
			count[group[i]]++
		}
	}
	for _, c := range count {
		slots = max(slots, c)
	}
	return group, slot, slots
}
