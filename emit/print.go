package emit

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/pass"
)

// Render prints kernels in dialect d as one translation unit, so that a
// backend compiles them in one compiler call. Each kernel is validated
// (kernel.Validate) and lowered by the dialect's pass, if it has one.
func Render(d Dialect, ks ...*kernel.Kernel) (Source, error) {
	sp, ok := spellings[d]
	if !ok {
		return Source{}, fmt.Errorf("emit: unknown dialect %q (want %s)", d, dialectList())
	}
	src := Source{Dialect: d}
	lowered := make([]*kernel.Kernel, len(ks))
	for i, k := range ks {
		if sp.copyAsync == nil || k.Hints.MinArch < 80 {
			k = pass.SyncCopies(k) // copied at once where cp.async is not there
		}
		if kernel.PartBarrier(k.Body) != 0 && sp.partBarrier == nil {
			return Source{}, fmt.Errorf("emit: kernel %s (%s): its barriers of part of a block need CUDA's named barriers; %s has none", k.Name, k.Variant, d)
		}
		if sp.lower == nil { // a lowering validates what it lowers
			if err := kernel.Validate(k); err != nil {
				return Source{}, fmt.Errorf("emit: %w", err)
			}
		}
		if kernel.HasBulkCopies(k.Body) && sp.bulk == nil {
			return Source{}, fmt.Errorf("emit: kernel %s (%s): its bulk copies on transaction barriers need CUDA (sm_90); %s has none", k.Name, k.Variant, d)
		}
		if arch := kernel.NeedsArch(k.Body); arch > 0 && (sp.mma == nil || (kernel.ArchSpecific(k.Body) && sp.wgmma == nil)) {
			return Source{}, fmt.Errorf("emit: kernel %s (%s): its warp-level mma, wgmma or TF32 rounding needs CUDA tensor cores (sm_%d); %s has none", k.Name, k.Variant, arch, d)
		}
		src.ArchSpecific = src.ArchSpecific || kernel.ArchSpecific(k.Body)
		if k.Launch.DynamicShared() && sp.dynamicShared == "" && sp.sharedRef == "" {
			return Source{}, fmt.Errorf("emit: kernel %s (%s) needs %d bytes of shared memory; %s kernels have at most %d", k.Name, k.Variant, k.Launch.SharedBytes, d, kernel.StaticSharedLimit)
		}
		src.MinArch = max(src.MinArch, k.Hints.MinArch)
		if err := checkNames(k); err != nil {
			return Source{}, fmt.Errorf("emit: %w", err)
		}
		lowered[i] = k
		if sp.lower != nil {
			lk, err := sp.lower(k)
			if err != nil {
				return Source{}, fmt.Errorf("emit: %w", err)
			}
			lowered[i] = lk
		}
	}
	var b strings.Builder
	b.WriteString(sp.prelude(lowered))
	for _, k := range lowered {
		p := &printer{b: &b, k: k, sp: sp}
		if usesMinMax(k) {
			p.env = kernel.NewEnv(k)
		}
		for _, s := range k.Shared {
			if sp.sharedRef != "" {
				if p.shared == nil {
					p.shared = map[string]bool{}
				}
				p.shared[s.Name] = true
			}
		}
		b.WriteString("\n")
		sp.kernel(p)
		src.Entries = append(src.Entries, k.Name)
		src.Wide = src.Wide || k.Hints.WideVectors
	}
	src.MaxRegisters = maxRegisters(ks)
	src.Text = b.String()
	return src, nil
}

// printer writes one kernel.
type printer struct {
	b      *strings.Builder
	k      *kernel.Kernel
	sp     *spelling
	env    *kernel.Env     // types of the names in scope, for min and max (nil when there are none)
	shared map[string]bool // shared arrays spelled with sp.sharedRef
	depth  int
	lits   map[float64]string // realLit's results (operators repeat their values)
}

// indent writes the current indentation.
func (p *printer) indent() {
	for i := 0; i < p.depth; i++ {
		p.b.WriteString("    ")
	}
}

