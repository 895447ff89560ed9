package sparse

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/operator"
)

// Tolerances on max|got−want| / max|want|. A kernel sums at most k products
// in a different order from the reference: for the operators here (k ≤
// 1029, |A|·|B| terms of similar size) the error is a few hundred ulps at
// worst, so 1e-12 (about 4500 ε₆₄) and 1e-5 (about 84 ε₃₂) leave head-room
// without letting a wrong coefficient (an error ≥ 1e-9 relative) through.
const (
	TolF64 = 1e-12
	TolF32 = 1e-5
)

// Tolerance returns the tolerance for dt.
func Tolerance(dt kernel.DType) float64 {
	if dt == kernel.F32 {
		return TolF32
	}
	return TolF64
}

// padding is written into the columns n..ld-1 of B and C for checks; a
// kernel that reads B's padding spreads it into C, and one that writes C's
// padding changes it. A distinctive finite value (not NaN) keeps the two
// apart from C's NaN poison.
const padding = -7.77e7

// Operator is the family's problem: C ← α·A·B + β·C with the constant
// operator A, in one precision.
type Operator struct {
	op          *operator.Operator
	dt          kernel.DType
	alpha, beta float64
	maxNNZ      int
	ldN         bool // Timed's panels have ld = n, not LeadingDim(n)
}

var _ family.Problem = Operator{}

// WithUnpaddedLD makes Timed's panels as wide as the columns (ld = n), as
// PyFR allocates its own: a multiple of 512 elements there meets the
// GPU's memory channels differently (docs/rationale.md#tile-order).
func (o Operator) WithUnpaddedLD() Operator { o.ldN = true; return o }

// NewOperator is the problem C ← α·A·B + β·C for A = op.
func NewOperator(op *operator.Operator, dt kernel.DType, alpha, beta float64) Operator {
	return Operator{op: op, dt: dt, alpha: alpha, beta: beta}
}

// WithMaxNNZ raises (or lowers) the limit on the non-zeros a kernel
// unrolls (0: DefaultMaxNNZ).
func (o Operator) WithMaxNNZ(n int) Operator { o.maxNNZ = n; return o }

// Name is the operator's name.
func (o Operator) Name() string { return o.op.Name }

// Label is the name, precision, α (when not 1) and β.
func (o Operator) Label() string {
	s := fmt.Sprintf("%s %s β=%g", o.op.Name, o.dt, o.beta)
	if o.alpha != 1 {
		s += fmt.Sprintf(" α=%g", o.alpha)
	}
	return s
}

// DType is the precision.
func (o Operator) DType() kernel.DType { return o.dt }

// Op is the operator A.
func (o Operator) Op() *operator.Operator { return o.op }

// Beta is β.
func (o Operator) Beta() float64 { return o.beta }

// Spec is the problem with nothing baked in.
func (o Operator) Spec() Problem {
	return Problem{Op: o.op, DType: o.dt, Alpha: o.alpha, Beta: o.beta, MaxNNZ: o.maxNNZ}
}

// UnitBytes is the least traffic of one column: the used rows of B, and C
// written (and read when β ≠ 0).
func (o Operator) UnitBytes() int64 {
	return int64(operator.Analyze(o.op).BytesPerCol(o.dt.Bytes(), o.beta != 0))
}

// Checks returns, for n columns, the instance with n, ldb and ldc baked
// into the kernels and the one with all three passed at run time, both on
// odd-sized padded panels (ldb = n+5, ldc = n+9, rounded up to even).
func (o Operator) Checks(n int) ([]family.Instance, error) {
	if n < 1 {
		return nil, fmt.Errorf("sparse: %d columns (want at least 1)", n)
	}
	if err := o.Spec().CheckOperator(); err != nil {
		return nil, fmt.Errorf("sparse: %w", err)
	}
	ldb, ldc := even(n+5), even(n+9)
	baked := o.Spec()
	baked.N, baked.LDB, baked.LDC = n, ldb, ldc
	return []family.Instance{
		&Instance{Problem: baked, N: n, LDB: ldb, LDC: ldc},
		&Instance{Problem: o.Spec(), N: n, LDB: ldb, LDC: ldc},
	}, nil
}

