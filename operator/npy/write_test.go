package npy

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/bespoke-hpc/bespoke/operator"
)

// TestRoundTrip checks Write→Parse reproduces random values bit for bit and
// that the header is padded as numpy pads it.
func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, sh := range [][2]int{{1, 1}, {1, 9}, {9, 1}, {27, 64}, {343, 125}} {
		t.Run(strconv.Itoa(sh[0])+"x"+strconv.Itoa(sh[1]), func(t *testing.T) {
			data := make([]float64, sh[0]*sh[1])
			for i := range data {
				data[i] = math.Float64frombits(rng.Uint64()&^(0x7ff<<52) | uint64(rng.IntN(0x7ff))<<52)
			}
			op, err := operator.New("rt", sh[0], sh[1], data)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := Write(&buf, op); err != nil {
				t.Fatal(err)
			}
			if hl := int(buf.Bytes()[8]) | int(buf.Bytes()[9])<<8; (10+hl)%headerAlign != 0 {
				t.Errorf("header ends at byte %d, not %d-aligned", 10+hl, headerAlign)
			}
			got, err := Parse(&buf, "rt.npy")
			if err != nil {
				t.Fatal(err)
			}
			for i := range data {
				if math.Float64bits(got.Data[i]) != math.Float64bits(data[i]) {
					t.Fatalf("element %d = %v, want %v", i, got.Data[i], data[i])
				}
			}
		})
	}
}

func TestWriteRejectsInvalid(t *testing.T) {
	op := &operator.Operator{Name: "z", Rows: 1, Cols: 1, Data: []float64{math.NaN()}}
	if err := Write(&bytes.Buffer{}, op); err == nil {
		t.Error("wrote a NaN operator")
	}
}

// WriteArray: a 3-D array's header says its shape in numpy's spelling, is
// padded as numpy pads it, and the data follow bit for bit in C order; a
// 2-D array is written exactly as WriteMatrix writes it; bad shapes are
// errors, not panics.
func TestWriteArray(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, shape := range [][]int{{3}, {2, 5}, {4, 6, 6}, {1, 8, 8}, {2, 3, 4, 5}} {
		n := 1
		for _, d := range shape {
			n *= d
		}
		data := make([]float64, n)
		for i := range data {
			data[i] = rng.NormFloat64()
		}
		var buf bytes.Buffer
		if err := WriteArray(&buf, shape, data); err != nil {
			t.Fatal(err)
		}
		b := buf.Bytes()
		hl := int(b[8]) | int(b[9])<<8
		if (10+hl)%headerAlign != 0 {
			t.Errorf("%v: header ends at byte %d, not %d-aligned", shape, 10+hl, headerAlign)
		}
		h, msg := parseHeader(string(b[10 : 10+hl]))
		if msg != "" || h.descr != "<f8" || h.fortran || formatShape(h.shape) != formatShape(shape) {
			t.Errorf("%v: header %q parses as %+v (%s)", shape, b[10:10+hl], h, msg)
		}
		raw := b[10+hl:]
		if len(raw) != 8*n {
			t.Fatalf("%v: %d data bytes, want %d", shape, len(raw), 8*n)
		}
		for i, x := range data {
			var got uint64
			for k := range 8 {
				got |= uint64(raw[8*i+k]) << (8 * k)
			}
			if got != math.Float64bits(x) {
				t.Fatalf("%v: value %d = %v, want %v", shape, i, math.Float64frombits(got), x)
			}
		}
		if len(shape) == 2 {
			var m bytes.Buffer
			if err := WriteMatrix(&m, shape[0], shape[1], data); err != nil || !bytes.Equal(m.Bytes(), b) {
				t.Errorf("%v: WriteMatrix and WriteArray differ (%v)", shape, err)
			}
		}
	}
	for _, c := range []struct {
		shape []int
		n     int
	}{{nil, 0}, {[]int{}, 1}, {[]int{2, 0, 3}, 0}, {[]int{-1, 2}, 2}, {[]int{2, 3}, 5}, {[]int{1 << 62, 1 << 62}, 1}} {
		if err := WriteArray(&bytes.Buffer{}, c.shape, make([]float64, c.n)); err == nil {
			t.Errorf("shape %v with %d values: written", c.shape, c.n)
		}
	}
}
