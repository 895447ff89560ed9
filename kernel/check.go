package kernel

import (
	"fmt"
	"math"
	"slices"
)

// MaxThreads is the most threads a block may have on every backend.
const MaxThreads = 1024

// Symbol is what a name in scope denotes.
type Symbol struct {
	Type  Type
	Dims  int  // indices an element takes: 0 for a scalar, 1 for a buffer
	Array bool // a buffer, shared or thread-private array (indexed by Load/Store)
	Buf   bool // a buffer parameter
	Const bool // a read-only buffer, or a scalar parameter
}

// Env maps names to symbols through nested scopes.
type Env struct {
	scopes []map[string]Symbol
}

// NewEnv returns the scope of k's parameters and shared arrays.
func NewEnv(k *Kernel) *Env {
	top := map[string]Symbol{}
	for _, p := range k.Params {
		if p.Kind == BufferParam {
			top[p.Name] = Symbol{Type: p.Type, Dims: 1, Array: true, Buf: true, Const: p.Const}
		} else {
			top[p.Name] = Symbol{Type: p.Type, Const: true}
		}
	}
	for _, s := range k.Shared {
		top[s.Name] = Symbol{Type: s.Type, Dims: len(s.Dims), Array: true}
	}
	return &Env{scopes: []map[string]Symbol{top}}
}

// Push opens a nested scope; Pop closes it.
func (e *Env) Push() { e.scopes = append(e.scopes, nil) }

// Pop closes the innermost scope.
func (e *Env) Pop() { e.scopes = e.scopes[:len(e.scopes)-1] }

// Lookup finds name in the innermost scope that has it.
func (e *Env) Lookup(name string) (Symbol, bool) {
	for i := len(e.scopes) - 1; i >= 0; i-- {
		if s, ok := e.scopes[i][name]; ok {
			return s, true
		}
	}
	return Symbol{}, false
}

// Declare adds name to the innermost scope; it fails when name is already
// visible (no shadowing: the C lowering lifts variables by name).
func (e *Env) Declare(name string, s Symbol) error {
	if name == "" {
		return fmt.Errorf("empty name")
	}
	if _, ok := e.Lookup(name); ok {
		return fmt.Errorf("%q is declared twice", name)
	}
	top := &e.scopes[len(e.scopes)-1]
	if *top == nil {
		*top = map[string]Symbol{}
	}
	(*top)[name] = s
	return nil
}

// TypeOf returns the type of x in this scope, or why it is ill-typed.
func (e *Env) TypeOf(x Expr) (Type, error) {
	switch x := x.(type) {
	case Lit:
		if math.IsNaN(x.V) || math.IsInf(x.V, 0) {
			return 0, fmt.Errorf("literal %v is not finite", x.V)
		}
		return Real, nil
	case Int, Special:
		return Index, nil
	case Var:
		s, ok := e.Lookup(x.Name)
		if !ok {
			return 0, fmt.Errorf("%q is not declared", x.Name)
		}
		if s.Array {
			return 0, fmt.Errorf("array %q used as a value", x.Name)
		}
		return s.Type, nil
	case Load:
		return e.element(x.Buf, x.Index)
	case Bin:
		l, err := e.TypeOf(x.L)
		if err != nil {
			return 0, err
		}
		r, err := e.TypeOf(x.R)
		if err != nil {
			return 0, err
		}
		switch x.Op.Class() {
		case Arithmetic:
			if l.IsInt() != r.IsInt() {
				return 0, fmt.Errorf("%s mixes %s and %s (cast one)", x.Op, l, r)
			}
			return joinInt(l, r), nil
		case IntOnly:
			if !l.IsInt() || !r.IsInt() {
				return 0, fmt.Errorf("%s takes integers, not %s and %s", x.Op, l, r)
			}
			return joinInt(l, r), nil
		case Comparison:
			if l.IsInt() != r.IsInt() {
				return 0, fmt.Errorf("%s compares %s with %s (cast one)", x.Op, l, r)
			}
			return Index, nil
		case Logical:
			if !l.IsInt() || !r.IsInt() {
				return 0, fmt.Errorf("%s takes integer conditions", x.Op)
			}
			return Index, nil
		}
		return 0, fmt.Errorf("unknown operator %q", x.Op)
	case Unary:
		t, err := e.TypeOf(x.X)
		if err != nil {
			return 0, err
		}
		switch {
		case x.Op == OpNeg:
			return t, nil
		case x.Op == OpNot && t.IsInt():
			return Index, nil
		}
		return 0, fmt.Errorf("unary %q on %s", x.Op, t)
	case Cast:
		if _, err := e.TypeOf(x.X); err != nil {
			return 0, err
		}
		return x.To, nil
	case Select:
		c, err := e.TypeOf(x.Cond)
		if err != nil {
			return 0, err
		}
		if !c.IsInt() {
			return 0, fmt.Errorf("select condition is %s, not an integer", c)
		}
		a, err := e.TypeOf(x.Then)
		if err != nil {
			return 0, err
		}
		b, err := e.TypeOf(x.Else)
		if err != nil {
			return 0, err
		}
		if a.IsInt() != b.IsInt() {
			return 0, fmt.Errorf("select between %s and %s", a, b)
		}
		return joinInt(a, b), nil
	case Call:
		if n := x.Fn.Arity(); n == 0 || len(x.Args) != n {
			return 0, fmt.Errorf("call of %q with %d arguments", x.Fn, len(x.Args))
		}
		var ts []Type
		for _, a := range x.Args {
			t, err := e.TypeOf(a)
			if err != nil {
				return 0, err
			}
			ts = append(ts, t)
		}
		if x.Fn == Min || x.Fn == Max {
			if ts[0].IsInt() != ts[1].IsInt() {
				return 0, fmt.Errorf("%s of %s and %s", x.Fn, ts[0], ts[1])
			}
			return joinInt(ts[0], ts[1]), nil
		}
		for _, t := range ts {
			if t != Real {
				return 0, fmt.Errorf("%s takes reals, not %s", x.Fn, t)
			}
		}
		return Real, nil
	case nil:
		return 0, fmt.Errorf("missing expression")
	}
	return 0, fmt.Errorf("unknown expression %T", x)
}