func even(x int) int { return x + x%2 }

// Timed returns the instance the bench times: ldb = ldc = LeadingDim(n)
// (n with WithUnpaddedLD) baked in, n passed at run time.
func (o Operator) Timed(n int) (family.Instance, error) {
	if n < 1 {
		return nil, fmt.Errorf("sparse: %d columns (want at least 1)", n)
	}
	if err := o.Spec().CheckOperator(); err != nil {
		return nil, fmt.Errorf("sparse: %w", err)
	}
	ld := LeadingDim(n)
	if o.ldN {
		ld = n
	}
	pb := o.Spec()
	pb.LDB, pb.LDC = ld, ld
	return &Instance{Problem: pb, N: n, LDB: ld, LDC: ld}, nil
}

// LeadingDim pads n to a multiple of 64 elements, so that every row of B
// and C starts 256-byte aligned in fp32 and fp64, and then by 64 more when
// that is a multiple of 512 elements: with a power-of-two stride every row
// of a block maps to the same cache sets (3× slower on a CPU:
// docs/rationale.md#leading-dimension).
func LeadingDim(n int) int {
	ld := (n + 63) / 64 * 64
	if ld%512 == 0 {
		ld += 64
	}
	return ld
}

// Instance is a Problem (what the kernels bake in) on panels of a concrete
// shape: N columns, leading dimensions LDB and LDC.
type Instance struct {
	Problem
	N, LDB, LDC int

	candMu     sync.Mutex
	candidates map[family.Target][]family.Candidate // Candidates' lists, by target
}

var _ family.Instance = (*Instance)(nil)

// Name is the operator and the shape, e.g. "p3/hex/m6 f64 β=1 n=1001
// ldb=1006 ldc=1010 (run time)".
func (in *Instance) Name() string {
	how := "baked"
	if in.Problem.N == 0 {
		how = "run time"
	}
	return fmt.Sprintf("%s %s β=%g n=%d ldb=%d ldc=%d (%s)", in.Op.Name, in.Problem.DType, in.Beta, in.N, in.LDB, in.LDC, how)
}

// DType is the precision.
func (in *Instance) DType() kernel.DType { return in.Problem.DType }

// Candidates lists the variants for the target: GPUCandidates on a GPU
// (without launch-bound twins where the dialect ignores the bound), else
// Candidates, and on CUDA devices with tensor cores (sm_80+) the
// DMMACandidates (fp64) and, in fp32, the WGMMACandidates (sm_90) or,
// where they can pay (offerTMMA), the TMMACandidates (3×TF32 through
// mma.sync); on a CPU also DenseHostCandidates. The SIMT dense
// variants (with shared memory) are not among them: they ran well below
// cuBLAS on the tets p5–p6 (docs/rationale.md#simt-dense), and the cost
// model, which ranks them far above that, would prune the unrolled kernels
// for them; they run when named (--variant).
func (in *Instance) Candidates(t family.Target) []family.Candidate {
	// The list is asked for more than once (the tuning key digests it):
	// checking every variant against the operator is worth keeping.
	in.candMu.Lock()
	defer in.candMu.Unlock()
	if cs, ok := in.candidates[t]; ok {
		return slices.Clone(cs)
	}
	cs := in.candidateList(t)
	if in.candidates == nil {
		in.candidates = map[family.Target][]family.Candidate{}
	}
	in.candidates[t] = cs
	return slices.Clone(cs)
}

