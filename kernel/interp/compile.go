package interp

import (
	"fmt"
	"math"

	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/mma"
)

// program is a kernel compiled to closures over a thread's frame.
type program struct {
	realSlots, intSlots, arrSlots int
	realBufs, intBufs             []string
	bufSlot                       map[string]int
	scalars                       []string
	scalarSlot                    map[string]int
	shared                        []kernel.Shared
	body                          func(*frame)
	active                        func(*frame) int64
	barriers                      bool
	warps                         bool // the kernel has warp-level mma
	groups                        bool // the kernel has warpgroup-level WGMMA
	part                          int  // threads of its barriers of part of a block (0: none)
	bulk                          bool // the kernel has transaction barriers and bulk copies
	mmas                          int  // MMA statements compiled (their ids)
}

type (
	rfn func(*frame) float64
	ifn func(*frame) int64
)

// ref is what a name resolves to.
type ref struct {
	kind refKind
	slot int
	typ  kernel.Type
	dims []int // arrays: extent of each dimension (buffers: none, checked against the slice)
}

type refKind int

const (
	scalarParam refKind = iota
	realBuf
	intBuf
	sharedArr
	localVar
	localArr
)

type compiler struct {
	k      *kernel.Kernel
	p      *program
	env    *kernel.Env
	scopes []map[string]ref
}

func compile(k *kernel.Kernel) (p *program, err error) {
	p = &program{bufSlot: map[string]int{}, scalarSlot: map[string]int{}, shared: k.Shared, barriers: k.HasBarrier(), warps: kernel.HasMMA(k.Body), groups: kernel.ArchSpecific(k.Body), part: kernel.PartBarrier(k.Body), bulk: kernel.HasBulkCopies(k.Body)}
	c := &compiler{k: k, p: p, env: kernel.NewEnv(k), scopes: []map[string]ref{{}}}
	top := c.scopes[0]
	for _, prm := range k.Params {
		switch {
		case prm.Kind == kernel.ScalarParam:
			p.scalarSlot[prm.Name] = len(p.scalars)
			top[prm.Name] = ref{kind: scalarParam, slot: len(p.scalars), typ: prm.Type}
			p.scalars = append(p.scalars, prm.Name)
		case prm.Type == kernel.Real:
			p.bufSlot[prm.Name] = len(p.realBufs)
			top[prm.Name] = ref{kind: realBuf, slot: len(p.realBufs), typ: prm.Type}
			p.realBufs = append(p.realBufs, prm.Name)
		default:
			p.bufSlot[prm.Name] = len(p.intBufs)
			top[prm.Name] = ref{kind: intBuf, slot: len(p.intBufs), typ: prm.Type}
			p.intBufs = append(p.intBufs, prm.Name)
		}
	}
	for i, sh := range k.Shared {
		top[sh.Name] = ref{kind: sharedArr, slot: i, typ: sh.Type, dims: sh.Dims}
	}
	defer func() { // Validate has run: a failure here is a bug of this package
		if r := recover(); r != nil {
			err = fmt.Errorf("interp: kernel %s: %v", k.Name, r)
		}
	}()
	if k.Active != nil {
		p.active = c.intExpr(k.Active)
	}
	p.body = c.block(k.Body)
	return p, nil
}

func (c *compiler) lookup(name string) ref {
	for i := len(c.scopes) - 1; i >= 0; i-- {
		if r, ok := c.scopes[i][name]; ok {
			return r
		}
	}
	panic(fmt.Sprintf("%q is not declared", name))
}

func (c *compiler) push() { c.scopes = append(c.scopes, map[string]ref{}); c.env.Push() }
func (c *compiler) pop()  { c.scopes = c.scopes[:len(c.scopes)-1]; c.env.Pop() }

