package integrate_test

import (
	"os"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/device/opencl"
	"github.com/bespoke-hpc/bespoke/element"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/cost"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/kernel/integrate"
	"github.com/bespoke-hpc/bespoke/verify"
)

// tensorSetups: the hexahedron's CDR matrix with and without the load
// vector, a full block in both layouts, and a symmetric one in upper and
// full storage (whose lower entries are read from the upper ones).
var tensorSetups = []integrate.Options{
	{Load: true},
	{ElemMajor: true},
	{Symmetric: true, Upper: true, Load: true, ElemMajor: true},
	{Symmetric: true},
}

// tensorCases are the named variants of the hexahedron's CDR matrix in
// the tensor form on fresh jittered meshes, in both precisions.
func tensorCases(t *testing.T, variants []string) []verify.Case {
	t.Helper()
	rng := testenv.Rand(t)
	var out []verify.Case
	for _, o := range tensorSetups {
		for _, dt := range []kernel.DType{kernel.F64, kernel.F32} {
			p, err := integrate.New(element.Hex, element.CDR, dt, o)
			if err != nil {
				t.Fatal(err)
			}
			ins, err := p.Checks(batch)
			if err != nil {
				t.Fatal(err)
			}
			cs, err := verify.Cases(rng, ins, family.Target{}, variants)
			if err != nil || len(cs) != len(variants) {
				t.Fatalf("%s: %d cases, %v", p.Label(), len(cs), err)
			}
			out = append(out, cs...)
		}
	}
	return out
}

// The tensor form against the float64 reference in the interpreter, as
// written and as lowered for the host.
func TestTensorInterpret(t *testing.T) {
	worst := map[kernel.DType]float64{}
	for _, c := range tensorCases(t, []string{"w16/e1/tensor", "w32/e2/local/tensor", "w32/e1/tensor/nt"}) {
		res, err := verify.Interpret(c)
		if err != nil || !res.OK() {
			t.Fatalf("%s %s: %+v, %v", c.Label, c.Kernel.Variant, res, err)
		}
		worst[c.Kernel.DType] = max(worst[c.Kernel.DType], res.MaxRelErr)
	}
	t.Logf("worst relative error f64 %.2g, f32 %.2g", worst[kernel.F64], worst[kernel.F32])
}

// Compiled by the C backend.
func TestTensorHost(t *testing.T) {
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	variants := []string{"w16/e1/tensor", "w32/e1/tensor/nt"}
	if testing.Short() {
		variants = variants[:1] // the interpreter runs the others
	}
	run(t, dev, tensorCases(t, variants))
}

// On the OpenCL device BESPOKE_OPENCL_DEVICE selects (PoCL here).
func TestTensorOpenCL(t *testing.T) {
	if os.Getenv("POCL_WORK_GROUP_METHOD") == "" {
		os.Setenv("POCL_WORK_GROUP_METHOD", "auto")
	}
	dev, err := opencl.Open(os.Getenv("BESPOKE_OPENCL_DEVICE"))
	if err != nil {
		testenv.Unavailable(t, "opencl", err)
	}
	defer dev.Close()
	run(t, dev, tensorCases(t, []string{"w32/e1/local/tensor"}))
}

// The tensor form is the hexahedron's CDR matrix's, a whole element per
// work-item.
func TestTensorErrors(t *testing.T) {
	for _, tc := range []struct {
		kind    element.Kind
		op      element.Problem
		variant string
		want    string
	}{
		{element.Hex, element.Laplace, "w64/e1/tensor", "the hexahedron's CDR matrix's"},
		{element.Prism, element.CDR, "w64/e1/tensor", "the hexahedron's CDR matrix's"},
		{element.Hex, element.CDR, "w64/e1/p2/tensor", "a whole element per work-item"},
		{element.Hex, element.CDR, "w64/e1/chain/tensor", "a whole element per work-item"},
		{element.Hex, element.CDR, "w512/e1/rows/tensor", "a whole element per work-item"},
	} {
		p, err := integrate.New(tc.kind, tc.op, kernel.F64, integrate.Options{})
		if err != nil {
			t.Fatal(err)
		}
		in, _ := p.Instance(10)
		v, err := integrate.ParseVariant(tc.variant)
		if err != nil {
			t.Fatal(err)
		}
		if v.Name() != tc.variant {
			t.Errorf("%s reads back as %s", tc.variant, v.Name())
		}
		if err := in.Check(v); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s %s: error %v, want one containing %q", tc.kind, tc.op, tc.variant, err, tc.want)
		}
	}
}

