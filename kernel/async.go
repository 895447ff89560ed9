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
	out.Body = syncCopies(k.Body)
	return &out
}

func syncCopies(ss []Stmt) []Stmt {
	out := make([]Stmt, 0, len(ss))
	for _, s := range ss {
		switch x := s.(type) {
		case CopyAsync:
			var v Expr = At(x.Src, x.SrcIndex)
			if x.Cond != nil {
				v = Select{Cond: x.Cond, Then: v, Else: Lit{V: 0}}
			}
			out = append(out, Store{Buf: x.Dst, Index: x.DstIndex, Value: v})
		case AsyncCommit, AsyncWait:
		case If:
			x.Then, x.Else = syncCopies(x.Then), syncCopies(x.Else)
			out = append(out, x)
		case For:
			x.Body = syncCopies(x.Body)
			out = append(out, x)
		default:
			out = append(out, s)
		}
	}
	return out
}
