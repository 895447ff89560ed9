package sparse

import (
	"fmt"

	"github.com/bespoke-hpc/bespoke/kernel"
)

// cols writes the statements one thread runs for its w adjacent columns
// starting at column j.
type cols struct {
	g *gen
	w int
	j kernel.Expr
	// stage is the columns of the block's stage of C where C is
	// streamed (streamedKernel: row i at i·stage), 0 where it is stored
	// straight.
	stage int
	out   []kernel.Stmt
}

func (c *cols) emit(s ...kernel.Stmt) { c.out = append(c.out, s...) }

// lanes names one variable per column lane.
func (c *cols) lanes(name string) []string {
	if c.w == 1 {
		return []string{name}
	}
	ns := make([]string, c.w)
	for l := range ns {
		ns[l] = fmt.Sprintf("%s_%d", name, l)
	}
	return ns
}

// elem is the offset of element (row, j) in a matrix with leading dimension ld.
func elem(row int, ld, j kernel.Expr) kernel.Expr {
	if row == 0 {
		return j
	}
	if l, ok := ld.(kernel.Int); ok {
		return kernel.Add(kernel.Int{V: int64(row) * l.V}, j)
	}
	return kernel.Add(kernel.Mul(kernel.Const(row), ld), j)
}

// declare declares real variables without initial values.
func (c *cols) declare(names []string) {
	for _, n := range names {
		c.emit(kernel.Decl{Type: kernel.Real, Name: n})
	}
}

// load reads w consecutive elements at off into fresh variables.
func (c *cols) load(buf, name string, off kernel.Expr) []kernel.Expr {
	names := c.lanes(name)
	if c.w == 1 {
		c.emit(kernel.DeclReal(names[0], kernel.At(buf, off)))
	} else {
		c.declare(names)
		c.emit(kernel.VecLoad{Dst: names, Buf: buf, Index: off})
	}
	return vars(names)
}

// loadB loads row r of B.
func (c *cols) loadB(r int) []kernel.Expr {
	return c.load("b", fmt.Sprintf("b%d", r), elem(r, c.g.ldbExpr(), c.j))
}

// store writes row i of C from vals (one per lane), applying β. A nil vals
// is an all-zero row of A.
func (c *cols) store(i int, vals []kernel.Expr) { c.storeOld(i, vals, nil) }

// storeOld is store with C's old values (β ≠ 0) already loaded into old;
// a nil old loads them here.
func (c *cols) storeOld(i int, vals, old []kernel.Expr) {
	beta := c.g.pb.Beta
	off := elem(i, c.g.ldcExpr(), c.j)
	if vals == nil && beta == 1 {
		return // C += 0
	}
	out := make([]kernel.Expr, c.w)
	if beta != 0 && old == nil {
		old = c.load("c", fmt.Sprintf("o%d", i), off)
	}
	for l := range out {
		switch {
		case beta == 0 && vals == nil:
			out[l] = kernel.Float(0)
		case beta == 0:
			out[l] = vals[l]
		case vals == nil:
			out[l] = kernel.Mul(kernel.Float(beta), old[l])
		case beta == 1:
			out[l] = kernel.Add(vals[l], old[l])
		default:
			out[l] = kernel.Add(vals[l], kernel.Mul(kernel.Float(beta), old[l]))
		}
	}
	switch {
	case c.stage > 0: // staged for the block's streamed rows (streamedKernel)
		c.emit(kernel.Store{Buf: "cstage", Index: []kernel.Expr{kernel.Add(kernel.Const(i*c.stage), kernel.LocalX)}, Value: out[0]})
	case c.w == 1:
		c.emit(kernel.Store{Buf: "c", Index: []kernel.Expr{off}, Value: out[0]})
	default:
		c.emit(kernel.VecStore{Buf: "c", Index: off, Src: out})
	}
}

func vars(names []string) []kernel.Expr {
	es := make([]kernel.Expr, len(names))
	for i, n := range names {
		es[i] = kernel.Ref(n)
	}
	return es
}

// term is coef·x, dropping a unit coefficient.
func term(coef float64, x kernel.Expr) kernel.Expr {
	if coef == 1 {
		return x
	}
	return kernel.Mul(kernel.Float(coef), x)
}

// accumulate is acc + t, or t alone where acc is nil (no term yet).
func accumulate(acc, t kernel.Expr) kernel.Expr {
	if acc == nil {
		return t
	}
	return kernel.Add(acc, t)
}

// cstream evaluates and stores each output row in turn.
func (c *cols) cstream() {
	rows := make([]int, c.g.m)
	for i := range rows {
		rows[i] = i
	}
	c.cstreamRows(rows)
}

// cstreamRows is cstream over the given rows only.
func (c *cols) cstreamRows(rows []int) {
	rowNZ, _, _ := c.g.structure()
	loaded := map[int][]kernel.Expr{}
	for _, i := range rows {
		nz := rowNZ[i]
		if len(nz) == 0 {
			c.store(i, nil)
			continue
		}
		sums := make([]kernel.Expr, c.w)
		for _, r := range nz {
			bv, ok := loaded[r]
			if !ok {
				bv = c.loadB(r)
				loaded[r] = bv
			}
			for l := range sums {
				sums[l] = accumulate(sums[l], term(c.g.at(i, r), bv[l]))
			}
		}
		c.store(i, sums)
	}
}

// bstream loads each used row of B once and stores each output row as
// soon as its last non-zero has been consumed.
func (c *cols) bstream() {
	rows := make([]int, c.g.m)
	for i := range rows {
		rows[i] = i
	}
	c.bstreamRows(rows)
}

// bstreamRows is bstream over the given rows only: it loads just the rows
// of B they use.
func (c *cols) bstreamRows(rows []int) {
	rowNZ, colNZ, used := c.g.structure()
	mine := make([]bool, c.g.m)
	for _, i := range rows {
		mine[i] = true
		if len(rowNZ[i]) == 0 {
			c.store(i, nil)
		}
	}
	started := make([]bool, c.g.m)
	for _, r := range used {
		var bv []kernel.Expr
		for _, i := range colNZ[r] {
			if !mine[i] {
				continue
			}
			if bv == nil {
				bv = c.loadB(r)
			}
			acc := c.lanes(fmt.Sprintf("a%d", i))
			for l, name := range acc {
				t := term(c.g.at(i, r), bv[l])
				if !started[i] {
					c.emit(kernel.DeclReal(name, t))
				} else {
					c.emit(kernel.Assign{Name: name, Value: accumulate(kernel.Ref(name), t)})
				}
			}
			started[i] = true
			if last := rowNZ[i][len(rowNZ[i])-1]; last == r {
				c.store(i, vars(acc))
			}
		}
	}
}