// joinInt is the type of an operation on a and b: Real for reals; for
// integers their common type, Index when they differ.
func joinInt(a, b Type) Type {
	if a == b {
		return a
	}
	if !a.IsInt() {
		return Real
	}
	return Index
}

// element checks an indexed access and returns the element type.
func (e *Env) element(buf string, index []Expr) (Type, error) {
	s, ok := e.Lookup(buf)
	if !ok {
		return 0, fmt.Errorf("%q is not declared", buf)
	}
	if !s.Array {
		return 0, fmt.Errorf("%q is not an array", buf)
	}
	if len(index) != s.Dims {
		return 0, fmt.Errorf("%q takes %d indices, got %d", buf, s.Dims, len(index))
	}
	for _, i := range index {
		t, err := e.TypeOf(i)
		if err != nil {
			return 0, err
		}
		if !t.IsInt() {
			return 0, fmt.Errorf("index of %q is %s", buf, t)
		}
	}
	return s.Type, nil
}

// Validate checks that k is well formed: every name declared once and
// before use, types consistent, arrays indexed with one index per
// dimension, buffers written only when not const, barriers and warp-level
// mma only under control flow that is the same for every thread of a block
// (mma also of the kernel's precision, in blocks of whole warps, with
// Hints.MinArch at least what its shapes need, and TF32 rounding only in
// fp32), and a block of at most MaxThreads threads.
func Validate(k *Kernel) error {
	if k.Name == "" || len(k.Body) == 0 {
		return fmt.Errorf("kernel %q has no name or body", k.Name)
	}
	b := k.Launch.Block
	if b[0] < 1 || b[1] < 1 || b[2] < 1 || b[0]*b[1]*b[2] > MaxThreads {
		return fmt.Errorf("kernel %s: block %v: want 1..%d threads, each dimension ≥ 1", k.Name, b, MaxThreads)
	}
	seen := map[string]bool{}
	for _, p := range k.Params {
		if seen[p.Name] {
			return fmt.Errorf("kernel %s: parameter %q twice", k.Name, p.Name)
		}
		seen[p.Name] = true
		if p.Kind == ScalarParam && p.Type == Real {
			return fmt.Errorf("kernel %s: scalar parameter %q is real (scalars are integers)", k.Name, p.Name)
		}
	}
	for _, s := range k.Shared {
		if seen[s.Name] {
			return fmt.Errorf("kernel %s: shared array %q clashes with another name", k.Name, s.Name)
		}
		seen[s.Name] = true
		if len(s.Dims) == 0 || slices.Min(s.Dims) < 1 {
			return fmt.Errorf("kernel %s: shared array %q has dimensions %v", k.Name, s.Name, s.Dims)
		}
	}
	hasBarrier := k.HasBarrier()
	if part := PartBarrier(k.Body); part != 0 {
		th := k.Launch.Threads()
		switch {
		case part < 0:
			return fmt.Errorf("kernel %s: barriers of parts of the block of different sizes", k.Name)
		case b[1] != 1 || b[2] != 1:
			return fmt.Errorf("kernel %s: barriers of %d threads in a block of %v (want 1-D)", k.Name, part, b)
		case part%32 != 0 || th%part != 0 || th/part > 15:
			return fmt.Errorf("kernel %s: barriers of %d threads in a block of %d (want a multiple of 32 dividing it into at most 15)", k.Name, part, th)
		}
	}
	if hasBarrier && k.Active != nil {
		return fmt.Errorf("kernel %s: a kernel with barriers must guard its own statements (Active must be nil)", k.Name)
	}
	arch, mma := NeedsArch(k.Body), HasMMA(k.Body)
	if mma {
		switch {
		case k.Launch.Threads()%32 != 0:
			return fmt.Errorf("kernel %s: warp-level mma in a block of %d threads (want whole warps of 32)", k.Name, k.Launch.Threads())
		case k.Active != nil:
			return fmt.Errorf("kernel %s: a kernel with warp-level mma must guard its own statements (Active must be nil)", k.Name)
		case ArchSpecific(k.Body) && k.Launch.Threads()%128 != 0:
			return fmt.Errorf("kernel %s: wgmma in a block of %d threads (want whole warpgroups of 128)", k.Name, k.Launch.Threads())
		}
	}
	if arch > 0 {
		if err := tensorTypes(k); err != nil {
			return err
		}
		if k.Hints.MinArch < arch {
			return fmt.Errorf("kernel %s: its mma needs sm_%d, but Hints.MinArch says %d", k.Name, arch, k.Hints.MinArch)
		}
	}
	if k.DType == F32 {
		var big error
		WalkStmts(k.Body, func(s Stmt) bool {
			StmtExprs(s, func(e Expr) {
				WalkExpr(e, func(e Expr) {
					if l, ok := e.(Lit); ok && big == nil && math.Abs(l.V) > math.MaxFloat32 && !math.IsInf(l.V, 0) {
						big = fmt.Errorf("kernel %s: literal %g is beyond the float32 range", k.Name, l.V)
					}
				})
			})
			return big == nil
		})
		if big != nil {
			return big
		}
	}
	env := NewEnv(k)
	if k.Active != nil {
		t, err := env.TypeOf(k.Active)
		if err != nil {
			return fmt.Errorf("kernel %s: active threads: %v", k.Name, err)
		}
		if !t.IsInt() {
			return fmt.Errorf("kernel %s: active threads is %s, not an integer", k.Name, t)
		}
	}
	c := &checker{env: env, shared: map[string]bool{}}
	for _, sh := range k.Shared {
		c.shared[sh.Name] = true
	}
	if hasBarrier || mma {
		c.varying = varyingVars(k.Body)
	}
	if mma {
		c.tids = threadIndexVars(k)
		c.laneVarying = varyingVarsBy(k.Body, func(e Expr, v map[string]bool) bool { return exprLaneVarying(e, v, c.tids) })
	}
	if err := c.stmts(k.Body, false); err != nil {
		return fmt.Errorf("kernel %s: %v", k.Name, err)
	}
	return nil
}

