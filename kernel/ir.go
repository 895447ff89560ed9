package kernel

import (
	"fmt"
	"slices"
)

// Type is the type of a scalar, an array element or a buffer element.
type Type int

// Scalar types. Real is the kernel's DType; Index is int32 or int64 as the
// kernel's Index64 decides (always 64-bit on the host); Int32 and Int64 are
// fixed widths, for integer buffers such as index maps.
const (
	Real Type = iota
	Index
	Int32
	Int64
)

func (t Type) String() string {
	switch t {
	case Real:
		return "real"
	case Index:
		return "index"
	case Int32:
		return "int32"
	case Int64:
		return "int64"
	}
	return "?"
}

// IsInt reports whether t is an integer type.
func (t Type) IsInt() bool { return t != Real }

// MarshalText lets Type appear by name in JSON metadata.
func (t Type) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// Expr is an expression node.
type Expr interface{ isExpr() }

// Lit is a real literal, printed at the kernel's precision.
type Lit struct{ V float64 }

// Int is an integer literal of the index type.
type Int struct{ V int64 }

// Var names a parameter, a declared variable or a loop variable.
type Var struct{ Name string }

// Load reads an element: Buf[Index[0]] of a buffer parameter, or
// Buf[Index[0]][Index[1]]… of a shared or register array (one index per
// dimension).
type Load struct {
	Buf   string
	Index []Expr
}

// BinOp is the operator of a Bin, spelled as in C (every dialect spells it
// alike). BinOps lists the set.
type BinOp string

// The binary operators, in four classes:
//
//   - arithmetic, on two reals or two integers: OpAdd, OpSub, OpMul, OpDiv
//     (/ on integers truncates as in C);
//   - on integers only: OpRem (% truncates as in C), OpBitAnd, OpBitOr,
//     OpXor, OpShl, OpShr;
//   - comparisons, of two reals or two integers: OpLt, OpLe, OpGt, OpGe,
//     OpEq, OpNe;
//   - logical, on integer conditions: OpAnd, OpOr.
//
// A comparison or logical operation yields an integer 0 or 1.
const (
	OpAdd    BinOp = "+"
	OpSub    BinOp = "-"
	OpMul    BinOp = "*"
	OpDiv    BinOp = "/"
	OpRem    BinOp = "%"
	OpBitAnd BinOp = "&"
	OpBitOr  BinOp = "|"
	OpXor    BinOp = "^"
	OpShl    BinOp = "<<"
	OpShr    BinOp = ">>"
	OpLt     BinOp = "<"
	OpLe     BinOp = "<="
	OpGt     BinOp = ">"
	OpGe     BinOp = ">="
	OpEq     BinOp = "=="
	OpNe     BinOp = "!="
	OpAnd    BinOp = "&&"
	OpOr     BinOp = "||"
)

// BinOps lists every binary operator, by class as above.
var BinOps = []BinOp{OpAdd, OpSub, OpMul, OpDiv, OpRem, OpBitAnd, OpBitOr, OpXor, OpShl, OpShr,
	OpLt, OpLe, OpGt, OpGe, OpEq, OpNe, OpAnd, OpOr}

// BinClass is the class of a binary operator: what it takes and yields.
type BinClass int

// The classes (see the operators).
const (
	NoClass    BinClass = iota // not an operator of the IR
	Arithmetic                 // reals or integers, yields their type
	IntOnly                    // integers, yields an integer
	Comparison                 // reals or integers, yields 0 or 1
	Logical                    // integer conditions, yields 0 or 1
)

// Class is op's class (NoClass for an unknown operator).
func (op BinOp) Class() BinClass {
	switch op {
	case OpAdd, OpSub, OpMul, OpDiv:
		return Arithmetic
	case OpRem, OpBitAnd, OpBitOr, OpXor, OpShl, OpShr:
		return IntOnly
	case OpLt, OpLe, OpGt, OpGe, OpEq, OpNe:
		return Comparison
	case OpAnd, OpOr:
		return Logical
	}
	return NoClass
}

