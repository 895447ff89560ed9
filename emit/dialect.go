package emit

import (
	"fmt"

	"github.com/bespoke-hpc/bespoke/kernel"
)

// spelling is everything that differs between the GPU dialects.
type spelling struct {
	prelude    func(f64 bool) string
	entry      func(k *kernel.Kernel) string // text before the entry name
	global     string                        // address-space qualifier of buffer params
	restrict   string
	shared     string
	barrier    string
	int64      string
	special    func(s kernel.Special) string
	vecPointer func(elem string, width int, global bool) string // pointer type used to cast for vector access
	vecField   [4]string
}

var cudaSpelling = spelling{
	prelude: func(bool) string { return "" },
	entry: func(k *kernel.Kernel) string {
		threads := k.Launch.Block[0] * k.Launch.Block[1] * k.Launch.Block[2]
		if k.Launch.MinBlocks > 0 {
			return fmt.Sprintf("extern \"C\" __global__ void __launch_bounds__(%d, %d) ", threads, k.Launch.MinBlocks)
		}
		return fmt.Sprintf("extern \"C\" __global__ void __launch_bounds__(%d) ", threads)
	},
	restrict: "__restrict__",
	shared:   "__shared__ ",
	barrier:  "__syncthreads();",
	int64:    "long long",
	special: func(s kernel.Special) string {
		return [...]string{"threadIdx", "blockIdx", "blockDim"}[s.Kind] + "." + "xyz"[s.Axis:s.Axis+1]
	},
	vecPointer: func(elem string, w int, _ bool) string { return fmt.Sprintf("%s%d", elem, w) },
	vecField:   [4]string{".x", ".y", ".z", ".w"},
}

var openclSpelling = spelling{
	prelude: func(f64 bool) string {
		if f64 {
			return "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
		}
		return ""
	},
	entry: func(k *kernel.Kernel) string {
		b := k.Launch.Block
		return fmt.Sprintf("__kernel __attribute__((reqd_work_group_size(%d, %d, %d))) void ", b[0], b[1], b[2])
	},
	global:   "__global ",
	restrict: "restrict",
	shared:   "__local ",
	barrier:  "barrier(CLK_LOCAL_MEM_FENCE);",
	int64:    "long",
	special: func(s kernel.Special) string {
		return fmt.Sprintf("%s(%d)", [...]string{"get_local_id", "get_group_id", "get_local_size"}[s.Kind], s.Axis)
	},
	vecPointer: func(elem string, w int, global bool) string { return fmt.Sprintf("%s%d", elem, w) },
	vecField:   [4]string{".s0", ".s1", ".s2", ".s3"},
}