func (c *compiler) declare(name string, r ref) {
	c.scopes[len(c.scopes)-1][name] = r
	sym := kernel.Symbol{Type: r.typ, Dims: len(r.dims), Array: r.kind == localArr}
	if err := c.env.Declare(name, sym); err != nil {
		panic(err)
	}
}

func (c *compiler) typeOf(e kernel.Expr) kernel.Type {
	t, err := c.env.TypeOf(e)
	if err != nil {
		panic(err)
	}
	return t
}

// narrow says whether integers of type t are 32-bit in this kernel.
func (c *compiler) narrow(t kernel.Type) bool {
	return t == kernel.Int32 || (t == kernel.Index && !c.k.Index64)
}

// fit faults when v does not fit t's width.
func (c *compiler) fit(t kernel.Type, v int64, what string) int64 {
	if c.narrow(t) && v != int64(int32(v)) {
		failf("integer overflow: %s = %d does not fit 32 bits (%s)", what, v, t)
	}
	return v
}

// round rounds a real to the kernel's precision.
func (c *compiler) roundFn() func(float64) float64 {
	if c.k.DType == kernel.F32 {
		return func(x float64) float64 { return float64(float32(x)) }
	}
	return func(x float64) float64 { return x }
}

func (c *compiler) realExpr(e kernel.Expr) rfn {
	round := c.roundFn()
	switch e := e.(type) {
	case kernel.Lit:
		v := round(e.V)
		return func(*frame) float64 { return v }
	case kernel.Var:
		r := c.lookup(e.Name)
		return func(f *frame) float64 { return f.reals[r.slot] }
	case kernel.Load:
		at := c.element(e.Buf, e.Index)
		return func(f *frame) float64 { s, i := at(f); return s.reals[i] }
	case kernel.Bin:
		l, r := c.realExpr(e.L), c.realExpr(e.R)
		switch e.Op {
		case kernel.OpAdd:
			return func(f *frame) float64 { return round(l(f) + r(f)) }
		case kernel.OpSub:
			return func(f *frame) float64 { return round(l(f) - r(f)) }
		case kernel.OpMul:
			return func(f *frame) float64 { return round(l(f) * r(f)) }
		case kernel.OpDiv:
			return func(f *frame) float64 { return round(l(f) / r(f)) }
		}
	case kernel.Unary:
		x := c.realExpr(e.X)
		return func(f *frame) float64 { return -x(f) }
	case kernel.Cast:
		x := c.intExpr(e.X)
		return func(f *frame) float64 { return round(float64(x(f))) }
	case kernel.Select:
		cond, a, b := c.intExpr(e.Cond), c.realExpr(e.Then), c.realExpr(e.Else)
		return func(f *frame) float64 {
			if cond(f) != 0 {
				return a(f)
			}
			return b(f)
		}
	case kernel.Call:
		args := make([]rfn, len(e.Args))
		for i, a := range e.Args {
			args[i] = c.realExpr(a)
		}
		switch e.Fn {
		case kernel.Sqrt:
			return func(f *frame) float64 { return round(math.Sqrt(args[0](f))) }
		case kernel.Rsqrt:
			return func(f *frame) float64 { return round(1 / math.Sqrt(args[0](f))) }
		case kernel.Fabs:
			return func(f *frame) float64 { return math.Abs(args[0](f)) }
		case kernel.Fma:
			return func(f *frame) float64 { return round(math.FMA(args[0](f), args[1](f), args[2](f))) }
		case kernel.Min:
			return func(f *frame) float64 { return math.Min(args[0](f), args[1](f)) }
		case kernel.Max:
			return func(f *frame) float64 { return math.Max(args[0](f), args[1](f)) }
		case kernel.TF32:
			return func(f *frame) float64 { return mma.RoundTF32(args[0](f)) }
		case kernel.TF32Trunc:
			return func(f *frame) float64 { return mma.TruncTF32(args[0](f)) }
		}
	}
	panic(fmt.Sprintf("no real expression %T %v", e, e))
}

