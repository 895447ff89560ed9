package kernel

// The builder: every family writes its kernels with these functions (and
// Ref, Const, At, Put, Op above), so that one spelling builds one tree and
// an operator is always one of BinOps.

// Add is l + r.
func Add(l, r Expr) Expr { return Bin{Op: OpAdd, L: l, R: r} }

// Sub is l − r.
func Sub(l, r Expr) Expr { return Bin{Op: OpSub, L: l, R: r} }

// Mul is l · r.
func Mul(l, r Expr) Expr { return Bin{Op: OpMul, L: l, R: r} }

// Div is l / r (truncating on integers).
func Div(l, r Expr) Expr { return Bin{Op: OpDiv, L: l, R: r} }

// Rem is l % r, of integers.
func Rem(l, r Expr) Expr { return Bin{Op: OpRem, L: l, R: r} }

// Lt is l < r (an integer 0 or 1, as the other comparisons).
func Lt(l, r Expr) Expr { return Bin{Op: OpLt, L: l, R: r} }

// Le is l ≤ r.
func Le(l, r Expr) Expr { return Bin{Op: OpLe, L: l, R: r} }

// Gt is l > r.
func Gt(l, r Expr) Expr { return Bin{Op: OpGt, L: l, R: r} }

// Ge is l ≥ r.
func Ge(l, r Expr) Expr { return Bin{Op: OpGe, L: l, R: r} }

// Eq is l == r.
func Eq(l, r Expr) Expr { return Bin{Op: OpEq, L: l, R: r} }

// Ne is l != r.
func Ne(l, r Expr) Expr { return Bin{Op: OpNe, L: l, R: r} }

// And is l && r, of integer conditions.
func And(l, r Expr) Expr { return Bin{Op: OpAnd, L: l, R: r} }

// Or is l || r, of integer conditions.
func Or(l, r Expr) Expr { return Bin{Op: OpOr, L: l, R: r} }

// Neg is −x.
func Neg(x Expr) Expr { return Unary{Op: OpNeg, X: x} }

// Not is !x, of an integer condition.
func Not(x Expr) Expr { return Unary{Op: OpNot, X: x} }

// Float is the real literal x, printed at the kernel's precision (Const
// is an integer one).
func Float(x float64) Expr { return Lit{V: x} }

// Sum is xs[0] + xs[1] + … added left to right (the order a compiler keeps
// for reals): xs[0] alone for one term, nil for none.
func Sum(xs ...Expr) Expr {
	if len(xs) == 0 {
		return nil
	}
	s := xs[0]
	for _, x := range xs[1:] {
		s = Add(s, x)
	}
	return s
}

// Prod is xs[0] · xs[1] · … multiplied left to right, as Sum adds.
func Prod(xs ...Expr) Expr {
	if len(xs) == 0 {
		return nil
	}
	p := xs[0]
	for _, x := range xs[1:] {
		p = Mul(p, x)
	}
	return p
}

// Apply is the intrinsic f of args.
func Apply(f Intrinsic, args ...Expr) Expr { return Call{Fn: f, Args: args} }

// DeclReal declares the real variable name = init (uninitialised where
// init is nil).
func DeclReal(name string, init Expr) Decl { return Decl{Type: Real, Name: name, Init: init} }

// DeclIndex declares the index variable name = init.
func DeclIndex(name string, init Expr) Decl { return Decl{Type: Index, Name: name, Init: init} }

// Set assigns name = value.
func Set(name string, value Expr) Assign { return Assign{Name: name, Value: value} }

// Loop runs body for name = from, from+1, … while name < to.
func Loop(name string, from, to Expr, body ...Stmt) For {
	return For{Var: name, From: from, To: to, Body: body}
}
