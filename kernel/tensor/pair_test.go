package tensor_test

import (
	"testing"

	"github.com/bespoke-hpc/bespoke/fem"
	"github.com/bespoke-hpc/bespoke/verify"
)

// named are casesOf the GPU target.
func named(t *testing.T, op fem.Kernel, orders []int, f32Up int, only []string) []verify.Case {
	t.Helper()
	return casesOf(t, op, orders, f32Up, gpu, only)
}

// The pair and folded layouts in the interpreter, as written and as
// lowered for the host, at odd and even points per direction (the middle
// row of an odd one owned twice).
func TestInterpretPair(t *testing.T) {
	var cs []verify.Case
	cs = append(cs, named(t, fem.BK5, []int{2, 3, 4}, 3, []string{"pair/e1", "pair/e2", "pair/e4"})...)
	cs = append(cs, named(t, fem.BK5, []int{5, 6, 7, 8, 9}, 6, []string{"pair/e1", "pair/e2"})...)
	cs = append(cs, named(t, fem.BK1, []int{1, 2, 3, 4, 5, 6}, 3, []string{"cube-fold/e1", "cube-pair/e1", "cube-pair/e2"})...)
	cs = append(cs, named(t, fem.BK1, []int{7, 8, 9}, 0, []string{"cube-fold/e1", "cube-pair/e1"})...)
	cs = append(cs, named(t, fem.BK3, []int{1, 2, 3, 4}, 3, []string{"cube-fold/e1", "cube-pair/e1", "cube-pair/e2"})...)
	cs = append(cs, named(t, fem.BK3, []int{5, 6, 7, 8}, 5, []string{"cube-fold/e1", "cube-pair/e1"})...)
	n := interpretAll(t, cs)
	t.Logf("%d kernels interpreted", n)
}