// Bin is a binary operation L Op R (see BinOp).
type Bin struct {
	Op   BinOp
	L, R Expr
}

// UnOp is the operator of a Unary.
type UnOp string

// The unary operators: negation (of a real or an integer) and logical not
// (of an integer condition, yielding 0 or 1).
const (
	OpNeg UnOp = "-"
	OpNot UnOp = "!"
)

// Unary is -X (OpNeg) or !X (OpNot, on integers).
type Unary struct {
	Op UnOp
	X  Expr
}

// Cast converts X to type To (real ↔ integer conversions truncate as in C).
type Cast struct {
	To Type
	X  Expr
}

// Select is Cond ? Then : Else; Then and Else have one type.
type Select struct {
	Cond, Then, Else Expr
}

// Intrinsic names a built-in function every dialect provides.
type Intrinsic string

// The intrinsics. Min and Max take two reals or two integers; the others
// take reals. Fma(a, b, c) is a·b + c with one rounding. TF32(x) is x
// rounded to TensorFloat-32 (fp32 with 10 bits of mantissa, the low 13
// zero), to nearest with ties away from zero, as PTX's cvt.rna.tf32.f32
// does (mma.RoundTF32): the operands of a TF32 mma (MMA with Type
// MMATF32). TF32Trunc(x) is x with the low 13 bits of its mantissa dropped
// (mma.TruncTF32), the TF32 part the tensor cores take of an fp32 operand, so
// that x − TF32Trunc(x) is the exact rest. Unlike the others, only CUDA
// spells them (sm_80+; NeedsArch counts them), in fp32 kernels only.
const (
	Sqrt  Intrinsic = "sqrt"
	Rsqrt Intrinsic = "rsqrt"
	Fabs  Intrinsic = "fabs"
	Fma   Intrinsic = "fma"
	Min   Intrinsic = "min"
	Max   Intrinsic = "max"
	TF32  Intrinsic = "tf32"
	// TF32Trunc: see TF32.
	TF32Trunc Intrinsic = "tf32trunc"
)

// Arity is how many arguments the intrinsic takes (0 for an unknown one).
func (f Intrinsic) Arity() int {
	switch f {
	case Sqrt, Rsqrt, Fabs, TF32, TF32Trunc:
		return 1
	case Min, Max:
		return 2
	case Fma:
		return 3
	}
	return 0
}

// Call applies an intrinsic.
type Call struct {
	Fn   Intrinsic
	Args []Expr
}

// Special is a thread-geometry value: the dialect spells it.
type Special struct {
	Kind SpecialKind
	Axis int // 0, 1 or 2
}

// SpecialKind enumerates thread-geometry values.
type SpecialKind int

// Thread-geometry values, as in CUDA's threadIdx/blockIdx/blockDim.
const (
	LocalID SpecialKind = iota
	GroupID
	LocalSize
)

func (Lit) isExpr()     {}
func (Int) isExpr()     {}
func (Var) isExpr()     {}
func (Load) isExpr()    {}
func (Bin) isExpr()     {}
func (Unary) isExpr()   {}
func (Cast) isExpr()    {}
func (Select) isExpr()  {}
func (Call) isExpr()    {}
func (Special) isExpr() {}

// Stmt is a statement node.
type Stmt interface{ isStmt() }

// Decl declares Name of Type: a scalar, initialised with Init when Init is
// not nil, or, with Dims, a thread-private array (Init must be nil).
type Decl struct {
	Type Type
	Name string
	Init Expr
	Dims []int
}

// Assign sets the scalar variable Name = Value.
type Assign struct {
	Name  string
	Value Expr
}

// Store writes an element (indexed as in Load) = Value.
type Store struct {
	Buf   string
	Index []Expr
	Value Expr
}

