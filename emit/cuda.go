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
	wgmma:     cudaWGMMA,
	partBarrier: func(p *printer, n int) {
		p.text(`asm volatile("bar.sync %0, %1;" :: "r"(1 + (int)threadIdx.x / `, strconv.Itoa(n), `), "r"(`, strconv.Itoa(n), `) : "memory");`)
	},
	wgmmaSync: cudaWGMMASync,
	copyAsync: cudaCopyAsync,
	bulk:      cudaBulk,

	atomicFetchAdd: func(ref, v string) string { return "atomicAdd(&" + ref + ", " + v + ")" },
	// prefetch is left nil: a hint, and no CUDA kernel asks for one yet
	// (the CPU dense form is not offered to GPUs); PTX's
	// prefetch.global.L2 would spell it.
	// Streamed stores with the evict-first cache hint (st.global.cs).
	streamStore: func(p *printer, ref string, vals []string) {
		if len(vals) == 1 {
			p.text("__stcs(&", ref, ", ", vals[0], ");")
			return
		}
		p.text("{")
		p.depth++
		p.text(p.realType(), " *_p = &", ref, ";")
		for i, v := range vals {
			p.text("__stcs(_p + ", strconv.Itoa(i), ", ", v, ");")
		}
		p.depth--
		p.text("}")
	},
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

// cudaWGMMADesc is PTX's shared-memory matrix descriptor of a WGMMA's B
// (kernel.WGMMA): the start address and the strides between core matrices
// along k (LBO) and n (SBO), each in units of 16 bytes, no swizzling.
const cudaWGMMADesc = `static __device__ __forceinline__ unsigned long long bespoke_wgmma_desc(const void* p, unsigned lbo, unsigned sbo) {
  unsigned a = (unsigned)__cvta_generic_to_shared(p);
  return (unsigned long long)((a & 0x3ffffu) >> 4) | ((unsigned long long)(lbo >> 4) << 16) | ((unsigned long long)(sbo >> 4) << 32);
}
`

