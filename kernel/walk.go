package kernel

// WalkStmts calls f on every statement of ss in order, descending into the
// bodies of If and For when f returns true.
func WalkStmts(ss []Stmt, f func(Stmt) bool) {
	for _, s := range ss {
		if !f(s) {
			continue
		}
		switch s := s.(type) {
		case If:
			WalkStmts(s.Then, f)
			WalkStmts(s.Else, f)
		case For:
			WalkStmts(s.Body, f)
		}
	}
}

// RewriteStmts returns ss with each statement that is not an If or a For
// replaced by what f returns for it (none drops it), descending into the
// bodies of If and For, which are kept. ss itself is left as it is.
func RewriteStmts(ss []Stmt, f func(Stmt) []Stmt) []Stmt {
	out := make([]Stmt, 0, len(ss))
	for _, s := range ss {
		switch x := s.(type) {
		case If:
			x.Then, x.Else = RewriteStmts(x.Then, f), RewriteStmts(x.Else, f)
			out = append(out, x)
		case For:
			x.Body = RewriteStmts(x.Body, f)
			out = append(out, x)
		default:
			out = append(out, f(s)...)
		}
	}
	return out
}

// StmtExprs calls f on each expression a statement holds directly (not
// those of nested statements).
func StmtExprs(s Stmt, f func(Expr)) {
	switch s := s.(type) {
	case Decl:
		if s.Init != nil {
			f(s.Init)
		}
	case Assign:
		f(s.Value)
	case Store:
		for _, i := range s.Index {
			f(i)
		}
		f(s.Value)
	case AtomicAdd:
		for _, i := range s.Index {
			f(i)
		}
		f(s.Value)
	case AtomicFetchAdd:
		for _, i := range s.Index {
			f(i)
		}
		f(s.Value)
	case VecLoad:
		f(s.Index)
	case Prefetch:
		f(s.Index)
	case VecStore:
		f(s.Index)
		for _, v := range s.Src {
			f(v)
		}
	case If:
		f(s.Cond)
	case For:
		f(s.From)
		f(s.To)
	case MMA:
		for _, es := range [][]Expr{s.A, s.B, s.C} {
			for _, e := range es {
				f(e)
			}
		}
	case WGMMA:
		for _, e := range s.A {
			f(e)
		}
		f(s.BAt)
		if s.Accumulate != nil {
			f(s.Accumulate)
		}
	case CopyAsync:
		for _, i := range s.DstIndex {
			f(i)
		}
		f(s.SrcIndex)
		if s.Cond != nil {
			f(s.Cond)
		}
		if s.Valid != nil {
			f(s.Valid)
		}
	case BulkCopy, TxBarrier:
		bulkExprs(s, f)
	}
}

// WalkExpr calls f on e and every expression inside it, parents first.
func WalkExpr(e Expr, f func(Expr)) {
	f(e)
	switch e := e.(type) {
	case Load:
		for _, i := range e.Index {
			WalkExpr(i, f)
		}
	case Bin:
		WalkExpr(e.L, f)
		WalkExpr(e.R, f)
	case Unary:
		WalkExpr(e.X, f)
	case Cast:
		WalkExpr(e.X, f)
	case Select:
		WalkExpr(e.Cond, f)
		WalkExpr(e.Then, f)
		WalkExpr(e.Else, f)
	case Call:
		for _, a := range e.Args {
			WalkExpr(a, f)
		}
	}
}

// Size counts the statements and expression nodes of a body: a measure of
// the work a compiler spends on it.
func Size(ss []Stmt) int {
	n := 0
	WalkStmts(ss, func(s Stmt) bool {
		n++
		StmtExprs(s, func(e Expr) { WalkExpr(e, func(Expr) { n++ }) })
		return true
	})
	return n
}

// Uses lists the variables a statement and its nested statements read
// (with repeats), including the variables of element indices and of vector
// and atomic statements.
func Uses(s Stmt) []string {
	var vs []string
	WalkStmts([]Stmt{s}, func(s Stmt) bool {
		StmtExprs(s, func(e Expr) {
			WalkExpr(e, func(e Expr) {
				if v, ok := e.(Var); ok {
					vs = append(vs, v.Name)
				}
			})
		})
		return true
	})
	return vs
}

// MapExpr rebuilds e bottom-up, replacing each node n by f(n) after its
// children have been mapped.
func MapExpr(e Expr, f func(Expr) Expr) Expr {
	switch x := e.(type) {
	case Load:
		idx := make([]Expr, len(x.Index))
		for i, ie := range x.Index {
			idx[i] = MapExpr(ie, f)
		}
		e = Load{Buf: x.Buf, Index: idx}
	case Bin:
		e = Bin{Op: x.Op, L: MapExpr(x.L, f), R: MapExpr(x.R, f)}
	case Unary:
		e = Unary{Op: x.Op, X: MapExpr(x.X, f)}
	case Cast:
		e = Cast{To: x.To, X: MapExpr(x.X, f)}
	case Select:
		e = Select{Cond: MapExpr(x.Cond, f), Then: MapExpr(x.Then, f), Else: MapExpr(x.Else, f)}
	case Call:
		args := make([]Expr, len(x.Args))
		for i, a := range x.Args {
			args[i] = MapExpr(a, f)
		}
		e = Call{Fn: x.Fn, Args: args}
	}
	return f(e)
}

// MapExprs returns s with every expression it holds directly mapped by f
// (see MapExpr); nested statements are left as they are.
func MapExprs(s Stmt, f func(Expr) Expr) Stmt {
	m := func(e Expr) Expr {
		if e == nil {
			return nil
		}
		return MapExpr(e, f)
	}
	ms := func(es []Expr) []Expr {
		out := make([]Expr, len(es))
		for i, e := range es {
			out[i] = m(e)
		}
		return out
	}
	switch x := s.(type) {
	case Decl:
		x.Init = m(x.Init)
		return x
	case Assign:
		x.Value = m(x.Value)
		return x
	case Store:
		x.Index, x.Value = ms(x.Index), m(x.Value)
		return x
	case AtomicAdd:
		x.Index, x.Value = ms(x.Index), m(x.Value)
		return x
	case AtomicFetchAdd:
		x.Index, x.Value = ms(x.Index), m(x.Value)
		return x
	case VecLoad:
		x.Index = m(x.Index)
		return x
	case Prefetch:
		x.Index = m(x.Index)
		return x
	case VecStore:
		x.Index, x.Src = m(x.Index), ms(x.Src)
		return x
	case If:
		x.Cond = m(x.Cond)
		return x
	case For:
		x.From, x.To = m(x.From), m(x.To)
		return x
	case MMA:
		x.A, x.B, x.C = ms(x.A), ms(x.B), ms(x.C)
		return x
	case WGMMA:
		x.A, x.BAt = ms(x.A), m(x.BAt)
		if x.Accumulate != nil {
			x.Accumulate = m(x.Accumulate)
		}
		return x
	case CopyAsync:
		x.DstIndex, x.SrcIndex = ms(x.DstIndex), m(x.SrcIndex)
		if x.Cond != nil {
			x.Cond = m(x.Cond)
		}
		if x.Valid != nil {
			x.Valid = m(x.Valid)
		}
		return x
	case BulkCopy, TxBarrier:
		return mapBulk(x, m, ms)
	}
	return s
}
