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
