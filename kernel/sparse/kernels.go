package sparse

import (
	"github.com/bespoke-hpc/bespoke/kernel"
)

// threadX is the thread's index along x in the whole grid, for blocks of
// bx threads along x.
func threadX(bx int) kernel.Expr {
	return kernel.Add(kernel.Mul(kernel.GroupX, kernel.Const(bx)), kernel.LocalX)
}

// guardedStore wraps a store of row i in a bounds check on the column.
func (g *gen) guardedStore(i int, vals []kernel.Expr) []kernel.Stmt {
	return g.guardedStoreOld(i, vals, nil)
}

// guardedStoreOld is guardedStore with C's old value already in old (β ≠ 0).
func (g *gen) guardedStoreOld(i int, vals []kernel.Expr, old kernel.Expr) []kernel.Stmt {
	j := kernel.Ref("j")
	c := &cols{g: g, w: 1, j: j}
	var olds []kernel.Expr
	if old != nil {
		olds = []kernel.Expr{old}
	}
	c.storeOld(i, vals, olds)
	if len(c.out) == 0 {
		return nil
	}
	return []kernel.Stmt{kernel.If{Cond: kernel.Lt(j, g.nExpr()), Then: c.out}}
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
			out = append(out, kernel.If{Cond: kernel.Eq(kernel.LocalY, kernel.Const(y)), Then: ss})
		}
	}
	return out
}

// plus is off + x, leaving out a zero offset.
func plus(off int, x kernel.Expr) kernel.Expr {
	if off == 0 {
		return x
	}
	return kernel.Add(kernel.Const(off), x)
}
