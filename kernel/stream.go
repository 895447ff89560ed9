package kernel

// StreamRows describes outputs a block has staged in a one-dimensional
// shared array, to be written to a buffer with streamed stores (VecStore
// with Stream) a cache line at a time: Rows rows of Live words each, row r
// staged from Src(r) and written from Dst(r).
type StreamRows struct {
	Buf, Stage string
	Rows       int
	// RowLen is the most words a row holds (Live is at most RowLen).
	RowLen int
	// Width is the words of one streamed store (64 bytes: a cache line).
	Width int
	// Threads is the block's threads along x, over which the pieces are
	// dealt (piece c to thread c mod Threads).
	Threads  int
	Dst, Src func(row Expr) Expr
	Live     Expr
	// Prefix starts the names of the statements' variables.
	Prefix string
}

// Statements writes the rows: each piece of Width words as one streamed
// store, and a piece that Live cuts short word by word. Every thread of
// the block runs them, after a barrier that follows the staging.
func (s StreamRows) Statements() []Stmt {
	perRow := (s.RowLen + s.Width - 1) / s.Width
	pieces := s.Rows * perRow
	name := func(x string) string { return s.Prefix + x }
	c, row, col := Ref(name("c")), Ref(name("row")), Ref(name("col"))
	dst, src := Add(s.Dst(row), col), Add(s.Src(row), col)
	piece := make([]Expr, s.Width)
	for j := range piece {
		piece[j] = At(s.Stage, Add(src, Const(j)))
	}
	jv := Ref(name("j"))
	return []Stmt{For{Var: name("t"), From: Const(0), To: Const((pieces + s.Threads - 1) / s.Threads), Body: []Stmt{
		DeclIndex(name("c"), Add(LocalX, Mul(Ref(name("t")), Const(s.Threads)))),
		If{Cond: Lt(c, Const(pieces)), Then: []Stmt{
			DeclIndex(name("row"), Div(c, Const(perRow))),
			DeclIndex(name("col"), Mul(Rem(c, Const(perRow)), Const(s.Width))),
			If{
				Cond: Le(Add(col, Const(s.Width)), s.Live),
				Then: []Stmt{VecStore{Buf: s.Buf, Index: dst, Src: piece, Stream: true}},
				Else: []Stmt{For{Var: name("j"), From: Const(0), To: Const(s.Width), Body: []Stmt{
					If{Cond: Lt(Add(col, jv), s.Live), Then: []Stmt{
						Put(s.Buf, At(s.Stage, Add(src, jv)), Add(dst, jv)),
					}},
				}}},
			},
		}},
	}}}
}