// AtomicAdd adds Value to an element of a real buffer parameter as one
// indivisible update, so that several threads may add to one element.
type AtomicAdd struct {
	Buf   string
	Index []Expr
	Value Expr
}

// AtomicFetchAdd adds Value (an integer) to an element of an Int32 buffer
// parameter as one indivisible update and, when Old is not empty, sets the
// declared integer variable Old to the element's value before the add:
// threads that add to one element see distinct old values (tickets). The
// element must stay within 32 bits.
type AtomicFetchAdd struct {
	Old   string
	Buf   string
	Index []Expr
	Value Expr
}

// VecLoad reads len(Dst) consecutive elements Buf[Index], Buf[Index+1], …
// of a real buffer parameter or a one-dimensional real shared array into
// the already declared real variables Dst, as one aligned vector load
// where the dialect has one (from shared memory it halves or quarters the
// load instructions of a kernel bound by issuing them). Index must be a
// multiple of len(Dst).
type VecLoad struct {
	Dst   []string
	Buf   string
	Index Expr
}

// VecStore writes Src to consecutive elements from Buf[Index], as one
// aligned vector store where the dialect has one.
//
// Stream marks elements that the kernel writes once and does not read
// again (outputs streamed to memory): a dialect may write them around the
// caches, with non-temporal stores, which do not read a line before
// writing it (on CPUs an ordinary store first reads the line it fills,
// half again the traffic of a kernel that only writes its outputs). A
// streamed store may hold up to MaxStreamWidth elements (a cache line of
// fp32), and its Index need not be a multiple of the width: the C dialect
// streams the aligned ones and stores the others as usual. Lines are
// filled whole only when the threads of a kernel stream consecutive
// pieces of them in order; a dialect without such stores writes the
// elements one by one.
type VecStore struct {
	Buf    string
	Index  Expr
	Src    []Expr
	Stream bool
}

// MaxStreamWidth is the most elements one streamed VecStore writes.
const MaxStreamWidth = 16

// If runs Then when Cond holds, else Else.
type If struct {
	Cond       Expr
	Then, Else []Stmt
}

// For runs Body for Var = From, From+Step, … while Var < To (Step ≥ 1; 0
// means 1). Var is an Index variable scoped to the loop. Unroll asks the
// compiler to unroll the loop completely, UnrollBy (when positive) to
// unroll it by that factor, 1 keeping it a loop (a compiler unrolls short
// loops of known trip count on its own, which can cost registers);
// Vectorize asks it to run the iterations as SIMD lanes (they must be
// independent). None changes the result, and a dialect without the hint
// ignores it.
type For struct {
	Var       string
	From, To  Expr
	Step      int64
	Body      []Stmt
	Unroll    bool
	UnrollBy  int
	Vectorize bool
}

// Barrier synchronises the threads of a block and makes their shared-memory
// writes visible. Every thread of a block must reach it: it may appear at
// the top level, or inside For loops and Ifs whose bounds and conditions are
// the same for every thread of the block (uniform).
//
// With Threads set it synchronises only the Threads consecutive threads
// (by linear index) that hold the calling one: CUDA's named barriers
// (bar.sync 1 + t/Threads, Threads), so that groups of a block (a
// warpgroup's 128 threads) wait for each other and not for the rest. It
// takes a 1-D block, Threads a multiple of 32 dividing it into at most 15
// groups, one size a kernel; only CUDA prints it.
type Barrier struct{ Threads int }

// CopyAsync copies the element Src[SrcIndex] of a real buffer parameter
// into the element DstIndex of a real shared array (zero instead where
// Cond, when set, is false: nothing is read then) without waiting for it
// (CUDA's cp.async from sm_80, where Hints.MinArch allows it; the other
// dialects copy at once). The element is undefined until the copy is
// done: the copies a thread issued since its last AsyncCommit form a
// group, and an AsyncWait leaves at most Pending of the thread's groups in
// flight; other threads see the copies after a Barrier that follows the
// wait. Copying lets a kernel stage global memory into shared memory
// without holding it in registers on the way.
//
// Width, when 2 or 4, copies that many consecutive elements at once (one
// 8- or 16-byte copy: DstIndex's last index and SrcIndex multiples of it,
// the buffer's element offset aligned alike), and Valid, when set, is how
// many of them (0..Width) are read, the rest zero-filled: a vector cut
// short at the end of a row.
type CopyAsync struct {
	Dst      string
	DstIndex []Expr
	Src      string
	SrcIndex Expr
	Cond     Expr
	Width    int
	Valid    Expr
}

