package emit

import "github.com/bespoke-hpc/bespoke/kernel"

// splitMinStmts is the shortest piece worth its own column loop. Shorter
// pieces add loop overhead; much longer ones make gcc's register allocator
// (superlinear in a loop body's size) slow, and past 1000 data references
// gcc stops vectorising the loop at all.
const splitMinStmts = 64

// segments cuts a thread body (of a kernel without barriers) into pieces
// that the C printer runs as separate column loops. A cut is allowed after
// a store where every variable still needed later was set by a
// rematerialisable declaration — arithmetic on literals, thread indices,
// parameters and loads from read-only buffers — which the later piece
// repeats. Accumulators (assigned variables) are never live across a cut.
// On a CPU the repeated loads hit the L1 cache.
func segments(body []kernel.Stmt, params []kernel.Param) (pieces [][]kernel.Stmt, prefixes [][]kernel.Stmt) {
	readOnly := map[string]bool{}
	for _, p := range params {
		readOnly[p.Name] = p.Kind == kernel.ScalarParam || p.Const
	}
	assigned := map[string]bool{}
	for _, s := range body {
		walkStmt(s, func(s kernel.Stmt) {
			if a, ok := s.(kernel.Assign); ok {
				assigned[a.Name] = true
			}
		})
	}
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
			return readOnly[e.Buf] && pure(e.Index)
		case kernel.Bin:
			return pure(e.L) && pure(e.R)
		}
		return false
	}
	for i, s := range body {
		switch s := s.(type) {
		case kernel.Decl:
			declared[s.Name] = i
			if s.Init != nil && !assigned[s.Name] && pure(s.Init) {
				recipe[s.Name] = []kernel.Stmt{s}
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
	// usesAfter[i]: variables referenced by body[i:].
	usesAfter := make([]map[string]bool, len(body)+1)
	usesAfter[len(body)] = map[string]bool{}
	for i := len(body) - 1; i >= 0; i-- {
		u := map[string]bool{}
		for v := range usesAfter[i+1] {
			u[v] = true
		}
		for _, v := range stmtUses(body[i]) {
			u[v] = true
		}
		usesAfter[i] = u
	}
	start := 0
	for i, s := range body {
		if !isStore(s) || i+1-start < splitMinStmts || i+1 == len(body) {
			continue
		}
		ok := true
		for v := range usesAfter[i+1] {
			if d, isDecl := declared[v]; isDecl && d <= i {
				if _, ok2 := recipe[v]; !ok2 {
					ok = false
					break
				}
			}
		}
		if ok {
			pieces = append(pieces, body[start:i+1])
			start = i + 1
		}
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
					for _, u := range stmtUses(st) {
						add(u)
					}
				}
			}
		}
		for _, st := range piece {
			for _, u := range stmtUses(st) {
				add(u)
			}
		}
		var pre []kernel.Stmt
		done := map[int]bool{}
		for i := 0; i < offset; i++ {
			if d, ok := body[i].(kernel.Decl); ok && need[d.Name] && !done[i] {
				for _, st := range recipe[d.Name] {
					pre = append(pre, st)
				}
				for _, st := range recipe[d.Name] {
					if dd, ok := st.(kernel.Decl); ok {
						done[declared[dd.Name]] = true
					}
				}
			}
		}
		prefixes = append(prefixes, pre)
		offset += len(piece)
	}
	return pieces, prefixes
}

func isStore(s kernel.Stmt) bool {
	switch s.(type) {
	case kernel.Store, kernel.VecStore:
		return true
	}
	return false
}

// walkStmt calls f on s and every statement nested in it.
func walkStmt(s kernel.Stmt, f func(kernel.Stmt)) {
	f(s)
	if iff, ok := s.(kernel.If); ok {
		for _, t := range iff.Then {
			walkStmt(t, f)
		}
		for _, t := range iff.Else {
			walkStmt(t, f)
		}
	}
}

// stmtUses lists the variables a statement (and its nested ones) reads.
func stmtUses(s kernel.Stmt) []string {
	var vs []string
	var expr func(e kernel.Expr)
	expr = func(e kernel.Expr) {
		switch e := e.(type) {
		case kernel.Var:
			vs = append(vs, e.Name)
		case kernel.Load:
			expr(e.Index)
		case kernel.Bin:
			expr(e.L)
			expr(e.R)
		}
	}
	walkStmt(s, func(s kernel.Stmt) {
		switch s := s.(type) {
		case kernel.Decl:
			if s.Init != nil {
				expr(s.Init)
			}
		case kernel.Assign:
			expr(s.Value)
		case kernel.Store:
			expr(s.Index)
			expr(s.Value)
		case kernel.VecLoad:
			expr(s.Index)
		case kernel.VecStore:
			expr(s.Index)
			for _, v := range s.Src {
				expr(v)
			}
		case kernel.If:
			expr(s.Cond)
		}
	})
	return vs
}
