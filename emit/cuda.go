package emit

import (
	"fmt"
	"strings"

	"github.com/bespoke-hpc/bespoke/kernel"
)

// cudaSpelling is CUDA C++ for NVRTC and nvcc: entry points extern "C" with
// launch bounds, float2/double2 vector accesses.
var cudaSpelling = spelling{
	name:    CUDA,
	prelude: func([]*kernel.Kernel) string { return "" },
	kernel:  (*printer).gpuKernel,
	entry: func(k *kernel.Kernel) string {
		if k.Hints.MinBlocksPerUnit > 0 {
			return fmt.Sprintf("extern \"C\" __global__ void __launch_bounds__(%d, %d) ", k.Launch.Threads(), k.Hints.MinBlocksPerUnit)
		}
		return fmt.Sprintf("extern \"C\" __global__ void __launch_bounds__(%d) ", k.Launch.Threads())
	},
	restrict: "__restrict__",
	shared:   "__shared__ ",
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
	call:      gpuCall,
	atomicAdd: func(p *printer, ref, v string) { p.text("atomicAdd(&", ref, ", ", v, ");") },
	unroll:    "#pragma unroll",
	unrollBy:  "#pragma unroll",
	minBlocks: true,
	mma:       cudaMMA,

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

// cudaMMA writes a warp-level fp64 multiply-accumulate as PTX's mma.sync
// in inline assembly: D's elements are outputs ("=d"), those of A, B and C
// inputs ("d"), in the fragment order kernel.MMAShape documents.
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
	var outs, ins []string
	for _, d := range s.D {
		outs = append(outs, `"=d"(`+d+`)`)
	}
	for _, es := range [][]kernel.Expr{s.A, s.B, s.C} {
		for _, e := range es {
			ins = append(ins, `"d"(`+p.expr(e, 0)+`)`)
		}
	}
	p.text(`asm volatile("mma.sync.aligned.`, s.Shape.String(), `.row.col.f64.f64.f64.f64 `, strings.Join(ops, ", "), `;"`)
	p.depth++
	p.text(": ", strings.Join(outs, ", "))
	p.text(": ", strings.Join(ins, ", "), ");")
	p.depth--
}