func (p *printer) line(format string, args ...any) {
	p.indent()
	fmt.Fprintf(p.b, format, args...)
	p.b.WriteByte('\n')
}

// text writes an indented line of plain text.
func (p *printer) text(parts ...string) {
	p.indent()
	for _, s := range parts {
		p.b.WriteString(s)
	}
	p.b.WriteByte('\n')
}

func (p *printer) realType() string {
	if p.k.DType == kernel.F32 {
		return "float"
	}
	return "double"
}

func (p *printer) typeName(t kernel.Type) string {
	switch t {
	case kernel.Real:
		return p.realType()
	case kernel.Index:
		if p.k.Index64 || p.sp.index64Always {
			return p.sp.int64
		}
	case kernel.Int64:
		return p.sp.int64
	}
	return "int"
}

// docComment prints the kernel's reference loop.
func (p *printer) docComment() {
	if p.k.Doc == "" {
		return
	}
	p.line("/* %s: %s", p.k.Name, commentSafe(p.k.Variant))
	for _, l := range strings.Split(strings.TrimRight(p.k.Doc, "\n"), "\n") {
		p.line(" * %s", commentSafe(l))
	}
	p.line(" */")
}

// commentSafe keeps text from closing a block comment.
func commentSafe(s string) string { return strings.ReplaceAll(s, "*/", "* /") }

// params writes the parameter list.
func (p *printer) params() string {
	var ps []string
	for _, prm := range p.k.Params {
		if prm.Kind == kernel.ScalarParam {
			ps = append(ps, p.typeName(prm.Type)+" "+prm.Name)
			continue
		}
		var s strings.Builder
		s.WriteString(p.sp.global)
		if prm.Const {
			s.WriteString("const ")
		}
		s.WriteString(p.typeName(prm.Type))
		s.WriteString("* ")
		s.WriteString(p.sp.restrict)
		s.WriteString(" " + prm.Name)
		ps = append(ps, s.String())
	}
	return strings.Join(ps, ", ")
}

// dims spells array dimensions: [d0][d1]…
func dims(ds []int) string {
	var s strings.Builder
	for _, d := range ds {
		s.WriteString("[" + strconv.Itoa(d) + "]")
	}
	return s.String()
}

// Operator precedence, lowest first.
const (
	precSelect = iota + 1
	precOr
	precAnd
	precBitOr
	precBitXor
	precBitAnd
	precEq
	precCmp
	precShift
	precAdd
	precMul
	precUnary
	precPrimary
)

var precOf = map[kernel.BinOp]int{kernel.OpOr: precOr, kernel.OpAnd: precAnd, kernel.OpBitOr: precBitOr, kernel.OpXor: precBitXor, kernel.OpBitAnd: precBitAnd,
	kernel.OpEq: precEq, kernel.OpNe: precEq, kernel.OpLt: precCmp, kernel.OpLe: precCmp, kernel.OpGt: precCmp, kernel.OpGe: precCmp,
	kernel.OpShl: precShift, kernel.OpShr: precShift, kernel.OpAdd: precAdd, kernel.OpSub: precAdd, kernel.OpMul: precMul, kernel.OpDiv: precMul, kernel.OpRem: precMul}

// expr returns e as text.
func (p *printer) expr(e kernel.Expr, min int) string {
	var b strings.Builder
	saved := p.b
	p.b = &b
	p.writeExpr(e, min)
	p.b = saved
	return b.String()
}

