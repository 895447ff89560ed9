package sparse

import (
	"math/rand/v2"
	"testing"

	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
)

// TestFillUnits: resident tensor-core variants take fewer tiles a block
// where the columns would leave multiprocessors idle, and only there.
func TestFillUnits(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 1))
	op := randomDense(t, rng, 56, 168, func(int, int) bool { return false })
	for _, tc := range []struct {
		name       string
		dt         kernel.DType
		n, units   int
		wantLowers bool
	}{
		{"fp64 PyFR-sized", kernel.F64, 122880, 132, true},
		{"fp64 a million columns", kernel.F64, 1 << 20, 132, false},
		{"fp64 units unknown", kernel.F64, 122880, 0, false},
		{"fp32 PyFR-sized", kernel.F32, 122880, 132, true},
		{"fp64 tiny", kernel.F64, 64, 132, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pb := Problem{Op: op, DType: tc.dt, Alpha: 1, LDB: tc.n, LDC: tc.n}
			in := &Instance{Problem: pb, N: tc.n, LDB: tc.n, LDC: tc.n}
			cs := in.Candidates(family.Target{GPU: true, MinBlocks: true, CUDAArch: 90, Units: tc.units})
			lowered, seen := 0, map[string]bool{}
			for _, c := range cs {
				if seen[c.Name()] {
					t.Errorf("%s listed twice", c.Name())
				}
				seen[c.Name()] = true
				var cols, groups, block int
				switch v := c.(type) {
				case MMAParams:
					if v.Block == 0 {
						continue
					}
					l := v.dmmaLayout(pb)
					cols, groups, block = l.cols, max(l.groups, 1), v.Block
				case WGMMAParams:
					l := v.wgmmaLayout(pb)
					cols, groups, block = l.cols, max(l.groups, 1), v.Block
				default:
					continue
				}
				if err := pb.Check(c.(Variant)); err != nil {
					t.Errorf("%s offered but: %v", c.Name(), err)
				}
				if block < dmmaTiles {
					lowered++
				}
				tiles := (tc.n + cols - 1) / cols
				blocks := (tiles + block - 1) / block * groups
				if tc.units > 0 && block > 1 && blocks < fillBlocksPerUnit*tc.units {
					t.Errorf("%s: %d blocks for %d multiprocessors", c.Name(), blocks, tc.units)
				}
			}
			if got := lowered > 0; got != tc.wantLowers {
				t.Errorf("%d variants with fewer than %d tiles a block; want some: %v", lowered, dmmaTiles, tc.wantLowers)
			}
		})
	}
}
