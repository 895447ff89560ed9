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

// Value is what the copy writes: Src[SrcIndex], or zero where Cond is
// false.
func (c CopyAsync) Value() Expr {
	var v Expr = At(c.Src, c.SrcIndex)
	if c.Cond != nil {
		v = Select{Cond: c.Cond, Then: v, Else: Lit{V: 0}}
	}
	return v
}

// SyncCopies returns k with its asynchronous copies made plain ones, for
// a dialect without them: each CopyAsync a Store of the element (of zero
// where its condition is false), AsyncCommit and AsyncWait gone. A copy
// done at once is done by any wait, so the kernel computes what it did.
// k itself is returned where it has none.
func SyncCopies(k *Kernel) *Kernel {
	if !HasAsyncCopies(k.Body) {
		return k
	}
	out := *k
	out.Body = RewriteStmts(k.Body, func(s Stmt) []Stmt {
		switch x := s.(type) {
		case CopyAsync:
			return []Stmt{Store{Buf: x.Dst, Index: x.DstIndex, Value: x.Value()}}
		case AsyncCommit, AsyncWait:
			return nil
		}
		return []Stmt{s}
	})
	return &out
}