// tensorTypes checks that k's warp-level mma are of k's precision (fp64
// mma in fp64 kernels, TF32 in fp32 ones) and that it rounds to TF32 only
// in fp32.
func tensorTypes(k *Kernel) error {
	var err error
	WalkStmts(k.Body, func(s Stmt) bool {
		if m, ok := s.(MMA); ok && m.Type.DType() != k.DType && err == nil {
			err = fmt.Errorf("kernel %s: warp-level %s mma in a %s kernel (it takes %s only)", k.Name, m.Type, k.DType, m.Type.DType())
		}
		if _, ok := s.(WGMMA); ok && k.DType != F32 && err == nil {
			err = fmt.Errorf("kernel %s: a wgmma (TF32, fp32 sums) in a %s kernel (fp32 only)", k.Name, k.DType)
		}
		if k.DType != F32 {
			StmtExprs(s, func(e Expr) {
				WalkExpr(e, func(e Expr) {
					if c, ok := e.(Call); ok && (c.Fn == TF32 || c.Fn == TF32Trunc) && err == nil {
						err = fmt.Errorf("kernel %s: tf32 rounding in a %s kernel (fp32 only)", k.Name, k.DType)
					}
				})
			})
		}
		return err == nil
	})
	return err
}

type checker struct {
	env     *Env
	varying map[string]bool // variables that may differ between the threads of a block
	shared  map[string]bool // the kernel's shared arrays
	// laneVarying are the variables that may differ between the lanes
	// of a warp, and laneDiv is set under control flow that may (see
	// exprLaneVarying): a warp-level mma needs its warp whole, not its
	// block.
	laneVarying map[string]bool
	laneDiv     bool
	tids        map[string]bool // threadIndexVars
}