// AsyncCommit closes the thread's group of CopyAsync issued since the last
// one (an empty group where none was).
type AsyncCommit struct{}

// AsyncWait waits until at most Pending of the thread's committed groups
// of CopyAsync are still in flight, the newest ones.
type AsyncWait struct{ Pending int }

// Prefetch asks for the element Index of the real buffer parameter Buf to
// be brought into the cache ahead of its use, for writing if Write: a
// hint with no effect on results (C's __builtin_prefetch, OpenCL's
// prefetch; CUDA prints none). The index must lie in the buffer,
// as a load's must. On a CPU it lets a kernel fetch lines whose accesses
// the hardware prefetchers cannot follow (rows of a matrix far apart).
type Prefetch struct {
	Buf   string
	Index Expr
	Write bool
}

// Comment is printed as a one-line comment.
type Comment struct{ Text string }

// MMAShape is the M×N×K of a warp-level matrix multiply-accumulate: D (M×N)
// = A (M×K) · B (K×N) + C (M×N).
type MMAShape struct{ M, N, K int }

// The shapes of CUDA's mma.sync that MMA takes: in fp64 m8n8k4 from sm_80
// (Ampere) and the m16n8 ones from sm_90 (Hopper); in TF32 m16n8k4 and
// m16n8k8 from sm_80.
var (
	M8N8K4   = MMAShape{M: 8, N: 8, K: 4}
	M16N8K4  = MMAShape{M: 16, N: 8, K: 4}
	M16N8K8  = MMAShape{M: 16, N: 8, K: 8}
	M16N8K16 = MMAShape{M: 16, N: 8, K: 16}
)

// MMAShapes lists the shapes an fp64 MMA takes (MMAF64.Shapes).
var MMAShapes = []MMAShape{M8N8K4, M16N8K4, M16N8K8, M16N8K16}

// MMATF32Shapes lists the shapes a TF32 MMA takes (MMATF32.Shapes).
var MMATF32Shapes = []MMAShape{M16N8K4, M16N8K8}

func (s MMAShape) String() string { return fmt.Sprintf("m%dn%dk%d", s.M, s.N, s.K) }

// Valid reports whether an fp64 MMA takes the shape (MMAF64.Takes).
func (s MMAShape) Valid() bool { return MMAF64.Takes(s) }

// Arch is the least CUDA compute capability ×10 with the shape in fp64
// (MMAF64.Arch): 80 for m8n8k4, 90 for the others, 0 for a shape MMA does
// not take.
func (s MMAShape) Arch() int { return MMAF64.Arch(s) }

// Elements is how many elements of A, B and C (or D) each lane holds (one
// register each in TF32, two in fp64); kernel/mma says which.
func (s MMAShape) Elements() (a, b, c int) { return s.M * s.K / 32, s.K * s.N / 32, s.M * s.N / 32 }

// MMAType is the element type of a warp-level mma.
type MMAType int

// The types: fp64 throughout (mma.sync .f64.f64.f64.f64), or TF32 A and B
// with fp32 C and D (mma.sync .f32.tf32.tf32.f32): A's and B's elements
// are fp32 values of which the tensor cores take the TF32 part, the low
// 13 bits of the mantissa dropped (mma.TruncTF32: toward zero; round them with
// TF32 first for the nearest), their products exact, summed in fp32.
const (
	MMAF64 MMAType = iota
	MMATF32
)

