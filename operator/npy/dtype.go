package npy

import (
	"encoding/binary"
	"math"
)

// dtype decodes one little-endian element to float64; msg is non-empty when
// the value cannot be represented exactly.
type dtype struct {
	size   int
	decode func(b []byte) (v float64, msg string)
}

// dtypes are the element types accepted: the float types operators are
// stored in, and integer types for small integer operators.
var dtypes = map[string]dtype{
	"<f8": {8, func(b []byte) (float64, string) {
		return math.Float64frombits(binary.LittleEndian.Uint64(b)), ""
	}},
	"<f4": {4, func(b []byte) (float64, string) {
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(b))), ""
	}},
	"<i4": {4, func(b []byte) (float64, string) {
		return float64(int32(binary.LittleEndian.Uint32(b))), ""
	}},
	"<i8": {8, func(b []byte) (float64, string) {
		v := int64(binary.LittleEndian.Uint64(b))
		if v > maxExactInt || v < -maxExactInt {
			return 0, "is an integer not exactly representable as float64"
		}
		return float64(v), ""
	}},
}