// offers lists what each strategy offers a target, in the order
// Candidates gives them (the tuning key digests the list, so the order is
// part of what is stored). The one-thread-a-column families and their
// splits share one list (GPUCandidates, Candidates), ordered across them.
var offers = []func(in *Instance, t family.Target) []Variant{
	// One thread a column, its splits, and blocks on a GPU.
	func(in *Instance, t family.Target) []Variant {
		if t.GPU {
			return GPUCandidates(in.Problem)
		}
		return Candidates(in.Problem)
	},
	// dmma on CUDA sm_80+, fp64.
	func(in *Instance, t family.Target) []Variant {
		if t.GPU {
			return DMMACandidates(in.Problem, t.CUDAArch, Fill{Columns: in.N, Units: t.Units})
		}
		return nil
	},
	// wgmma, else tmma: on sm_90 fp32 takes Hopper's wgmma (twice
	// mma.sync's TF32 rate), which beat the 3×TF32 mma.sync kernels on
	// every p5–p6 tet.
	func(in *Instance, t family.Target) []Variant {
		if !t.GPU {
			return nil
		}
		if wg := WGMMACandidates(in.Problem, t.CUDAArch, Fill{Columns: in.N, Units: t.Units}); len(wg) > 0 {
			return wg
		}
		if offerTMMA(in.Problem) {
			return TMMACandidates(in.Problem, t.CUDAArch, Fill{Columns: in.N, Units: t.Units})
		}
		return nil
	},
	// blocks with more shared memory or asynchronous copies, sm_80+.
	func(in *Instance, t family.Target) []Variant {
		if t.GPU && t.CUDAArch >= 80 {
			return append(BlocksLargeCandidates(in.Problem), BlocksAsyncCandidates(in.Problem)...)
		}
		return nil
	},
	// dense, the CPU form.
	func(in *Instance, t family.Target) []Variant {
		if !t.GPU {
			return DenseHostCandidates(in.Problem)
		}
		return nil
	},
	// C streamed on a CPU.
	func(in *Instance, t family.Target) []Variant {
		if t.GPU {
			return nil
		}
		return slices.DeleteFunc(StreamCandidates(in.Problem), func(v Variant) bool { return in.checkStream(v) != nil })
	},
}

func (in *Instance) candidateList(t family.Target) []family.Candidate {
	var vs []Variant
	for _, o := range offers {
		vs = append(vs, o(in, t)...)
	}
	if !t.MinBlocks {
		vs = slices.DeleteFunc(vs, func(v Variant) bool { return v.launch().occupancy > 0 })
	}
	out := make([]family.Candidate, len(vs))
	for i, v := range vs {
		out[i] = v
	}
	return out
}

// Variant parses a variant name.
func (in *Instance) Variant(name string) (family.Candidate, error) {
	v, err := ParseVariant(name)
	if err != nil {
		return nil, err
	}
	return v, nil
}

// Check reports why a variant cannot be built for the instance.
func (in *Instance) Check(c family.Candidate) error {
	v, ok := c.(Variant)
	if !ok {
		return fmt.Errorf("sparse: %T is not a sparse variant", c)
	}
	if err := in.checkStream(v); err != nil {
		return err
	}
	return in.Problem.Check(v)
}

// checkStream: a streaming block computes a whole block of columns (the
// last one the panel's last Block), so the panel holds one at least.
func (in *Instance) checkStream(c Variant) error {
	if v, ok := c.(StreamParams); ok && v.Stream && in.N < v.Block {
		return fmt.Errorf("sparse: variant %s takes %d columns at a time, more than n = %d", v.Name(), v.Block, in.N)
	}
	return nil
}

// Build returns the kernel of a Variant.
func (in *Instance) Build(c family.Candidate) (*kernel.Kernel, error) {
	v, ok := c.(Variant)
	if !ok {
		return nil, fmt.Errorf("sparse: %T is not a sparse variant", c)
	}
	if err := in.checkShape(); err != nil {
		return nil, err
	}
	if err := in.checkStream(v); err != nil {
		return nil, err
	}
	return Build(in.Problem, v)
}

