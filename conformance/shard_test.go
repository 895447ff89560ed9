package conformance

import (
	"slices"
	"testing"

	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/verify"
)

func TestParseShard(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want shard
		bad  bool
	}{
		{in: "", want: shard{0, 1}},
		{in: "0/2", want: shard{0, 2}},
		{in: "3/4", want: shard{3, 4}},
		{in: "2/2", bad: true},
		{in: "-1/2", bad: true},
		{in: "1/0", bad: true},
		{in: "1", bad: true},
		{in: "a/b", bad: true},
	} {
		got, err := parseShard(tc.in)
		if (err != nil) != tc.bad || (!tc.bad && got != tc.want) {
			t.Errorf("parseShard(%q) = %v, %v; want %v (error: %v)", tc.in, got, err, tc.want, tc.bad)
		}
	}
}

// deal spreads the work evenly and gives every case exactly one shard.
func TestDeal(t *testing.T) {
	mk := func(nodes ...int) []verify.Case { // kernels of this many IR nodes
		cs := make([]verify.Case, len(nodes))
		for i, n := range nodes {
			cs[i].Kernel = &kernel.Kernel{Body: make([]kernel.Stmt, n)}
			for j := range cs[i].Kernel.Body {
				cs[i].Kernel.Body[j] = kernel.Comment{}
			}
		}
		return cs
	}
	for _, tc := range []struct {
		name string
		work []int
		w    int
		want []int
	}{
		{"one shard", []int{5, 9, 1}, 1, []int{0, 0, 0}},
		{"heaviest alone", []int{100, 5000, 100, 100}, 2, []int{1, 0, 1, 1}},
		{"alternating", []int{900, 900, 900, 900}, 2, []int{0, 1, 0, 1}},
		{"more shards than cases", []int{1, 2}, 3, []int{1, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := deal(mk(tc.work...), tc.w); !slices.Equal(got, tc.want) {
				t.Errorf("deal = %v, want %v", got, tc.want)
			}
		})
	}
}