// writeExpr writes e, parenthesised when its precedence is below min. The
// right operand of a binary operator is parenthesised at equal
// precedence, so the text groups exactly as the tree does.
func (p *printer) writeExpr(e kernel.Expr, min int) {
	b := p.b
	switch e := e.(type) {
	case kernel.Lit:
		b.WriteString(p.realLit(e.V))
	case kernel.Int:
		b.WriteString(p.intLit(e.V))
	case kernel.Var:
		b.WriteString(e.Name)
	case kernel.Load:
		p.writeRef(e.Buf, e.Index)
	case kernel.Special:
		b.WriteString(p.sp.special(p.k, e))
	case kernel.Bin:
		op, r := e.Op, e.R
		// a + (-c)*x reads better, and compiles the same, as a - c*x.
		if m, ok := r.(kernel.Bin); ok && op == kernel.OpAdd && m.Op == kernel.OpMul {
			if l, ok := m.L.(kernel.Lit); ok && math.Signbit(l.V) {
				op, r = kernel.OpSub, kernel.Bin{Op: kernel.OpMul, L: kernel.Lit{V: -l.V}, R: m.R}
			}
		}
		prec := precOf[op]
		if prec < min {
			b.WriteByte('(')
		}
		p.writeExpr(e.L, prec)
		b.WriteString(" " + string(op) + " ")
		p.writeExpr(r, prec+1)
		if prec < min {
			b.WriteByte(')')
		}
	case kernel.Unary:
		if precUnary < min {
			b.WriteByte('(')
		}
		b.WriteString(string(e.Op))
		p.writeExpr(e.X, precUnary)
		if precUnary < min {
			b.WriteByte(')')
		}
	case kernel.Cast:
		if precUnary < min {
			b.WriteByte('(')
		}
		b.WriteString("(" + p.typeName(e.To) + ")")
		p.writeExpr(e.X, precUnary)
		if precUnary < min {
			b.WriteByte(')')
		}
	case kernel.Select:
		if precSelect < min {
			b.WriteByte('(')
		}
		p.writeExpr(e.Cond, precOr)
		b.WriteString(" ? ")
		p.writeExpr(e.Then, precSelect)
		b.WriteString(" : ")
		p.writeExpr(e.Else, precSelect)
		if precSelect < min {
			b.WriteByte(')')
		}
	case kernel.Call:
		args := make([]string, len(e.Args))
		for i, a := range e.Args {
			args[i] = p.expr(a, 0)
		}
		t := kernel.Real
		if p.env != nil {
			var err error
			if t, err = p.env.TypeOf(e); err != nil {
				panic(fmt.Sprintf("emit: %v", err)) // Validate accepted the kernel
			}
		}
		if (e.Fn == kernel.Min || e.Fn == kernel.Max) && t.IsInt() && p.sp.name != C && p.typeName(t) != "int" {
			// OpenCL's and CUDA's integer min and max are overloaded by
			// type, and a literal prints as an int: min(long, int) is
			// ambiguous. The C dialect's own functions take int64_t.
			for i := range args {
				args[i] = "(" + p.typeName(t) + ")(" + args[i] + ")"
			}
		}
		b.WriteString(p.sp.call(e.Fn, t, p.k.DType, args))
	default:
		panic(fmt.Sprintf("emit: unknown expression %T", e))
	}
}

// writeRef writes an element reference buf[i][j]….
func (p *printer) writeRef(buf string, index []kernel.Expr) {
	if p.shared[buf] {
		p.b.WriteString(p.sp.sharedRef)
	}
	p.b.WriteString(buf)
	for _, i := range index {
		p.b.WriteByte('[')
		p.writeExpr(i, 0)
		p.b.WriteByte(']')
	}
}

func (p *printer) ref(buf string, index []kernel.Expr) string {
	var b strings.Builder
	saved := p.b
	p.b = &b
	p.writeRef(buf, index)
	p.b = saved
	return b.String()
}

// realLit prints v at the kernel's precision with the fewest digits that
// round-trip, always looking like a floating-point literal.
func (p *printer) realLit(v float64) string {
	if s, ok := p.lits[v]; ok {
		return s
	}
	if p.lits == nil {
		p.lits = map[float64]string{}
	}
	s := p.formatReal(v)
	if !math.IsNaN(v) {
		p.lits[v] = s
	}
	return s
}

func (p *printer) formatReal(v float64) string {
	bits := 64
	if p.k.DType == kernel.F32 {
		bits = 32
		v = float64(float32(v))
	}
	s := strconv.FormatFloat(v, 'g', -1, bits)
	if !strings.ContainsAny(s, ".eEn") {
		s += ".0"
	}
	if bits == 32 {
		s += "f"
	}
	return s
}

