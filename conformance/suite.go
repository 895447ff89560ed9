// Package conformance is the verification suite every backend runs: the
// same kernels, inputs and tolerances on C, OpenCL and CUDA. A backend's
// test calls Run with an open device (libCEED runs every test on every
// resource; gonum's testblas does the same for BLAS implementations).
package conformance

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/sparse"
	"github.com/bespoke-hpc/bespoke/operator"
	"github.com/bespoke-hpc/bespoke/operator/load"
	"github.com/bespoke-hpc/bespoke/verify"
)

// Betas are the β cases every variant is checked with: C never read,
// accumulated, and scaled.
var Betas = []float64{0, 1, 0.5}

// DTypes are both precisions.
var DTypes = []kernel.DType{kernel.F64, kernel.F32}

// Representative is a subset of the PyFR matrices covering each element
// type at a low and a high order, and each operator kind.
var Representative = []string{
	"p1/quad/m0", "p3/quad/m460",
	"p2/hex/m6", "p2/hex/m132",
	"p1/tri/m3", "p3/tri/m0",
	"p1/tet/m460", "p2/tet/m132",
}

// Problem is an operator checked at one shape: n columns with leading
// dimensions ldb and ldc (passed at run time, or baked in).
type Problem struct {
	Op          *operator.Operator
	N, LDB, LDC int
	// RowSplit adds cstream-msplit/x32-y4 and x32-y3-g-w2 and
	// bstream-msplit/x32-y3 (no staging), GPU candidates, so that their
	// rendering is checked in every dialect (the
	// edge cases do; the PyFR sweep rotates them in; the representative
	// set leaves them out to keep the suite's time).
	RowSplit bool
}

// Cases builds, for each precision and β, every applicable variant with
// n/ldb/ldc baked in, and — for the β values in runtimeBetas — every one
// with them passed at run time (the same code with other index
// expressions, so one β is enough to cover it).
func Cases(rng *rand.Rand, p Problem, dts []kernel.DType, betas, runtimeBetas []float64, alpha float64) ([]verify.Case, error) {
	var cases []verify.Case
	for _, dt := range dts {
		for _, beta := range betas {
			in := verify.NewInputs(rng, p.Op, dt, alpha, beta, p.N, p.LDB, p.LDC)
			pbs := []sparse.Problem{{Op: p.Op, DType: dt, Alpha: alpha, Beta: beta, N: p.N, LDB: p.LDB, LDC: p.LDC}}
			if slices.Contains(runtimeBetas, beta) {
				pbs = append(pbs, sparse.Problem{Op: p.Op, DType: dt, Alpha: alpha, Beta: beta})
			}
			for _, pb := range pbs {
				for _, v := range variants(pb, p.RowSplit) {
					k, err := sparse.Build(pb, v)
					if err != nil {
						return nil, err
					}
					cases = append(cases, verify.Case{Kernel: k, In: in})
				}
			}
		}
	}
	return cases, nil
}

// variants are the candidates of every backend, plus with rowSplit the row
// splits without shared memory (cstream-msplit) in natural and grouped
// order, one and two columns per thread; the other GPU-only variants
// differ from these only in block shape or launch bounds.
func variants(pb sparse.Problem, rowSplit bool) []sparse.Variant {
	vs := sparse.Candidates(pb)
	for _, cm := range []sparse.Variant{
		{Family: sparse.CStreamMSplit, Block: 32, Width: 1, Split: 4},
		{Family: sparse.CStreamMSplit, Block: 32, Width: 2, Split: 3, Grouped: true},
		{Family: sparse.BStreamMSplit, Block: 32, Width: 1, Split: 3}, // no staging
	} {
		if rowSplit && pb.Check(cm) == nil {
			vs = append(vs, cm)
		}
	}
	return vs
}

