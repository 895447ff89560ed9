// Package emit prints a kernel.Kernel as CUDA C, OpenCL C or C.
//
// One printer (print.go) walks the IR; a dialect is a table of spellings
// (cuda.go, opencl.go, c.go): qualifiers, thread indices, barriers, vector
// accesses, literals, intrinsics, atomics, the signature and the lines
// around a kernel. A dialect whose machine has no threads of its own names
// an IR pass to run first: C lowers each kernel with kernel/pass.HostLoops
// to the loops one CPU thread runs for a block, then prints it with an
// OpenMP driver over the blocks. Adding a dialect (HIP, say) is one table
// and its golden files under testdata/golden.
//
// It may import kernel and kernel/pass; it must not import device, any
// backend or any kernel family.
package emit
