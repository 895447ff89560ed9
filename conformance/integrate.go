package conformance

import (
	"fmt"
	"testing"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/element"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/kernel/integrate"
	"github.com/bespoke-hpc/bespoke/verify"
)

// The integration family's part of the suite: element matrices (and load
// vectors) of jittered tet, prism and hex meshes against element's
// float64 reference — barriers inside the element loop, inputs staged in
// local memory, element-major outputs flushed through it, chunks wholly
// past the batch.

// integrateSetups are a coefficient pattern and an output format each:
// every pattern, every storage and layout, the load vector.
var integrateSetups = []struct {
	op   element.Problem
	opts integrate.Options
}{
	{element.Laplace, integrate.Options{K: 1.5}},
	{element.Laplace, integrate.Options{Upper: true, ElemMajor: true}},
	{element.Mass, integrate.Options{ElemMajor: true}},
	{element.CDR, integrate.Options{Load: true}},
	{element.CDR, integrate.Options{Symmetric: true, Upper: true, Load: true, ElemMajor: true}},
}

// integrateVariants are the GPU and CPU candidates, each taken in turn:
// every kind × setup × precision gets the next two that apply, so that
// each variant is built several times across kinds and setups (every
// candidate of every problem is some 300 kernels, minutes on two cores).
func integrateVariants() []string {
	var names []string
	seen := map[string]bool{}
	for _, gpu := range []bool{true, false} {
		for _, kind := range element.Kinds { // the prism's own variants too
			p, _ := integrate.New(kind, element.Laplace, kernel.F64, integrate.Options{})
			in, _ := p.Instance(1)
			for _, c := range in.Candidates(family.Target{GPU: gpu}) {
				if n := c.(integrate.Variant).Name(); !seen[n] {
					seen[n] = true
					names = append(names, n)
				}
			}
		}
	}
	return names
}

// RunIntegrate checks the integration family on a batch of 37 elements
// (no work-group × elements per work-item of any variant divides it, and
// w64/e2's second chunk lies wholly past it).
func RunIntegrate(t *testing.T, dev device.Device) {
	rng := testenv.Rand(t)
	names := integrateVariants()
	next := 0
	// Two variants per problem on GPUs; one, in fp64, on CPU backends,
	// whose compilers take seconds a kernel (kernel/integrate's tests
	// check both precisions on C and PoCL).
	per, dts := 2, DTypes
	if !dev.Info().GPU {
		per, dts = 1, []kernel.DType{kernel.F64}
	}
	shortNote(t, "each setup on one element kind, the kinds in turn")
	var cases []verify.Case
	for ki, kind := range element.Kinds {
		for si, s := range integrateSetups {
			if testing.Short() && si%len(element.Kinds) != ki {
				continue
			}
			for _, dt := range dts {
				p, err := integrate.New(kind, s.op, dt, s.opts)
				if err != nil {
					t.Fatal(err)
				}
				ins, err := p.Checks(37)
				if err != nil {
					t.Fatal(err)
				}
				var only []string
				for tries := 0; len(only) < per && tries < len(names); tries++ {
					name := names[next%len(names)]
					next++
					if v, _ := integrate.ParseVariant(name); ins[0].Check(v) == nil {
						only = append(only, name)
					}
				}
				cs, err := verify.Cases(rng, ins, family.Target{GPU: true}, only)
				if err != nil {
					t.Fatal(fmt.Errorf("%s: %w", p.Label(), err))
				}
				cases = append(cases, cs...)
			}
		}
	}
	total := Check(t, dev, cases)
	t.Logf("%d integration kernels verified on %s%s", total, dev.Info().Name, shardNote())
}
