package kernel

import (
	"math"
	"strings"
	"testing"
)

// ids and a few statements to build small kernels from.
var (
	lx = Special{Kind: LocalID}
	gx = Special{Kind: GroupID}
)

func v(n string) Var { return Var{Name: n} }

func small(body ...Stmt) *Kernel {
	return &Kernel{
		Name: "k", DType: F64,
		Params: []Param{{Name: "n", Kind: ScalarParam, Type: Index},
			{Name: "x", Kind: BufferParam, Type: Real, Const: true},
			{Name: "y", Kind: BufferParam, Type: Real},
			{Name: "map", Kind: BufferParam, Type: Int64, Const: true}},
		Shared: []Shared{{Name: "s", Type: Real, Dims: []int{4, 8}}},
		Launch: Launch{Block: [3]int{8, 4, 1}},
		Body:   body,
	}
}

// counted is small with an int32 buffer cnt for atomic fetch-adds.
func counted(body ...Stmt) *Kernel {
	k := small(body...)
	k.Params = append(k.Params, Param{Name: "cnt", Kind: BufferParam, Type: Int32})
	return k
}

func TestValidate(t *testing.T) {
	good := []Stmt{
		Decl{Type: Index, Name: "i", Init: Bin{Op: "+", L: Bin{Op: "*", L: gx, R: Int{V: 8}}, R: lx}},
		Decl{Type: Real, Name: "r", Dims: []int{3}},
		For{Var: "z", From: Int{}, To: v("n"), Body: []Stmt{
			Put("s", At("x", v("i")), Special{Kind: LocalID, Axis: 1}, lx),
			Barrier{},
			Put("r", Call{Fn: Sqrt, Args: []Expr{At("s", Int{V: 0}, lx)}}, Int{V: 1}),
			Barrier{},
		}},
		If{Cond: Bin{Op: "<", L: v("i"), R: v("n")}, Then: []Stmt{
			AtomicAdd{Buf: "y", Index: []Expr{At("map", v("i"))}, Value: Cast{To: Real, X: v("i")}},
			Decl{Type: Int32, Name: "o"},
			AtomicFetchAdd{Old: "o", Buf: "cnt", Index: []Expr{Int{V: 1}}, Value: v("i")},
			AtomicFetchAdd{Buf: "cnt", Index: []Expr{v("o")}, Value: Int{V: 1}},
		}},
	}
	if err := Validate(counted(good...)); err != nil {
		t.Fatalf("a good kernel: %v", err)
	}
	for _, tc := range []struct {
		name string
		body []Stmt
		want string
	}{
		{"undeclared", []Stmt{Put("y", v("q"), Int{})}, `"q" is not declared`},
		{"declared twice", []Stmt{Decl{Type: Real, Name: "a"}, If{Cond: Int{V: 1}, Then: []Stmt{Decl{Type: Real, Name: "a"}}}}, "declared twice"},
		{"mixed types", []Stmt{Put("y", Bin{Op: "+", L: Lit{V: 1}, R: Int{V: 2}}, Int{})}, "mixes"},
		{"real index", []Stmt{Put("y", Lit{V: 1}, Lit{V: 0})}, "index of"},
		{"store into const", []Stmt{Put("x", Lit{V: 1}, Int{})}, "read-only"},
		{"wrong index count", []Stmt{Put("s", Lit{V: 1}, Int{})}, "takes 2 indices"},
		{"barrier under thread condition", []Stmt{If{Cond: Bin{Op: "<", L: lx, R: Int{V: 4}}, Then: []Stmt{Barrier{}}}}, "barrier"},
		{"barrier in a loop over loaded bounds", []Stmt{For{Var: "z", From: Int{}, To: Cast{To: Index, X: At("x", Int{})}, Body: []Stmt{Barrier{}}}}, "barrier"},
		{"barrier after a varying assignment", []Stmt{Decl{Type: Index, Name: "m", Init: Int{V: 2}}, Assign{Name: "m", Value: lx},
			For{Var: "z", From: Int{}, To: v("m"), Body: []Stmt{Barrier{}}}}, "barrier"},
		{"atomic on shared", []Stmt{AtomicAdd{Buf: "s", Index: []Expr{Int{}, Int{}}, Value: Lit{V: 1}}}, "atomic"},
		{"fetch-add into a real buffer", []Stmt{AtomicFetchAdd{Buf: "y", Index: []Expr{Int{}}, Value: Int{V: 1}}}, "int32"},
		{"fetch-add into a read-only buffer", []Stmt{AtomicFetchAdd{Buf: "map", Index: []Expr{Int{}}, Value: Int{V: 1}}}, "int32"},
		{"fetch-add of a real", []Stmt{AtomicFetchAdd{Buf: "cnt", Index: []Expr{Int{}}, Value: Lit{V: 1}}}, "cast"},
		{"fetch-add into an undeclared old", []Stmt{AtomicFetchAdd{Old: "o", Buf: "cnt", Index: []Expr{Int{}}, Value: Int{V: 1}}}, "not a declared integer"},
		{"fetch-add into a real old", []Stmt{Decl{Type: Real, Name: "o"}, AtomicFetchAdd{Old: "o", Buf: "cnt", Index: []Expr{Int{}}, Value: Int{V: 1}}}, "not a declared integer"},
		{"fetch-add into a parameter", []Stmt{AtomicFetchAdd{Old: "n", Buf: "cnt", Index: []Expr{Int{}}, Value: Int{V: 1}}}, "not a declared integer"},
		{"barrier under a ticket", []Stmt{Decl{Type: Index, Name: "o", Init: Int{}}, AtomicFetchAdd{Old: "o", Buf: "cnt", Index: []Expr{Int{}}, Value: Int{V: 1}},
			If{Cond: Bin{Op: "<", L: v("o"), R: Int{V: 4}}, Then: []Stmt{Barrier{}}}}, "barrier"},
		{"infinite literal", []Stmt{Put("y", Lit{V: math.Inf(1)}, Int{})}, "not finite"},
		{"unknown intrinsic", []Stmt{Put("y", Call{Fn: "exp", Args: []Expr{Lit{V: 1}}}, Int{})}, "exp"},
		{"array with an initial value", []Stmt{Decl{Type: Real, Name: "a", Dims: []int{2}, Init: Lit{V: 0}}}, "initial value"},
		{"assign to a parameter", []Stmt{Assign{Name: "n", Value: Int{}}}, "not a variable"},
		{"vector load of width 3", []Stmt{Decl{Type: Real, Name: "a"}, Decl{Type: Real, Name: "b"}, Decl{Type: Real, Name: "c"},
			VecLoad{Dst: []string{"a", "b", "c"}, Buf: "x", Index: Int{}}}, "width 3"},
		{"vector load from a 2-D shared array", []Stmt{Decl{Type: Real, Name: "a"}, Decl{Type: Real, Name: "b"},
			VecLoad{Dst: []string{"a", "b"}, Buf: "s", Index: Int{}}}, "of 2 dimensions"},
		{"vector store into a shared array", []Stmt{VecStore{Src: []Expr{Lit{V: 1}, Lit{V: 2}}, Buf: "s", Index: Int{}}}, "not a real buffer parameter"},
		{"prefetch of a shared array", []Stmt{Prefetch{Buf: "s", Index: Int{}}}, "not a real buffer parameter"},
		{"prefetch of an int buffer", []Stmt{Prefetch{Buf: "cnt", Index: Int{}}}, "not a real buffer parameter"},
		{"prefetch at a real index", []Stmt{Prefetch{Buf: "x", Index: Lit{V: 1}}}, "index of"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(counted(tc.body...))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate = %v, want an error containing %q", err, tc.want)
			}
		})
	}
	k := small(Put("y", Lit{V: 1e300}, Int{}))
	k.DType = F32
	if err := Validate(k); err == nil || !strings.Contains(err.Error(), "float32") {
		t.Errorf("f32 kernel with 1e300: %v", err)
	}
	k = small(Put("y", Lit{V: 1}, Int{}))
	k.Launch.Block = [3]int{32, 32, 2}
	if err := Validate(k); err == nil || !strings.Contains(err.Error(), "block") {
		t.Errorf("2048 threads: %v", err)
	}
	k = small(Barrier{})
	k.Active = v("n")
	if err := Validate(k); err == nil || !strings.Contains(err.Error(), "Active") {
		t.Errorf("barrier with Active: %v", err)
	}
}