func (t MMAType) String() string {
	switch t {
	case MMAF64:
		return "f64"
	case MMATF32:
		return "tf32"
	}
	return "?"
}

// Shapes lists the shapes MMA takes in type t.
func (t MMAType) Shapes() []MMAShape {
	switch t {
	case MMAF64:
		return MMAShapes
	case MMATF32:
		return MMATF32Shapes
	}
	return nil
}

// Takes reports whether MMA takes shape s in type t.
func (t MMAType) Takes(s MMAShape) bool { return slices.Contains(t.Shapes(), s) }

// DType is the precision of the kernels that hold an MMA of type t (and
// of its C and D): F64 for MMAF64, F32 for MMATF32.
func (t MMAType) DType() DType {
	if t == MMATF32 {
		return F32
	}
	return F64
}

// Arch is the least CUDA compute capability ×10 with shape s in type t:
// fp64 m8n8k4 and both TF32 shapes 80, the other fp64 shapes 90; 0 where
// t does not take s.
func (t MMAType) Arch(s MMAShape) int {
	switch {
	case !t.Takes(s):
		return 0
	case t == MMAF64 && s != M8N8K4:
		return 90
	}
	return 80
}

// MMA is a warp-level matrix multiply-accumulate D = A·B + C (CUDA's
// mma.sync.aligned.<shape>.row.col.f64.f64.f64.f64 or, with Type MMATF32,
// .f32.tf32.tf32.f32, on tensor cores): the 32 threads of a warp
// (consecutive linear thread indices x + y·bx + z·bx·by, from a multiple
// of 32) each give their elements of A, B and C and receive their
// elements of D, laid out as kernel/mma's AAt, BAt and CAt say; for m8n8k4,
// lane l gives A[l/4][l%4] and B[l%4][l/4] and receives D[l/4][2(l%4)]
// and D[l/4][2(l%4)+1]. D names declared real variables (they may be those
// C reads: C is read before D is written). Every thread of the warp must
// reach it: Validate asks for it under control flow that is the same for
// every thread of the block, in a block of whole warps, in kernels of the
// type's precision (MMAType.DType). Only CUDA spells it (MMAType.Arch):
// the other printers refuse the kernel.
type MMA struct {
	Shape   MMAShape
	Type    MMAType
	D       []string
	A, B, C []Expr
}

func (Decl) isStmt()           {}
func (Assign) isStmt()         {}
func (Store) isStmt()          {}
func (AtomicAdd) isStmt()      {}
func (AtomicFetchAdd) isStmt() {}
func (VecLoad) isStmt()        {}
func (VecStore) isStmt()       {}
func (If) isStmt()             {}
func (For) isStmt()            {}
func (Barrier) isStmt()        {}
func (Comment) isStmt()        {}
func (Prefetch) isStmt()       {}
func (MMA) isStmt()            {}
func (CopyAsync) isStmt()      {}
func (AsyncCommit) isStmt()    {}
func (AsyncWait) isStmt()      {}

// Shorthand for kernels built in Go (every family's builder uses it).
var (
	LocalX = Special{Kind: LocalID, Axis: 0}
	LocalY = Special{Kind: LocalID, Axis: 1}
	LocalZ = Special{Kind: LocalID, Axis: 2}
	GroupX = Special{Kind: GroupID, Axis: 0}
)

// Ref is a use of the variable name.
func Ref(name string) Var { return Var{Name: name} }

// Const is the integer constant i.
func Const(i int) Int { return Int{V: int64(i)} }

// Op is the binary operation l op r.
func Op(op BinOp, l, r Expr) Bin { return Bin{Op: op, L: l, R: r} }

// At is a Load of Buf at the given indices.
func At(buf string, index ...Expr) Load { return Load{Buf: buf, Index: index} }

// Put is a Store of v into Buf at the given indices.
func Put(buf string, v Expr, index ...Expr) Store { return Store{Buf: buf, Index: index, Value: v} }
