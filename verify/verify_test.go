package verify_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/fr"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/kernel/sparse"
	"github.com/bespoke-hpc/bespoke/verify"
)

// Every GEMM candidate, GPU-only ones included, on FR operators the fr
// package builds, in both precisions and with three β, passes in the
// interpreter: the family's kernels against its float64 reference with no
// compiler at all.
func TestInterpretSparse(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	el, err := fr.Element("quad", 2, "gauss-legendre", "gauss-legendre")
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, name := range []string{"m0", "m6", "m132"} {
		op, err := el.Operator(name)
		if err != nil {
			t.Fatal(err)
		}
		op.Name = "p2/quad/" + name
		for _, dt := range []kernel.DType{kernel.F64, kernel.F32} {
			for _, beta := range []float64{0, 1, 0.5} {
				ins, err := sparse.NewOperator(op, dt, 0.75, beta).Checks(67)
				if err != nil {
					t.Fatal(err)
				}
				cases, err := verify.Cases(rng, ins, family.Target{GPU: true, MinBlocks: true}, nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range cases {
					res, err := verify.Interpret(c)
					if err != nil || !res.OK() {
						t.Fatalf("%s %s: %+v, %v", c.Label, c.Kernel.Variant, res, err)
					}
					total++
				}
			}
		}
	}
	if total < 200 {
		t.Errorf("only %d kernels interpreted", total)
	}
}

// Compare passes a right result and names each kind of wrong one.
func TestCompare(t *testing.T) {
	d := &family.Data{
		Arrays: map[string]*family.Array{
			"in":  {Type: kernel.Real, Init: []float64{1, 2}},
			"out": {Type: kernel.Real, Init: []float64{math.NaN(), math.NaN(), -7}, Want: []float64{10, -20, 0}, Kept: func(i int) bool { return i == 2 }},
		},
		Tol: 1e-12,
	}
	for _, tc := range []struct {
		name string
		out  []float64
		in   []float64
		ok   bool
		want string
	}{
		{"right", []float64{10, -20, -7}, []float64{1, 2}, true, ""},
		{"rounding", []float64{10 + 1e-12, -20, -7}, []float64{1, 2}, true, ""},
		{"unwritten", []float64{10, math.NaN(), -7}, []float64{1, 2}, false, "unwritten"},
		{"padding written", []float64{10, -20, 0}, []float64{1, 2}, false, "changed"},
		{"input written", []float64{10, -20, -7}, []float64{1, 3}, false, "changed"},
		{"wrong", []float64{10, -20.001, -7}, []float64{1, 2}, false, "err"},
		{"infinite", []float64{math.Inf(1), -20, -7}, []float64{1, 2}, false, "err"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := d.Compare(map[string][]float64{"in": tc.in, "out": tc.out})
			if err != nil {
				t.Fatal(err)
			}
			if res.OK() != tc.ok {
				t.Fatalf("%+v: OK %v, want %v", res, res.OK(), tc.ok)
			}
			switch {
			case tc.want == "unwritten" && res.Unwritten != 1,
				tc.want == "changed" && res.Changed != 1,
				tc.want == "err" && res.MaxRelErr <= d.Tol:
				t.Errorf("%+v: want it counted as %s", res, tc.want)
			}
		})
	}
	if _, err := d.Compare(map[string][]float64{"in": {1, 2}}); err == nil || !strings.Contains(err.Error(), "out") {
		t.Errorf("a missing array: %v", err)
	}
}
