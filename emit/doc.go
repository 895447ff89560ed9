// Package emit prints a kernel.Kernel as CUDA C, OpenCL C or C.
//
// One printer walks the IR; a dialect table supplies the spellings that
// differ (qualifiers, thread indices, barriers, vector loads). The C dialect
// turns the one-thread-per-column description into a function over a block
// of columns with an OpenMP simd loop, and a parallel-for driver over
// blocks; kernels with barriers are split into phases, each a loop over the
// block's threads, with thread-private variables lifted into per-thread
// arrays (the work-group loop transformation that CPU OpenCL drivers use).
//
// It must not import device or any backend.
package emit