func (c *checker) stmts(ss []Stmt, divergent bool) error {
	for _, s := range ss {
		if err := c.stmt(s, divergent); err != nil {
			return err
		}
	}
	return nil
}

func (c *checker) stmt(s Stmt, divergent bool) error {
	env := c.env
	switch s := s.(type) {
	case Decl:
		if len(s.Dims) > 0 {
			if s.Init != nil {
				return fmt.Errorf("array %q has an initial value", s.Name)
			}
			if slices.Min(s.Dims) < 1 {
				return fmt.Errorf("array %q has dimensions %v", s.Name, s.Dims)
			}
			return env.Declare(s.Name, Symbol{Type: s.Type, Dims: len(s.Dims), Array: true})
		}
		if s.Init != nil {
			if err := c.assignable(s.Type, s.Init, s.Name); err != nil {
				return err
			}
		}
		return env.Declare(s.Name, Symbol{Type: s.Type})
	case Assign:
		sym, ok := env.Lookup(s.Name)
		switch {
		case !ok:
			return fmt.Errorf("assignment to undeclared %q", s.Name)
		case sym.Array || sym.Const:
			return fmt.Errorf("assignment to %q, which is not a variable", s.Name)
		}
		return c.assignable(sym.Type, s.Value, s.Name)
	case Store:
		return c.write(s.Buf, s.Index, s.Value, false)
	case AtomicAdd:
		return c.write(s.Buf, s.Index, s.Value, true)
	case AtomicFetchAdd:
		t, err := env.element(s.Buf, s.Index)
		if err != nil {
			return err
		}
		if sym, _ := env.Lookup(s.Buf); !sym.Buf || sym.Const || t != Int32 {
			return fmt.Errorf("atomic fetch-add into %q: only writable int32 buffer parameters take it", s.Buf)
		}
		if err := c.assignable(Int32, s.Value, s.Buf); err != nil {
			return err
		}
		if s.Old != "" {
			sym, ok := env.Lookup(s.Old)
			if !ok || sym.Array || sym.Const || !sym.Type.IsInt() {
				return fmt.Errorf("atomic fetch-add into %q: old value into %q, which is not a declared integer variable", s.Buf, s.Old)
			}
		}
		return nil
	case VecLoad:
		if err := c.vector(s.Buf, s.Index, len(s.Dst), true); err != nil {
			return err
		}
		for _, d := range s.Dst {
			sym, ok := env.Lookup(d)
			if !ok || sym.Array || sym.Const || sym.Type != Real {
				return fmt.Errorf("vector load into %q, which is not a declared real variable", d)
			}
		}
		return nil
	case Prefetch:
		if sym, ok := env.Lookup(s.Buf); !ok || !sym.Buf || sym.Type != Real {
			return fmt.Errorf("prefetch of %q, which is not a real buffer parameter", s.Buf)
		}
		return c.vector(s.Buf, s.Index, 1, false)
	case VecStore:
		w := len(s.Src)
		if s.Stream {
			if w < 1 || w > MaxStreamWidth {
				return fmt.Errorf("streamed store of %d elements into %q (want 1..%d)", w, s.Buf, MaxStreamWidth)
			}
			w = 1 // any width, any alignment
		}
		if err := c.vector(s.Buf, s.Index, w, false); err != nil {
			return err
		}
		if sym, _ := env.Lookup(s.Buf); sym.Const {
			return fmt.Errorf("vector store into read-only %q", s.Buf)
		}
		for _, v := range s.Src {
			if err := c.assignable(Real, v, s.Buf); err != nil {
				return err
			}
		}
		return nil
	case If:
		t, err := env.TypeOf(s.Cond)
		if err != nil {
			return err
		}
		if !t.IsInt() {
			return fmt.Errorf("if condition is %s", t)
		}
		div := divergent || c.isVarying(s.Cond)
		defer c.underLanes(c.laneVarying != nil && exprLaneVarying(s.Cond, c.laneVarying, c.tids))()
		for _, body := range [][]Stmt{s.Then, s.Else} {
			env.Push()
			err := c.stmts(body, div)
			env.Pop()
			if err != nil {
				return err
			}
		}
		return nil
	case For:
		for _, e := range []Expr{s.From, s.To} {
			t, err := env.TypeOf(e)
			if err != nil {
				return fmt.Errorf("loop over %q: %v", s.Var, err)
			}
			if !t.IsInt() {
				return fmt.Errorf("loop over %q has %s bounds", s.Var, t)
			}
		}
		if s.Step < 0 {
			return fmt.Errorf("loop over %q has step %d", s.Var, s.Step)
		}
		if s.UnrollBy < 0 || (s.Unroll && s.UnrollBy > 0) {
			return fmt.Errorf("loop over %q: unroll by %d (want ≥ 0, and 0 with a complete unroll)", s.Var, s.UnrollBy)
		}
		env.Push()
		defer env.Pop()
		if err := env.Declare(s.Var, Symbol{Type: Index}); err != nil {
			return err
		}
		defer c.underLanes(c.laneVarying != nil && (exprLaneVarying(s.From, c.laneVarying, c.tids) || exprLaneVarying(s.To, c.laneVarying, c.tids)))()
		return c.stmts(s.Body, divergent || c.isVarying(s.From) || c.isVarying(s.To))
	case Barrier:
		if divergent {
			return fmt.Errorf("barrier under a condition or loop bound that differs between threads")
		}
		return nil
	case Comment:
		return nil
	case MMA:
		return c.mma(s, c.laneDiv)
	case WGMMA:
		return c.wgmma(s, divergent)
	case WGMMASync:
		return c.wgmmaSync(s)
	case CopyAsync:
		return c.copyAsync(s)
	case BulkCopy:
		return c.bulkCopy(s)
	case TxBarrier:
		return c.txBarrier(s)
	case AsyncCommit:
		return nil
	case AsyncWait:
		if s.Pending < 0 || s.Pending > 8 {
			return fmt.Errorf("async wait for at most %d pending groups (want 0..8)", s.Pending)
		}
		return nil
	case nil:
		return fmt.Errorf("missing statement")
	}
	return fmt.Errorf("unknown statement %T", s)
}

