package bench

import (
	"strings"
	"testing"
)

// A run whose roof measurements spread past 20 % below the best says so.
func TestRoofUnstable(t *testing.T) {
	for _, tc := range []struct {
		samples []float64
		warn    bool
	}{
		{nil, false},
		{[]float64{40}, false},
		{[]float64{40, 39, 41, 40.5}, false},
		{[]float64{40, 33, 41}, false}, // 80.5 % of the best
		{[]float64{26, 44, 42}, true},  // the 2× seen between commands
		{[]float64{44, 10}, true},
	} {
		w := roofUnstable(tc.samples)
		if (w != "") != tc.warn || (tc.warn && !strings.Contains(w, "quiet machine")) {
			t.Errorf("%v: warning %q, want one: %v", tc.samples, w, tc.warn)
		}
	}
}
