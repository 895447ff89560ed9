package emit

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/bespoke-hpc/bespoke/kernel"
)

// cudaSpelling is CUDA C++ for NVRTC and nvcc: entry points extern "C" with
// launch bounds, float2/double2 vector accesses.
var cudaSpelling = spelling{
	name:    CUDA,
	prelude: cudaPrelude,
	kernel:  (*printer).gpuKernel,
	entry: func(k *kernel.Kernel) string {
		if k.Hints.MinBlocksPerUnit > 0 {
			return fmt.Sprintf("extern \"C\" __global__ void __launch_bounds__(%d, %d) ", k.Launch.Threads(), k.Hints.MinBlocksPerUnit)
		}
		return fmt.Sprintf("extern \"C\" __global__ void __launch_bounds__(%d) ", k.Launch.Threads())
	},
	restrict:    "__restrict__",
	shared:      "__shared__ ",
	alignBefore: "__align__(16) ",
	// The launch passes the size (device.Bind) and the CUDA backend opts
	// the function in to more than 48 KiB.
	dynamicShared: "extern __shared__ __align__(16) unsigned char bespoke_shared[];",
	barrier:       "__syncthreads();",
	int64:         "long long",
	int64Suffix:   "LL",
	special: func(k *kernel.Kernel, s kernel.Special) string {
		// Signed, as the IR (and the interpreter and C) has it: an
		// unsigned threadIdx turns a comparison with a negative value
		// into a true one (a guard that wrote past a batch did so). A
		// block index is 64-bit in kernels with 64-bit indices, so that
		// blockIdx.x·blockDim.x does not wrap past 2³¹ elements (a fill
		// of a 2187 × 2²⁰ panel faulted).
		cast := "(int)"
		if s.Kind == kernel.GroupID && k.Index64 {
			cast = "(long long)"
		}
		return "(" + cast + [...]string{"threadIdx", "blockIdx", "blockDim"}[s.Kind] + "." + "xyz"[s.Axis:s.Axis+1] + ")"
	},
	vec: &vecSpelling{
		typ:   func(elem string, w int) string { return fmt.Sprintf("%s%d", elem, w) },
		field: [4]string{".x", ".y", ".z", ".w"},
		ctor:  func(t string, vals []string) string { return "make_" + t + "(" + strings.Join(vals, ", ") + ")" },
	},
	call:      cudaCall,
	atomicAdd: func(p *printer, ref, v string) { p.text("atomicAdd(&", ref, ", ", v, ");") },
	unroll:    "#pragma unroll",
	unrollBy:  "#pragma unroll",
	minBlocks: true,
	mma:       cudaMMA,
	copyAsync: cudaCopyAsync,

	atomicFetchAdd: func(ref, v string) string { return "atomicAdd(&" + ref + ", " + v + ")" },
}

// gpuCall spells an intrinsic in CUDA or OpenCL C, whose maths functions
// are overloaded for float and double.
func gpuCall(fn kernel.Intrinsic, t kernel.Type, _ kernel.DType, args []string) string {
	name := string(fn)
	if (fn == kernel.Min || fn == kernel.Max) && t == kernel.Real {
		name = "f" + name
	}
	return name + "(" + strings.Join(args, ", ") + ")"
}

// cudaTF32 rounds a float to TF32 (kernel.TF32) as cvt.rna.tf32.f32
// does, but with two integer operations on its bits (adding half of the 13
// dropped bits' unit rounds the magnitude half away from zero, a carry
// going into the exponent), not the conversion unit, which CUDA's
// throughput tables give a quarter of their rate (3×TF32 rounds every
// element of B it reads twice). A NaN whose
// payload lies only in the low 13 bits becomes an infinity. The prelude
// defines it where a kernel rounds.
const cudaTF32 = `static __device__ __forceinline__ float bespoke_tf32(float x) {
  return __uint_as_float((__float_as_uint(x) + 0x1000u) & 0xffffe000u);
}
`