func (p *printer) intLit(v int64) string {
	s := strconv.FormatInt(v, 10)
	if v > math.MaxInt32 || v < math.MinInt32 {
		return s + p.sp.int64Suffix
	}
	return s
}

func (p *printer) stmts(ss []kernel.Stmt) {
	for _, s := range ss {
		p.stmt(s)
	}
}

// block writes a nested body in a scope of its own.
func (p *printer) block(ss []kernel.Stmt) {
	p.depth++
	p.push()
	p.stmts(ss)
	p.pop()
	p.depth--
}

// push and pop follow scopes, and declare records a name's type, where
// the printer needs types.
func (p *printer) push() {
	if p.env != nil {
		p.env.Push()
	}
}

func (p *printer) pop() {
	if p.env != nil {
		p.env.Pop()
	}
}

func (p *printer) declare(name string, s kernel.Symbol) {
	if p.env != nil {
		_ = p.env.Declare(name, s) // Validate accepted the kernel
	}
}

// usesMinMax reports whether k calls min or max, whose spelling depends on
// the type of their arguments.
func usesMinMax(k *kernel.Kernel) bool {
	found := false
	walkExprs(k, func(e kernel.Expr) {
		if c, ok := e.(kernel.Call); ok && (c.Fn == kernel.Min || c.Fn == kernel.Max) {
			found = true
		}
	})
	return found
}

func (p *printer) stmt(s kernel.Stmt) {
	b := p.b
	switch s := s.(type) {
	case kernel.Decl:
		p.declare(s.Name, kernel.Symbol{Type: s.Type, Dims: len(s.Dims), Array: len(s.Dims) > 0})
		p.indent()
		b.WriteString(p.typeName(s.Type) + " " + s.Name + dims(s.Dims))
		if s.Init != nil {
			b.WriteString(" = ")
			p.writeExpr(s.Init, 0)
		}
		b.WriteString(";\n")
	case kernel.Assign:
		p.indent()
		b.WriteString(s.Name + " = ")
		p.writeExpr(s.Value, 0)
		b.WriteString(";\n")
	case kernel.Store:
		p.indent()
		p.writeRef(s.Buf, s.Index)
		b.WriteString(" = ")
		p.writeExpr(s.Value, 0)
		b.WriteString(";\n")
	case kernel.AtomicAdd:
		p.sp.atomicAdd(p, p.ref(s.Buf, s.Index), p.expr(s.Value, 0))
	case kernel.AtomicFetchAdd:
		// The value as the buffer's int: CUDA's atomicAdd and OpenCL's
		// atomic_add are overloaded by it.
		v := p.expr(kernel.Cast{To: kernel.Int32, X: s.Value}, 0)
		call := p.sp.atomicFetchAdd(p.ref(s.Buf, s.Index), v)
		if s.Old == "" {
			p.text(call, ";")
		} else {
			p.text(s.Old, " = ", call, ";")
		}
	case kernel.VecLoad:
		p.vecLoad(s)
	case kernel.VecStore:
		p.vecStore(s)
	case kernel.Prefetch:
		if p.sp.prefetch != nil {
			p.sp.prefetch(p, p.ref(s.Buf, []kernel.Expr{s.Index}), s.Write)
		}
	case kernel.If:
		p.indent()
		b.WriteString("if (")
		p.writeExpr(s.Cond, 0)
		b.WriteString(") {\n")
		p.block(s.Then)
		if len(s.Else) > 0 {
			p.text("} else {")
			p.block(s.Else)
		}
		p.text("}")
	case kernel.For:
		if s.Unroll && p.sp.unroll != "" {
			p.text(p.sp.unroll)
		}
		if s.UnrollBy > 0 && p.sp.unrollBy != "" {
			p.text(p.sp.unrollBy, " ", strconv.Itoa(s.UnrollBy))
		}
		if s.Vectorize && p.sp.vectorize != "" {
			p.text(p.sp.vectorize)
		}
		step := s.Var + "++"
		if s.Step > 1 {
			step = s.Var + " += " + p.intLit(s.Step)
		}
		p.text("for (", p.typeName(kernel.Index), " ", s.Var, " = ", p.expr(s.From, 0), "; ", s.Var, " < ", p.expr(s.To, precCmp+1), "; ", step, ") {")
		p.push()
		p.declare(s.Var, kernel.Symbol{Type: kernel.Index})
		p.block(s.Body)
		p.pop()
		p.text("}")
	case kernel.Barrier:
		if s.Threads > 0 {
			p.sp.partBarrier(p, s.Threads) // Render refused the kernel where it is nil
			break
		}
		if p.sp.barrier == "" {
			panic("emit: barrier left in a " + string(p.sp.name) + " kernel") // lowered away
		}
		p.text(p.sp.barrier)
	case kernel.Comment:
		p.text("// ", strings.ReplaceAll(s.Text, "\n", " "))
	case kernel.MMA:
		p.sp.mma(p, s) // Render refused the kernel where it is nil
	case kernel.WGMMA:
		p.sp.wgmma(p, s) // likewise
	case kernel.WGMMASync:
		p.sp.wgmmaSync(p, s)
	case kernel.CopyAsync:
		p.sp.copyAsync(p, s) // Render made the copies plain where it is nil
	case kernel.BulkCopy, kernel.TxBarrier:
		p.sp.bulk(p, s) // Render refused the kernel where it is nil
	case kernel.AsyncCommit:
		p.text(`asm volatile("cp.async.commit_group;" ::: "memory");`)
	case kernel.AsyncWait:
		p.text(`asm volatile("cp.async.wait_group `, strconv.Itoa(s.Pending), `;" ::: "memory");`)
	default:
		panic(fmt.Sprintf("emit: unknown statement %T", s))
	}
}

