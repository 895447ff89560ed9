package kernel

import (
	"reflect"
	"testing"
)

// RewriteStmts replaces, drops and multiplies statements at every depth,
// keeps the Ifs and Fors around them, and leaves its input alone.
func TestRewriteStmts(t *testing.T) {
	in := []Stmt{
		Comment{Text: "a"},
		Barrier{},
		If{Cond: Const(1), Then: []Stmt{Barrier{}, Comment{Text: "b"}}, Else: []Stmt{Barrier{}}},
		For{Var: "i", From: Const(0), To: Const(2), Body: []Stmt{Comment{Text: "c"}, Barrier{}}},
	}
	orig := []Stmt{in[0], in[1], in[2], in[3]}
	// Barriers dropped, each comment doubled.
	got := RewriteStmts(in, func(s Stmt) []Stmt {
		switch s.(type) {
		case Barrier:
			return nil
		case Comment:
			return []Stmt{s, s}
		}
		return []Stmt{s}
	})
	want := []Stmt{
		Comment{Text: "a"}, Comment{Text: "a"},
		If{Cond: Const(1), Then: []Stmt{Comment{Text: "b"}, Comment{Text: "b"}}, Else: []Stmt{}},
		For{Var: "i", From: Const(0), To: Const(2), Body: []Stmt{Comment{Text: "c"}, Comment{Text: "c"}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("RewriteStmts = %#v\nwant %#v", got, want)
	}
	if !reflect.DeepEqual(in, orig) || HasBarrier(got) || !HasBarrier(in[2].(If).Then) {
		t.Errorf("RewriteStmts changed its input: %#v", in)
	}
}
