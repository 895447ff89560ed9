package serve

import (
	"slices"
	"testing"

	"github.com/bespoke-hpc/bespoke/kernel"
)

// The kernels the model does not rank come newest architecture first,
// their block sizes taking turns, largest first, each in the given order;
// the modelled ones by predicted time, each strategy's best first, the two
// kinds alternating, or three tensor-core kernels to one modelled where
// the model's best is predicted over twice the roof's time (1e-4 s here).
func TestOrder(t *testing.T) {
	mk := func(name string, arch, threads int, predicted float64) pending {
		k := &kernel.Kernel{}
		k.Hints.MinArch, k.Launch.Block = arch, [3]int{threads, 1, 1}
		return pending{k: k, cand: Candidate{Name: name, PredictedS: predicted, Modelled: predicted > 0}}
	}
	for _, tc := range []struct {
		name string
		in   []pending
		want []string
	}{
		{"block sizes in turn", []pending{
			mk("x2-a", 90, 192, 0), mk("x2-b", 90, 192, 0), mk("x4-a", 90, 384, 0), mk("x4-b", 90, 384, 0),
			mk("x1-a", 90, 96, 0), mk("old-a", 80, 384, 0), mk("old-b", 80, 192, 0),
		}, []string{"x4-a", "x2-a", "x1-a", "x4-b", "x2-b", "old-a", "old-b"}},
		{"with modelled ones", []pending{
			mk("slow", 0, 128, 3e-4), mk("x2-a", 90, 192, 0), mk("fast", 0, 128, 1e-4), mk("x4-a", 90, 384, 0), mk("x4-b", 90, 384, 0),
		}, []string{"fast", "x4-a", "slow", "x2-a", "x4-b"}},
		{"each strategy's best first", []pending{
			mk("cstream/b", 0, 128, 2e-4), mk("blocks/b", 0, 128, 4e-4), mk("cstream/a", 0, 128, 1e-4),
			mk("blocks/a", 0, 128, 3e-4), mk("bstream/a", 0, 128, 5e-4), mk("x4-a", 90, 384, 0),
		}, []string{"cstream/a", "x4-a", "blocks/a", "bstream/a", "cstream/b", "blocks/b"}},
		{"a producer warp's kernel takes its turns with its tile's", []pending{
			producer(mk("x2-g", 90, 192, 0), false), producer(mk("x2-q", 90, 224, 0), true), producer(mk("x2", 90, 192, 0), false),
			mk("x4-g", 90, 384, 0), producer(mk("x4-q", 90, 416, 0), true), producers(mk("x4-g-q", 90, 512, 0), 4),
		}, []string{"x4-g", "x2-g", "x4-q", "x2-q", "x4-g-q", "x2"}},
		{"tensor-core kernels lead where the model's best is slow", []pending{
			mk("cstream/a", 0, 128, 2.1e-4), mk("bstream/a", 0, 128, 3e-4), mk("x4-a", 90, 384, 0), mk("x4-b", 90, 384, 0),
			mk("x2-a", 90, 192, 0), mk("x2-b", 90, 192, 0), mk("x1-a", 90, 96, 0),
		}, []string{"x4-a", "x2-a", "x1-a", "cstream/a", "x4-b", "x2-b", "bstream/a"}},
		{"none", nil, []string{}},
	} {
		var got []string
		for _, p := range order(tc.in, 1e-4) {
			got = append(got, p.cand.Name)
		}
		if !slices.Equal(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
			t.Errorf("%s: order %v, want %v", tc.name, got, tc.want)
		}
	}
}

// producers records n producer warps in p's kernel, as dmma does.
func producers(p pending, n int) pending {
	p = producer(p, true)
	p.k.Meta = map[string]any{"producer_warps": n}
	return p
}

// producer gives p's kernel a bulk copy (a producer warp's) where bulk.
func producer(p pending, bulk bool) pending {
	if bulk {
		p.k.Body = []kernel.Stmt{kernel.BulkCopy{}}
	}
	return p
}
