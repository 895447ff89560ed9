package mma

import (
	"math"
	"testing"

	"github.com/bespoke-hpc/bespoke/kernel"
)

// cuteLayout is a fragment layout as CUTLASS's CuTe writes it for the fp64
// mma atoms (SM80_8x8x4_F64F64F64F64_TN, SM90_16x8xK_F64F64F64F64_TN):
// (lane, value) ↦ lane%4·t0 + lane/4·t1 + (v mod v0)·s0 + ⌊v/v0⌋·s1, a
// column-major index into the rows × columns of the operand (A: M×K, B
// as N×K, C: M×N).
type cuteLayout struct {
	t0, t1, v0, s0, s1, rows int
}

func (c cuteLayout) at(lane, v int) (row, col int) {
	idx := lane%4*c.t0 + lane/4*c.t1 + v%c.v0*c.s0 + v/c.v0*c.s1
	return idx % c.rows, idx / c.rows
}

// The fragment layouts agree with CuTe's, an independent
// transcription of PTX's tables.
func TestMMALayouts(t *testing.T) {
	c16 := cuteLayout{t0: 32, t1: 1, v0: 2, s0: 16, s1: 8, rows: 16} // SM80_16x8_Row
	for _, tc := range []struct {
		sh      kernel.MMAShape
		a, b, c cuteLayout
	}{
		{kernel.M8N8K4, cuteLayout{8, 1, 1, 0, 0, 8}, cuteLayout{8, 1, 1, 0, 0, 8}, cuteLayout{16, 1, 2, 8, 0, 8}},
		{kernel.M16N8K4, cuteLayout{16, 1, 2, 8, 0, 16}, cuteLayout{8, 1, 1, 0, 0, 8}, c16},
		{kernel.M16N8K8, cuteLayout{16, 1, 2, 8, 64, 16}, cuteLayout{8, 1, 2, 32, 0, 8}, c16},
		{kernel.M16N8K16, cuteLayout{16, 1, 2, 8, 64, 16}, cuteLayout{8, 1, 4, 32, 0, 8}, c16},
	} {
		na, nb, nc := tc.sh.Elements()
		for lane := 0; lane < 32; lane++ {
			for v := 0; v < na; v++ {
				r, c := AAt(tc.sh, lane, v)
				if wr, wc := tc.a.at(lane, v); r != wr || c != wc {
					t.Errorf("%s: A element %d of lane %d at (%d, %d), want (%d, %d)", tc.sh, v, lane, r, c, wr, wc)
				}
			}
			for v := 0; v < nb; v++ {
				r, c := BAt(tc.sh, lane, v)
				if wc, wr := tc.b.at(lane, v); r != wr || c != wc { // CuTe's B is N×K
					t.Errorf("%s: B element %d of lane %d at (%d, %d), want (%d, %d)", tc.sh, v, lane, r, c, wr, wc)
				}
			}
			for v := 0; v < nc; v++ {
				r, c := CAt(tc.sh, lane, v)
				if wr, wc := tc.c.at(lane, v); r != wr || c != wc {
					t.Errorf("%s: C element %d of lane %d at (%d, %d), want (%d, %d)", tc.sh, v, lane, r, c, wr, wc)
				}
			}
		}
		// Every element of each operand is held by exactly one lane.
		for _, op := range []struct {
			name    string
			n, rows int
			per     int
			at      func(lane, v int) (int, int)
			cols    int
		}{
			{"A", na, tc.sh.M, na, func(l, v int) (int, int) { return AAt(tc.sh, l, v) }, tc.sh.K},
			{"B", nb, tc.sh.K, nb, func(l, v int) (int, int) { return BAt(tc.sh, l, v) }, tc.sh.N},
			{"C", nc, tc.sh.M, nc, func(l, v int) (int, int) { return CAt(tc.sh, l, v) }, tc.sh.N},
		} {
			seen := map[[2]int]bool{}
			for lane := 0; lane < 32; lane++ {
				for v := 0; v < op.per; v++ {
					r, c := op.at(lane, v)
					if r < 0 || r >= op.rows || c < 0 || c >= op.cols || seen[[2]int{r, c}] {
						t.Errorf("%s: %s element %d of lane %d at (%d, %d): outside or twice", tc.sh, op.name, v, lane, r, c)
					}
					seen[[2]int{r, c}] = true
				}
			}
		}
	}
}

