package kernel

import (
	"strings"
	"testing"
)

// TestBinOps: every listed operator has a class, once, and Validate types
// each class as documented (reals refused where integers are asked for);
// an operator outside the set is refused.
func TestBinOps(t *testing.T) {
	seen := map[BinOp]bool{}
	for _, op := range BinOps {
		if op.Class() == NoClass {
			t.Errorf("%q has no class", op)
		}
		if seen[op] {
			t.Errorf("%q listed twice", op)
		}
		seen[op] = true
	}
	realOK := map[BinClass]bool{Arithmetic: true, Comparison: true}
	want := map[BinClass]Type{Arithmetic: Real, Comparison: Index}
	for _, op := range BinOps {
		for _, operands := range []struct {
			l, r Expr
			real bool
		}{{Lit{V: 1}, Lit{V: 2}, true}, {Int{V: 1}, Int{V: 2}, false}} {
			k := small(Decl{Type: Real, Name: "a"}, Decl{Type: Index, Name: "b"})
			e := NewEnv(k)
			got, err := e.TypeOf(Bin{Op: op, L: operands.l, R: operands.r})
			switch {
			case !operands.real && err != nil:
				t.Errorf("%q on integers: %v", op, err)
			case operands.real && realOK[op.Class()] && (err != nil || got != want[op.Class()]):
				t.Errorf("%q on reals: %v, %v; want %v", op, got, err, want[op.Class()])
			case operands.real && !realOK[op.Class()] && err == nil:
				t.Errorf("%q on reals: no error", op)
			}
		}
	}
	if _, err := NewEnv(small()).TypeOf(Bin{Op: "**", L: Int{V: 1}, R: Int{V: 2}}); err == nil || !strings.Contains(err.Error(), "unknown operator") {
		t.Errorf("**: %v, want an unknown operator", err)
	}
	if BinOp("**").Class() != NoClass {
		t.Error("** has a class")
	}
}