func (p *printer) vecLoad(s kernel.VecLoad) {
	w := len(s.Dst)
	if p.sp.vec == nil || w == 1 {
		for i, d := range s.Dst {
			p.text(d, " = ", p.ref(s.Buf, []kernel.Expr{offset(s.Index, i)}), ";")
		}
		return
	}
	vt := p.sp.vec.typ(p.realType(), w)
	space := p.sp.global
	if p.isShared(s.Buf) {
		space = p.sp.sharedPtr
	}
	p.text("{")
	p.depth++
	p.text("const ", vt, " _v = *(const ", space, vt, "*)(", s.Buf, " + ", p.expr(s.Index, precAdd+1), ");")
	for i, d := range s.Dst {
		p.text(d, " = _v", p.sp.vec.field[i], ";")
	}
	p.depth--
	p.text("}")
}

// vectorShared lists the shared arrays that vector loads read (they are
// declared 16-byte aligned).
func vectorShared(k *kernel.Kernel) map[string]bool {
	out := map[string]bool{}
	kernel.WalkStmts(k.Body, func(s kernel.Stmt) bool {
		if v, ok := s.(kernel.VecLoad); ok {
			out[v.Buf] = true
		}
		return true
	})
	return out
}

// isShared says whether name is one of the kernel's shared arrays.
func (p *printer) isShared(name string) bool {
	for _, sh := range p.k.Shared {
		if sh.Name == name {
			return true
		}
	}
	return false
}

func (p *printer) vecStore(s kernel.VecStore) {
	w := len(s.Src)
	if s.Stream {
		if p.sp.streamStore == nil {
			for i, v := range s.Src {
				p.text(p.ref(s.Buf, []kernel.Expr{offset(s.Index, i)}), " = ", p.expr(v, 0), ";")
			}
			return
		}
		vals := make([]string, w)
		for i, v := range s.Src {
			vals[i] = p.expr(v, 0)
		}
		p.sp.streamStore(p, p.ref(s.Buf, []kernel.Expr{s.Index}), vals)
		return
	}
	if p.sp.vec == nil || w == 1 {
		for i, v := range s.Src {
			p.text(p.ref(s.Buf, []kernel.Expr{offset(s.Index, i)}), " = ", p.expr(v, 0), ";")
		}
		return
	}
	vt := p.sp.vec.typ(p.realType(), w)
	vals := make([]string, w)
	for i, v := range s.Src {
		vals[i] = p.expr(v, 0)
	}
	p.text("*(", p.sp.global, vt, "*)(", s.Buf, " + ", p.expr(s.Index, precAdd+1), ") = ", p.sp.vec.ctor(vt, vals), ";")
}

