package operator

import (
	"math/rand"
	"testing"
)

// NNZ counts what Analyze counts, on random operators with zeros,
// negative zeros and tiny values among their entries.
func TestNNZMatchesAnalyze(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for _, tc := range []struct{ rows, cols int }{{1, 1}, {3, 7}, {84, 252}, {17, 1}} {
		data := make([]float64, tc.rows*tc.cols)
		for i := range data {
			switch rng.Intn(4) {
			case 0:
				data[i] = 0
			case 1:
				data[i] = -0.0 * rng.Float64()
			case 2:
				data[i] = 1e-300 * rng.Float64()
			default:
				data[i] = rng.NormFloat64()
			}
		}
		data[0] = 1
		op := &Operator{Rows: tc.rows, Cols: tc.cols, Data: data}
		if got, want := op.NNZ(), Analyze(op).NNZ; got != want {
			t.Errorf("%d×%d: NNZ() = %d, Analyze = %d", tc.rows, tc.cols, got, want)
		}
	}
}
