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
	restrict:    "__restrict__",
	shared:      "__shared__ ",
	barrier:     "__syncthreads();",
	int64:       "long long",
	int64Suffix: "LL",
	special: func(_ *kernel.Kernel, s kernel.Special) string {
		// Signed, as the IR (and the interpreter and C) has it: an
		// unsigned threadIdx turns a comparison with a negative value
		// into a true one (a guard that wrote past a batch did so).
		return "((int)" + [...]string{"threadIdx", "blockIdx", "blockDim"}[s.Kind] + "." + "xyz"[s.Axis:s.Axis+1] + ")"
	},
	vec: &vecSpelling{
		typ:   func(elem string, w int) string { return fmt.Sprintf("%s%d", elem, w) },
		field: [4]string{".x", ".y", ".z", ".w"},
		ctor:  func(t string, vals []string) string { return "make_" + t + "(" + strings.Join(vals, ", ") + ")" },
	},
	call:      gpuCall,
	atomicAdd: func(p *printer, ref, v string) { p.text("atomicAdd(&", ref, ", ", v, ");") },
	unroll:    "#pragma unroll",
	minBlocks: true,

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
