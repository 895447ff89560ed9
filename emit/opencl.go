package emit

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/bespoke-hpc/bespoke/kernel"
)

// openclSpelling is OpenCL C 1.2: address-space qualifiers, a required
// work-group size, (double2) vector accesses, and atomic adds on reals by
// compare-and-swap (OpenCL 1.2 has no floating-point atomics).
var openclSpelling = spelling{
	name:    OpenCL,
	prelude: openclPrelude,
	kernel:  (*printer).gpuKernel,
	entry: func(k *kernel.Kernel) string {
		b := k.Launch.Block
		return fmt.Sprintf("__kernel __attribute__((reqd_work_group_size(%d, %d, %d))) void ", b[0], b[1], b[2])
	},
	global:      "__global ",
	restrict:    "restrict",
	shared:      "__local ",
	sharedPtr:   "__local ",
	alignAfter:  " __attribute__((aligned(16)))",
	barrier:     "barrier(CLK_LOCAL_MEM_FENCE);",
	int64:       "long",
	int64Suffix: "L",
	special: func(k *kernel.Kernel, s kernel.Special) string {
		// Signed, as the IR has it (size_t would make comparisons with
		// negative values unsigned); a group index is 64-bit in kernels
		// with 64-bit indices (see the CUDA spelling).
		cast := "int"
		if s.Kind == kernel.GroupID && k.Index64 {
			cast = "long"
		}
		return fmt.Sprintf("((%s)%s(%d))", cast, [...]string{"get_local_id", "get_group_id", "get_local_size"}[s.Kind], s.Axis)
	},
	vec: &vecSpelling{
		typ:   func(elem string, w int) string { return fmt.Sprintf("%s%d", elem, w) },
		field: [4]string{".s0", ".s1", ".s2", ".s3"},
		ctor:  func(t string, vals []string) string { return "(" + t + ")(" + strings.Join(vals, ", ") + ")" },
	},
	call: gpuCall,
	atomicAdd: func(p *printer, ref, v string) {
		p.text("bespoke_atomic_add_", p.k.DType.String(), "(&", ref, ", ", v, ");")
	},
	unroll:   "#pragma unroll",
	unrollBy: "#pragma unroll",

	// OpenCL 1.1's 32-bit integer atomics on global memory (core).
	atomicFetchAdd: func(ref, v string) string { return "atomic_add(&" + ref + ", " + v + ")" },
	streamStore:    openclStreamStore,
	// OpenCL C's prefetch of one element of a global buffer.
	prefetch: func(p *printer, ref string, write bool) { p.text("prefetch(&", ref, ", 1);") },
}

// openclStreamStore writes a streamed store as one vector store with
// clang's non-temporal hint where the compiler has it (PoCL's, which
// turns it into the CPU's non-temporal stores) and the address is aligned
// to the vector; element by element otherwise (BESPOKE_NT is set in the
// prelude).
func openclStreamStore(p *printer, ref string, vals []string) {
	w := len(vals)
	t := p.realType()
	p.text("{")
	p.depth++
	p.text("__global ", t, " *_p = &", ref, ";")
	if w == 2 || w == 4 || w == 8 || w == 16 {
		vt := fmt.Sprintf("%s%d", t, w)
		p.line("#if BESPOKE_NT")
		p.text("if (((ulong)_p & ", strconv.Itoa(w*p.k.DType.Bytes()-1), ") == 0) {")
		p.depth++
		p.text("__builtin_nontemporal_store((", vt, ")(", strings.Join(vals, ", "), "), (__global ", vt, " *)_p);")
		p.depth--
		p.text("} else")
		p.line("#endif")
	}
	p.text("{")
	p.depth++
	for i, v := range vals {
		p.text("_p[", strconv.Itoa(i), "] = ", v, ";")
	}
	p.depth--
	p.text("}")
	p.depth--
	p.text("}")
}

// openclPrelude enables double precision where a kernel needs it and
// defines the atomic adds the kernels use.
func openclPrelude(ks []*kernel.Kernel) string {
	var b strings.Builder
	f64, atomics := false, map[kernel.DType]bool{}
	for _, k := range ks {
		f64 = f64 || k.DType == kernel.F64
		if usesAtomics(k) {
			atomics[k.DType] = true
		}
	}
	if f64 {
		b.WriteString("#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n")
	}
	if slices.ContainsFunc(ks, streamsStores) {
		b.WriteString(openclStreamPrelude)
	}
	if atomics[kernel.F64] {
		b.WriteString(`#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
inline void bespoke_atomic_add_f64(volatile __global double *p, double v)
{
    ulong old = as_ulong(*p), seen;
    do {
        seen = old;
        old = atom_cmpxchg((volatile __global ulong *)p, seen, as_ulong(as_double(seen) + v));
    } while (old != seen);
}
`)
	}
	if atomics[kernel.F32] {
		b.WriteString(`inline void bespoke_atomic_add_f32(volatile __global float *p, float v)
{
    uint old = as_uint(*p), seen;
    do {
        seen = old;
        old = atomic_cmpxchg((volatile __global uint *)p, seen, as_uint(as_float(seen) + v));
    } while (old != seen);
}
`)
	}
	return b.String()
}

// openclStreamPrelude sets BESPOKE_NT where the compiler has clang's
// non-temporal store.
const openclStreamPrelude = `#if defined(__has_builtin)
#if __has_builtin(__builtin_nontemporal_store)
#define BESPOKE_NT 1
#endif
#endif
#ifndef BESPOKE_NT
#define BESPOKE_NT 0
#endif
`

// usesAtomics reports whether k holds an AtomicAdd.
func usesAtomics(k *kernel.Kernel) bool {
	return uses(k, func(s kernel.Stmt) bool { _, ok := s.(kernel.AtomicAdd); return ok })
}

// uses reports whether any statement of k satisfies f.
func uses(k *kernel.Kernel, f func(kernel.Stmt) bool) bool {
	found := false
	kernel.WalkStmts(k.Body, func(s kernel.Stmt) bool {
		found = found || f(s)
		return !found
	})
	return found
}
