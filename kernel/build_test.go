package kernel

import (
	"reflect"
	"testing"
)

// TestBuilder: each builder makes the node it names, with its typed
// operator, and Sum and Prod fold left to right.
func TestBuilder(t *testing.T) {
	a, b, c := v("a"), v("b"), v("c")
	for _, tc := range []struct {
		name      string
		got, want any
	}{
		{"Add", Add(a, b), Bin{Op: OpAdd, L: a, R: b}},
		{"Sub", Sub(a, b), Bin{Op: OpSub, L: a, R: b}},
		{"Mul", Mul(a, b), Bin{Op: OpMul, L: a, R: b}},
		{"Div", Div(a, b), Bin{Op: OpDiv, L: a, R: b}},
		{"Rem", Rem(a, b), Bin{Op: OpRem, L: a, R: b}},
		{"Lt", Lt(a, b), Bin{Op: OpLt, L: a, R: b}},
		{"Le", Le(a, b), Bin{Op: OpLe, L: a, R: b}},
		{"Gt", Gt(a, b), Bin{Op: OpGt, L: a, R: b}},
		{"Ge", Ge(a, b), Bin{Op: OpGe, L: a, R: b}},
		{"Eq", Eq(a, b), Bin{Op: OpEq, L: a, R: b}},
		{"Ne", Ne(a, b), Bin{Op: OpNe, L: a, R: b}},
		{"And", And(a, b), Bin{Op: OpAnd, L: a, R: b}},
		{"Or", Or(a, b), Bin{Op: OpOr, L: a, R: b}},
		{"Neg", Neg(a), Unary{Op: OpNeg, X: a}},
		{"Not", Not(a), Unary{Op: OpNot, X: a}},
		{"Float", Float(0.5), Lit{V: 0.5}},
		{"Const", Const(3), Int{V: 3}},
		{"Sum", Sum(a, b, c), Bin{Op: OpAdd, L: Bin{Op: OpAdd, L: a, R: b}, R: c}},
		{"Sum of one", Sum(a), a},
		{"Prod", Prod(a, b, c), Bin{Op: OpMul, L: Bin{Op: OpMul, L: a, R: b}, R: c}},
		{"Apply", Apply(Fma, a, b, c), Call{Fn: Fma, Args: []Expr{a, b, c}}},
		{"DeclReal", DeclReal("x", a), Decl{Type: Real, Name: "x", Init: a}},
		{"DeclIndex", DeclIndex("i", a), Decl{Type: Index, Name: "i", Init: a}},
		{"Set", Set("x", a), Assign{Name: "x", Value: a}},
		{"Loop", Loop("i", Const(0), a, Set("x", b)), For{Var: "i", From: Int{}, To: a, Body: []Stmt{Assign{Name: "x", Value: b}}}},
	} {
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Errorf("%s: %#v, want %#v", tc.name, tc.got, tc.want)
		}
	}
	if Sum() != nil || Prod() != nil {
		t.Error("an empty Sum or Prod is not nil")
	}
	// Built trees type as the IR says: a real sum, an index comparison.
	e := NewEnv(small())
	for _, s := range []Stmt{DeclReal("r", Float(1)), DeclIndex("i", Const(2))} {
		d := s.(Decl)
		if err := e.Declare(d.Name, Symbol{Type: d.Type}); err != nil {
			t.Fatal(err)
		}
	}
	if ty, err := e.TypeOf(Sum(v("r"), Float(2), Mul(v("r"), v("r")))); err != nil || ty != Real {
		t.Errorf("a real sum: %v, %v", ty, err)
	}
	if ty, err := e.TypeOf(And(Lt(v("i"), Const(3)), Ne(v("i"), Const(0)))); err != nil || ty != Index {
		t.Errorf("a condition: %v, %v", ty, err)
	}
}
