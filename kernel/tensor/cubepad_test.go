package tensor_test

import (
	"os"
	"testing"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/device/opencl"
	"github.com/bespoke-hpc/bespoke/fem"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/verify"
)

// padded are cube layouts whose s padCube lays out anew (several
// elements a block among them, the last block part empty at 7
// elements), with the threads' roles as written and swapped in the
// stages along x, along y and both, mostly at the orders the profiles
// found bound by shared memory.
var padded = []struct {
	op     fem.Kernel
	orders []int
	f32Up  int
	only   []string
	short  bool // run by -short on a compiled backend
}{
	{fem.BK1, []int{1}, 1, []string{"cube-lit/e4", "cube/e2"}, true},
	{fem.BK1, []int{3}, 0, []string{"cube-lit/e4"}, true},  // x and y swapped
	{fem.BK1, []int{4}, 0, []string{"cube-lit/e4"}, false}, // y swapped
	{fem.BK1, []int{8}, 0, []string{"cube-fold/e1"}, false},
	{fem.BK3, []int{1}, 1, []string{"cube-lit/e4", "cube/e2"}, true},
	{fem.BK3, []int{3}, 0, []string{"cube-lit/e2"}, false},
	{fem.BK3, []int{4}, 0, []string{"cube-fold2/e2"}, false},
	{fem.BK3, []int{5}, 0, []string{"cube-pair/e1"}, true},
	{fem.BK3, []int{5}, 0, []string{"cube-pair/e4"}, false}, // x swapped
	{fem.BK3, []int{7}, 0, []string{"cube-pair/e2"}, false},
}

// paddedCases are the cases of padded (short: those marked), each
// checked to declare s padded (two dimensions: element, words).
func paddedCases(t *testing.T, short bool) []verify.Case {
	var cs []verify.Case
	for _, p := range padded {
		if short && !p.short {
			continue
		}
		cs = append(cs, named(t, p.op, p.orders, p.f32Up, p.only)...)
	}
	for _, c := range cs {
		if len(c.Kernel.Shared[0].Dims) != 2 {
			t.Fatalf("%s %s: s declared %v: not laid out anew", c.Label, c.Kernel.Variant, c.Kernel.Shared[0].Dims)
		}
	}
	return cs
}

// The padded layouts in the interpreter, as written and as lowered.
func TestCubePaddedInterpret(t *testing.T) {
	t.Logf("%d kernels interpreted", interpretAll(t, paddedCases(t, false)))
}

// The padded layouts compiled by the C backend.
func TestCubePaddedHost(t *testing.T) {
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	runPadded(t, dev)
}

// The padded layouts on the OpenCL device BESPOKE_OPENCL_DEVICE selects.
func TestCubePaddedOpenCL(t *testing.T) {
	if os.Getenv("POCL_WORK_GROUP_METHOD") == "" {
		os.Setenv("POCL_WORK_GROUP_METHOD", "auto") // faster builds; see conformance.TestOpenCL
	}
	dev, err := opencl.Open(os.Getenv("BESPOKE_OPENCL_DEVICE"))
	if err != nil {
		testenv.Unavailable(t, "opencl", err)
	}
	defer dev.Close()
	runPadded(t, dev)
}

func runPadded(t *testing.T, dev device.Device) {
	cs := paddedCases(t, testing.Short())
	for i, o := range verify.RunBatch(dev, cs) {
		if o.Err != nil || !o.Result.OK() {
			t.Errorf("%s %s: %+v, %v", cs[i].Label, cs[i].Kernel.Variant, o.Result, o.Err)
		}
	}
	t.Logf("%d kernels verified on %s", len(cs), dev.Info().Name)
}
