package bench_test

import (
	"math"
	"testing"

	"github.com/bespoke-hpc/bespoke/bench"
	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/fem"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/kernel/tensor"
)

// A candidate that computes its geometry is measured against its own
// traffic (family.CandidateBytes), not the stored factors': its GB/s and
// fraction of the roof use the bytes it moves.
func TestCandidateBytes(t *testing.T) {
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	box, err := fem.NewMesh(2, 2, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		k        fem.Kernel
		mesh     *fem.Mesh // nil: the built-in perturbed box
		variants []string
	}{
		{"perturbed", fem.BK5, nil, []string{"cpu/e1", "cpu/e1/tri"}},
		{"cartesian", fem.BK1, box, []string{"cpu/e1", "cpu/e1/tri", "cpu/e1/aff"}},
	} {
		t.Run(tc.name, func(t *testing.T) { candidateBytes(t, dev, tc.k, tc.mesh, tc.variants) })
	}
}

func candidateBytes(t *testing.T, dev *host.Device, k fem.Kernel, mesh *fem.Mesh, variants []string) {
	p, err := tensor.New(k, 2, 1, kernel.F64)
	if err != nil {
		t.Fatal(err)
	}
	if mesh != nil {
		if p, err = p.WithMesh(mesh, "box"); err != nil {
			t.Fatal(err)
		}
	}
	const units = 512
	cfg := bench.Config{Units: units, Reps: 3, Warmup: 1, WorkingSet: 1 << 20, MaxMemory: 64 << 20, Variants: variants}
	rep, err := bench.Run(dev, []family.Problem{p}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	in, err := p.Timed(units)
	if err != nil {
		t.Fatal(err)
	}
	o := rep.Problems[0]
	if len(o.Candidates) != len(variants) {
		t.Fatalf("%d candidates, want %d", len(o.Candidates), len(variants))
	}
	for _, c := range o.Candidates {
		v, err := in.Variant(c.Name)
		if err != nil {
			t.Fatal(err)
		}
		want := in.(family.CandidateBytes).CandidateBytes(v)
		if !c.Verified || c.Timing.Median <= 0 {
			t.Fatalf("%s: not verified and timed: %s", c.Name, c.Err)
		}
		gbs := float64(want) / c.Timing.Median.Seconds() / 1e9
		roof := gbs / rep.RoofGBs
		if math.Abs(c.GBs-gbs) > 1e-9*gbs || math.Abs(c.RoofFrac-roof) > 1e-2*roof {
			t.Errorf("%s: %.4g GB/s, %.4g of the roof; want %.4g, %.4g (%d bytes a launch)", c.Name, c.GBs, c.RoofFrac, gbs, roof, want)
		}
		if stored := c.Name == "cpu/e1"; stored != (want == o.IdealBytes) || stored != (c.Bytes == 0) {
			t.Errorf("%s: %d bytes (recorded %d), the problem's %d", c.Name, want, c.Bytes, o.IdealBytes)
		}
	}
}