// offset returns idx + i.
func offset(idx kernel.Expr, i int) kernel.Expr {
	if i == 0 {
		return idx
	}
	return kernel.Bin{Op: kernel.OpAdd, L: idx, R: kernel.Int{V: int64(i)}}
}

// gpuKernel writes a kernel of a GPU dialect: entry qualifiers, shared
// arrays, the early return of inactive threads, the body.
func (p *printer) gpuKernel() {
	p.docComment()
	p.line("%s%s(%s)", p.sp.entry(p.k), p.k.Name, p.params())
	p.line("{")
	p.depth++
	if p.k.Launch.DynamicShared() {
		// Arrays of the dynamic shared memory, 16-byte aligned one
		// after another, indexed as the static ones would be.
		p.text(p.sp.dynamicShared)
		off := 0
		for _, sh := range p.k.Shared {
			t := p.typeName(sh.Type)
			ptr := t + " *" + sh.Name
			cast := t + " *"
			if len(sh.Dims) > 1 {
				ptr = t + " (*" + sh.Name + ")" + dims(sh.Dims[1:])
				cast = t + " (*)" + dims(sh.Dims[1:])
			}
			p.text(ptr, " = (", cast, ")(bespoke_shared + ", strconv.Itoa(off), ");")
			size := p.k.TypeBytes(sh.Type)
			for _, d := range sh.Dims {
				size *= d
			}
			off += (size + 15) / 16 * 16
		}
	} else {
		vec := vectorShared(p.k)
		for _, sh := range p.k.Shared {
			if vec[sh.Name] {
				p.text(p.sp.shared, p.sp.alignBefore, p.typeName(sh.Type), " ", sh.Name, dims(sh.Dims), p.sp.alignAfter, ";")
				continue
			}
			p.text(p.sp.shared, p.typeName(sh.Type), " ", sh.Name, dims(sh.Dims), ";")
		}
	}
	if p.k.Active != nil {
		gid := kernel.Bin{Op: kernel.OpAdd, L: kernel.Bin{Op: kernel.OpMul, L: kernel.Special{Kind: kernel.GroupID}, R: kernel.Special{Kind: kernel.LocalSize}}, R: kernel.Special{Kind: kernel.LocalID}}
		p.text("if (", p.expr(gid, 0), " >= ", p.expr(p.k.Active, precCmp+1), ") return;")
	}
	p.stmts(p.k.Body)
	p.depth--
	p.line("}")
}

// Lowered returns k as dialect d runs it: after the dialect's lowering (C:
// the work-group loops of kernel/pass.HostLoops), or k itself.
func Lowered(d Dialect, k *kernel.Kernel) (*kernel.Kernel, error) {
	sp, ok := spellings[d]
	if !ok {
		return nil, fmt.Errorf("emit: unknown dialect %q (want %s)", d, dialectList())
	}
	if sp.lower == nil {
		return k, nil
	}
	lk, err := sp.lower(k)
	if err != nil {
		return nil, fmt.Errorf("emit: %w", err)
	}
	return lk, nil
}

// maxRegisters is Source.MaxRegisters: the least of 65536/(threads·blocks),
// rounded down to a multiple of 8 and at most 255, over kernels that all
// ask for resident blocks; 0 if any does not.
func maxRegisters(ks []*kernel.Kernel) int {
	regs := 0
	for _, k := range ks {
		b := k.Hints.MinBlocksPerUnit
		if b <= 0 {
			return 0
		}
		r := min(255, 65536/(k.Launch.Threads()*b)/8*8)
		if regs == 0 || r < regs {
			regs = r
		}
	}
	return regs
}
