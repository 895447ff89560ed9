package verify

import (
	"math"

	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/operator"
)

// Tolerances on max|got−ref| / max|ref|. A kernel sums at most k products
// in a different order from the reference: for the operators here (k ≤ 1029,
// |A|·|B| terms of similar size) the error is a few hundred ulps at worst,
// so 1e-12 (about 4500 ε₆₄) and 1e-5 (about 84 ε₃₂) leave head-room without
// letting a wrong coefficient (an error ≥ 1e-9 relative) through.
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

// Reference computes C ← α·A·B + β·C for columns 0..n-1 in float64, the
// loop every kernel variant documents. C is not read when β = 0.
func Reference(op *operator.Operator, alpha, beta float64, b []float64, ldb int, c []float64, ldc, n int) {
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

// Rounded returns x rounded to dt's precision.
func Rounded(dt kernel.DType, x float64) float64 {
	if dt == kernel.F32 {
		return float64(float32(x))
	}
	return x
}

// Encode packs values at dt's precision, little-endian.
func Encode(dt kernel.DType, xs []float64) []byte {
	out := make([]byte, len(xs)*dt.Bytes())
	for i, x := range xs {
		if dt == kernel.F32 {
			putU32(out[4*i:], math.Float32bits(float32(x)))
		} else {
			putU64(out[8*i:], math.Float64bits(x))
		}
	}
	return out
}

// Decode unpacks values written by Encode or by a device.
func Decode(dt kernel.DType, buf []byte) []float64 {
	n := len(buf) / dt.Bytes()
	out := make([]float64, n)
	for i := range out {
		if dt == kernel.F32 {
			out[i] = float64(math.Float32frombits(getU32(buf[4*i:])))
		} else {
			out[i] = math.Float64frombits(getU64(buf[8*i:]))
		}
	}
	return out
}

func putU32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}
func getU32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}
func putU64(b []byte, v uint64) { putU32(b, uint32(v)); putU32(b[4:], uint32(v>>32)) }
func getU64(b []byte) uint64    { return uint64(getU32(b)) | uint64(getU32(b[4:]))<<32 }
