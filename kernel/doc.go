// Package kernel is bespoke's dialect-neutral kernel description: a small
// statement/expression IR written from the point of view of one GPU thread,
// the kernel's parameters, its shared memory and its launch geometry.
//
// Variant builders (kernel/sparse, …) produce a *Kernel; package emit prints
// it as CUDA C, OpenCL C or C. The IR is deliberately closed: everything that
// differs between dialects is a node kind the printer spells (thread indices,
// barriers, shared arrays, vector loads), never text written by a variant.
//
// It must not import emit, device or any backend.
package kernel
