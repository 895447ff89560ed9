package emit

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/bespoke-hpc/bespoke/kernel"
)

// Render prints kernels in dialect d as one translation unit, so that a
// backend compiles them in one compiler call.
func Render(d Dialect, ks ...*kernel.Kernel) (Source, error) {
	src := Source{Dialect: d}
	var b strings.Builder
	f64 := false
	for _, k := range ks {
		f64 = f64 || k.DType == kernel.F64
	}
	switch d {
	case CUDA:
		b.WriteString(cudaSpelling.prelude(f64))
	case OpenCL:
		b.WriteString(openclSpelling.prelude(f64))
	case C:
		b.WriteString("#include <stdint.h>\n#include <stdlib.h>\n")
	default:
		return Source{}, fmt.Errorf("emit: unknown dialect %q", d)
	}
	for _, k := range ks {
		if err := check(k); err != nil {
			return Source{}, err
		}
		p := &printer{k: k, d: d}
		switch d {
		case CUDA:
			p.sp = &cudaSpelling
		case OpenCL:
			p.sp = &openclSpelling
		}
		b.WriteString("\n")
		if d == C {
			p.cKernel()
		} else {
			p.gpuKernel()
		}
		b.WriteString(p.b.String())
		src.Entries = append(src.Entries, k.Name)
	}
	src.Text = b.String()
	return src, nil
}

// check rejects IR the printer cannot honour.
func check(k *kernel.Kernel) error {
	if k.Name == "" || len(k.Body) == 0 {
		return fmt.Errorf("emit: kernel %q has no name or body", k.Name)
	}
	bl := k.Launch.Block
	if bl[0] < 1 || bl[1] < 1 || bl[2] != 1 {
		return fmt.Errorf("emit: kernel %s: block %v must be (x, y, 1)", k.Name, bl)
	}
	if k.HasBarrier() && k.Active != nil {
		return fmt.Errorf("emit: kernel %s: a kernel with barriers must guard its own statements", k.Name)
	}
	return nil
}

type printer struct {
	b      strings.Builder
	k      *kernel.Kernel
	d      Dialect
	sp     *spelling
	depth  int
	lifted map[string]bool // C kernels with barriers: per-thread variables held in the context
	shared map[string]bool
}

func (p *printer) line(format string, args ...any) {
	p.b.WriteString(strings.Repeat("    ", p.depth))
	fmt.Fprintf(&p.b, format, args...)
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
		if p.d == C {
			// Always 64-bit on the host: gcc's AVX2 vectoriser gives up on
			// loops that mix a 32-bit index with the 64-bit loop counter.
			return "int64_t"
		}
		if !p.k.Index64 {
			return "int"
		}
		return p.sp.int64
	}
	return "int"
}

func (p *printer) docComment() {
	if p.k.Doc == "" {
		return
	}
	p.line("/* %s: %s", p.k.Name, p.k.Variant)
	for _, l := range strings.Split(strings.TrimRight(p.k.Doc, "\n"), "\n") {
		p.line(" * %s", strings.ReplaceAll(l, "*/", "* /"))
	}
	p.line(" */")
}

func (p *printer) params() string {
	var ps []string
	for _, prm := range p.k.Params {
		if prm.Kind == kernel.ScalarParam {
			ps = append(ps, p.typeName(prm.Type)+" "+prm.Name)
			continue
		}
		var s strings.Builder
		if p.sp != nil {
			s.WriteString(p.sp.global)
		}
		if prm.Const {
			s.WriteString("const ")
		}
		s.WriteString(p.typeName(prm.Type))
		s.WriteString("* ")
		if p.sp != nil {
			s.WriteString(p.sp.restrict)
		} else {
			s.WriteString("restrict")
		}
		s.WriteString(" " + prm.Name)
		ps = append(ps, s.String())
	}
	return strings.Join(ps, ", ")
}

func (p *printer) gpuKernel() {
	p.docComment()
	p.line("%s%s(%s)", p.sp.entry(p.k), p.k.Name, p.params())
	p.line("{")
	p.depth++
	for _, sh := range p.k.Shared {
		p.line("%s%s %s[%d];", p.sp.shared, p.realType(), sh.Name, sh.Len)
	}
	if p.k.Active != nil {
		gid := kernel.Bin{Op: "+", L: kernel.Bin{Op: "*", L: kernel.Special{Kind: kernel.GroupID}, R: kernel.Special{Kind: kernel.LocalSize}}, R: kernel.Special{Kind: kernel.LocalID}}
		p.line("if (%s >= %s) return;", p.expr(gid, 0), p.expr(p.k.Active, precCmp+1))
	}
	p.stmts(p.k.Body)
	p.depth--
	p.line("}")
}

// Operator precedence, lowest first.
const (
	precOr = iota + 1
	precAnd
	precEq
	precCmp
	precAdd
	precMul
	precPrimary
)

var precOf = map[string]int{"||": precOr, "&&": precAnd, "==": precEq, "!=": precEq,
	"<": precCmp, "<=": precCmp, "+": precAdd, "-": precAdd, "*": precMul, "/": precMul, "%": precMul}

