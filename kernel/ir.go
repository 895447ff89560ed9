package kernel

// Type is the type of a scalar in the IR.
type Type int

// Scalar types. Real is the kernel's DType; Index is int32 or int64 as the
// kernel's Index64 decides.
const (
	Real Type = iota
	Index
	Int32
)

func (t Type) String() string {
	switch t {
	case Real:
		return "real"
	case Index:
		return "index"
	default:
		return "int32"
	}
}

// MarshalText lets Type appear by name in JSON metadata.
func (t Type) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// Expr is an expression node.
type Expr interface{ isExpr() }

// Lit is a real literal, printed at the kernel's precision.
type Lit struct{ V float64 }

// Int is an integer literal of the index type.
type Int struct{ V int64 }

// Var names a parameter or a declared variable.
type Var struct{ Name string }

// Load reads Buf[Index]; Buf is a buffer parameter or a shared array.
type Load struct {
	Buf   string
	Index Expr
}

// Bin is a binary operation. Op is one of + - * / % < <= == != && ||;
// / and % on integers truncate as in C.
type Bin struct {
	Op   string
	L, R Expr
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
func (Special) isExpr() {}

// Stmt is a statement node.
type Stmt interface{ isStmt() }

// Decl declares Name of Type, initialised with Init when it is not nil.
type Decl struct {
	Type Type
	Name string
	Init Expr
}

// Assign sets Name = Value.
type Assign struct {
	Name  string
	Value Expr
}

// Store writes Buf[Index] = Value.
type Store struct {
	Buf   string
	Index Expr
	Value Expr
}

// VecLoad reads len(Dst) consecutive elements Buf[Index], Buf[Index+1], …
// into the already declared real variables Dst, as one aligned vector load
// where the dialect has one. Index must be a multiple of len(Dst).
type VecLoad struct {
	Dst   []string
	Buf   string
	Index Expr
}

// VecStore writes Src to consecutive elements from Buf[Index], as one
// aligned vector store where the dialect has one.
type VecStore struct {
	Buf   string
	Index Expr
	Src   []Expr
}

// If runs Then when Cond holds, else Else.
type If struct {
	Cond       Expr
	Then, Else []Stmt
}

// Barrier synchronises the threads of a block and makes their shared-memory
// writes visible. It may appear only at the top level of a kernel body.
type Barrier struct{}

// Comment is printed as a one-line comment.
type Comment struct{ Text string }

func (Decl) isStmt()     {}
func (Assign) isStmt()   {}
func (Store) isStmt()    {}
func (VecLoad) isStmt()  {}
func (VecStore) isStmt() {}
func (If) isStmt()       {}
func (Barrier) isStmt()  {}
func (Comment) isStmt()  {}