// The tensor form does under 0.4 of the point-by-point form's arithmetic
// and keeps at most 128 values live (one element per work-item, the
// counts of package cost, a multiplication and an addition one each).
func TestTensorCounts(t *testing.T) {
	for _, dt := range []kernel.DType{kernel.F64, kernel.F32} {
		p, _ := integrate.New(element.Hex, element.CDR, dt, integrate.Options{})
		in, _ := p.Instance(1 << 10)
		count := func(name string) cost.Counts {
			v, err := integrate.ParseVariant(name)
			if err != nil {
				t.Fatal(err)
			}
			k, err := in.Build(v)
			if err != nil {
				t.Fatal(err)
			}
			c, err := cost.Count(k, map[string]int64{integrate.Elements: 1 << 10})
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		pt, tn := count("w64/e1/chain"), count("w64/e1/tensor")
		ops := func(c cost.Counts) float64 { return c.RealOps / float64(c.Threads) }
		t.Logf("%s: point-by-point %.0f ops, %d live; tensor %.0f ops, %d live", dt, ops(pt), pt.LiveReals, ops(tn), tn.LiveReals)
		if ops(tn) > 0.4*ops(pt) {
			t.Errorf("%s: tensor form %.0f ops per element, want at most 0.4 of the point-by-point form's %.0f", dt, ops(tn), ops(pt))
		}
		if tn.LiveReals > 128 {
			t.Errorf("%s: tensor form keeps %d values live (the point-by-point form %d), want at most 128", dt, tn.LiveReals, pt.LiveReals)
		}
	}
}

// The tensor form is offered for the hexahedron's CDR matrix only: on
// GPUs (with register caps in f32) and on CPUs.
func TestTensorCandidates(t *testing.T) {
	for _, tc := range []struct {
		kind           element.Kind
		op             element.Problem
		dt             kernel.DType
		gpu            bool
		tensor, capped int
	}{
		{element.Hex, element.CDR, kernel.F64, true, 4, 0},
		{element.Hex, element.CDR, kernel.F32, true, 7, 3},
		{element.Hex, element.CDR, kernel.F64, false, 4, 0},
		{element.Hex, element.Laplace, kernel.F64, true, 0, 0},
		{element.Prism, element.CDR, kernel.F32, true, 0, 0},
	} {
		p, err := integrate.New(tc.kind, tc.op, tc.dt, integrate.Options{})
		if err != nil {
			t.Fatal(err)
		}
		in, err := p.Instance(1 << 12)
		if err != nil {
			t.Fatal(err)
		}
		tensor, capped := 0, 0
		for _, c := range in.Candidates(family.Target{GPU: tc.gpu}) {
			if v := c.(integrate.Variant); v.Tensor {
				tensor++
				if v.Blocks > 0 {
					capped++
				}
			}
		}
		if tensor != tc.tensor || capped != tc.capped {
			t.Errorf("%s %s %s GPU %v: %d tensor candidates (%d capped), want %d (%d)", tc.kind, tc.op, tc.dt, tc.gpu, tensor, capped, tc.tensor, tc.capped)
		}
	}
}

// Strongly distorted elements (each vertex of a box of sides 1, 2 and
// 0.5 moved by up to 0.3 of the smallest side, far from affine) with
// random blocks: the tensor form matches the float64 reference.
func TestTensorDistorted(t *testing.T) {
	rng := testenv.Rand(t)
	const e = 33
	for _, dt := range []kernel.DType{kernel.F64, kernel.F32} {
		p, _ := integrate.New(element.Hex, element.CDR, dt, integrate.Options{Load: true})
		in, _ := p.Instance(e)
		ref, _ := element.NewMesh(element.Hex, 1, 1, 1, 0, 1)
		box := ref.Batch()
		var d *family.Data
		for try := 0; d == nil; try++ {
			if try == 100 {
				t.Fatal("no valid distorted batch in 100 draws")
			}
			x := make([]float64, 24*e)
			for el := range e {
				for w := range 24 {
					scale := [3]float64{1, 2, 0.5}[w%3]
					x[w*e+el] = scale*box.X[w*box.E] + 0.15*(2*rng.Float64()-1)
				}
			}
			b, err := element.NewBatch(element.Hex, e, x)
			if err != nil {
				t.Fatal(err)
			}
			var s integrate.Inputs
			s.Coef = make([]float64, 16*e)
			s.F = make([]float64, e)
			for el := range e {
				c := element.RandomCDR(rng, false)
				for i := range 16 {
					s.Coef[i*e+el] = c[i/4][i%4]
				}
				s.F[el] = 0.5 + rng.Float64()
			}
			d, _ = in.Given(b, s) // nil where an element folded: draw again
		}
		k, err := in.Build(integrate.Variant{WG: 16, EPT: 1, Tensor: true})
		if err != nil {
			t.Fatal(err)
		}
		res, err := verify.Interpret(verify.Case{Label: p.Label(), Kernel: k, Data: d})
		if err != nil || !res.OK() {
			t.Fatalf("%s: %+v, %v", p.Label(), res, err)
		}
		t.Logf("%s: relative error %.2g", p.Label(), res.MaxRelErr)
	}
}
