// Package mma holds the tensor-core specifics of kernel's MMA and WGMMA
// statements that are PTX's and not the IR's: which elements of each
// operand a lane (or a warpgroup's thread) holds, where a WGMMA's B lies
// in shared memory, and TF32's rounding. The interpreter computes with
// them as the tensor cores do; families lay out their fragments with them.
//
// It imports kernel only.
package mma

import (
	"math"

	"github.com/bespoke-hpc/bespoke/kernel"
)

// The fragment layouts of a warp-level MMA: with g = lane/4, t = lane%4
// and R = M/8, element v of a lane is
//
//	A: row g + 8·(v mod R), column t + 4·⌊v/R⌋
//	B: row t + 4·v,         column g
//	C, D: row g + 8·⌊v/2⌋,  column 2t + (v mod 2)
//
// (m8n8k4: A[g][t], B[t][g], C[g][2t], C[g][2t+1]), as PTX's mma.sync
// .row.col .f64 defines them, and .tf32 (with .f32 C and D) for the two
// shapes it shares with fp64: m16n8k4 and m16n8k8 have the same layouts
// in both types. kernel.MMAShape.Elements counts each lane's elements.

// AAt is the row and column of A that element v of lane holds in an MMA of
// shape s.
func AAt(s kernel.MMAShape, lane, v int) (row, col int) {
	r := s.M / 8
	return lane/4 + 8*(v%r), lane%4 + 4*(v/r)
}

// BAt is the row and column of B that element v of lane holds.
func BAt(_ kernel.MMAShape, lane, v int) (row, col int) { return lane%4 + 4*v, lane / 4 }

// CAt is the row and column of C (and D) that element v of lane holds.
func CAt(_ kernel.MMAShape, lane, v int) (row, col int) {
	return lane/4 + 8*(v/2), 2*(lane%4) + v%2
}

// WGBElement is the element of the shared array that holds B[k][n] of a
// WGMMA whose B starts at element at (see kernel.WGMMA: core matrices of
// 8 columns by 4 rows, LBO and SBO bytes apart).
func WGBElement(at int64, lbo, sbo, k, n int) int64 {
	return at + int64((k/4)*lbo/4+(n/8)*sbo/4+(n%8)*4+k%4)
}

// WGARow and WGACol are the row of A (and D) a thread's element x of a
// WGMMA's A gives, and the column of A it lies in, for the thread of
// linear index t (see kernel.WGMMA).
func WGARow(t, x int) int { return 16*(t/32%4) + t%32/4 + 8*(x%2) }

// WGACol: see WGARow.
func WGACol(t, x int) int { return t%4 + 4*(x/2) }

// WGDAt is the row and column of D that a thread's element e of a WGMMA's
// D is (see kernel.WGMMA).
func WGDAt(t, e int) (row, col int) {
	return 16*(t/32%4) + t%32/4 + 8*(e%4/2), 8*(e/4) + 2*(t%4) + e%2
}

// RoundTF32 is x (an fp32 value) rounded to TensorFloat-32 as the TF32
// intrinsic does (cvt.rna.tf32.f32): to 10 bits of mantissa, to nearest
// with ties away from zero; NaN and infinities stay as they are, and a
// value past the largest TF32 rounds to an infinity.
func RoundTF32(x float64) float64 {
	f := float32(x)
	if f != f || math.IsInf(float64(f), 0) {
		return float64(f)
	}
	// The magnitude's bits: adding half of the 13 dropped bits' unit
	// rounds half away from zero, a carry going into the exponent.
	return float64(math.Float32frombits((math.Float32bits(f) + 0x1000) &^ 0x1fff))
}

// TruncTF32 is x (an fp32 value) with the low 13 bits of its mantissa
// dropped, as the tensor cores take a TF32 mma's operands: rounded toward
// zero to TF32.
func TruncTF32(x float64) float64 {
	f := float32(x)
	if f != f {
		return float64(f)
	}
	return float64(math.Float32frombits(math.Float32bits(f) &^ 0x1fff))
}
