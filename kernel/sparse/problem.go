package sparse

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/operator"
)

// Problem is one instance of C ← α·A·B + β·C. N, LDB and LDC are baked into
// the kernel when positive and passed at run time when zero.
type Problem struct {
	Op          *operator.Operator
	DType       kernel.DType
	Alpha, Beta float64
	N, LDB, LDC int
	// MaxNNZ bounds the non-zeros a kernel unrolls (0: DefaultMaxNNZ).
	MaxNNZ int
}

// DefaultMaxNNZ bounds the non-zeros of a fully unrolled kernel: five
// times PyFR's largest operator (20,400, p6/tet/m460). A 500×500 dense
// operator (250,000) made a C compiler run for more than five minutes, a
// 2000×2000 one 116 MB of source; dense operators want a blocked kernel,
// not literals.
const DefaultMaxNNZ = 100_000

// MaxDim bounds m and k: the generator keeps per-row and per-column
// structure (a 1×67,108,864 operator took gigabytes).
const MaxDim = 1 << 16

// MaxSharedBytes is the static shared memory a variant may use: the limit
// every CUDA device and most OpenCL devices accept without opt-in.
const MaxSharedBytes = 48 << 10

// Check reports why v cannot be generated for the problem, or nil.
func (pb Problem) Check(v Variant) error {
	if v == nil {
		return fmt.Errorf("sparse: no variant")
	}
	if err := v.valid(); err != nil {
		return err
	}
	if err := pb.CheckOperator(); err != nil {
		return err
	}
	return v.check(pb)
}

// CheckOperator reports why no kernel can be generated for the problem's
// operator, α and precision (size limits, overflow), or nil.
func (pb Problem) CheckOperator() error {
	if err := pb.Op.Validate(); err != nil {
		return err
	}
	if pb.Op.Rows > MaxDim || pb.Op.Cols > MaxDim {
		return fmt.Errorf("operator of %s: at most %d rows and columns", pb.Op.Shape(), MaxDim)
	}
	if nnz, lim := pb.Op.NNZ(), pb.maxNNZ(); nnz > lim {
		return fmt.Errorf("operator with %d non-zeros: unrolled kernels take at most %d (--max-nnz raises it)", nnz, lim)
	}
	if pb.N < 0 || pb.LDB < 0 || pb.LDC < 0 {
		return fmt.Errorf("negative n, ldb or ldc")
	}
	if pb.N > 0 && ((pb.LDB > 0 && pb.LDB < pb.N) || (pb.LDC > 0 && pb.LDC < pb.N)) {
		return fmt.Errorf("ldb=%d and ldc=%d must be at least n=%d", pb.LDB, pb.LDC, pb.N)
	}
	if math.IsNaN(pb.Alpha) || math.IsInf(pb.Alpha, 0) || math.IsNaN(pb.Beta) || math.IsInf(pb.Beta, 0) {
		return fmt.Errorf("alpha and beta must be finite")
	}
	for _, a := range pb.Op.Data { // checked in the precision the kernel folds α·A in
		v := math.Abs(pb.Alpha * a)
		if math.IsInf(v, 0) {
			return fmt.Errorf("α·A overflows float64 (α = %g, |a| = %g)", pb.Alpha, math.Abs(a))
		}
		if pb.DType == kernel.F32 && v > math.MaxFloat32 {
			return fmt.Errorf("α·A has |%g| beyond the float32 range", v)
		}
	}
	return nil
}

func (pb Problem) maxNNZ() int {
	if pb.MaxNNZ > 0 {
		return pb.MaxNNZ
	}
	return DefaultMaxNNZ
}

// streamWidth is the elements of one streamed store of C: a cache line.
func (pb Problem) streamWidth() int { return 64 / pb.DType.Bytes() }

// index64 says whether any element offset can reach 2³¹.
func (pb Problem) index64() bool {
	if pb.N == 0 || pb.LDB == 0 || pb.LDC == 0 {
		return true
	}
	lim := int64(math.MaxInt32)
	return int64(pb.Op.Cols-1)*int64(pb.LDB)+int64(pb.N) > lim ||
		int64(pb.Op.Rows-1)*int64(pb.LDC)+int64(pb.N) > lim
}

