//go:build probe

package baseline

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestSpMMProbe runs one configuration without the alignment guard, from
// BASELINE_PROBE="alg,dtype,n,ldb,ldc" (e.g. "12,8,5001,5002,5002"); run it
// in a process of its own (a probe, not a check: go test -tags probe).
func TestSpMMProbe(t *testing.T) {
	spec := os.Getenv("BASELINE_PROBE")
	if spec == "" {
		t.Fatal("set BASELINE_PROBE")
	}
	var v [5]int
	for i, f := range strings.Split(spec, ",") {
		v[i], _ = strconv.Atoi(f)
	}
	guardAlignment = false
	defer func() { guardAlignment = true }()
	d, bl, sp := libs(t)
	tc := testCase{name: "probe_" + spec, m: 96, k: 64, n: v[2], ldb: v[3], ldc: v[4], density: 0.3}
	runCase(t, d, bl, sp, tc, v[1], []SpMMAlg{SpMMAlg(v[0])})
}