// mma checks a warp-level multiply-accumulate: a shape PTX has, as many
// elements as it takes, real operands, distinct real variables for D, and
// no control flow that could split a warp.
func (c *checker) mma(s MMA, divergent bool) error {
	if !s.Type.Takes(s.Shape) {
		return fmt.Errorf("%s mma of shape %s (want one of %v)", s.Type, s.Shape, s.Type.Shapes())
	}
	na, nb, nc := s.Shape.Elements()
	if len(s.A) != na || len(s.B) != nb || len(s.C) != nc || len(s.D) != nc {
		return fmt.Errorf("mma %s takes %d, %d, %d and %d elements of A, B, C and D a lane, got %d, %d, %d and %d",
			s.Shape, na, nb, nc, nc, len(s.A), len(s.B), len(s.C), len(s.D))
	}
	if divergent {
		return fmt.Errorf("mma %s under a condition or loop bound that differs between threads (a warp must reach it whole)", s.Shape)
	}
	for _, es := range [][]Expr{s.A, s.B, s.C} {
		for _, e := range es {
			if err := c.assignable(Real, e, "mma "+s.Shape.String()); err != nil {
				return err
			}
		}
	}
	for i, d := range s.D {
		sym, ok := c.env.Lookup(d)
		if !ok || sym.Array || sym.Const || sym.Type != Real {
			return fmt.Errorf("mma %s: D into %q, which is not a declared real variable", s.Shape, d)
		}
		if slices.Contains(s.D[:i], d) {
			return fmt.Errorf("mma %s: D names %q twice", s.Shape, d)
		}
	}
	return nil
}

