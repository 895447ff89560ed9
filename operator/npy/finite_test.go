package npy

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

// The writer refuses NaN and infinities (the reader does too) and writes
// nothing then.
func TestWriteRefusesNonFinite(t *testing.T) {
	for _, x := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		var b bytes.Buffer
		err := WriteMatrix(&b, 2, 2, []float64{1, 2, x, 4})
		if err == nil || !strings.Contains(err.Error(), "index 2") || b.Len() != 0 {
			t.Errorf("%g: err %v, %d bytes written", x, err, b.Len())
		}
		if err := WriteArray(&b, []int{1, 2, 2}, []float64{1, 2, 3, x}); err == nil || b.Len() != 0 {
			t.Errorf("%g: WriteArray err %v, %d bytes written", x, err, b.Len())
		}
	}
	if i := NonFinite([]float64{0, math.MaxFloat64, -1}); i != -1 {
		t.Errorf("NonFinite of finite values = %d", i)
	}
}