// Check runs the cases (this worker's share of them, see ShardEnv) in one
// build and fails the test for each that does not pass; it returns how
// many ran.
func Check(t *testing.T, dev device.Device, cases []verify.Case) int {
	t.Helper()
	cases = inShard(t, cases)
	for _, o := range verify.RunBatch(dev, cases) {
		if !o.Passed() {
			in := o.In
			t.Errorf("%s %s %s β=%g n=%d ldb=%d ldc=%d args=%d: rel err %.3g (tol %.0e), %d unwritten, %d padding changed, err=%v",
				in.Op.Name, in.Op.Shape(), o.Kernel.Variant, in.Beta, in.N, in.LDB, in.LDC, len(o.Kernel.Params),
				o.MaxRelErr, o.Tol, o.Unwritten, o.Padding, o.Err)
		}
	}
	return len(cases)
}

// Edge returns the hand-made operators of the edge-case tests.
func Edge() map[string]*operator.Operator {
	mk := func(name string, m, k int, f func(i, j int) float64) *operator.Operator {
		d := make([]float64, m*k)
		for i := 0; i < m; i++ {
			for j := 0; j < k; j++ {
				d[i*k+j] = f(i, j)
			}
		}
		op, err := operator.New(name, m, k, d)
		if err != nil {
			panic(err)
		}
		return op
	}
	return map[string]*operator.Operator{
		"1x1": mk("1x1", 1, 1, func(int, int) float64 { return -2.5 }),
		"zero-rows-and-cols": mk("zero-rows-and-cols", 9, 7, func(i, j int) float64 {
			if i%3 == 1 || j%2 == 1 { // rows 1,4,7 and columns 1,3,5 are zero
				return 0
			}
			return float64(i+1) / float64(j+2)
		}),
		"dense": mk("dense", 5, 6, func(i, j int) float64 { return math.Sin(float64(7*i + j + 1)) }),
		"wide":  mk("wide", 2, 40, func(i, j int) float64 { return float64((i+j)%5) - 2 }),
		"tall":  mk("tall", 40, 2, func(i, j int) float64 { return float64((i*j)%3) + 0.25 }),
		"huge":  mk("huge", 4, 3, func(i, j int) float64 { return math.Pow(10, float64(20+i)) * float64(j+1) }),
		"tiny":  mk("tiny", 3, 4, func(i, j int) float64 { return 1e-30 * float64(i+j+1) }),
	}
}

// PyFR loads the shared matrices named like "p3/hex/m6".
func PyFR(dir string, names ...string) ([]*operator.Operator, error) {
	var ops []*operator.Operator
	for _, n := range names {
		op, err := load.File(filepath.Join(dir, n+"-sp.mtx"))
		if err != nil {
			return nil, err
		}
		op.Name = n
		ops = append(ops, op)
	}
	return ops, nil
}

// Rotating returns, for the i-th matrix of a sweep, a variant and precision
// that rotate through all variants and both precisions across the sweep.
func Rotating(i int) (sparse.Variant, kernel.DType) {
	all := []sparse.Variant{
		{Family: sparse.BStream, Block: 128, Width: 2},
		{Family: sparse.CStream, Block: 128, Width: 1},
		{Family: sparse.BStreamMSplit, Block: 64, Width: 1, Split: 2, Chunk: 16},
		{Family: sparse.CStreamKSplit, Block: 64, Width: 1, Split: 2, Chunk: 16},
		{Family: sparse.CStream, Block: 128, Width: 2},
		{Family: sparse.BStream, Block: 128, Width: 1},
		{Family: sparse.BStreamMSplit, Block: 32, Width: 1, Split: 4, Chunk: 32},
		{Family: sparse.CStreamKSplit, Block: 32, Width: 1, Split: 4, Chunk: 16},
		{Family: sparse.CStreamMSplit, Block: 32, Width: 1, Split: 8},
		{Family: sparse.CStreamMSplit, Block: 32, Width: 1, Split: 8, Grouped: true},
		{Family: sparse.BStreamMSplit, Block: 32, Width: 1, Split: 4},
	}
	return all[i%len(all)], DTypes[(i/len(all))%2]
}