// expr prints e, parenthesised when its precedence is below min.
func (p *printer) expr(e kernel.Expr, min int) string {
	switch e := e.(type) {
	case kernel.Lit:
		return p.realLit(e.V)
	case kernel.Int:
		return p.intLit(e.V)
	case kernel.Var:
		if p.lifted[e.Name] {
			return "_c->" + e.Name + "[_ly][_lx]"
		}
		return e.Name
	case kernel.Load:
		return p.ref(e.Buf, e.Index)
	case kernel.Special:
		return p.special(e)
	case kernel.Bin:
		prec := precOf[e.Op]
		op := e.Op
		r := e.R
		// a + (-c)*x reads better, and compiles the same, as a - c*x.
		if m, ok := r.(kernel.Bin); ok && op == "+" && m.Op == "*" {
			if l, ok := m.L.(kernel.Lit); ok && math.Signbit(l.V) {
				op, r = "-", kernel.Bin{Op: "*", L: kernel.Lit{V: -l.V}, R: m.R}
			}
		}
		rmin := prec
		if op == "-" || op == "/" || op == "%" || prec <= precCmp {
			rmin = prec + 1
		}
		s := p.expr(e.L, prec) + " " + op + " " + p.expr(r, rmin)
		if prec < min {
			return "(" + s + ")"
		}
		return s
	}
	panic(fmt.Sprintf("emit: unknown expression %T", e))
}

func (p *printer) ref(buf string, idx kernel.Expr) string {
	if p.d == C && p.shared[buf] {
		return "_c->" + buf + "[" + p.expr(idx, 0) + "]"
	}
	return buf + "[" + p.expr(idx, 0) + "]"
}

func (p *printer) special(s kernel.Special) string {
	if p.sp != nil {
		return p.sp.special(s)
	}
	switch {
	case s.Kind == kernel.LocalSize:
		return strconv.Itoa(p.k.Launch.Block[s.Axis])
	case s.Kind == kernel.LocalID && s.Axis == 0:
		return "_lx"
	case s.Kind == kernel.LocalID && s.Axis == 1:
		return "_ly"
	case s.Kind == kernel.GroupID && s.Axis == 0:
		return "_g"
	}
	return "0"
}

// realLit prints v at the kernel's precision with the fewest digits that
// round-trip, always looking like a floating-point literal.
func (p *printer) realLit(v float64) string {
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
		if p.d == OpenCL {
			return s + "L"
		}
		return s + "LL"
	}
	return s
}

func (p *printer) stmts(ss []kernel.Stmt) {
	for _, s := range ss {
		p.stmt(s)
	}
}

func (p *printer) stmt(s kernel.Stmt) {
	switch s := s.(type) {
	case kernel.Decl:
		if p.lifted[s.Name] {
			if s.Init != nil {
				p.line("%s = %s;", p.expr(kernel.Var{Name: s.Name}, 0), p.expr(s.Init, 0))
			}
			return
		}
		if s.Init == nil {
			p.line("%s %s;", p.typeName(s.Type), s.Name)
		} else {
			p.line("%s %s = %s;", p.typeName(s.Type), s.Name, p.expr(s.Init, 0))
		}
	case kernel.Assign:
		p.line("%s = %s;", p.expr(kernel.Var{Name: s.Name}, 0), p.expr(s.Value, 0))
	case kernel.Store:
		p.line("%s = %s;", p.ref(s.Buf, s.Index), p.expr(s.Value, 0))
	case kernel.VecLoad:
		p.vecLoad(s)
	case kernel.VecStore:
		p.vecStore(s)
	case kernel.If:
		p.line("if (%s) {", p.expr(s.Cond, 0))
		p.depth++
		p.stmts(s.Then)
		p.depth--
		if len(s.Else) > 0 {
			p.line("} else {")
			p.depth++
			p.stmts(s.Else)
			p.depth--
		}
		p.line("}")
	case kernel.Barrier:
		if p.sp == nil {
			panic("emit: barrier inside a C phase") // split out by cKernel
		}
		p.line("%s", p.sp.barrier)
	case kernel.Comment:
		p.line("// %s", s.Text)
	default:
		panic(fmt.Sprintf("emit: unknown statement %T", s))
	}
}

func (p *printer) vecLoad(s kernel.VecLoad) {
	w := len(s.Dst)
	if p.sp == nil || w == 1 {
		for i, d := range s.Dst {
			p.line("%s = %s;", p.expr(kernel.Var{Name: d}, 0), p.ref(s.Buf, offset(s.Index, i)))
		}
		return
	}
	vt := p.sp.vecPointer(p.realType(), w, true)
	p.line("{")
	p.depth++
	p.line("const %s _v = *(const %s%s*)(%s + %s);", vt, p.sp.global, vt, s.Buf, p.expr(s.Index, precAdd+1))
	for i, d := range s.Dst {
		p.line("%s = _v%s;", p.expr(kernel.Var{Name: d}, 0), p.sp.vecField[i])
	}
	p.depth--
	p.line("}")
}

func (p *printer) vecStore(s kernel.VecStore) {
	w := len(s.Src)
	if p.sp == nil || w == 1 {
		for i, v := range s.Src {
			p.line("%s = %s;", p.ref(s.Buf, offset(s.Index, i)), p.expr(v, 0))
		}
		return
	}
	vt := p.sp.vecPointer(p.realType(), w, true)
	vals := make([]string, w)
	for i, v := range s.Src {
		vals[i] = p.expr(v, 0)
	}
	ctor := "make_" + vt + "(" + strings.Join(vals, ", ") + ")"
	if p.d == OpenCL {
		ctor = "(" + vt + ")(" + strings.Join(vals, ", ") + ")"
	}
	p.line("*(%s%s*)(%s + %s) = %s;", p.sp.global, vt, s.Buf, p.expr(s.Index, precAdd+1), ctor)
}

// offset returns idx + i, folded when idx is a sum ending in a literal.
func offset(idx kernel.Expr, i int) kernel.Expr {
	if i == 0 {
		return idx
	}
	return kernel.Bin{Op: "+", L: idx, R: kernel.Int{V: int64(i)}}
}

func intString(v int64) string { return strconv.FormatInt(v, 10) }
