package kernel

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Max is the largest finite value of d.
func (d DType) Max() float64 {
	if d == F32 {
		return math.MaxFloat32
	}
	return math.MaxFloat64
}

// CheckRange reports the first value of xs (read from name) that d cannot
// hold: not finite, or rounding to an infinity in d. A kernel run on it
// would compute with an infinity and write NaN or infinities.
func (d DType) CheckRange(name string, xs []float64) error {
	for i, x := range xs {
		switch {
		case math.IsNaN(x) || math.IsInf(x, 0):
			return fmt.Errorf("%s: value %g at index %d is not finite", name, x, i)
		case math.IsInf(d.Rounded(x), 0):
			return fmt.Errorf("%s: value %g at index %d is beyond the %s range (%.2g)", name, x, i, d, d.Max())
		}
	}
	return nil
}

// Rounded returns x rounded to d's precision.
func (d DType) Rounded(x float64) float64 {
	if d == F32 {
		return float64(float32(x))
	}
	return x
}

// Encode packs reals at d's precision, little-endian, as the device holds
// them.
func (d DType) Encode(xs []float64) []byte {
	out := make([]byte, len(xs)*d.Bytes())
	for i, x := range xs {
		if d == F32 {
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(float32(x)))
		} else {
			binary.LittleEndian.PutUint64(out[8*i:], math.Float64bits(x))
		}
	}
	return out
}

// Decode unpacks reals written by Encode or by a device.
func (d DType) Decode(buf []byte) []float64 {
	out := make([]float64, len(buf)/d.Bytes())
	for i := range out {
		if d == F32 {
			out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(buf[4*i:])))
		} else {
			out[i] = math.Float64frombits(binary.LittleEndian.Uint64(buf[8*i:]))
		}
	}
	return out
}

// EncodeInts packs integers in words of width bytes (4 or 8),
// little-endian; values are truncated to the width.
func EncodeInts(width int, xs []int64) []byte {
	out := make([]byte, len(xs)*width)
	for i, x := range xs {
		if width == 4 {
			binary.LittleEndian.PutUint32(out[4*i:], uint32(int32(x)))
		} else {
			binary.LittleEndian.PutUint64(out[8*i:], uint64(x))
		}
	}
	return out
}

// DecodeInts unpacks integers written by EncodeInts or by a device.
func DecodeInts(width int, buf []byte) []int64 {
	out := make([]int64, len(buf)/width)
	for i := range out {
		if width == 4 {
			out[i] = int64(int32(binary.LittleEndian.Uint32(buf[4*i:])))
		} else {
			out[i] = int64(binary.LittleEndian.Uint64(buf[8*i:]))
		}
	}
	return out
}