// wgmma checks a warpgroup-level multiply-accumulate: N a multiple of 8
// up to WGMMAMaxN, N/2 distinct real variables for D and 4 real elements
// of A, B a real 1-D shared array read from a 16-byte aligned integer
// offset with strides that are multiples of 16 bytes, and control flow the
// same for every thread of the block.
func (c *checker) wgmma(s WGMMA, divergent bool) error {
	what := fmt.Sprintf("wgmma m64n%dk8", s.N)
	switch {
	case s.N < 8 || s.N > WGMMAMaxN || s.N%8 != 0:
		return fmt.Errorf("wgmma of N = %d (want a multiple of 8 up to %d)", s.N, WGMMAMaxN)
	case len(s.A) != 4 || len(s.D) != s.N/2:
		return fmt.Errorf("%s takes 4 elements of A and %d of D a thread, got %d and %d", what, s.N/2, len(s.A), len(s.D))
	case s.LBO < 16 || s.SBO < 16 || s.LBO%16 != 0 || s.SBO%16 != 0 || s.LBO >= 1<<18 || s.SBO >= 1<<18:
		return fmt.Errorf("%s: strides %d and %d bytes (want multiples of 16 below 256 KiB)", what, s.LBO, s.SBO)
	case divergent:
		return fmt.Errorf("%s under a condition or loop bound that differs between threads (a warpgroup must reach it whole)", what)
	}
	sym, ok := c.env.Lookup(s.B)
	if !ok || !c.shared[s.B] || sym.Type != Real || sym.Dims != 1 {
		return fmt.Errorf("%s: B in %q, which is not a real 1-D shared array", what, s.B)
	}
	for _, e := range []Expr{s.BAt, s.Accumulate} {
		if e == nil {
			continue
		}
		if t, err := c.env.TypeOf(e); err != nil || !t.IsInt() {
			return fmt.Errorf("%s: B's offset or the accumulate flag is not an integer (%v)", what, err)
		}
	}
	for _, e := range s.A {
		if err := c.assignable(Real, e, what); err != nil {
			return err
		}
	}
	for i, d := range s.D {
		sym, ok := c.env.Lookup(d)
		if !ok || sym.Array || sym.Const || sym.Type != Real {
			return fmt.Errorf("%s: D into %q, which is not a declared real variable", what, d)
		}
		if slices.Contains(s.D[:i], d) {
			return fmt.Errorf("%s: D names %q twice", what, d)
		}
	}
	return nil
}

// wgmmaSync checks a fence, commit or wait of WGMMA.
func (c *checker) wgmmaSync(s WGMMASync) error {
	switch s.Kind {
	case WGMMAFence, WGMMACommit, ProxyFence:
		if s.Pending != 0 {
			return fmt.Errorf("wgmma fence or commit with a count")
		}
	case WGMMAWait:
		if s.Pending < 0 || s.Pending > 7 {
			return fmt.Errorf("wgmma wait for at most %d pending groups (want 0..7)", s.Pending)
		}
	default:
		return fmt.Errorf("wgmma sync of unknown kind %d", s.Kind)
	}
	return nil
}

// copyAsync checks an asynchronous copy: from a real buffer parameter
// into a real shared array (not a thread's own array: another thread may
// read it after the barrier), with integer indices and condition.
func (c *checker) copyAsync(s CopyAsync) error {
	if err := c.copyEnds("async copy", s.Src, s.Dst, s.DstIndex); err != nil {
		return err
	}
	if s.Width != 0 && s.Width != 1 && s.Width != 2 && s.Width != 4 {
		return fmt.Errorf("async copy of %d elements (want 1, 2 or 4)", s.Width)
	}
	if s.Valid != nil && s.Width < 2 {
		return fmt.Errorf("async copy from %q: a count of valid elements takes a vector copy", s.Src)
	}
	for _, e := range []Expr{s.SrcIndex, s.Cond, s.Valid} {
		if e == nil {
			continue
		}
		t, err := c.env.TypeOf(e)
		if err != nil {
			return fmt.Errorf("async copy from %q: %v", s.Src, err)
		}
		if !t.IsInt() {
			return fmt.Errorf("async copy from %q: index or condition is %s", s.Src, t)
		}
	}
	if s.SrcIndex == nil {
		return fmt.Errorf("async copy from %q: no index", s.Src)
	}
	return nil
}

// copyEnds checks the ends of a copy (what names it): from a real buffer
// parameter into an element of a real shared array.
func (c *checker) copyEnds(what, src, dst string, dstIndex []Expr) error {
	sym, ok := c.env.Lookup(src)
	if !ok || !sym.Buf || sym.Type != Real {
		return fmt.Errorf("%s from %q, which is not a real buffer parameter", what, src)
	}
	if !c.shared[dst] {
		return fmt.Errorf("%s into %q, which is not a shared array", what, dst)
	}
	t, err := c.env.element(dst, dstIndex)
	if err != nil {
		return fmt.Errorf("%s: %v", what, err)
	}
	if t != Real {
		return fmt.Errorf("%s into %q, a %s array (want real)", what, dst, t)
	}
	return nil
}

// bulkCopy checks a bulk copy: from a real buffer parameter into a real
// shared array, counted on an Int64 shared array's barrier, with integer
// indices and count.
func (c *checker) bulkCopy(s BulkCopy) error {
	if err := c.copyEnds("bulk copy", s.Src, s.Dst, s.DstIndex); err != nil {
		return err
	}
	if err := c.txBar(s.Bar, s.BarIndex, "bulk copy"); err != nil {
		return err
	}
	return c.intExprs("bulk copy", s.SrcIndex, s.Elements)
}

