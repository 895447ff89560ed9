package pass

import "github.com/bespoke-hpc/bespoke/kernel"

// SyncCopies returns k with its asynchronous copies made plain ones, for
// a dialect without them: each CopyAsync a Store of the element (of zero
// where its condition is false), AsyncCommit and AsyncWait gone. A copy
// done at once is done by any wait, so the kernel computes what it did.
// k itself is returned where it has none.
func SyncCopies(k *kernel.Kernel) *kernel.Kernel {
	if !kernel.HasAsyncCopies(k.Body) {
		return k
	}
	out := *k
	out.Body = kernel.RewriteStmts(k.Body, func(s kernel.Stmt) []kernel.Stmt {
		switch x := s.(type) {
		case kernel.CopyAsync:
			var out []kernel.Stmt
			for i := 0; i < x.Elements(); i++ {
				out = append(out, kernel.Store{Buf: x.Dst, Index: x.DstAt(i), Value: x.Value(i)})
			}
			return out
		case kernel.AsyncCommit, kernel.AsyncWait:
			return nil
		}
		return []kernel.Stmt{s}
	})
	return &out
}
