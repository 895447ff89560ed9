package tensor_test

import (
	"math/rand/v2"
	"testing"

	"github.com/bespoke-hpc/bespoke/fem"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/pass"
	"github.com/bespoke-hpc/bespoke/kernel/tensor"
	"github.com/bespoke-hpc/bespoke/verify"
)

// named are the variants only of the operator at the orders given (fp64,
// and fp32 up to order f32Up), built whether or not Candidates offers
// them there, on the batch of cases.
func named(t *testing.T, op fem.Kernel, orders []int, f32Up int, only []string) []verify.Case {
	t.Helper()
	rng := rand.New(rand.NewPCG(41, 42))
	var out []verify.Case
	for _, n := range orders {
		for _, dt := range []kernel.DType{kernel.F64, kernel.F32} {
			if dt == kernel.F32 && n > f32Up {
				continue
			}
			p, err := tensor.New(op, n, 0.7, dt)
			if err != nil {
				t.Fatal(err)
			}
			ins, err := p.Checks(7)
			if err != nil {
				t.Fatal(err)
			}
			cs, err := verify.Cases(rng, ins, gpu, only)
			if err != nil {
				t.Fatal(err)
			}
			if len(cs) != len(only) {
				t.Fatalf("%s N=%d: %d of %d variants", op, n, len(cs), len(only))
			}
			out = append(out, cs...)
		}
	}
	return out
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
	n := 0
	for _, c := range cs {
		for _, lowered := range []bool{false, true} {
			if lowered {
				h, err := pass.HostLoops(c.Kernel)
				if err != nil {
					t.Fatal(err)
				}
				c.Kernel = h
			}
			res, err := verify.Interpret(c)
			if err != nil || !res.OK() {
				t.Fatalf("%s %s (lowered %v): %+v, %v", c.Label, c.Kernel.Variant, lowered, res, err)
			}
			n++
		}
	}
	t.Logf("%d kernels interpreted", n)
}
