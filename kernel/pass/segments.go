package pass

import (
	"sort"

	"github.com/bespoke-hpc/bespoke/kernel"
)

// splitMinStmts is the shortest piece worth its own column loop. Shorter
// pieces add loop overhead; much longer ones make gcc's register allocator
// (superlinear in a loop body's size) slow, and past 1000 data references
// gcc stops vectorising the loop at all.
const splitMinStmts = 64

// maxRecipe is the most statements a later piece repeats to recompute one
// variable (see Segments).
const maxRecipe = 8

// Segments cuts a thread body (of a kernel without barriers) into pieces
// that a CPU lowering runs as separate loops over the threads. A cut is allowed after
// a store where every variable still needed later was set by a
// rematerialisable declaration — arithmetic on literals, thread indices,
// parameters and loads from read-only buffers — which the later piece
// repeats. Accumulators (assigned variables) are never live across a cut.
// On a CPU the repeated loads hit the L1 cache.
func Segments(body []kernel.Stmt, params []kernel.Param) (pieces [][]kernel.Stmt, prefixes [][]kernel.Stmt) {
	readOnly := map[string]bool{}
	for _, p := range params {
		readOnly[p.Name] = p.Kind == kernel.ScalarParam || p.Const
	}
	assigned := map[string]bool{}
	kernel.WalkStmts(body, func(s kernel.Stmt) bool {
		switch a := s.(type) {
		case kernel.Assign:
			assigned[a.Name] = true
		case kernel.AtomicFetchAdd:
			assigned[a.Old] = true // set by the atomic: never recomputed
		}
		return true
	})
	// recipe[v] is the statement list that recomputes v.
	recipe := map[string][]kernel.Stmt{}
	declared := map[string]int{} // top-level declaration index
	var pure func(e kernel.Expr) bool
	pure = func(e kernel.Expr) bool {
		switch e := e.(type) {
		case kernel.Lit, kernel.Int, kernel.Special:
			return true
		case kernel.Var:
			_, isRecipe := recipe[e.Name]
			return isRecipe || readOnly[e.Name]
		case kernel.Load:
			if !readOnly[e.Buf] {
				return false
			}
			for _, i := range e.Index {
				if !pure(i) {
					return false
				}
			}
			return true
		case kernel.Bin:
			return pure(e.L) && pure(e.R)
		case kernel.Unary:
			return pure(e.X)
		case kernel.Cast:
			return pure(e.X)
		case kernel.Select:
			return pure(e.Cond) && pure(e.Then) && pure(e.Else)
		case kernel.Call:
			for _, a := range e.Args {
				if !pure(a) {
					return false
				}
			}
			return true
		}
		return false
	}
	// cost[v] bounds the statements that recompute v, its inputs'
	// recipes included: a later piece repeats cheap ones (loads, index
	// arithmetic), never a chain of arithmetic (a whole element's
	// geometry, recomputed for each piece, cost a kernel twice its time).
	cost := map[string]int{}
	for i, s := range body {
		switch s := s.(type) {
		case kernel.Decl:
			declared[s.Name] = i
			if len(s.Dims) == 0 && s.Init != nil && !assigned[s.Name] && pure(s.Init) {
				c := 1
				kernel.WalkExpr(s.Init, func(e kernel.Expr) {
					if v, ok := e.(kernel.Var); ok {
						c += cost[v.Name]
					}
				})
				if c <= maxRecipe {
					recipe[s.Name] = []kernel.Stmt{s}
					cost[s.Name] = c
				}
			}
		case kernel.VecLoad:
			ok := readOnly[s.Buf] && pure(s.Index)
			for _, d := range s.Dst {
				ok = ok && !assigned[d]
			}
			if ok {
				r := []kernel.Stmt{}
				for _, d := range s.Dst {
					r = append(r, body[declared[d]])
				}
				r = append(r, s)
				for _, d := range s.Dst {
					recipe[d] = r
				}
			}
		}
	}
	// A cut after statement i must not leave live a variable declared at
	// or before i, used after i, that cannot be recomputed: count those
	// (live) in one sweep, from each variable's last use.
	lastUse := map[string]int{}
	for i, st := range body {
		for _, v := range uses(st) {
			lastUse[v] = i
		}
	}
	endsAt := make([][]string, len(body))
	for v, i := range lastUse {
		if d, ok := declared[v]; ok && d < i {
			if _, ok := recipe[v]; !ok {
				endsAt[i] = append(endsAt[i], v)
			}
		}
	}
	startsAt := make([]int, len(body)) // unrecomputable variables declared at i and used later
	for v, d := range declared {
		if _, ok := recipe[v]; !ok && lastUse[v] > d {
			startsAt[d]++
		}
	}
	live, start := 0, 0
	for i, s := range body {
		live += startsAt[i] - len(endsAt[i])
		if !isStore(s) || i+1-start < splitMinStmts || i+1 == len(body) || live > 0 {
			continue
		}
		pieces = append(pieces, body[start:i+1])
		start = i + 1
	}
	pieces = append(pieces, body[start:])
	// Each later piece first recomputes what it uses from earlier pieces.
	offset := 0
	for _, piece := range pieces {
		need := map[string]bool{}
		var add func(v string)
		add = func(v string) {
			if d, ok := declared[v]; ok && d < offset && !need[v] {
				need[v] = true
				for _, st := range recipe[v] {
					for _, u := range uses(st) {
						add(u)
					}
				}
			}
		}
		for _, st := range piece {
			for _, u := range uses(st) {
				add(u)
			}
		}
		// Recipes in the order of their declarations, each once.
		order := make([]string, 0, len(need))
		for v := range need {
			order = append(order, v)
		}
		sort.Slice(order, func(a, b int) bool { return declared[order[a]] < declared[order[b]] })
		var pre []kernel.Stmt
		done := map[int]bool{}
		for _, v := range order {
			if done[declared[v]] {
				continue
			}
			pre = append(pre, recipe[v]...)
			for _, st := range recipe[v] {
				if dd, ok := st.(kernel.Decl); ok {
					done[declared[dd.Name]] = true
				}
			}
		}
		prefixes = append(prefixes, pre)
		offset += len(piece)
	}
	return pieces, prefixes
}

// uses is the variables s reads and the arrays it reads or writes: a
// thread-private array declared before a cut is live across it as a
// scalar is (kernel.Uses names only scalars).
func uses(s kernel.Stmt) []string {
	vs := kernel.Uses(s)
	kernel.WalkStmts([]kernel.Stmt{s}, func(s kernel.Stmt) bool {
		switch s := s.(type) {
		case kernel.Store:
			vs = append(vs, s.Buf)
		case kernel.VecStore:
			vs = append(vs, s.Buf)
		case kernel.AtomicAdd:
			vs = append(vs, s.Buf)
		case kernel.AtomicFetchAdd:
			vs = append(vs, s.Buf)
		case kernel.VecLoad:
			vs = append(vs, s.Buf)
		case kernel.Prefetch:
			vs = append(vs, s.Buf)
		}
		kernel.StmtExprs(s, func(e kernel.Expr) {
			kernel.WalkExpr(e, func(e kernel.Expr) {
				if l, ok := e.(kernel.Load); ok {
					vs = append(vs, l.Buf)
				}
			})
		})
		return true
	})
	return vs
}

func isStore(s kernel.Stmt) bool {
	switch s.(type) {
	case kernel.Store, kernel.VecStore, kernel.AtomicAdd, kernel.AtomicFetchAdd:
		return true
	}
	return false
}
