package conformance

import (
	"fmt"
	"testing"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/kernel/contract"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/verify"
)

// The contraction family's part of the suite: D applied along each axis of
// a batch of Q³ arrays, with barriers inside loops, shared slabs and
// register pencils.

// contractQs are the points per axis checked: the smallest, an odd one, a
// power of two, and the largest slab of 16×16 threads.
var contractQs = []int{2, 3, 8, 16}

// RunContract checks every contraction variant, along every axis, in both
// precisions, on a batch of 37 elements (no variant's block count divides
// it).
func RunContract(t *testing.T, dev device.Device) {
	rng := testenv.Rand(t)
	qs := contractQs
	if testing.Short() {
		qs = []int{3, 8}
		shortNote(t, "Q = 3 and 8 (an odd one and a power of two) of 2, 3, 8, 16")
	}
	var cases []verify.Case
	for _, q := range qs {
		for axis := contract.Axis(0); axis < 3; axis++ {
			for _, dt := range DTypes {
				p, err := contract.Derivative(q, axis, dt)
				if err != nil {
					t.Fatal(err)
				}
				ins, err := p.Checks(37)
				if err != nil {
					t.Fatal(err)
				}
				cs, err := verify.Cases(rng, ins, family.Target{GPU: true}, nil)
				if err != nil {
					t.Fatal(fmt.Errorf("%s: %w", p.Label(), err))
				}
				cases = append(cases, cs...)
			}
		}
	}
	total := Check(t, dev, cases)
	t.Logf("%d contraction kernels verified on %s%s", total, dev.Info().Name, shardNote())
}