func (c *compiler) intExpr(e kernel.Expr) ifn {
	t := c.typeOf(e)
	switch e := e.(type) {
	case kernel.Int:
		v := e.V
		return func(*frame) int64 { return v }
	case kernel.Var:
		r := c.lookup(e.Name)
		if r.kind == scalarParam {
			return func(f *frame) int64 { return f.m.scalar[r.slot] }
		}
		return func(f *frame) int64 { return f.ints[r.slot] }
	case kernel.Load:
		at := c.element(e.Buf, e.Index)
		return func(f *frame) int64 { s, i := at(f); return s.ints[i] }
	case kernel.Special:
		a, bsz := e.Axis, int64(c.k.Launch.Block[e.Axis])
		switch e.Kind {
		case kernel.LocalID:
			return func(f *frame) int64 { return int64(f.local[a]) }
		case kernel.GroupID:
			return func(f *frame) int64 { return int64(f.bs.group[a]) }
		default:
			return func(*frame) int64 { return bsz }
		}
	case kernel.Bin:
		if lt := c.typeOf(e.L); !lt.IsInt() { // a comparison of reals
			l, r := c.realExpr(e.L), c.realExpr(e.R)
			cmp := map[kernel.BinOp]func(a, b float64) bool{
				kernel.OpLt: func(a, b float64) bool { return a < b }, kernel.OpLe: func(a, b float64) bool { return a <= b },
				kernel.OpGt: func(a, b float64) bool { return a > b }, kernel.OpGe: func(a, b float64) bool { return a >= b },
				kernel.OpEq: func(a, b float64) bool { return a == b }, kernel.OpNe: func(a, b float64) bool { return a != b },
			}[e.Op]
			return func(f *frame) int64 { return b2i(cmp(l(f), r(f))) }
		}
		l, r := c.intExpr(e.L), c.intExpr(e.R)
		op := e.Op
		what := string(op)
		switch op {
		case kernel.OpAnd:
			return func(f *frame) int64 { return b2i(l(f) != 0 && r(f) != 0) }
		case kernel.OpOr:
			return func(f *frame) int64 { return b2i(l(f) != 0 || r(f) != 0) }
		}
		return func(f *frame) int64 {
			a, b := l(f), r(f)
			var v int64
			switch op {
			case kernel.OpAdd:
				v = a + b
			case kernel.OpSub:
				v = a - b
			case kernel.OpMul:
				v = a * b
			case kernel.OpDiv, kernel.OpRem:
				if b == 0 {
					failf("integer division by zero")
				}
				if op == kernel.OpDiv {
					v = a / b
				} else {
					v = a % b
				}
			case kernel.OpBitAnd:
				v = a & b
			case kernel.OpBitOr:
				v = a | b
			case kernel.OpXor:
				v = a ^ b
			case kernel.OpShl:
				v = a << uint(b)
			case kernel.OpShr:
				v = a >> uint(b)
			case kernel.OpLt:
				v = b2i(a < b)
			case kernel.OpLe:
				v = b2i(a <= b)
			case kernel.OpGt:
				v = b2i(a > b)
			case kernel.OpGe:
				v = b2i(a >= b)
			case kernel.OpEq:
				v = b2i(a == b)
			case kernel.OpNe:
				v = b2i(a != b)
			}
			return c.fit(t, v, what)
		}
	case kernel.Unary:
		x := c.intExpr(e.X)
		if e.Op == kernel.OpNot {
			return func(f *frame) int64 { return b2i(x(f) == 0) }
		}
		return func(f *frame) int64 { return c.fit(t, -x(f), "negation") }
	case kernel.Cast:
		if xt := c.typeOf(e.X); xt.IsInt() {
			x := c.intExpr(e.X)
			return func(f *frame) int64 { return c.fit(t, x(f), "cast") }
		}
		x := c.realExpr(e.X)
		return func(f *frame) int64 {
			v := x(f)
			if math.IsNaN(v) || math.Abs(v) >= 1<<62 {
				failf("cast of %g to an integer", v)
			}
			return c.fit(t, int64(v), "cast")
		}
	case kernel.Select:
		cond, a, b := c.intExpr(e.Cond), c.intExpr(e.Then), c.intExpr(e.Else)
		return func(f *frame) int64 {
			if cond(f) != 0 {
				return a(f)
			}
			return b(f)
		}
	case kernel.Call:
		a, b := c.intExpr(e.Args[0]), c.intExpr(e.Args[1])
		if e.Fn == kernel.Min {
			return func(f *frame) int64 { return min(a(f), b(f)) }
		}
		return func(f *frame) int64 { return max(a(f), b(f)) }
	}
	panic(fmt.Sprintf("no integer expression %T %v", e, e))
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// storage is an array an element access resolved to.
type storage struct {
	reals []float64
	ints  []int64
}

// element compiles an indexed access to a function returning the array and
// the flat index, checked in bounds.
func (c *compiler) element(name string, index []kernel.Expr) func(*frame) (storage, int) {
	r := c.lookup(name)
	idx := make([]ifn, len(index))
	for i, e := range index {
		idx[i] = c.intExpr(e)
	}
	flat := func(f *frame) int {
		if len(r.dims) == 0 {
			return int(idx[0](f))
		}
		n := 0
		for d, fn := range idx {
			i := fn(f)
			if i < 0 || i >= int64(r.dims[d]) {
				failf("%s index %d of %s is %d, out of 0..%d", ordinal(d), d, name, i, r.dims[d]-1)
			}
			n = n*r.dims[d] + int(i)
		}
		return n
	}
	get := func(f *frame) storage {
		switch r.kind {
		case realBuf:
			return storage{reals: f.m.reals[r.slot]}
		case intBuf:
			return storage{ints: f.m.ints[r.slot]}
		case sharedArr:
			return storage{reals: f.bs.reals[r.slot], ints: f.bs.ints[r.slot]}
		default:
			return storage{reals: f.realArrs[r.slot], ints: f.intArrs[r.slot]}
		}
	}
	return func(f *frame) (storage, int) {
		s, i := get(f), flat(f)
		n := len(s.reals)
		if r.typ.IsInt() {
			n = len(s.ints)
		}
		if i < 0 || i >= n {
			failf("%s[%d] is out of bounds (%d elements)", name, i, n)
		}
		return s, i
	}
}

func ordinal(d int) string {
	return [...]string{"first", "second", "third", "fourth", "fifth", "sixth"}[min(d, 5)]
}

func (c *compiler) block(ss []kernel.Stmt) func(*frame) {
	fns := make([]func(*frame), 0, len(ss))
	for _, s := range ss {
		if fn := c.stmt(s); fn != nil {
			fns = append(fns, fn)
		}
	}
	return func(f *frame) {
		for _, fn := range fns {
			fn(f)
		}
	}
}

// nested compiles a body in a scope of its own.
func (c *compiler) nested(ss []kernel.Stmt) func(*frame) {
	c.push()
	defer c.pop()
	return c.block(ss)
}

func (c *compiler) stmt(s kernel.Stmt) func(*frame) {
	p := c.p
	round := c.roundFn()
	switch s := s.(type) {
	case kernel.Decl:
		if len(s.Dims) > 0 {
			slot := p.arrSlots
			p.arrSlots++
			n := 1
			for _, d := range s.Dims {
				n *= d
			}
			c.declare(s.Name, ref{kind: localArr, slot: slot, typ: s.Type, dims: s.Dims})
			if s.Type == kernel.Real {
				return func(f *frame) {
					a := make([]float64, n)
					for i := range a {
						a[i] = math.NaN()
					}
					f.realArrs[slot] = a
				}
			}
			return func(f *frame) { f.intArrs[slot] = make([]int64, n) }
		}
		if s.Type == kernel.Real {
			slot := p.realSlots
			p.realSlots++
			var init rfn
			if s.Init != nil {
				init = c.realExpr(s.Init)
			}
			c.declare(s.Name, ref{kind: localVar, slot: slot, typ: s.Type})
			if init == nil {
				return func(f *frame) { f.reals[slot] = math.NaN() }
			}
			return func(f *frame) { f.reals[slot] = init(f) }
		}
		slot := p.intSlots
		p.intSlots++
		var init ifn
		if s.Init != nil {
			init = c.intExpr(s.Init)
		}
		c.declare(s.Name, ref{kind: localVar, slot: slot, typ: s.Type})
		t, name := s.Type, s.Name
		if init == nil {
			return func(f *frame) { f.ints[slot] = 0 }
		}
		return func(f *frame) { f.ints[slot] = c.fit(t, init(f), name) }
	case kernel.Assign:
		r := c.lookup(s.Name)
		if r.typ == kernel.Real {
			v := c.realExpr(s.Value)
			return func(f *frame) { f.reals[r.slot] = v(f) }
		}
		v, name := c.intExpr(s.Value), s.Name
		return func(f *frame) { f.ints[r.slot] = c.fit(r.typ, v(f), name) }
	case kernel.Store, kernel.AtomicAdd:
		var buf string
		var index []kernel.Expr
		var value kernel.Expr
		atomic := false
		if st, ok := s.(kernel.Store); ok {
			buf, index, value = st.Buf, st.Index, st.Value
		} else {
			a := s.(kernel.AtomicAdd)
			buf, index, value, atomic = a.Buf, a.Index, a.Value, true
		}
		at := c.element(buf, index)
		r := c.lookup(buf)
		if r.typ == kernel.Real {
			v := c.realExpr(value)
			if atomic {
				return func(f *frame) {
					s, i := at(f)
					x := v(f)
					f.m.atomic.Lock()
					s.reals[i] = round(s.reals[i] + x)
					f.m.atomic.Unlock()
				}
			}
			return func(f *frame) { s, i := at(f); s.reals[i] = round(v(f)) }
		}
		v := c.intExpr(value)
		return func(f *frame) { s, i := at(f); s.ints[i] = c.fit(r.typ, v(f), buf) }
	case kernel.AtomicFetchAdd:
		at := c.element(s.Buf, s.Index)
		v, buf := c.intExpr(s.Value), s.Buf
		set := func(*frame, int64) {}
		if s.Old != "" {
			r, name := c.lookup(s.Old), s.Old
			set = func(f *frame, old int64) { f.ints[r.slot] = c.fit(r.typ, old, name) }
		}
		return func(f *frame) {
			st, i := at(f)
			x := c.fit(kernel.Int32, v(f), buf)
			f.m.atomic.Lock()
			old := st.ints[i]
			st.ints[i] = old + x
			f.m.atomic.Unlock()
			c.fit(kernel.Int32, old+x, buf)
			set(f, old)
		}
	case kernel.Prefetch:
		// A hint: nothing to do, but its index must lie in the buffer.
		at := c.spanAt(s.Buf, s.Index, 1)
		return func(f *frame) { at(f) }
	case kernel.VecLoad:
		at := c.vecAt(s.Buf, s.Index, len(s.Dst))
		dst := make([]int, len(s.Dst))
		for i, d := range s.Dst {
			dst[i] = c.lookup(d).slot
		}
		return func(f *frame) {
			buf, i := at(f)
			for l, slot := range dst {
				f.reals[slot] = buf[i+l]
			}
		}
	case kernel.VecStore:
		at := c.vecAt(s.Buf, s.Index, len(s.Src))
		if s.Stream { // no alignment asked of a streamed store
			at = c.spanAt(s.Buf, s.Index, len(s.Src))
		}
		src := make([]rfn, len(s.Src))
		for i, v := range s.Src {
			src[i] = c.realExpr(v)
		}
		return func(f *frame) {
			buf, i := at(f)
			for l, v := range src {
				buf[i+l] = round(v(f))
			}
		}
	case kernel.If:
		cond := c.intExpr(s.Cond)
		then, els := c.nested(s.Then), c.nested(s.Else)
		return func(f *frame) {
			if cond(f) != 0 {
				then(f)
			} else {
				els(f)
			}
		}
	case kernel.For:
		from := c.intExpr(s.From)
		c.push()
		defer c.pop()
		slot := p.intSlots
		p.intSlots++
		c.declare(s.Var, ref{kind: localVar, slot: slot, typ: kernel.Index})
		to := c.intExpr(s.To) // evaluated before each iteration, as in C
		body := c.block(s.Body)
		step := max(s.Step, 1)
		name := s.Var
		return func(f *frame) {
			for f.ints[slot] = c.fit(kernel.Index, from(f), name); f.ints[slot] < to(f); f.ints[slot] = c.fit(kernel.Index, f.ints[slot]+step, name) {
				body(f)
			}
		}
	case kernel.Barrier:
		if n := s.Threads; n > 0 {
			return func(f *frame) { f.bs.parts[f.lin/n].wait() }
		}
		return func(f *frame) { f.bs.barrier.wait() }
	case kernel.Comment:
		return nil
	case kernel.MMA:
		return c.mma(s)
	case kernel.WGMMA:
		return c.wgmma(s)
	case kernel.WGMMASync:
		// The interpreter computes a WGMMA when it is issued: nothing
		// is in flight to fence or wait for.
		return nil
	case kernel.CopyAsync:
		// The value is read when the copy is issued (the source is a
		// buffer no thread writes while it is copied); the element is
		// NaN until a wait completes the copy, so that a read before
		// the wait shows in the results.
		w := s.Elements()
		vals, ats := make([]rfn, w), make([]func(*frame) (storage, int), w)
		for i := range w {
			vals[i], ats[i] = c.realExpr(s.Value(i)), c.element(s.Dst, s.DstAt(i))
		}
		var first ifn
		if w > 1 {
			first = c.intExpr(s.DstIndex[len(s.DstIndex)-1])
		}
		return func(f *frame) {
			if first != nil {
				if d := first(f); d%int64(w) != 0 {
					failf("async copy of %d elements into %s at %d: not aligned", w, s.Dst, d)
				}
			}
			for i := range w {
				st, at := ats[i](f)
				st.reals[at] = math.NaN()
				f.open = append(f.open, pendingCopy{dst: st.reals, at: at, v: vals[i](f)})
			}
		}
	case kernel.BulkCopy:
		return c.bulkCopy(s)
	case kernel.TxBarrier:
		return c.txBarrier(s)
	case kernel.AsyncCommit:
		return func(f *frame) {
			f.groups = append(f.groups, f.open)
			f.open = nil
		}
	case kernel.AsyncWait:
		n := s.Pending
		return func(f *frame) {
			for len(f.groups) > n {
				for _, pc := range f.groups[0] {
					pc.dst[pc.at] = pc.v
				}
				f.groups = f.groups[1:]
			}
		}
	}
	panic(fmt.Sprintf("unknown statement %T", s))
}

// vecAt resolves a vector access of w elements at index, checking
// alignment and bounds.
func (c *compiler) vecAt(buf string, index kernel.Expr, w int) func(*frame) ([]float64, int) {
	r := c.lookup(buf)
	idx := c.intExpr(index)
	shared := r.kind == sharedArr
	return func(f *frame) ([]float64, int) {
		s := f.m.reals[r.slot]
		if shared {
			s = f.bs.reals[r.slot]
		}
		i := idx(f)
		if i%int64(w) != 0 {
			failf("vector access of %d elements at %s[%d] is not aligned", w, buf, i)
		}
		if i < 0 || i+int64(w) > int64(len(s)) {
			failf("%s[%d..%d] is out of bounds (%d elements)", buf, i, i+int64(w)-1, len(s))
		}
		return s, int(i)
	}
}

// spanAt is vecAt without the alignment: w elements from buf[index].
func (c *compiler) spanAt(buf string, index kernel.Expr, w int) func(*frame) ([]float64, int) {
	r := c.lookup(buf)
	idx := c.intExpr(index)
	return func(f *frame) ([]float64, int) {
		s := f.m.reals[r.slot]
		i := idx(f)
		if i < 0 || i+int64(w) > int64(len(s)) {
			failf("%s[%d..%d] is out of bounds (%d elements)", buf, i, i+int64(w)-1, len(s))
		}
		return s, int(i)
	}
}

// mma compiles a warp-level multiply-accumulate: each lane evaluates its
// elements of A, B and C, the warp's lanes meet (see warp.exchange), and
// each takes its elements of D.
func (c *compiler) mma(s kernel.MMA) func(*frame) {
	exprs := func(es []kernel.Expr) []rfn {
		fns := make([]rfn, len(es))
		for i, e := range es {
			fns[i] = c.realExpr(e)
		}
		return fns
	}
	a, b, cc := exprs(s.A), exprs(s.B), exprs(s.C)
	dst := make([]int, len(s.D))
	for i, d := range s.D {
		dst[i] = c.lookup(d).slot
	}
	id := c.p.mmas
	c.p.mmas++
	shape, typ := s.Shape, s.Type
	eval := func(f *frame, fns []rfn) []float64 {
		out := make([]float64, len(fns))
		for i, fn := range fns {
			out[i] = fn(f)
		}
		return out
	}
	return func(f *frame) {
		in := mmaIn{id: id, a: eval(f, a), b: eval(f, b), c: eval(f, cc)}
		if typ == kernel.MMATF32 { // the tensor cores' TF32 parts
			for _, x := range [][]float64{in.a, in.b} {
				for v, e := range x {
					x[v] = mma.TruncTF32(e)
				}
			}
		}
		d := f.bs.warps[f.lin/32].exchange(f.lin%32, in, func(w *warp) { w.compute(shape, typ) })
		for i, slot := range dst {
			f.reals[slot] = d[i]
		}
	}
}

// wgmma compiles a warpgroup-level multiply-accumulate: each thread
// evaluates its elements of A (their TF32 parts) and B's offset, the
// warpgroup's 128 threads meet (see warp.exchange), and the last to arrive
// reads B from the shared array and hands out D.
func (c *compiler) wgmma(s kernel.WGMMA) func(*frame) {
	a := make([]rfn, len(s.A))
	for i, e := range s.A {
		a[i] = c.realExpr(e)
	}
	at := c.intExpr(s.BAt)
	var acc func(*frame) int64
	if s.Accumulate != nil {
		acc = c.intExpr(s.Accumulate)
	}
	dst := make([]int, len(s.D))
	for i, d := range s.D {
		dst[i] = c.lookup(d).slot
	}
	sh := c.lookup(s.B).slot
	id := c.p.mmas
	c.p.mmas++
	return func(f *frame) {
		in := mmaIn{id: id, a: make([]float64, len(a)), c: make([]float64, len(dst)), bAt: at(f)}
		for i, fn := range a {
			in.a[i] = mma.TruncTF32(fn(f))
		}
		for i, slot := range dst {
			in.c[i] = f.reals[slot]
			if acc != nil && acc(f) == 0 {
				in.c[i] = 0 // D = A·B
			}
		}
		bs := f.bs
		d := bs.groups[f.lin/128].exchange(f.lin%128, in, func(w *warp) { w.computeWGMMA(s, bs.reals[sh]) })
		for i, slot := range dst {
			f.reals[slot] = d[i]
		}
	}
}
