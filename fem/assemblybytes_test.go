package fem

import (
	"runtime"
	"testing"
)

// AssemblyBytes must not exceed what NewAssembly allocates: a caller
// refuses sizes by it.
func TestAssemblyBytesIsALowerBound(t *testing.T) {
	for _, tc := range []struct {
		k       Kernel
		n, side int
	}{{BK5, 1, 6}, {BK5, 3, 4}, {BK3, 1, 5}, {BK3, 4, 3}} {
		b, err := NewBasis(tc.k, tc.n)
		if err != nil {
			t.Fatal(err)
		}
		m, err := NewMesh(tc.side, tc.side, tc.side, 0)
		if err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		a, err := NewAssembly(b, m, 1)
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		got, bound := int64(after.TotalAlloc-before.TotalAlloc), AssemblyBytes(b, tc.side, tc.side, tc.side)
		if bound > got || bound < got/4 {
			t.Errorf("%s N=%d on %d³: bound %d bytes, NewAssembly allocated %d", tc.k, tc.n, tc.side, bound, got)
		}
		runtime.KeepAlive(a)
	}
}