// cudaPrelude defines bespoke_tf32 where a kernel rounds to TF32.
func cudaPrelude(ks []*kernel.Kernel) string {
	for _, k := range ks {
		if usesTF32(k) {
			return cudaTF32
		}
	}
	return ""
}

// usesTF32 reports whether k rounds to TF32.
func usesTF32(k *kernel.Kernel) bool {
	found := false
	kernel.WalkStmts(k.Body, func(s kernel.Stmt) bool {
		kernel.StmtExprs(s, func(e kernel.Expr) {
			kernel.WalkExpr(e, func(e kernel.Expr) {
				if c, ok := e.(kernel.Call); ok && c.Fn == kernel.TF32 {
					found = true
				}
			})
		})
		return !found
	})
	return found
}

// cudaCall spells an intrinsic as gpuCall does, and TF32 rounding with the
// prelude's bespoke_tf32.
func cudaCall(fn kernel.Intrinsic, t kernel.Type, dt kernel.DType, args []string) string {
	if fn == kernel.TF32 {
		return "bespoke_tf32(" + args[0] + ")"
	}
	return gpuCall(fn, t, dt, args)
}

// cudaMMA writes a warp-level multiply-accumulate as PTX's mma.sync in
// inline assembly, in the fragment order kernel.MMAShape documents: in
// fp64 D's elements are outputs ("=d"), those of A, B and C inputs ("d");
// in TF32 D and C are floats ("=f", "f") and A and B the bits of theirs
// ("r", TF32 values in .b32 registers).
func cudaMMA(p *printer, s kernel.MMA) {
	var ops []string
	n := 0
	group := func(k int) string {
		var regs []string
		for i := 0; i < k; i++ {
			regs = append(regs, fmt.Sprintf("%%%d", n))
			n++
		}
		return "{" + strings.Join(regs, ", ") + "}"
	}
	for _, g := range []int{len(s.D), len(s.A), len(s.B), len(s.C)} {
		ops = append(ops, group(g))
	}
	types, out, ab, c := ".f64.f64.f64.f64", `"=d"(%s)`, `"d"(%s)`, `"d"(%s)`
	if s.Type == kernel.MMATF32 {
		types, out, ab, c = ".f32.tf32.tf32.f32", `"=f"(%s)`, `"r"(__float_as_uint(%s))`, `"f"(%s)`
	}
	var outs, ins []string
	for _, d := range s.D {
		outs = append(outs, fmt.Sprintf(out, d))
	}
	for i, es := range [][]kernel.Expr{s.A, s.B, s.C} {
		spell := ab
		if i == 2 {
			spell = c
		}
		for _, e := range es {
			ins = append(ins, fmt.Sprintf(spell, p.expr(e, 0)))
		}
	}
	p.text(`asm volatile("mma.sync.aligned.`, s.Shape.String(), `.row.col`, types, ` `, strings.Join(ops, ", "), `;"`)
	p.depth++
	p.text(": ", strings.Join(outs, ", "))
	p.text(": ", strings.Join(ins, ", "), ");")
	p.depth--
}

// cudaCopyAsync writes an asynchronous copy as PTX's cp.async.ca (sm_80)
// of one element, with the source size 0 (the element zero-filled, nothing
// read) where the copy's condition is false, and the buffer's start, not
// the element's address, as the source then.
func cudaCopyAsync(p *printer, s kernel.CopyAsync) {
	size := strconv.Itoa(p.k.DType.Bytes())
	src := s.Src + " + " + p.expr(s.SrcIndex, precAdd+1)
	n := size
	if s.Cond != nil {
		cond := p.expr(s.Cond, precSelect+1)
		src = "(" + cond + " ? " + src + " : " + s.Src + ")"
		n = "(" + cond + " ? " + size + " : 0)"
	}
	p.text(`asm volatile("cp.async.ca.shared.global [%0], [%1], `, size, `, %2;"`)
	p.depth++
	p.text(`:: "r"((unsigned)__cvta_generic_to_shared(&`, p.ref(s.Dst, s.DstIndex), `)), "l"(`, src, `), "r"(`, n, `) : "memory");`)
	p.depth--
}