// txBarrier checks an operation on a transaction barrier: an element of an
// Int64 shared array, a positive count to initialise it with, integer
// bytes and parity.
func (c *checker) txBarrier(s TxBarrier) error {
	if err := c.txBar(s.Bar, s.Index, "transaction barrier"); err != nil {
		return err
	}
	switch s.Op {
	case TxInit:
		if s.Count < 1 || s.Count > MaxThreads {
			return fmt.Errorf("transaction barrier %q initialised for %d arrivals (want 1..%d)", s.Bar, s.Count, MaxThreads)
		}
		return nil
	case TxExpect:
		if s.Bytes == nil {
			return fmt.Errorf("transaction barrier %q: an expect without bytes", s.Bar)
		}
		return c.intExprs("transaction barrier", s.Bytes)
	case TxArrive:
		return nil
	case TxWait:
		if s.Parity == nil {
			return fmt.Errorf("transaction barrier %q: a wait without a parity", s.Bar)
		}
		return c.intExprs("transaction barrier", s.Parity)
	}
	return fmt.Errorf("transaction barrier %q: unknown operation %d", s.Bar, s.Op)
}

// txBar checks that bar[index] is an element of an Int64 shared array.
func (c *checker) txBar(bar string, index Expr, what string) error {
	if !c.shared[bar] {
		return fmt.Errorf("%s on %q, which is not a shared array", what, bar)
	}
	if t, err := c.env.element(bar, []Expr{index}); err != nil || t != Int64 {
		return fmt.Errorf("%s on %q: want an element of an int64 shared array (%v)", what, bar, err)
	}
	return nil
}

// intExprs checks that every expression is an integer.
func (c *checker) intExprs(what string, es ...Expr) error {
	for _, e := range es {
		if e == nil {
			return fmt.Errorf("%s: a missing index or count", what)
		}
		t, err := c.env.TypeOf(e)
		if err != nil {
			return fmt.Errorf("%s: %v", what, err)
		}
		if !t.IsInt() {
			return fmt.Errorf("%s: index or count is %s", what, t)
		}
	}
	return nil
}

// assignable checks that v may be stored into a place of type t.
func (c *checker) assignable(t Type, v Expr, what string) error {
	vt, err := c.env.TypeOf(v)
	if err != nil {
		return fmt.Errorf("%s: %v", what, err)
	}
	if vt.IsInt() != t.IsInt() {
		return fmt.Errorf("%s: a %s value for a %s (cast it)", what, vt, t)
	}
	return nil
}

func (c *checker) write(buf string, index []Expr, v Expr, atomic bool) error {
	t, err := c.env.element(buf, index)
	if err != nil {
		return err
	}
	sym, _ := c.env.Lookup(buf)
	if sym.Const {
		return fmt.Errorf("store into read-only %q", buf)
	}
	if atomic && (!sym.Buf || t != Real) {
		return fmt.Errorf("atomic add into %q: only real buffer parameters take atomic adds", buf)
	}
	return c.assignable(t, v, buf)
}

func (c *checker) vector(buf string, index Expr, width int, load bool) error {
	sym, ok := c.env.Lookup(buf)
	switch {
	case ok && load && c.shared[buf] && sym.Type == Real && sym.Dims != 1:
		return fmt.Errorf("vector load from the shared array %q of %d dimensions (want one)", buf, sym.Dims)
	case ok && load && c.shared[buf] && sym.Type == Real:
	case !ok || !sym.Buf || sym.Type != Real:
		if load {
			return fmt.Errorf("vector load from %q, which is neither a real buffer parameter nor a one-dimensional real shared array", buf)
		}
		return fmt.Errorf("vector access to %q, which is not a real buffer parameter", buf)
	}
	if width != 1 && width != 2 && width != 4 {
		return fmt.Errorf("vector access of width %d to %q (want 1, 2 or 4)", width, buf)
	}
	t, err := c.env.TypeOf(index)
	if err != nil {
		return err
	}
	if !t.IsInt() {
		return fmt.Errorf("index of %q is %s", buf, t)
	}
	return nil
}

// isVarying reports whether e may differ between the threads of a block:
// it reads a thread index, a variable that does, or memory (conservatively).
func (c *checker) isVarying(e Expr) bool {
	return exprVarying(e, c.varying)
}

func exprVarying(e Expr, varying map[string]bool) bool {
	v := false
	WalkExpr(e, func(x Expr) {
		switch x := x.(type) {
		case Special:
			v = v || x.Kind == LocalID
		case Var:
			v = v || varying[x.Name]
		case Load:
			v = true
		}
	})
	return v
}

