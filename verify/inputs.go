package verify

import (
	"math"
	"math/rand/v2"

	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/operator"
)

// padding is written into the columns n..ld-1 of B and C; a kernel that
// reads B's padding spreads it into C, and one that writes C's padding
// changes it. A distinctive finite value (not NaN) keeps the two apart
// from C's NaN poison.
const padding = -7.77e7

// Inputs is one problem's data in float64, already rounded to the kernel's
// precision so that the reference sees what the device sees.
type Inputs struct {
	Op          *operator.Operator
	DType       kernel.DType
	Alpha, Beta float64
	N, LDB, LDC int
	B, C0       []float64 // B and C before the run
	Ref         []float64 // C after the run, by Reference
}

// NewInputs draws B and C from ±[0.5, 1.5), never zero. When β = 0 the
// initial C is NaN, so any element the kernel fails to write shows.
func NewInputs(rng *rand.Rand, op *operator.Operator, dt kernel.DType, alpha, beta float64, n, ldb, ldc int) *Inputs {
	in := &Inputs{Op: op, DType: dt, Alpha: alpha, Beta: beta, N: n, LDB: ldb, LDC: ldc}
	draw := func() float64 {
		x := 0.5 + rng.Float64()
		if rng.IntN(2) == 0 {
			x = -x
		}
		return Rounded(dt, x)
	}
	in.B = make([]float64, op.Cols*ldb)
	for i := range in.B {
		if i%ldb < n {
			in.B[i] = draw()
		} else {
			in.B[i] = padding
		}
	}
	in.C0 = make([]float64, op.Rows*ldc)
	for i := range in.C0 {
		switch {
		case i%ldc >= n:
			in.C0[i] = padding
		case beta == 0:
			in.C0[i] = math.NaN()
		default:
			in.C0[i] = draw()
		}
	}
	// The device multiplies by α·A rounded to its precision.
	ra := op.Clone()
	for i, a := range ra.Data {
		ra.Data[i] = Rounded(dt, alpha*a)
	}
	in.Ref = append([]float64(nil), in.C0...)
	Reference(ra, 1, Rounded(dt, beta), in.B, ldb, in.Ref, ldc, n)
	return in
}

// Result is the outcome of one verified run.
type Result struct {
	MaxRelErr float64 `json:"max_rel_err"` // max|got−ref| / max|ref|
	Unwritten int     `json:"unwritten"`   // outputs still NaN
	Padding   int     `json:"padding"`     // padding elements changed
	Tol       float64 `json:"tol"`
}

// OK reports whether the run passed.
func (r Result) OK() bool { return r.Unwritten == 0 && r.Padding == 0 && r.MaxRelErr <= r.Tol }

// Compare judges got (C after the run) against the reference.
func (in *Inputs) Compare(got []float64) Result {
	res := Result{Tol: Tolerance(in.DType)}
	norm, diff := 0.0, 0.0
	for i, ref := range in.Ref {
		g := got[i]
		if i%in.LDC >= in.N {
			if g != padding {
				res.Padding++
			}
			continue
		}
		norm = math.Max(norm, math.Abs(ref))
		if math.IsNaN(g) {
			res.Unwritten++
			continue
		}
		diff = math.Max(diff, math.Abs(g-ref))
	}
	if math.IsInf(diff, 0) || math.IsNaN(diff) {
		res.MaxRelErr = math.Inf(1)
	} else if norm > 0 {
		res.MaxRelErr = diff / norm
	} else {
		res.MaxRelErr = diff
	}
	return res
}