// cudaPrelude defines bespoke_tf32 where a kernel rounds to TF32, and
// bespoke_wgmma_desc where one has a WGMMA.
func cudaPrelude(ks []*kernel.Kernel) string {
	tf32, wg := false, false
	for _, k := range ks {
		tf32 = tf32 || usesTF32(k)
		wg = wg || kernel.ArchSpecific(k.Body)
	}
	out := ""
	if tf32 {
		out += cudaTF32
	}
	if wg {
		out += cudaWGMMADesc
	}
	return out
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
	switch fn {
	case kernel.TF32:
		return "bespoke_tf32(" + args[0] + ")"
	case kernel.TF32Trunc:
		return "__uint_as_float(__float_as_uint(" + args[0] + ") & 0xffffe000u)"
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

// cudaWGMMA writes a warpgroup-level multiply-accumulate as PTX's
// wgmma.mma_async (sm_90a): D's elements read and written ("+f"), A's the
// bits of TF32 values ("r"), B a descriptor of shared memory, D scaled by
// one (accumulated) and A and B by one.
func cudaWGMMA(p *printer, s kernel.WGMMA) {
	var d, a []string
	for i := range s.D {
		d = append(d, fmt.Sprintf("%%%d", i))
	}
	for i := range s.A {
		a = append(a, fmt.Sprintf("%%%d", len(s.D)+i))
	}
	desc := fmt.Sprintf("%%%d", len(s.D)+len(s.A))
	scale := "1"
	if s.Accumulate != nil {
		scale = fmt.Sprintf("%%%d", len(s.D)+len(s.A)+1)
	}
	p.text(`asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, `, scale, `, 0;\nwgmma.mma_async.sync.aligned.m64n`, strconv.Itoa(s.N), `k8.f32.tf32.tf32 {`,
		strings.Join(d, ", "), `}, {`, strings.Join(a, ", "), `}, `, desc, `, p, 1, 1;\n}"`)
	p.depth++
	var outs, ins []string
	for _, x := range s.D {
		outs = append(outs, fmt.Sprintf(`"+f"(%s)`, x))
	}
	for _, e := range s.A {
		ins = append(ins, fmt.Sprintf(`"r"(__float_as_uint(%s))`, p.expr(e, 0)))
	}
	// The descriptor of B's first element, which the compiler hoists,
	// plus the offset in its units of 16 bytes (4 elements).
	ins = append(ins, fmt.Sprintf(`"l"(bespoke_wgmma_desc(&%s, %d, %d) + (unsigned long long)((%s) >> 2))`,
		p.ref(s.B, []kernel.Expr{kernel.Int{V: 0}}), s.LBO, s.SBO, p.expr(s.BAt, 0)))
	if s.Accumulate != nil {
		ins = append(ins, fmt.Sprintf(`"r"((int)(%s))`, p.expr(s.Accumulate, 0)))
	}
	if s.Accumulate != nil {
		ins = append(ins, fmt.Sprintf(`"r"((int)(%s))`, p.expr(s.Accumulate, 0)))
	}
	p.text(": ", strings.Join(outs, ", "))
	p.text(": ", strings.Join(ins, ", "), ");")
	p.depth--
}

// cudaWGMMASync writes a fence, commit or wait of WGMMA.
func cudaWGMMASync(p *printer, s kernel.WGMMASync) {
	switch s.Kind {
	case kernel.WGMMAFence:
		p.text(`asm volatile("wgmma.fence.sync.aligned;" ::: "memory");`)
	case kernel.WGMMACommit:
		p.text(`asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");`)
	case kernel.WGMMAWait:
		p.text(`asm volatile("wgmma.wait_group.sync.aligned `, strconv.Itoa(s.Pending), `;" ::: "memory");`)
	case kernel.ProxyFence:
		p.text(`asm volatile("fence.proxy.async.shared::cta;" ::: "memory");`)
	}
}

// cudaCopyAsync writes an asynchronous copy as PTX's cp.async.ca (sm_80)
// of one element, with the source size 0 (the element zero-filled, nothing
// read) where the copy's condition is false, and the buffer's start, not
// the element's address, as the source then.
//
// A vector copy (Width) of 16 bytes is cp.async.cg (through L2 only, the
// form that takes 16); one of Valid elements reads that many, the source
// size in bytes.
func cudaCopyAsync(p *printer, s kernel.CopyAsync) {
	bytes := p.k.DType.Bytes() * s.Elements()
	size := strconv.Itoa(bytes)
	src := s.Src + " + " + p.expr(s.SrcIndex, precAdd+1)
	n := size
	if s.Valid != nil {
		n = "(" + p.expr(s.Valid, precMul+1) + ") * " + strconv.Itoa(p.k.DType.Bytes())
	}
	if s.Cond != nil {
		cond := p.expr(s.Cond, precSelect+1)
		src = "(" + cond + " ? " + src + " : " + s.Src + ")"
		n = "(" + cond + " ? " + n + " : 0)"
	}
	cache := "ca"
	if bytes == 16 {
		cache = "cg"
	}
	p.text(`asm volatile("cp.async.`, cache, `.shared.global [%0], [%1], `, size, `, %2;"`)
	p.depth++
	if s.Valid != nil { // a count that may be 64-bit
		n = "(unsigned)(" + n + ")"
	}
	p.text(`:: "r"((unsigned)__cvta_generic_to_shared(&`, p.ref(s.Dst, s.DstIndex), `)), "l"(`, src, `), "r"(`, n, `) : "memory");`)
	p.depth--
}

// cudaBulk writes a bulk copy (cp.async.bulk, completing on an mbarrier's
// transaction count) or an mbarrier operation, as PTX for sm_90. A wait
// polls try_wait, which itself suspends the thread for a while, in a loop.
func cudaBulk(p *printer, s kernel.Stmt) {
	addr := func(ref string) string { return "(unsigned)__cvta_generic_to_shared(&" + ref + ")" }
	bar := func(name string, i kernel.Expr) string { return addr(p.ref(name, []kernel.Expr{i})) }
	u32 := func(e kernel.Expr) string { return "(unsigned)(" + p.expr(e, 0) + ")" }
	switch s := s.(type) {
	case kernel.BulkCopy:
		bytes := kernel.Mul(s.Elements, kernel.Const(p.k.DType.Bytes()))
		p.text(`asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"`)
		p.depth++
		p.text(`:: "r"(`, addr(p.ref(s.Dst, s.DstIndex)), `), "l"(`, s.Src, " + ", p.expr(s.SrcIndex, precAdd+1), `), "r"(`, u32(bytes), `), "r"(`, bar(s.Bar, s.BarIndex), `) : "memory");`)
		p.depth--
	case kernel.TxBarrier:
		at := bar(s.Bar, s.Index)
		switch s.Op {
		case kernel.TxInit:
			p.text(`asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(`, at, `), "r"(`, strconv.Itoa(s.Count), `) : "memory");`)
			p.text(`asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");`)
		case kernel.TxExpect:
			p.text(`asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;" :: "r"(`, at, `), "r"(`, u32(s.Bytes), `) : "memory");`)
		case kernel.TxArrive:
			p.text(`asm volatile("{ .reg .b64 st; mbarrier.arrive.shared::cta.b64 st, [%0]; }" :: "r"(`, at, `) : "memory");`)
		case kernel.TxWait:
			p.text("{")
			p.depth++
			p.text("unsigned done_ = 0;")
			p.text(`do asm volatile("{ .reg .pred ok; mbarrier.try_wait.parity.shared::cta.b64 ok, [%1], %2; selp.u32 %0, 1, 0, ok; }" : "=r"(done_) : "r"(`, at, `), "r"(`, u32(s.Parity), `) : "memory");`)
			p.text("while (!done_);")
			p.depth--
			p.text("}")
		}
	}
}