// underLanes marks the statements checked until the returned function
// runs as under control flow that may split a warp, when split is set.
func (c *checker) underLanes(split bool) func() {
	old := c.laneDiv
	c.laneDiv = old || split
	return func() { c.laneDiv = old }
}

// threadIndexVars are k's variables that hold the thread index along x
// and nothing else (declared from it, never assigned), where a warp is 32
// consecutive values of it: the block is one-dimensional or its x side a
// multiple of 32.
func threadIndexVars(k *Kernel) map[string]bool {
	b := k.Launch.Block
	if !(b[0]%32 == 0 || (b[1] <= 1 && b[2] <= 1)) {
		return nil
	}
	tids := map[string]bool{}
	assigned := map[string]bool{}
	WalkStmts(k.Body, func(s Stmt) bool {
		switch s := s.(type) {
		case Decl:
			if isThreadX(s.Init, nil) && len(s.Dims) == 0 {
				tids[s.Name] = true
			}
		case Assign:
			assigned[s.Name] = true
		}
		return true
	})
	for name := range assigned {
		delete(tids, name)
	}
	return tids
}

// isThreadX reports whether e is the thread index along x (cast or not),
// or a variable of tids.
func isThreadX(e Expr, tids map[string]bool) bool {
	switch x := e.(type) {
	case Special:
		return x.Kind == LocalID && x.Axis == 0
	case Cast:
		return isThreadX(x.X, tids)
	case Var:
		return tids[x.Name]
	}
	return false
}

// exprLaneVarying reports whether e may differ between the lanes of a
// warp: as exprVarying, except that the thread index along x divided by a
// multiple of 32 (a warp's index) is the same over a warp. tids are the
// variables that hold that index (threadIndexVars); nil where the block's
// shape does not make warps of consecutive x indices (nothing is then
// taken as the same over a warp).
func exprLaneVarying(e Expr, varying map[string]bool, tids map[string]bool) bool {
	switch x := e.(type) {
	case Bin:
		if r, ok := x.R.(Int); ok && x.Op == "/" && r.V > 0 && r.V%32 == 0 && tids != nil && isThreadX(x.L, tids) {
			return false
		}
		return exprLaneVarying(x.L, varying, tids) || exprLaneVarying(x.R, varying, tids)
	case Unary:
		return exprLaneVarying(x.X, varying, tids)
	case Cast:
		return exprLaneVarying(x.X, varying, tids)
	case Select:
		return exprLaneVarying(x.Cond, varying, tids) || exprLaneVarying(x.Then, varying, tids) || exprLaneVarying(x.Else, varying, tids)
	case Call:
		for _, a := range x.Args {
			if exprLaneVarying(a, varying, tids) {
				return true
			}
		}
		return false
	case Lit, Int:
		return false
	}
	return exprVarying(e, varying)
}

// varyingVars finds the variables that may differ between threads: those
// set from varying values or under varying control flow, to a fixed point.
func varyingVars(body []Stmt) map[string]bool { return varyingVarsBy(body, exprVarying) }

// varyingVarsBy is varyingVars with vary saying which expressions vary.
func varyingVarsBy(body []Stmt, vary func(Expr, map[string]bool) bool) map[string]bool {
	varying := map[string]bool{}
	for changed := true; changed; {
		changed = false
		mark := func(name string) {
			if !varying[name] {
				varying[name] = true
				changed = true
			}
		}
		var walk func(ss []Stmt, div bool)
		walk = func(ss []Stmt, div bool) {
			for _, s := range ss {
				switch s := s.(type) {
				case Decl:
					if len(s.Dims) > 0 || (s.Init != nil && (div || vary(s.Init, varying))) {
						mark(s.Name)
					}
				case Assign:
					if div || vary(s.Value, varying) {
						mark(s.Name)
					}
				case VecLoad:
					for _, d := range s.Dst {
						mark(d)
					}
				case MMA:
					for _, d := range s.D {
						mark(d) // each lane its own elements
					}
				case WGMMA:
					for _, d := range s.D {
						mark(d)
					}
				case AtomicFetchAdd:
					if s.Old != "" {
						mark(s.Old) // a ticket differs between threads
					}
				case If:
					d := div || vary(s.Cond, varying)
					walk(s.Then, d)
					walk(s.Else, d)
				case For:
					d := div || vary(s.From, varying) || vary(s.To, varying)
					if d {
						mark(s.Var)
					}
					walk(s.Body, d)
				}
			}
		}
		walk(body, false)
	}
	return varying
}