// Key is a short digest of everything that shapes the generated code.
func (pb Problem) Key(v Variant) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s|%d|%d|%d|%d|%d|%d|", v.Name(), pb.DType, pb.Op.Rows, pb.Op.Cols, pb.N, pb.LDB, pb.LDC)
	var buf [8]byte
	for _, x := range append([]float64{pb.Alpha, pb.Beta}, pb.Op.Data...) {
		binary.LittleEndian.PutUint64(buf[:], math.Float64bits(x))
		h.Write(buf[:])
	}
	return hex.EncodeToString(h.Sum(nil))[:10]
}

// EntryName is the default entry point name of v for the problem.
func (pb Problem) EntryName(v Variant) string {
	f := strings.ReplaceAll(string(v.Family()), "-", "_")
	return fmt.Sprintf("bespoke_%s_%s_%s", f, pb.DType, pb.Key(v))
}

// Candidates lists the variants worth trying for the problem, in a stable
// order. A zero Problem.LDB/LDC rules out width 2.
func Candidates(pb Problem) []Variant {
	var out []Variant
	for _, v := range []Variant{
		StreamParams{Kind: CStream, Block: 128, Width: 1},
		StreamParams{Kind: CStream, Block: 128, Width: 2},
		StreamParams{Kind: BStream, Block: 128, Width: 1},
		StreamParams{Kind: BStream, Block: 128, Width: 2},
		MSplitParams{Kind: BStreamMSplit, Block: 64, Width: 1, Split: 2, Chunk: 16},
		MSplitParams{Kind: BStreamMSplit, Block: 32, Width: 1, Split: 4, Chunk: 32},
		KSplitParams{Block: 64, Split: 2, Chunk: 16},
		KSplitParams{Block: 32, Split: 4, Chunk: 16},
	} {
		if pb.Check(v) == nil {
			out = append(out, v)
		}
	}
	return out
}

// StreamCandidates are cstream and bstream with C streamed (-nt), for
// CPUs and β = 0: the widest block (up to 128 columns) whose rows of C fit
// the stage. A plain store reads each line of C before writing it, a third
// more traffic for an operator with as many rows as columns, more for the
// tall ones (docs/rationale.md#streamed-c-on-cpus).
func StreamCandidates(pb Problem) []Variant {
	if pb.Beta != 0 {
		return nil
	}
	var out []Variant
	for _, f := range []Family{CStream, BStream} {
		for _, bx := range []int{128, 64, 32, 16} {
			v := StreamParams{Kind: f, Block: bx, Width: 1, Stream: true}
			if pb.Check(v) == nil {
				out = append(out, v)
				break
			}
		}
	}
	return out
}

