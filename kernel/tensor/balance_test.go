package tensor_test

import (
	"os"
	"testing"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/device/opencl"
	"github.com/bespoke-hpc/bespoke/fem"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/kernel/tensor"
	"github.com/bespoke-hpc/bespoke/verify"
)

// balanceCases are the layouts of balance.go at the orders given (a
// batch of 7 elements that leaves the last block of e2 part empty): the
// interpreter runs every order, compiled backends (whose compilers take
// seconds a kernel at high N on this VM) those of compiled, in fp64 and,
// to f32Up, fp32.
var balanceCases = []struct {
	op       fem.Kernel
	orders   []int
	compiled []int
	f32Up    int
	only     []string
}{
	{fem.BK5, []int{1, 2, 3, 4, 5, 6, 7, 8}, []int{2, 7}, 8, []string{"slab2/e1", "slab2/e2"}},
	{fem.BK5, []int{9, 10, 11, 12, 13, 14, 15}, []int{12}, 12, []string{"slab2/e1"}},
	{fem.BK5, []int{2, 11, 12, 13, 14, 15}, []int{11}, 12, []string{"pair-cap/e1"}},
	{fem.BK3, []int{4, 5, 6, 7, 8}, []int{4, 7}, 8, []string{"cube-fold2/e1", "cube-fold2/e2"}},
	{fem.BK3, []int{9, 10, 11, 12, 13, 14, 15}, []int{10}, 10, []string{"cube-fold2/e1"}},
}

// balance are the cases at every order, or (compiled) at the compiled
// ones; short: the first of them, and on a compiled backend the lowest
// order of each layout (a compiler takes seconds a kernel at high N).
func balance(t *testing.T, compiled, short bool) []verify.Case {
	var cs []verify.Case
	for _, b := range balanceCases {
		orders := b.orders
		if compiled {
			orders = b.compiled
		}
		switch {
		case short && compiled && b.orders[0] > 8:
			continue // the same layout at a low order is another case
		case short && compiled:
			orders = b.orders[:1]
		case short:
			orders = orders[:1]
		}
		cs = append(cs, named(t, b.op, orders, b.f32Up, b.only)...)
	}
	return cs
}

// The double-buffered and register-capped layouts in the interpreter, as
// written and as lowered for the host, against the float64 reference on
// the perturbed mesh.
func TestInterpretBalance(t *testing.T) {
	n := interpretAll(t, balance(t, false, testing.Short()))
	t.Logf("%d kernels interpreted", n)
}

// The same layouts compiled by the C backend.
func TestHostBalance(t *testing.T) {
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	runBalance(t, dev)
}

// The same layouts on the OpenCL device BESPOKE_OPENCL_DEVICE selects
// (PoCL here).
func TestOpenCLBalance(t *testing.T) {
	if os.Getenv("POCL_WORK_GROUP_METHOD") == "" {
		os.Setenv("POCL_WORK_GROUP_METHOD", "auto") // faster builds; see conformance.TestOpenCL
	}
	dev, err := opencl.Open(os.Getenv("BESPOKE_OPENCL_DEVICE"))
	if err != nil {
		testenv.Unavailable(t, "opencl", err)
	}
	defer dev.Close()
	runBalance(t, dev)
}

func runBalance(t *testing.T, dev device.Device) {
	cs := balance(t, true, testing.Short())
	for i, o := range verify.RunBatch(dev, cs) {
		if o.Err != nil || !o.Result.OK() {
			t.Errorf("%s %s: %+v, %v", cs[i].Label, cs[i].Kernel.Variant, o.Result, o.Err)
		}
	}
	t.Logf("%d kernels verified on %s", len(cs), dev.Info().Name)
}

// Where the layouts are offered, what they declare, and what they refuse.
func TestBalanceCandidates(t *testing.T) {
	cuda := family.Target{GPU: true, MinBlocks: true, CUDAArch: 90}
	cl := family.Target{GPU: true}
	for _, c := range []struct {
		op     fem.Kernel
		n      int
		target family.Target
		want   string
		offer  bool
	}{
		{fem.BK5, 1, cuda, "slab2/e1", false},
		{fem.BK5, 2, cuda, "slab2/e2", true},
		{fem.BK5, 15, cuda, "slab2/e1", true},
		{fem.BK5, 11, cuda, "pair-cap/e1", false},
		{fem.BK5, 12, cuda, "pair-cap/e1", true},
		{fem.BK5, 12, cl, "pair-cap/e1", false}, // no register cap there: it would be pair
		{fem.BK3, 3, cuda, "cube-fold2/e1", false},
		{fem.BK3, 4, cuda, "cube-fold2/e1", true},
		{fem.BK3, 9, cuda, "cube-fold2/e1", true},
		{fem.BK1, 9, cuda, "cube-fold2/e1", false},
	} {
		in := timedF64(t, c.op, c.n, 1000)
		got := false
		for _, cand := range in.Candidates(c.target) {
			got = got || cand.Name() == c.want
		}
		if got != c.offer {
			t.Errorf("%s N=%d %+v: %s offered %v, want %v", c.op, c.n, c.target, c.want, got, c.offer)
		}
	}
	// pair-cap asks for enough blocks that a thread keeps at most 168
	// registers: N = 12, 13×7 threads (3 warps): 4 blocks.
	p, _ := tensor.New(fem.BK5, 12, 1, kernel.F64)
	in, _ := p.Timed(1000)
	k, err := in.Build(tensor.Variant{Kind: "pair-cap", PerBlock: 1})
	if err != nil {
		t.Fatal(err)
	}
	if k.Hints.MinBlocksPerUnit != 4 {
		t.Errorf("pair-cap N=12: %d blocks per SM, want 4", k.Hints.MinBlocksPerUnit)
	}
	// slab2 has one barrier per layer (and one for D, one after the last).
	k, err = in.Build(tensor.Variant{Kind: "slab2", PerBlock: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := barriers(k.Body); got != 13+2 {
		t.Errorf("slab2 N=12: %d barriers, want 15", got)
	}
	p3, _ := tensor.New(fem.BK3, 3, 1, kernel.F64)
	in3, _ := p3.Timed(5)
	if err := in3.Check(tensor.Variant{Kind: "cube-fold2", PerBlock: 1}); err == nil {
		t.Error("BK3 N=3 (Q = 5) took cube-fold2's six slabs")
	}
	for _, name := range []string{"slab2/e2", "cube-fold2/e1", "pair-cap/e4"} {
		if v, err := tensor.ParseVariant(name); err != nil || v.Name() != name {
			t.Errorf("%s parsed as %v, %v", name, v, err)
		}
	}
}

// barriers counts the barriers of a body, into ifs and loops.
func barriers(ss []kernel.Stmt) int {
	n := 0
	for _, s := range ss {
		switch s := s.(type) {
		case kernel.Barrier:
			n++
		case kernel.If:
			n += barriers(s.Then) + barriers(s.Else)
		case kernel.For:
			n += barriers(s.Body)
		}
	}
	return n
}