// checkShape checks that the panels agree with what the kernels bake in.
func (in *Instance) checkShape() error {
	pb := in.Problem
	if in.N < 1 || in.LDB < in.N || in.LDC < in.N {
		return fmt.Errorf("sparse: panels of n=%d, ldb=%d, ldc=%d (want n ≥ 1, ldb and ldc ≥ n)", in.N, in.LDB, in.LDC)
	}
	if (pb.N > 0 && pb.N != in.N) || (pb.LDB > 0 && pb.LDB != in.LDB) || (pb.LDC > 0 && pb.LDC != in.LDC) {
		return fmt.Errorf("sparse: kernels bake n=%d, ldb=%d, ldc=%d into panels of %d, %d, %d", pb.N, pb.LDB, pb.LDC, in.N, in.LDB, in.LDC)
	}
	return nil
}

// values are the kernels' scalar arguments and launch size.
func (in *Instance) values() map[string]int64 {
	return map[string]int64{Columns: int64(in.N), "ldb": int64(in.LDB), "ldc": int64(in.LDC)}
}

// Data draws B and C from ±[0.5, 1.5) (never zero), with padding in the
// columns n..ld-1; C is NaN where β = 0, so any element left unwritten
// shows. The reference applies α·A rounded to the precision, as the
// kernels do.
func (in *Instance) Data(rng *rand.Rand) (*family.Data, error) {
	if err := in.checkShape(); err != nil {
		return nil, err
	}
	op, dt, n := in.Op, in.Problem.DType, in.N
	draw := func() float64 {
		x := 0.5 + rng.Float64()
		if rng.IntN(2) == 0 {
			x = -x
		}
		return dt.Rounded(x)
	}
	b := make([]float64, op.Cols*in.LDB)
	for i := range b {
		if i%in.LDB < n {
			b[i] = draw()
		} else {
			b[i] = padding
		}
	}
	c0 := make([]float64, op.Rows*in.LDC)
	for i := range c0 {
		switch {
		case i%in.LDC >= n:
			c0[i] = padding
		case in.Beta == 0:
			c0[i] = math.NaN()
		default:
			c0[i] = draw()
		}
	}
	ra := op.Clone()
	for i, a := range ra.Data {
		ra.Data[i] = dt.Rounded(in.Alpha * a)
	}
	want := slices.Clone(c0)
	Apply(ra, 1, dt.Rounded(in.Beta), b, in.LDB, want, in.LDC, n)
	ldc := in.LDC
	return &family.Data{
		Arrays: map[string]*family.Array{
			"a": {Type: kernel.Real, Init: ra.Data}, // α·A for the dense kernels
			"b": {Type: kernel.Real, Init: b},
			"c": {Type: kernel.Real, Init: c0, Want: want, Kept: func(i int) bool { return i%ldc >= n }},
		},
		Values: in.values(),
		Tol:    Tolerance(dt),
	}, nil
}

// TuneKey is the operator's content, precision, α, β, what is baked in,
// the power of two n falls below, and the leading dimensions' alignment
// (modulo 512 elements, which decides cache-set conflicts).
func (in *Instance) TuneKey() string {
	pb := in.Problem
	h := sha256.New()
	var buf [8]byte
	for _, x := range pb.Op.Data {
		binary.LittleEndian.PutUint64(buf[:], math.Float64bits(x))
		h.Write(buf[:])
	}
	return fmt.Sprintf("sparse|%d×%d|%x|%s|α=%g|β=%g|baked=%v,%v,%v|n<2^%d|ld%%512=%d,%d", pb.Op.Rows, pb.Op.Cols, h.Sum(nil)[:12], pb.DType,
		pb.Alpha, pb.Beta, pb.N > 0, pb.LDB > 0, pb.LDC > 0, bits.Len(uint(in.N)), in.LDB%512, in.LDC%512)
}

// DataBytes is B, C, the reference of C and α·A, in float64.
func (in *Instance) DataBytes() int64 {
	return 8 * (int64(in.Op.Cols)*int64(in.LDB) + 2*int64(in.Op.Rows)*int64(in.LDC) + int64(in.Op.Rows)*int64(in.Op.Cols))
}

