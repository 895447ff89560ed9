package sparse

import (
	"fmt"
	"slices"
	"testing"

	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/operator"
)

// Every family of the strategies table reads its bare name as its
// defaults, prints them under its own name, and reads that name back.
func TestStrategiesTable(t *testing.T) {
	all := AllFamilies()
	if len(all) != 10 {
		t.Errorf("%d families, want 10: %v", len(all), all)
	}
	for _, f := range Families {
		if !slices.Contains(all, f) {
			t.Errorf("%s is not in the table", f)
		}
	}
	for _, f := range all {
		d := Defaults(f)
		if d == nil || d.Family() != f {
			t.Fatalf("Defaults(%s) = %v", f, d)
		}
		if err := d.valid(); err != nil {
			t.Errorf("%s: defaults: %v", f, err)
		}
		for _, name := range []string{string(f), d.Name()} {
			if v, err := ParseVariant(name); err != nil || v != d {
				t.Errorf("ParseVariant(%q) = %v, %v; want %v", name, v, err, d)
			}
		}
	}
	if d := Defaults("gemm"); d != nil {
		t.Errorf("Defaults(gemm) = %v, want nil", d)
	}
}

// Every candidate's name reads back as the same parameters, for every
// target and both precisions: names are what the tuning store keys on.
func TestCandidateNamesRoundTrip(t *testing.T) {
	targets := []family.Target{
		{GPU: true, MinBlocks: true, CUDAArch: 90},
		{GPU: true, MinBlocks: true, CUDAArch: 80},
		{GPU: true},
		{},
	}
	rng := testenv.Rand(t)
	ops := []*operator.Operator{frOp(t, "hex", 3, "m460"), frOp(t, "hex", 2, "m132"), frOp(t, "quad", 4, "m6"),
		randomDense(t, rng, 84, 35, nil), randomDense(t, rng, 35, 140, nil)} // as dense as the tets, for the tensor cores
	n := 0
	for _, o := range ops {
		for _, dt := range []kernel.DType{kernel.F64, kernel.F32} {
			for _, beta := range []float64{0, 1} {
				pb := Problem{Op: o, DType: dt, Alpha: 1, Beta: beta, LDB: 1088, LDC: 1088}
				in := &Instance{Problem: pb, N: 1000, LDB: 1088, LDC: 1088}
				var cs []family.Candidate
				for _, tg := range targets {
					cs = append(cs, in.Candidates(tg)...)
				}
				for _, v := range DenseCandidates(pb) {
					cs = append(cs, v)
				}
				for _, c := range cs {
					n++
					v, err := ParseVariant(c.Name())
					if err != nil || v != c.(Variant) {
						t.Fatalf("%s %s: ParseVariant(%q) = %#v, %v; want %#v", o.Name, dt, c.Name(), v, err, c)
					}
				}
			}
		}
	}
	t.Logf("%d candidate names read back", n)
}

// readOptions takes the options in their order, each once, the required
// ones always, and an option that needs another only after it.
func TestReadOptions(t *testing.T) {
	for _, tc := range []struct {
		parts []string
		want  string // the options read, or "error"
	}{
		{[]string{"x4"}, "x4 y0 c0 g=false"},
		{[]string{"x4", "y2", "c8", "g"}, "x4 y2 c8 g=true"},
		{[]string{"x4", "g"}, "x4 y0 c0 g=true"},
		{[]string{"x4", "c8"}, "error"},       // c needs y first
		{[]string{"y2", "x4"}, "error"},       // x is required, and first
		{[]string{"x4", "g", "y2"}, "error"},  // out of order
		{[]string{"x4", "y2", "y3"}, "error"}, // twice
		{[]string{"x4", "y"}, "error"},        // no digits
		{[]string{"x4", "y-2"}, "error"},
		{[]string{"x4", "y+2"}, "error"},
		{[]string{"x4", "y99999999999999999999"}, "error"},             // past an int
		{[]string{"x4", "y99999999999"}, "x4 y99999999999 c0 g=false"}, // valid bounds it
		{[]string{"x4", ""}, "error"},
		{[]string{""}, "error"},
		{[]string{"x04"}, "x4 y0 c0 g=false"},
	} {
		var x, y, c int
		var g bool
		_, err := readOptions("test", tc.parts, "x4-y2-c8-g", need("x", &x), num("y", &y), numAfter("c", "y", &c), flag("g", &g))
		got := "error"
		if err == nil {
			got = fmt.Sprintf("x%d y%d c%d g=%v", x, y, c, g)
		}
		if got != tc.want {
			t.Errorf("%q: %s (%v), want %s", tc.parts, got, err, tc.want)
		}
	}
}