// GPUCandidates adds to Candidates the variants that only pay on GPUs:
// row splits without shared memory (cstream-msplit: on a CPU the y threads
// are just a loop) and the same code with CUDA launch bounds capping
// registers so that more blocks fit on a multiprocessor (other dialects
// ignore the bound). Row splits keep the large hex operators out of the
// spills of every one-thread-per-column variant; the split that suits an
// operator follows its planes of points (y12 for p5's 36-row planes), and
// the tall β = 1 operators want the widest splits. Rows grouped by the
// rows of B they read (-g) take the tall ones further
// (docs/rationale.md#row-splits). A grouped variant is left out where it
// would not load at least 10 % fewer rows of B than the contiguous one
// (nearly dense operators: about the same loads, and NVRTC's slowest
// builds).
//
// bstream-msplit without staging is there for operators whose sums do not
// fit one thread: each y thread streams only the rows of B its rows use
// (docs/rationale.md#row-splits). Splits whose sums would still not fit
// fail Check and are not offered.
//
// Wide variants (two columns per thread, or a contiguous split over 16 y
// threads) are offered only up to smallOperatorNNZ non-zeros: beyond it
// none came within 1 % of the best, and they were most of NVRTC's build
// time. In fp32, where a thread's loads are half as wide, they stay for
// operators whose rows sum two entries or fewer (the lifting m6), where
// they still win (docs/rationale.md#wide-variants).
func GPUCandidates(pb Problem) []Variant {
	out := Candidates(pb)
	for _, v := range []Variant{
		MSplitParams{Kind: CStreamMSplit, Block: 64, Width: 1, Split: 2},
		MSplitParams{Kind: CStreamMSplit, Block: 64, Width: 1, Split: 4},
		MSplitParams{Kind: CStreamMSplit, Block: 32, Width: 1, Split: 4},
		MSplitParams{Kind: CStreamMSplit, Block: 32, Width: 1, Split: 8},
		MSplitParams{Kind: CStreamMSplit, Block: 32, Width: 1, Split: 12},
		MSplitParams{Kind: CStreamMSplit, Block: 32, Width: 1, Split: 16},
		MSplitParams{Kind: CStreamMSplit, Block: 32, Width: 1, Split: 24},
		MSplitParams{Kind: CStreamMSplit, Block: 32, Width: 1, Split: 32},
		MSplitParams{Kind: CStreamMSplit, Block: 32, Width: 2, Split: 24},
		MSplitParams{Kind: CStreamMSplit, Block: 32, Width: 1, Split: 8, Grouped: true},
		MSplitParams{Kind: CStreamMSplit, Block: 32, Width: 1, Split: 12, Grouped: true},
		MSplitParams{Kind: CStreamMSplit, Block: 32, Width: 1, Split: 24, Grouped: true},
		MSplitParams{Kind: CStreamMSplit, Block: 64, Width: 1, Split: 16, Grouped: true},
		MSplitParams{Kind: CStreamMSplit, Block: 32, Width: 2, Split: 16, Grouped: true},
		MSplitParams{Kind: CStreamMSplit, Block: 64, Width: 2, Split: 8, Grouped: true},
		MSplitParams{Kind: BStreamMSplit, Block: 64, Width: 1, Split: 2},
		MSplitParams{Kind: BStreamMSplit, Block: 64, Width: 1, Split: 4},
		MSplitParams{Kind: BStreamMSplit, Block: 32, Width: 1, Split: 4},
		MSplitParams{Kind: BStreamMSplit, Block: 32, Width: 1, Split: 6},
		MSplitParams{Kind: BStreamMSplit, Block: 32, Width: 1, Split: 8},
		MSplitParams{Kind: BStreamMSplit, Block: 32, Width: 1, Split: 16},
		StreamParams{Kind: CStream, Block: 128, Width: 1, Occupancy: 4},
		StreamParams{Kind: CStream, Block: 128, Width: 2, Occupancy: 4},
		MSplitParams{Kind: BStreamMSplit, Block: 32, Width: 1, Split: 4, Chunk: 32, Occupancy: 6},
	} {
		if pb.Check(v) == nil && fitsRows(pb, v) {
			out = append(out, v)
		}
	}
	// Sparse operators only: the nearly dense ones have the dense
	// families, and their unrolled row splits are NVRTC's slowest builds.
	st := operator.Analyze(pb.Op)
	if st.Density < denseMinDensity {
		for _, y := range exactSplits(pb.Op.Rows) {
			vs := []MSplitParams{
				{Kind: CStreamMSplit, Block: 32, Width: 1, Split: y},
				{Kind: CStreamMSplit, Block: 64, Width: 1, Split: y},
				{Kind: CStreamMSplit, Block: 64, Width: 1, Split: y, Grouped: true},
			}
			for _, v := range vs {
				if slices.Contains(out, Variant(v)) || pb.Check(v) != nil || (v.Grouped && !regroups(pb, y)) {
					continue // the fixed list has it, or it does not fit
				}
				out = append(out, v)
			}
		}
	}
	if nnz := st.NNZ; nnz > smallOperatorNNZ && (pb.DType != kernel.F32 || nnz > 2*pb.Op.Rows) {
		out = slices.DeleteFunc(out, wide)
	}
	return append(out, BlocksCandidates(pb)...)
}

// exactSplitMinRows is the fewest rows a group of an exact split holds:
// smaller operators are left to the one-thread-a-column families.
const exactSplitMinRows = 16

