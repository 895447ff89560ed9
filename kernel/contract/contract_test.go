package contract_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/contract"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/kernel/pass"
	"github.com/bespoke-hpc/bespoke/verify"
)

// Every variant along every axis, for Q = 2…5, in both precisions, on a
// batch that does not fill its last block, matches the float64 loop in the
// interpreter — as written for a GPU and as lowered for the host.
func TestInterpret(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	n := 0
	for q := 2; q <= 5; q++ {
		for axis := contract.Axis(0); axis < 3; axis++ {
			for _, dt := range []kernel.DType{kernel.F64, kernel.F32} {
				p, err := contract.Derivative(q, axis, dt)
				if err != nil {
					t.Fatal(err)
				}
				ins, err := p.Checks(7)
				if err != nil {
					t.Fatal(err)
				}
				cases, err := verify.Cases(rng, ins, family.Target{GPU: true}, nil)
				if err != nil {
					t.Fatal(err)
				}
				if want := 3 + 3*b2i(axis == 2); len(cases) != want {
					t.Errorf("q=%d axis %s: %d candidates, want %d", q, axis, len(cases), want)
				}
				for _, c := range cases {
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
			}
		}
	}
	t.Logf("%d kernels interpreted", n)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// D is the GLL derivative matrix: it differentiates polynomials of degree
// Q−1 exactly, so applying it to x_i (a linear field along the axis) gives
// ones.
func TestDerivative(t *testing.T) {
	const q = 5
	for axis := contract.Axis(0); axis < 3; axis++ {
		p, err := contract.Derivative(q, axis, kernel.F64)
		if err != nil {
			t.Fatal(err)
		}
		// Node coordinates along the axis: row sums of D vanish and
		// D·(coordinates) = 1; use the matrix on its own nodes by
		// checking D·1 = 0 in every layout.
		x := make([]float64, q*q*q)
		for i := range x {
			x[i] = 3.5
		}
		y := make([]float64, len(x))
		contract.Apply(q, axis, p.D, x, y, 1)
		for i, v := range y {
			if math.Abs(v) > 1e-12 {
				t.Fatalf("axis %s: D·constant = %v at %d, want 0", axis, v, i)
			}
		}
	}
	for _, bad := range []int{1, contract.MaxQ + 1} {
		if _, err := contract.Derivative(bad, 0, kernel.F64); err == nil {
			t.Errorf("Q = %d accepted", bad)
		}
	}
}

func TestParseVariant(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		bad      bool
	}{
		{in: "slab", want: "slab/e1"},
		{in: "slab/e4", want: "slab/e4"},
		{in: "pencil/e2", want: "pencil/e2"},
		{in: "slab/x4", bad: true},
		{in: "gemm", bad: true},
	} {
		v, err := contract.ParseVariant(tc.in)
		if (err != nil) != tc.bad || (!tc.bad && v.Name() != tc.want) {
			t.Errorf("ParseVariant(%q) = %v, %v", tc.in, v.Name(), err)
		}
	}
	p, _ := contract.Derivative(16, 0, kernel.F64)
	in, _ := p.Timed(10)
	if in.Check(contract.Variant{Kind: "slab", PerBlock: 8}) == nil {
		t.Error("16×16×8 threads accepted")
	}
	if in.Check(contract.Variant{Kind: "slab", PerBlock: 1 << 56}) == nil { // 16·16·2^56 wraps to 0
		t.Error("2^56 elements per block accepted")
	}
	if in.Check(contract.Variant{Kind: "pencil", PerBlock: 1}) == nil {
		t.Error("a pencil along x accepted")
	}
}
