package emit

import (
	"strings"

	"github.com/bespoke-hpc/bespoke/kernel"
)

// cKernel prints k as C: NAME_block runs one block of threads, NAME runs
// grid_x blocks in an OpenMP parallel loop. The entry's signature is
// void NAME(int64_t grid_x, <params>).
func (p *printer) cKernel() {
	k := p.k
	bx, by := k.Launch.Block[0], k.Launch.Block[1]
	// Kernels with barriers or with y threads run each block as loops over
	// y and x, phase by phase (a phase ends at a barrier).
	barrier := k.HasBarrier() || by != 1
	p.docComment()
	var args []string
	for _, prm := range k.Params {
		args = append(args, prm.Name)
	}
	ctxParam, ctxArg := "", ""
	if barrier {
		p.cContext(bx, by)
		ctxParam, ctxArg = "struct "+k.Name+"_ctx *restrict _c, ", "_c, "
	}
	p.line("static void %s_block(int64_t _g, %s%s)", k.Name, ctxParam, p.params())
	p.line("{")
	p.depth++
	if !barrier {
		lim := "int64_t _lim = " + itoa(bx) + ";"
		if k.Active != nil {
			lim = "int64_t _lim = " + p.expr(k.Active, precAdd+1) + " - _g * " + itoa(bx) + ";\n" +
				strings.Repeat("    ", p.depth) + "if (_lim > " + itoa(bx) + ") _lim = " + itoa(bx) + ";"
		}
		p.line("%s", lim)
		pieces, prefixes := segments(k.Body, k.Params)
		for i, piece := range pieces {
			p.line("#pragma omp simd")
			p.line("for (int64_t _lx = 0; _lx < _lim; _lx++) {")
			p.depth++
			p.stmts(prefixes[i])
			p.stmts(piece)
			p.depth--
			p.line("}")
		}
	} else {
		for _, phase := range splitPhases(k.Body) {
			p.line("for (int64_t _ly = 0; _ly < %d; _ly++) {", by)
			p.line("#pragma omp simd")
			p.line("for (int64_t _lx = 0; _lx < %d; _lx++) {", bx)
			p.depth++
			p.stmts(phase)
			p.depth--
			p.line("}")
			p.line("}")
		}
	}
	p.depth--
	p.line("}")
	p.line("")
	p.line("void %s(int64_t grid_x, %s)", k.Name, p.params())
	p.line("{")
	p.depth++
	call := k.Name + "_block(_g, " + ctxArg + strings.Join(args, ", ") + ");"
	if barrier {
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

// cContext declares the per-block state of a kernel with barriers: its
// shared arrays and, for each top-level variable, one slot per thread.
func (p *printer) cContext(bx, by int) {
	k := p.k
	p.lifted, p.shared = map[string]bool{}, map[string]bool{}
	p.line("struct %s_ctx {", k.Name)
	p.depth++
	for _, sh := range k.Shared {
		p.shared[sh.Name] = true
		p.line("%s %s[%d];", p.realType(), sh.Name, sh.Len)
	}
	for _, s := range k.Body {
		if d, ok := s.(kernel.Decl); ok {
			p.lifted[d.Name] = true
			p.line("%s %s[%d][%d];", p.typeName(d.Type), d.Name, by, bx)
		}
	}
	if len(p.lifted)+len(p.shared) == 0 {
		p.line("char unused;")
	}
	p.depth--
	p.line("};")
	p.line("")
}

// splitPhases cuts a body at its top-level barriers.
func splitPhases(body []kernel.Stmt) [][]kernel.Stmt {
	var phases [][]kernel.Stmt
	var cur []kernel.Stmt
	for _, s := range body {
		if _, ok := s.(kernel.Barrier); ok {
			if len(cur) > 0 {
				phases = append(phases, cur)
			}
			cur = nil
			continue
		}
		cur = append(cur, s)
	}
	if len(cur) > 0 {
		phases = append(phases, cur)
	}
	return phases
}

func itoa(i int) string { return intString(int64(i)) }