// RoundTF32 rounds to 10 bits of mantissa, to nearest with ties away from
// zero, as cvt.rna.tf32.f32.
func TestRoundTF32(t *testing.T) {
	ulp := math.Ldexp(1, -10) // of TF32 in [1, 2)
	for _, tc := range []struct{ x, want float64 }{
		{1, 1},
		{1 + ulp, 1 + ulp},
		{1 + ulp/2, 1 + ulp},            // a tie: away from zero
		{-(1 + ulp/2), -(1 + ulp)},      // likewise
		{1 + 3*ulp/2, 1 + 2*ulp},        // a tie, odd below: up (as even would)
		{1 + ulp/2 - ulp/1024, 1},       // below the tie
		{1 + ulp/2 + ulp/8192, 1 + ulp}, // above it
		{2 - 3*ulp/4, 2 - ulp},
		{2 - ulp/2, 2},                             // carries into the exponent
		{math.MaxFloat32, math.Inf(1)},             // past the largest TF32
		{math.Ldexp(1, -130), math.Ldexp(1, -130)}, // subnormal
		{math.Ldexp(1, -140), 0},                   // under half TF32's least subnormal, 2⁻¹³⁶
		{math.Inf(-1), math.Inf(-1)},
		{0, 0},
	} {
		got := RoundTF32(tc.x)
		if got != tc.want || TruncTF32(got) != got {
			t.Errorf("RoundTF32(%v) = %v, want %v", tc.x, got, tc.want)
		}
	}
	if !math.IsNaN(RoundTF32(math.NaN())) || !math.IsNaN(TruncTF32(math.NaN())) {
		t.Error("NaN")
	}
	// TruncTF32 drops the low bits: toward zero.
	for _, tc := range []struct{ x, want float64 }{
		{1 + ulp - ulp/1024, 1}, {-(1 + ulp - ulp/1024), -1}, {1 + ulp, 1 + ulp}, {2 - ulp/4, 2 - ulp}, {math.MaxFloat32, math.Ldexp(2-ulp, 127)},
	} {
		if got := TruncTF32(tc.x); got != tc.want {
			t.Errorf("TruncTF32(%v) = %v, want %v", tc.x, got, tc.want)
		}
	}
}

// WGMMA's layouts: a warp's share of A is mma.sync m16n8k8's A fragment,
// its band of 16 rows at 16·warp; every element of A (64×8) and of D
// (64×N) is held by exactly one thread of the warpgroup; B's elements lie
// in distinct places of the core-matrix layout.
func TestWGMMALayouts(t *testing.T) {
	seenA := map[[2]int]bool{}
	for th := 0; th < 128; th++ {
		for x := 0; x < 4; x++ {
			r, c := WGARow(th, x), WGACol(th, x)
			mr, mc := AAt(kernel.M16N8K8, th%32, x)
			if r != 16*(th/32)+mr || c != mc {
				t.Errorf("A element %d of thread %d at (%d, %d), mma.sync's (%d, %d) in band %d", x, th, r, c, mr, mc, th/32)
			}
			if seenA[[2]int{r, c}] {
				t.Errorf("A (%d, %d) twice", r, c)
			}
			seenA[[2]int{r, c}] = true
		}
	}
	for _, n := range []int{8, 88, 256} {
		seenD := map[[2]int]bool{}
		for th := 0; th < 128; th++ {
			for e := 0; e < n/2; e++ {
				r, c := WGDAt(th, e)
				if r < 0 || r >= 64 || c < 0 || c >= n || seenD[[2]int{r, c}] {
					t.Errorf("N = %d: D element %d of thread %d at (%d, %d): outside or twice", n, e, th, r, c)
				}
				seenD[[2]int{r, c}] = true
			}
		}
		seenB := map[int64]bool{}
		for k := 0; k < 8; k++ {
			for c := 0; c < n; c++ {
				i := WGBElement(4, 16*n, 128, k, c)
				if i < 4 || i >= 4+int64(8*n) || seenB[i] {
					t.Errorf("N = %d: B (%d, %d) at %d: outside or twice", n, k, c, i)
				}
				seenB[i] = true
			}
		}
	}
}
