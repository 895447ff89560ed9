package kernel

// Bulk copies on transaction barriers (CUDA's cp.async.bulk and mbarrier,
// sm_90): one thread starts the copy of a whole row of global memory into
// shared memory, the copy engine moves it, and its bytes count down a
// barrier in shared memory that the readers wait on. No thread holds the
// data on the way, and no block-wide barrier orders the stages, so that a
// block can give the copies to one warp (the producer) and the arithmetic
// to the others (the consumers).

// BulkCopy copies Elements consecutive elements of the real buffer
// parameter Src from SrcIndex into the real shared array Dst from DstIndex,
// as one bulk copy issued by the thread that reaches it; when the bytes
// have landed they count down the transaction count of the barrier
// Bar[BarIndex] (see TxBarrier). The source and destination must be
// 16-byte aligned and the bytes a multiple of 16; the elements are
// undefined until the barrier's phase completes.
type BulkCopy struct {
	Dst      string
	DstIndex []Expr
	Src      string
	SrcIndex Expr
	Elements Expr
	Bar      string
	BarIndex Expr
}

// TxOp is what a TxBarrier statement does.
type TxOp int

const (
	// TxInit sets the barrier's expected arrivals to Count (phase 0); one
	// thread initialises each barrier before a Barrier that precedes any
	// other use.
	TxInit TxOp = iota
	// TxExpect adds Bytes to the transaction count of the barrier's
	// current phase, which bulk copies count down (it is no arrival).
	// Copies may land before it: the phase waits for its arrivals too,
	// so the thread that expects arrives after it.
	TxExpect
	// TxArrive arrives on the barrier.
	TxArrive
	// TxWait waits until the barrier's phase of parity Parity (0 or 1)
	// has completed: all its arrivals made and its bytes landed.
	TxWait
)

// TxBarrier is an operation on the transaction barrier Bar[Index], an
// element of an Int64 shared array. A phase completes when Count arrivals
// have been made and the bytes expected of it have landed; the next phase
// then starts, with the opposite parity.
type TxBarrier struct {
	Op     TxOp
	Bar    string
	Index  Expr
	Count  int  // TxInit
	Bytes  Expr // TxExpect
	Parity Expr // TxWait
}

func (BulkCopy) isStmt()  {}
func (TxBarrier) isStmt() {}

// HasBulkCopies reports whether ss hold a BulkCopy or TxBarrier.
func HasBulkCopies(ss []Stmt) bool {
	found := false
	WalkStmts(ss, func(s Stmt) bool {
		switch s.(type) {
		case BulkCopy, TxBarrier:
			found = true
		}
		return !found
	})
	return found
}

// bulkExprs calls f on the expressions of a BulkCopy or TxBarrier.
func bulkExprs(s Stmt, f func(Expr)) {
	switch s := s.(type) {
	case BulkCopy:
		for _, e := range s.DstIndex {
			f(e)
		}
		f(s.SrcIndex)
		f(s.Elements)
		f(s.BarIndex)
	case TxBarrier:
		f(s.Index)
		for _, e := range []Expr{s.Bytes, s.Parity} {
			if e != nil {
				f(e)
			}
		}
	}
}

// mapBulk is bulkExprs's rewriting form: s with each expression e as m(e).
func mapBulk(s Stmt, m func(Expr) Expr, ms func([]Expr) []Expr) Stmt {
	switch x := s.(type) {
	case BulkCopy:
		x.DstIndex, x.SrcIndex, x.Elements, x.BarIndex = ms(x.DstIndex), m(x.SrcIndex), m(x.Elements), m(x.BarIndex)
		return x
	case TxBarrier:
		x.Index = m(x.Index)
		if x.Bytes != nil {
			x.Bytes = m(x.Bytes)
		}
		if x.Parity != nil {
			x.Parity = m(x.Parity)
		}
		return x
	}
	return s
}
