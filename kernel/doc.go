// Package kernel is bespoke's dialect-neutral kernel description: a small
// statement/expression IR written from the point of view of one thread of
// a block, the kernel's parameters, its shared memory, its launch geometry
// (symbolic in named sizes) and the hints a compiler may use.
//
// Kernel families (kernel/sparse, kernel/contract …) produce a *Kernel;
// passes (kernel/pass) rewrite one into another; kernel/interp runs one in
// Go; package emit prints one as CUDA C, OpenCL C or C. The IR is closed:
// everything that differs between dialects is a node kind the printer
// spells (thread indices, barriers, shared arrays, vector accesses, atomic
// adds, intrinsics), never text written by a family. Validate states what a
// well-formed kernel is. Families build with the functions of build.go
// (Add, Mul, Lt …, Float, DeclReal, Loop); operators are typed (BinOp,
// UnOp). What only PTX defines (fragment layouts, TF32 rounding) is in
// kernel/mma; rewrites of kernels are in kernel/pass.
//
// It imports no other bespoke package.
package kernel
