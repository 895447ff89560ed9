package sparse

import (
	"github.com/bespoke-hpc/bespoke/kernel"
)

// TMMA: the tensor-core dense kernel of DMMA in fp32, on TF32 tensor cores
// (mma.sync .f32.tf32.tf32.f32, kernel.MMATF32: m16n8k8 and m16n8k4, sm_80
// and up), so it runs on CUDA only, in fp32 only. One TF32 product keeps 11
// bits of each operand, short of fp32's accuracy (TolF32), so it computes
// 3×TF32: each x of α·A and of B is split into hi = tf32(x) (kernel.TF32:
// to nearest, ties away from zero) and lo = tf32(x − hi) (x − hi is exact
// in fp32; rounded, lo errs by 2⁻²²·|x| at most, where the tensor cores'
// truncation left twice that: docs/rationale.md#tf32-split), and every
// product is
//
//	A·B ≈ A_lo·B_hi + A_hi·B_lo + A_hi·B_hi
//
// three mma into the same fp32 sums, small ones first (A_lo·B_lo, below
// fp32's rounding, is left out).
//
// The kernel is DMMA's, built by the same code (dmmaBuilder), with these
// differences:
//
//   - ash holds α·A's hi and lo parts, split once as they are staged:
//     twice the elements at half the size, so as many bytes as dmma's.
//     A lane's 2·na values of a fragment (hi then lo) lie in groups of 4,
//     (k-step, band, group, lane, value), so that a warp reads a group as
//     conflict-free 16-byte vectors. With -s (SplitA) ash holds α·A as it
//     is, in dmma's order, and each warp splits the fragments it reads:
//     half the shared memory (deeper chunks, or two blocks a
//     multiprocessor), more arithmetic;
//   - B is staged as it is (fp32) and split as its fragments are read
//     from shared memory, once a warp for its Mt row fragments; with -h
//     (StageB) it is split once as it is staged, bsh holding hi and lo
//     side by side (pairs padded as dmma's doubles);
//   - bsh's rows are padded to a stride ≡ 8 mod 32 floats (tmmaPad), so
//     that a B fragment's 4 rows by 8 columns hit 32 distinct banks;
//   - a thread keeps up to tmmaMaxSums sums (one register each).
//
// Names as DMMA's with tmma, -s and -h after -t:
// "tmma/m16n8k8-r2-w8-x2-c32-t16-s".
//
// Three products at mma.sync's TF32 rate (half of what wgmma reaches)
// leave the largest tets just under the roof even with the tensor pipe
// always busy, and these kernels keep it busy less than half the time (two
// to four warps a scheduler, stalled on fixed-latency dependencies): they
// beat the SIMT kernels only on the largest β = 0 tets
// (docs/rationale.md#tmma). The rounding is integer arithmetic (see emit's
// bespoke_tf32): with cvt.rna, and lo rounded as well, the kernels were
// 5–15 % slower. That the tensor cores
// truncate fp32 operands to TF32 is checked on the device by the IR
// sample kerneltest.TF32RawMMA.
const TMMA Family = "tmma"

// tmmaMaxSums bounds the fp32 accumulator elements a thread keeps.
const tmmaMaxSums = 128

// tmmaPad is the padding of bsh's rows of cols floats (a multiple of 8):
// the least that makes the stride ≡ 8 or 24 mod 32 (see TMMA).
func tmmaPad(cols int) int {
	switch cols % 32 {
	case 0, 16:
		return 8
	}
	return 0
}

// tmmaDefault is the variant a bare "tmma" names: m16n8k8, 32×32 sums a
// warp, two warps along the columns, chunks of 8, α·A streamed.
var tmmaDefault = MMAParams{Kind: TMMA, MMA: "m16n8k8", Rows: 2, Width: 4, Split: 2, Chunk: 8}

// tmmaMinEntries is the smallest m·k for which the 3×TF32 candidates are
// offered (with β = 0; see offerTMMA).
const tmmaMinEntries = 16384

// offerTMMA reports whether the 3×TF32 candidates can pay for the problem.
// They beat the SIMT kernels only on the largest β = 0 tets and lost on
// every other p5–p6 tet (docs/rationale.md#tmma); each problem they are
// offered to adds 20–30 candidates the cost model cannot prune. They run on any problem when
// named (--variant).
func offerTMMA(pb Problem) bool {
	return pb.Beta == 0 && pb.Op.Rows*pb.Op.Cols >= tmmaMinEntries
}

// TMMACandidates lists the 3×TF32 variants worth trying for the problem
// on a CUDA device of compute capability arch (×10): as DMMACandidates
// does for fp64, in fp32 on sm_80+, m16n8k8 and m16n8k4, with warp tiles
// of 32 and, resident, also 64 columns (64 sums a thread: fp32 sums take
// one register, not two), resident with α·A's hi and lo parts staged and
// with α·A split as read (-s: room for deeper chunks, or two blocks a
// multiprocessor).
func TMMACandidates(pb Problem, arch int, fill Fill) []Variant {
	if pb.DType != kernel.F32 || arch < 80 {
		return nil
	}
	return variants(mmaCandidates(pb, arch, fill, TMMA, kernel.MMATF32Shapes, func(mt, nc int, resident bool) []MMAParams {
		w := min(4, 64/(mt*nc))
		if !resident {
			return []MMAParams{{Width: w}}
		}
		var vs []MMAParams
		for _, nt := range []int{w, min(8, 64/(mt*nc))} {
			if len(vs) > 0 && nt == w {
				break
			}
			for _, f := range []MMAParams{{}, {SplitA: true}} {
				f.Width = nt
				vs = append(vs, f)
			}
		}
		return vs
	}))
}
