package emit

import (
	"strings"

	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/pass"
)

// cSpelling is C11 with OpenMP for the host backend. A kernel is first
// lowered by pass.HostLoops to the code one CPU thread runs for a block;
// it is printed as NAME_block(int64_t _g, …), the block's state (shared
// arrays, lifted variables) in a context struct when it has any, and an
// entry
//
//	void NAME(int64_t grid_x, <params>)
//
// that runs blocks 0..grid_x-1 in an OpenMP parallel loop.
var cSpelling = spelling{
	name:          C,
	prelude:       cPrelude,
	lower:         pass.HostLoops,
	kernel:        (*printer).cKernel,
	restrict:      "restrict",
	sharedRef:     "_c->",
	int64:         "int64_t",
	int64Suffix:   "LL",
	index64Always: true, // gcc's vectoriser gives up on loops mixing a 32-bit index with the 64-bit loop counter
	special: func(_ *kernel.Kernel, s kernel.Special) string {
		if s.Kind == kernel.GroupID && s.Axis == 0 {
			return "_g"
		}
		return "0" // a lowered block has one thread
	},
	call: cCall,
	atomicAdd: func(p *printer, ref, v string) {
		p.text("#pragma omp atomic")
		p.text(ref, " += ", v, ";")
	},
	unroll:    "#pragma GCC unroll 64",
	unrollBy:  "#pragma GCC unroll",
	vectorize: "#pragma omp simd",

	// gcc's and clang's builtin: relaxed, since nothing else is ordered
	// by it (the kernel ends before anything reads the tickets' writes).
	atomicFetchAdd: func(ref, v string) string { return "__atomic_fetch_add(&" + ref + ", " + v + ", __ATOMIC_RELAXED)" },
}

// cCall spells an intrinsic with C99's maths functions (the f-suffixed
// ones in single precision) and bespoke's integer min and max.
func cCall(fn kernel.Intrinsic, t kernel.Type, dt kernel.DType, args []string) string {
	if t.IsInt() {
		return "bespoke_" + string(fn) + "_i64(" + strings.Join(args, ", ") + ")"
	}
	suffix := ""
	if dt == kernel.F32 {
		suffix = "f"
	}
	switch fn {
	case kernel.Rsqrt:
		one := "1.0"
		if dt == kernel.F32 {
			one = "1.0f"
		}
		return "(" + one + " / sqrt" + suffix + "(" + args[0] + "))"
	case kernel.Min, kernel.Max:
		return "f" + string(fn) + suffix + "(" + strings.Join(args, ", ") + ")"
	}
	return string(fn) + suffix + "(" + strings.Join(args, ", ") + ")"
}

// cPrelude includes what the kernels use: C's maths functions for any
// intrinsic, and bespoke's integer min and max wherever a min or max
// appears (unused when its arguments are reals).
func cPrelude(ks []*kernel.Kernel) string {
	var b strings.Builder
	b.WriteString("#include <stdint.h>\n#include <stdlib.h>\n")
	maths, minMax := false, false
	for _, k := range ks {
		walkExprs(k, func(e kernel.Expr) {
			if c, ok := e.(kernel.Call); ok {
				maths = true
				minMax = minMax || c.Fn == kernel.Min || c.Fn == kernel.Max
			}
		})
	}
	if maths {
		b.WriteString("#include <math.h>\n")
	}
	if minMax {
		b.WriteString("static inline int64_t bespoke_min_i64(int64_t a, int64_t b) { return a < b ? a : b; }\n")
		b.WriteString("static inline int64_t bespoke_max_i64(int64_t a, int64_t b) { return a > b ? a : b; }\n")
	}
	return b.String()
}

// walkExprs calls f on every expression of k.
func walkExprs(k *kernel.Kernel, f func(kernel.Expr)) {
	kernel.WalkStmts(k.Body, func(s kernel.Stmt) bool {
		kernel.StmtExprs(s, func(e kernel.Expr) { kernel.WalkExpr(e, f) })
		return true
	})
}

// cKernel writes a lowered kernel: context struct, block function, entry.
func (p *printer) cKernel() {
	k := p.k
	ctx := len(k.Shared) > 0
	p.docComment()
	var args []string
	for _, prm := range k.Params {
		args = append(args, prm.Name)
	}
	params := p.params()
	lead, ctxArg := "int64_t _g", ""
	if ctx {
		p.line("struct %s_ctx {", k.Name)
		p.depth++
		for _, sh := range k.Shared {
			p.text(p.typeName(sh.Type), " ", sh.Name, dims(sh.Dims), ";")
		}
		p.depth--
		p.line("};")
		p.line("")
		lead, ctxArg = "int64_t _g, struct "+k.Name+"_ctx *restrict _c", "_c, "
	}
	p.line("static void %s_block(%s)", k.Name, joinNonEmpty(lead, params))
	p.line("{")
	p.depth++
	p.stmts(k.Body)
	p.depth--
	p.line("}")
	p.line("")
	p.line("void %s(%s)", k.Name, joinNonEmpty("int64_t grid_x", params))
	p.line("{")
	p.depth++
	call := k.Name + "_block(" + strings.TrimSuffix(joinNonEmpty("_g, "+ctxArg+strings.Join(args, ", ")), ", ") + ");"
	if ctx {
		p.line("#pragma omp parallel")
		p.line("{")
		p.depth++
		p.line("struct %s_ctx *_c = malloc(sizeof *_c);", k.Name)
		p.line("if (!_c) abort();")
		p.line("#pragma omp for schedule(static)")
		p.line("for (int64_t _g = 0; _g < grid_x; _g++)")
		p.line("    %s", call)
		p.line("free(_c);")
		p.depth--
		p.line("}")
	} else {
		p.line("#pragma omp parallel for schedule(static)")
		p.line("for (int64_t _g = 0; _g < grid_x; _g++)")
		p.line("    %s", call)
	}
	p.depth--
	p.line("}")
}

// joinNonEmpty joins the non-empty parts with ", ".
func joinNonEmpty(parts ...string) string {
	var out []string
	for _, s := range parts {
		if s != "" {
			out = append(out, s)
		}
	}
	return strings.Join(out, ", ")
}
