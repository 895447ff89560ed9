package tensor_test

import (
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/fem"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/kernel/pass"
	"github.com/bespoke-hpc/bespoke/kernel/tensor"
	"github.com/bespoke-hpc/bespoke/verify"
)

// cases are every candidate for target of the operator at the orders
// given, in fp64 and (up to order f32Up) fp32, on a batch (7 elements)
// that does not fill the last block of the several-element layouts; data
// on a real perturbed mesh, checked against fem's float64 reference.
func cases(t *testing.T, op fem.Kernel, orders []int, f32Up int, target family.Target) []verify.Case {
	t.Helper()
	return casesOf(t, op, orders, f32Up, target, nil)
}

// casesOf is cases restricted to the named variants (nil: every
// candidate with stored factors), each built whether or not Candidates
// offers it there.
func casesOf(t *testing.T, op fem.Kernel, orders []int, f32Up int, target family.Target, only []string) []verify.Case {
	t.Helper()
	rng := rand.New(rand.NewPCG(31, 32))
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
			names := only
			if names == nil {
				// The stored factors: geom_test.go checks the layouts
				// that compute them.
				for _, c := range ins[0].Candidates(target) {
					if c.(tensor.Variant).Geo == tensor.Stored {
						names = append(names, c.Name())
					}
				}
			}
			cs, err := verify.Cases(rng, ins, target, names)
			if err != nil {
				t.Fatal(err)
			}
			if len(cs) == 0 || (only != nil && len(cs) != len(only)) {
				t.Fatalf("%s N=%d: %d candidates (named %v)", op, n, len(cs), only)
			}
			out = append(out, cs...)
		}
	}
	return out
}

// interpretAll runs every case in the interpreter, as written and as
// lowered for the host, and returns how many kernels ran.
func interpretAll(t *testing.T, cs []verify.Case) int {
	t.Helper()
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
	return n
}

// newKinds names, for op, the first GPU layout (by element count) of each
// kind offered at order hi but not at order lo.
func newKinds(t *testing.T, op fem.Kernel, lo, hi int) []string {
	t.Helper()
	kinds := func(n int) map[string]string {
		p, err := tensor.New(op, n, 0.7, kernel.F64)
		if err != nil {
			t.Fatal(err)
		}
		in, err := p.Timed(7)
		if err != nil {
			t.Fatal(err)
		}
		first := map[string]string{}
		for _, c := range in.Candidates(gpu) {
			kind, _, _ := strings.Cut(c.Name(), "/")
			if _, ok := first[kind]; !ok {
				first[kind] = c.Name()
			}
		}
		return first
	}
	old := kinds(lo)
	var names []string
	for kind, name := range kinds(hi) {
		if _, ok := old[kind]; !ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// gpu is the target of the GPU layouts (cpu_test.go checks the CPU ones).
var gpu = family.Target{GPU: true}

// In the interpreter, as written for a GPU and as lowered for the host.
func TestInterpret(t *testing.T) {
	var cs []verify.Case
	cs = append(cs, cases(t, fem.BK5, []int{1, 2, 3, 5}, 5, gpu)...)
	cs = append(cs, cases(t, fem.BK1, []int{1, 2, 4}, 2, gpu)...)
	cs = append(cs, cases(t, fem.BK3, []int{1, 2, 3}, 2, gpu)...)
	n := interpretAll(t, cs)
	t.Logf("%d kernels interpreted", n)
}

// The GPU layouts compiled by the C backend at N = 1, 3, 7 (fp32 at N = 1).
func TestHost(t *testing.T) {
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	// The GPU layouts at an order of each size class (N = 7 has every
	// kind, pair and the folds included); the interpreter checks more
	// orders, TestCPUHost the CPU layout at every order to 8.
	all := []int{1, 3, 7}
	var cs []verify.Case
	for _, op := range fem.Kernels {
		if testing.Short() {
			// Every layout at N = 1, and at N = 7 one of each kind
			// that only large orders have (the folds, pairs).
			cs = append(cs, cases(t, op, []int{1}, 1, gpu)...)
			if only := newKinds(t, op, 1, 7); len(only) > 0 {
				cs = append(cs, casesOf(t, op, []int{7}, 0, gpu, only)...)
			}
			continue
		}
		cs = append(cs, cases(t, op, all, 1, gpu)...)
	}
	if testing.Short() {
		t.Log("-short: every layout at N = 1, the folds and pairs at N = 7; without -short every layout at N = 1, 3, 7 (CI)")
	}
	for i, o := range verify.RunBatch(dev, cs) {
		if o.Err != nil || !o.Result.OK() {
			t.Errorf("%s %s: %+v, %v", cs[i].Label, cs[i].Kernel.Variant, o.Result, o.Err)
		}
	}
	t.Logf("%d kernels verified on %s", len(cs), dev.Info().Name)
}

func TestErrors(t *testing.T) {
	if _, err := tensor.New(fem.BK3, 3, math.NaN(), kernel.F64); err == nil {
		t.Error("λ = NaN accepted")
	}
	if _, err := tensor.New(fem.BK5, 0, 0, kernel.F64); err == nil {
		t.Error("order 0 accepted")
	}
	p, _ := tensor.New(fem.BK5, 3, 1, kernel.F64)
	if _, err := p.Timed(0); err == nil {
		t.Error("0 elements accepted")
	}
	in, _ := p.Timed(5)
	if _, err := in.Variant("slab/x2"); err == nil {
		t.Error("a bad variant name parsed")
	}
	if err := in.Check(tensor.Variant{Kind: "slab", PerBlock: 100}); err == nil {
		t.Error("100 elements of 16 threads fit a block?")
	}
	if err := in.Check(tensor.Variant{Kind: "slab", PerBlock: 1 << 60}); err == nil {
		t.Error("2^60 elements per block accepted (the product wraps)")
	}
	if err := in.Check(tensor.Variant{Kind: "cube", PerBlock: 1}); err == nil {
		t.Error("BK5 took BK1's layout")
	}
	p3, _ := tensor.New(fem.BK3, 15, 1, kernel.F64)
	in3, _ := p3.Timed(5)
	if err := in3.Check(tensor.Variant{Kind: "cube", PerBlock: 2}); err == nil {
		t.Error("two N = 15 elements fit 48 KiB of shared memory?")
	}
	if err := in3.Check(tensor.Variant{Kind: "cube", PerBlock: 1}); err != nil {
		t.Errorf("one N = 15 element: %v", err)
	}
}

// timedF64 is op's fp64 instance at order n (λ = 1) on elems elements, as
// the tests that inspect one layout's kernel build it.
func timedF64(t *testing.T, op fem.Kernel, n, elems int) family.Instance {
	t.Helper()
	p, err := tensor.New(op, n, 1, kernel.F64)
	if err != nil {
		t.Fatal(err)
	}
	in, err := p.Timed(elems)
	if err != nil {
		t.Fatal(err)
	}
	return in
}
