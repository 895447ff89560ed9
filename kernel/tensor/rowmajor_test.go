package tensor_test

import (
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/fem"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/kernel/tensor"
)

// The cube layouts' row-major twins (/rm): named and parsed back, offered
// beside padCube's layout where a CUDA tuner measures (not to the
// interpreter's or OpenCL's GPU target), refused for other layouts, and
// built with s as written.
func TestRowMajorTwins(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"cube-fold/e1/rm", true}, {"cube-lit/e4/rm/tri", true}, {"cube/e2/rm/aff", true},
		{"cube/e2/aff/rm", false}, {"cube/rm/e2", false},
	} {
		v, err := tensor.ParseVariant(tc.name)
		if (err == nil) != tc.ok || (tc.ok && v.Name() != tc.name) {
			t.Errorf("%s: parsed as %v, %v", tc.name, v, err)
		}
	}
	p, err := tensor.New(fem.BK1, 12, 1, kernel.F64)
	if err != nil {
		t.Fatal(err)
	}
	in, err := p.Timed(64)
	if err != nil {
		t.Fatal(err)
	}
	count := func(tg family.Target) (twins, cubes int) {
		for _, c := range in.Candidates(tg) {
			if strings.Contains(c.Name(), "/rm") {
				twins++
			} else if strings.HasPrefix(c.Name(), "cube") && !strings.Contains(c.Name(), "/tri") && !strings.Contains(c.Name(), "/aff") {
				cubes++
			}
		}
		return twins, cubes
	}
	if twins, cubes := count(family.Target{GPU: true, MinBlocks: true, CUDAArch: 90}); twins != cubes || twins == 0 {
		t.Errorf("CUDA: %d row-major twins of %d stored-factor cube layouts", twins, cubes)
	}
	if twins, _ := count(family.Target{GPU: true}); twins != 0 {
		t.Errorf("a GPU target without CUDA got %d twins", twins)
	}
	p5, _ := tensor.New(fem.BK5, 6, 1, kernel.F64)
	in5, _ := p5.Timed(64)
	if err := in5.Check(tensor.Variant{Kind: "pair", PerBlock: 1, RowMajor: true}); err == nil {
		t.Error("pair/e1/rm accepted")
	}
	// The twin declares s as written: Q×Q×(Q|1) an element.
	k, err := in.Build(tensor.Variant{Kind: "cube-fold", PerBlock: 1, RowMajor: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(k.Shared) == 0 || k.Shared[0].Name != "s" || len(k.Shared[0].Dims) != 4 || k.Shared[0].Dims[3] != 15 {
		t.Errorf("cube-fold/e1/rm at N = 12: s is %+v, want [1 14 14 15]", k.Shared)
	}
}
