package emit

import (
	"fmt"
	"strconv"
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
	// Streamed stores through the prelude's bespoke_stream_<dtype>:
	// non-temporal where the address is aligned (the block function ends
	// with a store fence, see cKernel).
	// gcc's and clang's builtin, kept in all cache levels.
	prefetch: func(p *printer, ref string, write bool) {
		p.text("__builtin_prefetch(&", ref, ", ", map[bool]string{true: "1", false: "0"}[write], ", 3);")
	},
	streamStore: func(p *printer, ref string, vals []string) {
		p.text("{")
		p.depth++
		p.text("const ", p.realType(), " _s[", strconv.Itoa(len(vals)), "] = {", strings.Join(vals, ", "), "};")
		p.text("bespoke_stream_", p.k.DType.String(), "(&", ref, ", _s, ", strconv.Itoa(len(vals)), ");")
		p.depth--
		p.text("}")
	},
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
	streams := map[kernel.DType]bool{}
	for _, k := range ks {
		if streamsStores(k) {
			streams[k.DType] = true
		}
	}
	if len(streams) > 0 {
		b.WriteString(cStreamFence)
	}
	for _, dt := range []kernel.DType{kernel.F64, kernel.F32} {
		if streams[dt] {
			b.WriteString(cStreamHelper(dt))
		}
	}
	return b.String()
}

// streamsStores reports whether k holds a streamed VecStore.
func streamsStores(k *kernel.Kernel) bool {
	return uses(k, func(s kernel.Stmt) bool { v, ok := s.(kernel.VecStore); return ok && v.Stream })
}

// cStreamFence orders a thread's non-temporal stores before whatever
// follows (they are weakly ordered on x86); a full fence elsewhere.
const cStreamFence = `#if defined(__SSE2__)
#include <immintrin.h>
static inline void bespoke_stream_fence(void) { _mm_sfence(); }
#else
static inline void bespoke_stream_fence(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
#endif
`

// cStreamHelper is bespoke_stream_<dt>(p, v, n): n values to p… with
// non-temporal stores of the widest vector the build has, where p is
// aligned to it and n a multiple of its lanes (gcc has no non-temporal
// hint for the stores it vectorises itself); plain stores otherwise.
func cStreamHelper(dt kernel.DType) string {
	t, s, l := "double", "pd", [3]int{8, 4, 2}
	if dt == kernel.F32 {
		t, s, l = "float", "ps", [3]int{16, 8, 4}
	}
	return fmt.Sprintf(`static inline void bespoke_stream_%[1]s(%[2]s *restrict p, const %[2]s *restrict v, int n)
{
#if defined(__AVX512F__)
    if (n %% %[4]d == 0 && ((uintptr_t)p & 63) == 0) {
        for (int i = 0; i < n; i += %[4]d)
            _mm512_stream_%[3]s(p + i, _mm512_loadu_%[3]s(v + i));
        return;
    }
#endif
#if defined(__AVX__)
    if (n %% %[5]d == 0 && ((uintptr_t)p & 31) == 0) {
        for (int i = 0; i < n; i += %[5]d)
            _mm256_stream_%[3]s(p + i, _mm256_loadu_%[3]s(v + i));
        return;
    }
#endif
#if defined(__SSE2__)
    if (n %% %[6]d == 0 && ((uintptr_t)p & 15) == 0) {
        for (int i = 0; i < n; i += %[6]d)
            _mm_stream_%[3]s(p + i, _mm_loadu_%[3]s(v + i));
        return;
    }
#endif
    for (int i = 0; i < n; i++)
        p[i] = v[i];
}
`, dt, t, s, l[0], l[1], l[2])
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
	// A kernel with streamed stores fences them once a thread, after its
	// blocks and before the region's closing barrier: a fence at the end
	// of each block held the next block's stores to its stage until the
	// last block's lines had drained (see docs/rationale.md#one-fence-a-thread).
	stream := streamsStores(k)
	if ctx || stream {
		p.line("#pragma omp parallel")
		p.line("{")
		p.depth++
		if ctx {
			p.line("struct %s_ctx *_c = malloc(sizeof *_c);", k.Name)
			p.line("if (!_c) abort();")
		}
		if stream {
			p.line("#pragma omp for schedule(static) nowait")
		} else {
			p.line("#pragma omp for schedule(static)")
		}
		p.line("for (int64_t _g = 0; _g < grid_x; _g++)")
		p.line("    %s", call)
		if stream {
			p.line("bespoke_stream_fence();")
		}
		if ctx {
			p.line("free(_c);")
		}
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