func TestBlocks(t *testing.T) {
	l := Launch{Block: [3]int{128, 1, 1}, Grid: [3]Axis{Over("n", 256), {Fixed: 3}}}
	g, err := l.Blocks(map[string]int64{"n": 1000})
	if err != nil || g != [3]int{4, 3, 1} {
		t.Errorf("Blocks = %v, %v; want [4 3 1]", g, err)
	}
	if _, err := l.Blocks(map[string]int64{}); err == nil {
		t.Error("a missing size was accepted")
	}
	if _, err := l.Blocks(map[string]int64{"n": -1}); err == nil {
		t.Error("a negative size was accepted")
	}
}

func TestArgs(t *testing.T) {
	k := small(Put("y", Lit{V: 1}, Int{}))
	args, err := k.Args(map[string]any{"n": 5, "x": "X", "y": "Y", "map": "M"})
	if err != nil || args[0] != int32(5) || args[1] != "X" || len(args) != 4 {
		t.Errorf("Args = %v, %v", args, err)
	}
	if _, err := k.Args(map[string]any{"n": int64(1) << 40, "x": 0, "y": 0, "map": 0}); err == nil {
		t.Error("2^40 accepted for a 32-bit index")
	}
	k.Index64 = true
	if args, _ := k.Args(map[string]any{"n": 5, "x": 0, "y": 0, "map": 0}); args[0] != int64(5) {
		t.Errorf("64-bit index passed as %T", args[0])
	}
	if _, err := k.Args(map[string]any{"x": 0, "y": 0, "map": 0}); err == nil {
		t.Error("a missing argument was accepted")
	}
}

func TestCodec(t *testing.T) {
	xs := []float64{1, -2.5, math.Pi, 1e-30}
	for _, d := range []DType{F64, F32} {
		back := d.Decode(d.Encode(xs))
		for i, x := range xs {
			if back[i] != d.Rounded(x) {
				t.Errorf("%s: %v came back as %v", d, x, back[i])
			}
		}
	}
	is := []int64{0, -1, 1 << 31, -(1 << 40)}
	if got := DecodeInts(8, EncodeInts(8, is)); got[3] != is[3] || got[2] != is[2] {
		t.Errorf("int64 round trip: %v", got)
	}
	if got := DecodeInts(4, EncodeInts(4, []int64{-7, 7})); got[0] != -7 || got[1] != 7 {
		t.Errorf("int32 round trip: %v", got)
	}
}
