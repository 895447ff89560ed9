package sparse

import (
	"fmt"
	"slices"
	"sort"

	"github.com/bespoke-hpc/bespoke/kernel"
)

var (
	localX = kernel.Special{Kind: kernel.LocalID, Axis: 0}
	localY = kernel.Special{Kind: kernel.LocalID, Axis: 1}
	groupX = kernel.Special{Kind: kernel.GroupID, Axis: 0}
)

func bin(op string, l, r kernel.Expr) kernel.Expr { return kernel.Bin{Op: op, L: l, R: r} }
func lit(i int) kernel.Expr                       { return kernel.Int{V: int64(i)} }

// threadX is the thread's index along x in the whole grid, for blocks of
// bx threads along x.
func threadX(bx int) kernel.Expr {
	return bin("+", bin("*", groupX, lit(bx)), localX)
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
		jInit = bin("*", jInit, lit(w))
	}
	k.Body = []kernel.Stmt{kernel.Decl{Type: kernel.Index, Name: "j", Init: jInit}}
	j, n := kernel.Var{Name: "j"}, g.nExpr()
	switch {
	case w == 1:
		k.Active = n
		k.Body = append(k.Body, g.streamBody(v, 1, j)...)
	default:
		if g.pb.N > 0 {
			k.Active = lit((g.pb.N + 1) / 2)
		} else {
			k.Active = bin("/", bin("+", n, lit(1)), lit(2))
		}
		if g.pb.N > 0 && g.pb.N%2 == 0 {
			k.Body = append(k.Body, g.streamBody(v, 2, j)...)
		} else {
			k.Body = append(k.Body, kernel.If{
				Cond: bin("<", bin("+", j, lit(1)), n),
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
	first := bin("*", groupX, lit(bx))
	n := g.nExpr()
	k.Shared = append(k.Shared, kernel.Shared{Name: "cstage", Type: kernel.Real, Dims: []int{g.m * bx}})
	k.Body = []kernel.Stmt{
		kernel.Decl{Type: kernel.Index, Name: "base", Init: kernel.Call{Fn: kernel.Min, Args: []kernel.Expr{first, bin("-", n, lit(bx))}}},
		kernel.Decl{Type: kernel.Index, Name: "j", Init: bin("+", kernel.Var{Name: "base"}, localX)},
	}
	k.Body = append(k.Body, g.streamBody(v, 1, kernel.Var{Name: "j"})...)
	skip := bin("-", kernel.Var{Name: "first"}, kernel.Var{Name: "base"})
	k.Body = append(k.Body, kernel.Barrier{},
		kernel.Decl{Type: kernel.Index, Name: "first", Init: first},
		kernel.Decl{Type: kernel.Index, Name: "nlive", Init: kernel.Call{Fn: kernel.Min, Args: []kernel.Expr{lit(bx), bin("-", n, kernel.Var{Name: "first"})}}},
	)
	k.Body = append(k.Body, kernel.StreamRows{
		Buf: "c", Stage: "cstage", Rows: g.m, RowLen: bx, Width: g.pb.streamWidth(), Threads: bx,
		Dst: func(row kernel.Expr) kernel.Expr {
			return bin("+", bin("*", row, g.ldcExpr()), kernel.Var{Name: "first"})
		},
		Src:    func(row kernel.Expr) kernel.Expr { return bin("+", bin("*", row, lit(bx)), skip) },
		Live:   kernel.Var{Name: "nlive"},
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

// guardedStore wraps a store of row i in a bounds check on the column.
func (g *gen) guardedStore(i int, vals []kernel.Expr) []kernel.Stmt {
	return g.guardedStoreOld(i, vals, nil)
}

// guardedStoreOld is guardedStore with C's old value already in old (β ≠ 0).
func (g *gen) guardedStoreOld(i int, vals []kernel.Expr, old kernel.Expr) []kernel.Stmt {
	j := kernel.Var{Name: "j"}
	c := &cols{g: g, w: 1, j: j}
	var olds []kernel.Expr
	if old != nil {
		olds = []kernel.Expr{old}
	}
	c.storeOld(i, vals, olds)
	if len(c.out) == 0 {
		return nil
	}
	return []kernel.Stmt{kernel.If{Cond: bin("<", j, g.nExpr()), Then: c.out}}
}

// guarded wraps statements in the column's bounds check.
func guarded(inRange kernel.Expr, ss []kernel.Stmt) []kernel.Stmt {
	if len(ss) == 0 {
		return nil
	}
	return []kernel.Stmt{kernel.If{Cond: inRange, Then: ss}}
}

// byThreadY dispatches per-y-thread statement lists.
func byThreadY(per [][]kernel.Stmt) []kernel.Stmt {
	var out []kernel.Stmt
	for y, ss := range per {
		if len(ss) > 0 {
			out = append(out, kernel.If{Cond: bin("==", localY, lit(y)), Then: ss})
		}
	}
	return out
}

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
	j := kernel.Var{Name: "j"}
	inRange := bin("<", j, g.nExpr())
	beta := g.pb.Beta != 0
	k.Shared = []kernel.Shared{{Name: "bsh", Type: kernel.Real, Dims: []int{2 * v.Chunk * v.Block}}}
	k.Body = []kernel.Stmt{kernel.Decl{Type: kernel.Index, Name: "j", Init: threadX(v.Block)}}
	for s := 0; s < slots; s++ {
		k.Body = append(k.Body, kernel.Decl{Type: kernel.Real, Name: fmt.Sprintf("acc%d", s)})
		if beta {
			k.Body = append(k.Body, kernel.Decl{Type: kernel.Real, Name: fmt.Sprintf("old%d", s), Init: kernel.Lit{V: 0}})
		}
	}
	for p := 0; p < (v.Chunk+v.Split-1)/v.Split; p++ {
		k.Body = append(k.Body, kernel.Decl{Type: kernel.Real, Name: fmt.Sprintf("pf%d", p), Init: kernel.Lit{V: 0}})
	}
	shIdx := func(buf, q int) kernel.Expr { return plus((buf*v.Chunk+q)*v.Block, localX) }
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
			per[q%v.Split] = append(per[q%v.Split], kernel.Store{Buf: "bsh", Index: []kernel.Expr{shIdx(ci%2, q)}, Value: kernel.Var{Name: fmt.Sprintf("pf%d", q/v.Split)}})
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
			sv := kernel.Var{Name: fmt.Sprintf("s%d", q)}
			loaded := make([]bool, v.Split)
			for _, i := range colNZ[r] {
				y := group[i]
				if !loaded[y] {
					per[y] = append(per[y], kernel.Decl{Type: kernel.Real, Name: sv.Name, Init: kernel.At("bsh", shIdx(ci%2, q))})
					loaded[y] = true
				}
				acc := fmt.Sprintf("acc%d", slot[i])
				t := term(g.at(i, r), sv)
				if started[i] {
					t = add(kernel.Var{Name: acc}, t)
				}
				started[i] = true
				per[y] = append(per[y], kernel.Assign{Name: acc, Value: t})
				if rowNZ[i][len(rowNZ[i])-1] == r {
					var old kernel.Expr
					if beta {
						old = kernel.Var{Name: fmt.Sprintf("old%d", slot[i])}
					}
					per[y] = append(per[y], g.guardedStoreOld(i, []kernel.Expr{kernel.Var{Name: acc}}, old)...)
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
	j, n := kernel.Var{Name: "j"}, g.nExpr()
	jInit := threadX(v.Block)
	if v.Width > 1 {
		jInit = bin("*", jInit, lit(v.Width))
	}
	k.Body = []kernel.Stmt{kernel.Decl{Type: kernel.Index, Name: "j", Init: jInit}}
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
			per[y] = guarded(bin("<", j, n), rowsOf(rows, 1))
		case g.pb.N > 0 && g.pb.N%2 == 0: // no odd tail
			per[y] = guarded(bin("<", j, n), rowsOf(rows, 2))
		default: // a pair, or the last column alone
			per[y] = []kernel.Stmt{kernel.If{
				Cond: bin("<", bin("+", j, lit(1)), n),
				Then: rowsOf(rows, 2),
				Else: guarded(bin("<", j, n), rowsOf(rows, 1)),
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

// ksplitKernel: the used columns of A are cut into Split contiguous groups
// of about equal non-zeros; y thread t holds its group's B values in
// registers and writes partial sums for a chunk of rows to shared memory;
// after a barrier, the threads reduce the partials of that chunk (rows dealt
// round-robin) while writing the next chunk's partials to the other buffer.
func (g *gen) ksplitKernel(v KSplitParams) {
	k := g.kern
	rowNZ, colNZ, used := g.structure()
	colGroup := balanceCols(used, colNZ, v.Split)
	j := kernel.Var{Name: "j"}
	inRange := bin("<", j, g.nExpr())
	k.Shared = []kernel.Shared{{Name: "psh", Type: kernel.Real, Dims: []int{2 * v.Split * v.Chunk * v.Block}}}
	k.Body = []kernel.Stmt{kernel.Decl{Type: kernel.Index, Name: "j", Init: threadX(v.Block)}}
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
		return plus(((buf*v.Split+y)*v.Chunk+ri)*v.Block, localX)
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
			k.Body = append(k.Body, kernel.Decl{Type: kernel.Real, Name: fmt.Sprintf("old%d", s), Init: kernel.Lit{V: 0}})
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
				sums[y] = add(sums[y], term(g.at(i, r), kernel.Var{Name: bname[r]}))
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
				sum = add(sum, kernel.At("psh", pIdx(ci%2, y, ri)))
			}
			var old kernel.Expr
			if beta {
				old = kernel.Var{Name: fmt.Sprintf("old%d", ri/v.Split)}
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

// plus is off + x, leaving out a zero offset.
func plus(off int, x kernel.Expr) kernel.Expr {
	if off == 0 {
		return x
	}
	return bin("+", lit(off), x)
}