// exactSplits lists the row splits from 5 to 16 that cut m rows into
// equal groups of at least exactSplitMinRows rows: for a hexahedron's
// (p+1)³ solution points, whole planes of points a y thread, so that
// every thread reads as many rows of B as the next. GPUCandidates offers
// each as cstream-msplit x32, x64 and x64 grouped (-g, where grouping
// pays), those the fixed list lacks. The fixed splits miss p + 1 = 7 and
// 9, and have 8 for x32 alone; the p6–p8 liftings and interpolations to
// the faces run 6–16 points of the roof faster with their exact splits,
// at x64 and, for the interpolations, grouped
// (docs/rationale.md#equal-row-splits).
func exactSplits(m int) []int {
	var out []int
	for y := 5; y <= 16 && y*exactSplitMinRows <= m; y++ {
		if m%y == 0 {
			out = append(out, y)
		}
	}
	return out
}

// smallOperatorNNZ is the most non-zeros for which GPUCandidates offers
// wide variants.
const smallOperatorNNZ = 2500

// wide says whether v gives a thread two columns, or cuts the rows in order
// over more than 16 y threads.
func wide(v Variant) bool {
	switch v := v.(type) {
	case StreamParams:
		return v.Width > 1
	case MSplitParams:
		return v.Width > 1 || (v.Kind == CStreamMSplit && !v.Grouped && v.Split > 16)
	}
	return false
}

// fitsRows says whether a row split has no more y threads than rows, and
// whether grouping its rows pays (regroups).
func fitsRows(pb Problem, v Variant) bool {
	ms, ok := v.(MSplitParams)
	return !ok || ((!ms.rowSplit() || ms.Split <= pb.Op.Rows) && (!ms.Grouped || regroups(pb, ms.Split)))
}

// regroups says whether grouping rows by support pays: at least 10 % fewer
// loads of B across the y threads (each loads the union of its rows'
// supports) than cutting the rows in order. Tensor-product operators save
// 40–60 % (p5/hex/m460, y16: 567 loads against 1,732); nearly dense ones
// (tets) 0–5 %, not worth their candidates' build time.
func regroups(pb Problem, ways int) bool {
	rowNZ := rowSupports(pb)
	return 10*bLoads(rowNZ, supportRows(rowNZ, ways)) <= 9*bLoads(rowNZ, contiguousRows(rowNZ, ways))
}

// rowSupports lists, for each row of A, the columns of its non-zeros.
func rowSupports(pb Problem) [][]int {
	rowNZ, _, _ := (&gen{pb: pb, m: pb.Op.Rows, k: pb.Op.Cols}).structure()
	return rowNZ
}

// openSums is the most partial sums of the given rows open at once when
// the rows of B are streamed in order (a row is open from its first
// non-zero to its last).
func openSums(rowNZ [][]int, rows []int, k int) int {
	delta := make([]int, k+1)
	for _, i := range rows {
		if nz := rowNZ[i]; len(nz) > 0 {
			delta[nz[0]]++
			delta[nz[len(nz)-1]+1]--
		}
	}
	open, most := 0, 0
	for _, d := range delta {
		open += d
		most = max(most, open)
	}
	return most
}

// bLoads counts the rows of B the groups load, each group its own.
func bLoads(rowNZ [][]int, groups [][]int) int {
	n := 0
	for _, rows := range groups {
		seen := map[int]bool{}
		for _, i := range rows {
			for _, r := range rowNZ[i] {
				if !seen[r] {
					seen[r] = true
					n++
				}
			}
		}
	}
	return n
}

// MaxLiveRegisters bounds the 32-bit registers a variant may need for the
// values it keeps live (accumulators, staged B values). Beyond it a GPU
// kernel spills heavily and ptxas/LLVM spend minutes on register
// allocation; cstream, which the compiler can always schedule row by row,
// is exempt so that every operator keeps a candidate.
const MaxLiveRegisters = 320

// LiveValues estimates how many values of one thread v keeps live at once:
// open accumulators for bstream and msplit (per y thread), B values held
// for ksplit. cstream returns 0: it can reload instead, and so do the
// families that bound their registers otherwise.
func LiveValues(pb Problem, v Variant) int {
	if lv, ok := v.(interface{ liveValues(Problem) int }); ok {
		return lv.liveValues(pb)
	}
	return 0
}

// variants turns a list of one family's parameters into variants.
func variants[T Variant](ps []T) []Variant {
	if ps == nil {
		return nil
	}
	out := make([]Variant, len(ps))
	for i, p := range ps {
		out[i] = p
	}
	return out
}