// Apply computes C ← α·A·B + β·C for columns 0..n-1 in float64, the loop
// every variant documents. C is not read when β = 0.
func Apply(op *operator.Operator, alpha, beta float64, b []float64, ldb int, c []float64, ldc, n int) {
	acc := make([]float64, n)
	for i := 0; i < op.Rows; i++ {
		clear(acc)
		for r := 0; r < op.Cols; r++ {
			a := alpha * op.At(i, r)
			if a == 0 {
				continue
			}
			row := b[r*ldb : r*ldb+n]
			for j, x := range row {
				acc[j] += a * x
			}
		}
		out := c[i*ldc : i*ldc+n]
		for j := range out {
			if beta == 0 {
				out[j] = acc[j]
			} else {
				out[j] = acc[j] + beta*out[j]
			}
		}
	}
}

// sampleColumns is how many columns a timed launch is checked at.
const sampleColumns = 1024

// Workload is B (read) and C (written; read too when β ≠ 0), checked at
// every row of sampleColumns columns spread over n.
func (in *Instance) Workload() (*family.Workload, error) {
	if err := in.checkShape(); err != nil {
		return nil, err
	}
	op, dt, n := in.Op, in.Problem.DType, in.N
	cRole := family.Output
	if in.Beta != 0 {
		cRole = family.InOut
	}
	samples := min(sampleColumns, n)
	col := func(s int) int { return s * (n - 1) / max(samples-1, 1) }
	st := operator.Analyze(op)
	w := &family.Workload{
		Shape: op.Shape(),
		Facts: map[string]float64{"m": float64(op.Rows), "k": float64(op.Cols), "nnz": float64(st.NNZ), "k_used": float64(st.UsedCols),
			"density": st.Density, "beta": in.Beta, "ld": float64(in.LDC)},
		Arrays: []family.WorkArray{
			{Name: "b", Type: kernel.Real, Len: int64(op.Cols) * int64(in.LDB), Role: family.Input},
			{Name: "c", Type: kernel.Real, Len: int64(op.Rows) * int64(in.LDC), Role: cRole},
		},
		Values:     in.values(),
		IdealBytes: int64(st.BytesPerCol(dt.Bytes(), in.Beta != 0)) * int64(n),
		Flops:      2 * int64(st.NNZ) * int64(n),
		Tol:        Tolerance(dt),
	}
	ra := op.Clone()
	for i, a := range ra.Data {
		ra.Data[i] = dt.Rounded(in.Alpha * a)
	}
	// α·A, as the dense kernels read it (the others take no "a").
	w.Arrays = append(w.Arrays, family.WorkArray{Name: "a", Type: kernel.Real, Len: int64(len(ra.Data)), Role: family.Input, Reals: ra.Data})
	for i := 0; i < op.Rows; i++ {
		for s := 0; s < samples; s++ {
			w.Samples = append(w.Samples, family.Sample{Array: "c", Index: int64(i)*int64(in.LDC) + int64(col(s))})
		}
	}
	// The reference at the sampled columns is Apply on panels of just
	// those columns, read from the bench's tables: one loop for checks
	// and timed runs alike.
	beta, ldb, ldc := dt.Rounded(in.Beta), int64(in.LDB), int64(in.LDC)
	w.Reference = func(at func(string, int64) float64) []float64 {
		b, c := make([]float64, op.Cols*samples), make([]float64, op.Rows*samples)
		for s := 0; s < samples; s++ {
			j := int64(col(s))
			for r := 0; r < op.Cols; r++ {
				b[r*samples+s] = at("b", int64(r)*ldb+j)
			}
			if in.Beta != 0 {
				for i := 0; i < op.Rows; i++ {
					c[i*samples+s] = at("c", int64(i)*ldc+j)
				}
			}
		}
		Apply(ra, 1, beta, b, samples, c, samples, samples)
		return c // in the order of w.Samples: row after row, column by column
	}
	return w, nil
}
