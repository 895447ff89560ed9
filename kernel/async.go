package kernel

// HasAsyncCopies reports whether ss hold a CopyAsync, AsyncCommit or
// AsyncWait at any depth.
func HasAsyncCopies(ss []Stmt) bool {
	found := false
	WalkStmts(ss, func(s Stmt) bool {
		switch s.(type) {
		case CopyAsync, AsyncCommit, AsyncWait:
			found = true
		}
		return !found
	})
	return found
}

// Value is what the copy writes into its i-th element (i < Elements):
// Src[SrcIndex + i], or zero where Cond is false or i is not below Valid.
func (c CopyAsync) Value(i int) Expr {
	var v Expr = At(c.Src, c.SrcIndex)
	if i > 0 {
		v = At(c.Src, Add(c.SrcIndex, Const(i)))
	}
	cond := c.Cond
	if c.Valid != nil {
		in := Lt(Const(i), c.Valid)
		if cond == nil {
			cond = in
		} else {
			cond = And(cond, in)
		}
	}
	if cond != nil {
		v = Select{Cond: cond, Then: v, Else: Lit{V: 0}}
	}
	return v
}

// Elements is how many elements the copy writes: Width, or one.
func (c CopyAsync) Elements() int { return max(c.Width, 1) }

// DstAt is the index of the copy's i-th element in Dst.
func (c CopyAsync) DstAt(i int) []Expr {
	if i == 0 {
		return c.DstIndex
	}
	at := append([]Expr(nil), c.DstIndex...)
	at[len(at)-1] = Add(at[len(at)-1], Const(i))
	return at
}
