package integrate_test

import (
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/device/opencl"
	"github.com/bespoke-hpc/bespoke/element"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/kernel/integrate"
	"github.com/bespoke-hpc/bespoke/kernel/pass"
	"github.com/bespoke-hpc/bespoke/verify"
)

// setup is one problem of the sweep.
type setup struct {
	op   element.Problem
	opts integrate.Options
}

// setups: each coefficient pattern, each output format at least once,
// the load vector with a full block.
var setups = []setup{
	{element.Laplace, integrate.Options{K: 1.5}},
	{element.Laplace, integrate.Options{Upper: true, ElemMajor: true}},
	{element.Mass, integrate.Options{ElemMajor: true}},
	{element.CDR, integrate.Options{Load: true}},
	{element.CDR, integrate.Options{Symmetric: true, Upper: true, Load: true, ElemMajor: true}},
}

// batch is the number of elements: no work-group × EPT of the candidates
// divides it, and a few work-groups of the smallest.
const batch = 37

// cases are the candidates for target t (only those named, when given) of
// every kind × setup × precision, on a fresh jittered mesh.
func cases(t *testing.T, rng *rand.Rand, tg family.Target, only []string) []verify.Case {
	t.Helper()
	var out []verify.Case
	for _, kind := range element.Kinds {
		for _, s := range setups {
			for _, dt := range []kernel.DType{kernel.F64, kernel.F32} {
				p, err := integrate.New(kind, s.op, dt, s.opts)
				if err != nil {
					t.Fatal(err)
				}
				ins, err := p.Checks(batch)
				if err != nil {
					t.Fatal(err)
				}
				cs, err := verify.Cases(rng, ins, tg, only)
				if err != nil {
					t.Fatal(err)
				}
				if len(cs) == 0 {
					t.Fatalf("%s: no candidates", p.Label())
				}
				out = append(out, cs...)
			}
		}
	}
	return out
}

// Every GPU and CPU candidate in the interpreter, as written and as
// lowered for the host.
func TestInterpret(t *testing.T) {
	rng := testenv.Rand(t)
	n, worst := 0, map[kernel.DType]float64{}
	for _, tg := range []family.Target{{GPU: true}, {GPU: false}} {
		for _, c := range cases(t, rng, tg, nil) {
			for _, lowered := range []bool{false, true} {
				if testing.Short() && lowered == tg.GPU { // -short: as each target's backends run it
					continue
				}
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
				worst[c.Kernel.DType] = math.Max(worst[c.Kernel.DType], res.MaxRelErr)
				n++
			}
		}
	}
	t.Logf("%d kernels interpreted; worst relative error f64 %.2g, f32 %.2g", n, worst[kernel.F64], worst[kernel.F32])
}

// spread is one variant per kind × setup × precision, the variants taken
// in turn, so that each is compiled for every kind and for a spread of
// setups: compiling every candidate takes minutes on two cores.
func spread(t *testing.T, kinds []element.Kind, variants []string) []verify.Case {
	t.Helper()
	rng := testenv.Rand(t)
	var out []verify.Case
	i := 0
	for ki, kind := range kinds {
		for si, s := range setups {
			for di, dt := range []kernel.DType{kernel.F64, kernel.F32} {
				if testing.Short() && (ki*len(setups)+si)%2 != di { // -short: one precision a problem, in turn
					continue
				}
				p, err := integrate.New(kind, s.op, dt, s.opts)
				if err != nil {
					t.Fatal(err)
				}
				ins, err := p.Checks(batch)
				if err != nil {
					t.Fatal(err)
				}
				cs, err := verify.Cases(rng, ins, family.Target{}, []string{variants[i%len(variants)]})
				if err != nil || len(cs) != 1 {
					t.Fatalf("%s: %d cases, %v", p.Label(), len(cs), err)
				}
				out = append(out, cs...)
				i++
			}
		}
	}
	return out
}

func run(t *testing.T, dev device.Device, cs []verify.Case) {
	t.Helper()
	for i, o := range verify.RunBatch(dev, cs) {
		if o.Err != nil || !o.Result.OK() {
			t.Errorf("%s %s: %+v, %v", cs[i].Label, cs[i].Kernel.Variant, o.Result, o.Err)
		}
	}
	t.Logf("%d kernels verified on %s", len(cs), dev.Info().Name)
}

// Compiled by the C backend.
func TestHost(t *testing.T) {
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	run(t, dev, spread(t, element.Kinds, []string{"w16/e1", "w64/e2", "w64/e1/local", "w64/e1/p2", "w32/e1/nt", "w64/e1/local/chain", "w16/e1/chain", "w16/e1/local/nt"}))
	run(t, dev, wedgeCases(t, []string{"w16/e1/wedge", "w32/e1/wedge/nt"}))
}

// wedgeCases are the named variants of the prism's Laplace and CDR
// matrices in the factored form, in both precisions: Laplace with a
// coefficient, in upper and element-major storage, and with the load
// vector; CDR with the load vector, and symmetric in upper element-major
// storage.
func wedgeCases(t *testing.T, variants []string) []verify.Case {
	t.Helper()
	rng := testenv.Rand(t)
	var out []verify.Case
	for si, s := range []setup{
		{element.Laplace, integrate.Options{K: 1.5}},
		{element.Laplace, integrate.Options{Upper: true, ElemMajor: true}},
		{element.Laplace, integrate.Options{Load: true}},
		{element.CDR, integrate.Options{Load: true}},
		{element.CDR, integrate.Options{Symmetric: true, Upper: true, ElemMajor: true}},
	} {
		for di, dt := range []kernel.DType{kernel.F64, kernel.F32} {
			if testing.Short() && si%2 != di { // -short: one precision a setup, in turn
				continue
			}
			p, err := integrate.New(element.Prism, s.op, dt, s.opts)
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

// On the OpenCL device BESPOKE_OPENCL_DEVICE selects (PoCL here), which
// builds one program at a time: the paper's prism, every setup, a staged
// and a plain variant.
func TestOpenCL(t *testing.T) {
	if os.Getenv("POCL_WORK_GROUP_METHOD") == "" {
		os.Setenv("POCL_WORK_GROUP_METHOD", "auto") // faster builds; see conformance.TestOpenCL
	}
	dev, err := opencl.Open(os.Getenv("BESPOKE_OPENCL_DEVICE"))
	if err != nil {
		testenv.Unavailable(t, "opencl", err)
	}
	defer dev.Close()
	run(t, dev, spread(t, []element.Kind{element.Prism}, []string{"w64/e1/local", "w16/e1", "w64/e2/local/chain", "w32/e1/nt"}))
	run(t, dev, wedgeCases(t, []string{"w32/e1/wedge/nt"}))
	t.Run("flush", func(t *testing.T) { flushInBatch(t, dev) })
}

// flushInBatch: staged element-major variants whose last chunk lies
// wholly past the batch (37 elements, 64 × 2 per work-group) write
// nothing there. They used to: nlive went negative and lx + c < nlive·n
// compared as unsigned on OpenCL and CUDA (get_local_id, threadIdx), so
// the flush wrote up to a chunk past the output — heap corruption on
// PoCL, intermittently. The output here is padded by four chunks of NaN
// that must stay NaN, so such writes are caught every time, not only
// when they hit the allocator's bookkeeping. The C backend and the
// interpreter keep lx signed and never showed it.
func flushInBatch(t *testing.T, dev device.Device) {
	rng := testenv.Rand(t)
	var cs []verify.Case
	for _, kind := range element.Kinds {
		for _, dt := range []kernel.DType{kernel.F64, kernel.F32} {
			p, err := integrate.New(kind, element.Mass, dt, integrate.Options{ElemMajor: true})
			if err != nil {
				t.Fatal(err)
			}
			in, _ := p.Instance(batch)
			v := integrate.Variant{WG: 64, EPT: 2, Local: true}
			k, err := in.Build(v)
			if err != nil {
				t.Fatal(err)
			}
			d, err := in.Data(rng)
			if err != nil {
				t.Fatal(err)
			}
			a := d.Arrays["a"]
			n := len(a.Init) - kind.Nodes()*kind.Nodes() // the batch's words
			for range 4 * v.WG * v.EPT * kind.Nodes() * kind.Nodes() {
				a.Init = append(a.Init, math.NaN())
				a.Want = append(a.Want, math.NaN())
			}
			a.Kept = func(i int) bool { return i >= n }
			cs = append(cs, verify.Case{Label: p.Label(), Kernel: k, Data: d})
		}
	}
	run(t, dev, cs)
}

// The kernels' checks can fail: a corrupted reference, a skipped element
// and a write past the batch are each caught.
func TestChecksCanFail(t *testing.T) {
	rng := testenv.Rand(t)
	p, _ := integrate.New(element.Prism, element.Laplace, kernel.F64, integrate.Options{})
	in, _ := p.Instance(batch)
	k, err := in.Build(integrate.Variant{WG: 16, EPT: 1})
	if err != nil {
		t.Fatal(err)
	}
	fresh := func() *family.Data {
		d, err := in.Data(rng)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	d := fresh()
	d.Arrays["a"].Want[5] *= 1 + 1e-9
	if res, _ := verify.Interpret(verify.Case{Kernel: k, Data: d}); res.OK() {
		t.Error("a reference off by 1e-9 relative passed")
	}
	d = fresh()
	d.Values[integrate.Elements] = batch - 1 // the last element stays NaN
	if res, _ := verify.Interpret(verify.Case{Kernel: k, Data: d}); res.OK() || res.Unwritten == 0 {
		t.Errorf("a skipped element passed: %+v", res)
	}
	d = fresh()
	d.Values[integrate.Elements] = batch + 1 // writes the pad
	if res, err := verify.Interpret(verify.Case{Kernel: k, Data: d}); err == nil && res.OK() {
		t.Errorf("a write past the batch passed: %+v", res)
	}
}

// Data: poisoned outputs, the reference in the problem's format, and
// Matrices inverting the format.
func TestDataAndMatrices(t *testing.T) {
	rng := testenv.Rand(t)
	for _, s := range setups {
		p, err := integrate.New(element.Hex, s.op, kernel.F64, s.opts)
		if err != nil {
			t.Fatal(err)
		}
		in, _ := p.Instance(5)
		d, err := in.Data(rng)
		if err != nil {
			t.Fatal(err)
		}
		a := d.Arrays["a"]
		for _, x := range a.Init {
			if !math.IsNaN(x) {
				t.Fatalf("%s: output not poisoned", p.Name())
			}
		}
		full, err := in.Matrices(a.Want)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := element.NewBatch(element.Hex, 5, d.Arrays["x"].Init)
		m := make([]float64, 64)
		for e := range 5 {
			c := element.LaplaceCoef(p.K)
			switch s.op {
			case element.Mass:
				c = element.MassCoef()
			case element.CDR:
				for i := range 4 {
					for j := range 4 {
						c[i][j] = d.Arrays["coef"].Init[(4*i+j)*5+e]
					}
				}
			}
			if err := element.Hex.Matrix(b.Coords(e), &c, m); err != nil {
				t.Fatal(err)
			}
			for i := range m {
				// The mirror of an upper entry equals the computed lower one
				// to rounding only.
				if d := math.Abs(full[e*64+i] - m[i]); d != 0 && !(s.opts.Upper && d < 1e-15) {
					t.Fatalf("%s: element %d entry %d: %g, want %g", p.Name(), e, i, full[e*64+i], m[i])
				}
			}
		}
	}
}

// Workload: bytes, nominal flops and sampled references that match the
// float64 reference of the sampled elements.
func TestWorkload(t *testing.T) {
	p, _ := integrate.New(element.Prism, element.Laplace, kernel.F64, integrate.Options{})
	if p.Flops() != 2916 {
		t.Errorf("prism Laplace: %d flops, want the paper's 2916", p.Flops())
	}
	q, _ := integrate.New(element.Prism, element.CDR, kernel.F64, integrate.Options{})
	if q.Flops() != 4806 {
		t.Errorf("prism CDR: %d flops, want the paper's 4806", q.Flops())
	}
	in, _ := p.Instance(1000)
	w, err := in.Workload()
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(1000 * (18 + 36) * 8); w.IdealBytes != want || w.Flops != 1000*2916 {
		t.Errorf("ideal bytes %d (want %d), flops %d", w.IdealBytes, want, w.Flops)
	}
	var x []float64
	for _, a := range w.Arrays {
		if a.Name == "x" {
			x = a.Reals
		}
	}
	ref := w.Reference(func(name string, i int64) float64 { return x[i] })
	if len(ref) != len(w.Samples) {
		t.Fatalf("%d references for %d samples", len(ref), len(w.Samples))
	}
	b, _ := element.NewBatch(element.Prism, 1000, x)
	m := make([]float64, 36)
	c := element.LaplaceCoef(1)
	for i, s := range w.Samples {
		e, entry := int(s.Index%1000), int(s.Index/1000)
		if err := element.Prism.Matrix(b.Coords(e), &c, m); err != nil {
			t.Fatal(err)
		}
		if ref[i] != m[entry] {
			t.Fatalf("sample %d: %g, want %g", i, ref[i], m[entry])
		}
	}
}

func TestErrors(t *testing.T) {
	cases := []struct {
		name, want string
		err        func() error
	}{
		{"upper storage of a non-symmetric block", "needs symmetric", func() error {
			_, err := integrate.New(element.Tet, element.CDR, kernel.F64, integrate.Options{Upper: true})
			return err
		}},
		{"negative k", "finite positive", func() error {
			_, err := integrate.New(element.Tet, element.Laplace, kernel.F64, integrate.Options{K: -1})
			return err
		}},
		{"no elements", "want 1..67108864", func() error {
			p, _ := integrate.New(element.Tet, element.Mass, kernel.F64, integrate.Options{})
			_, err := p.Timed(0)
			return err
		}},
		{"bad name", "want wN/eM", func() error {
			_, err := integrate.ParseVariant("w64/x2")
			return err
		}},
		{"big work-group", "want 1..1024", func() error {
			p, _ := integrate.New(element.Tet, element.Mass, kernel.F64, integrate.Options{})
			in, _ := p.Timed(10)
			return in.Check(integrate.Variant{WG: 2048, EPT: 1})
		}},
		{"local memory", "at most 49152", func() error {
			p, _ := integrate.New(element.Hex, element.CDR, kernel.F64, integrate.Options{ElemMajor: true})
			in, _ := p.Timed(10)
			return in.Check(integrate.Variant{WG: 256, EPT: 1, Local: true})
		}},
		{"blocks whose product with the work-group overflows", "on one multiprocessor", func() error {
			p, _ := integrate.New(element.Prism, element.Laplace, kernel.F64, integrate.Options{})
			in, _ := p.Timed(10)
			v, err := integrate.ParseVariant("w64/e1/b288230376151711744") // 2^58: ·64 wraps to 0
			if err != nil {
				return err
			}
			return in.Check(v)
		}},
		{"factored mass matrix", "the prism's Laplace and CDR matrices'", func() error {
			p, _ := integrate.New(element.Prism, element.Mass, kernel.F64, integrate.Options{})
			in, _ := p.Timed(10)
			return in.Check(integrate.Variant{WG: 64, EPT: 1, Wedge: true})
		}},
		{"factored tetrahedron", "the prism's Laplace and CDR matrices'", func() error {
			p, _ := integrate.New(element.Tet, element.CDR, kernel.F64, integrate.Options{})
			in, _ := p.Timed(10)
			return in.Check(integrate.Variant{WG: 64, EPT: 1, Wedge: true})
		}},
		{"one part", "want at least 2", func() error {
			_, err := integrate.ParseVariant("w64/e1/p1")
			return err
		}},
		{"parts that do not divide the rows", "do not divide the 4 rows", func() error {
			p, _ := integrate.New(element.Tet, element.CDR, kernel.F64, integrate.Options{})
			in, _ := p.Timed(10)
			return in.Check(integrate.Variant{WG: 96, EPT: 1, Parts: 3})
		}},
		{"parts narrower than a warp", "at least 32 elements per part", func() error {
			p, _ := integrate.New(element.Prism, element.CDR, kernel.F64, integrate.Options{})
			in, _ := p.Timed(10)
			return in.Check(integrate.Variant{WG: 48, EPT: 1, Parts: 2})
		}},
		{"wrong batch", "given to an instance", func() error {
			p, _ := integrate.New(element.Tet, element.Mass, kernel.F64, integrate.Options{})
			in, _ := p.Instance(10)
			m, _ := element.NewMesh(element.Hex, 1, 1, 1, 0, 1)
			_, err := in.Given(m.Batch(), integrate.Inputs{})
			return err
		}},
	}
	for _, c := range cases {
		err := c.err()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

// The factored form is offered on GPUs for the prism's Laplace and CDR
// matrices, capped at 128 registers in f32 only (capped, the f64 kernels
// spilled), and never for the mass matrix or the other elements.
func TestWedgeCandidates(t *testing.T) {
	for _, tc := range []struct {
		kind          element.Kind
		op            element.Problem
		dt            kernel.DType
		wedge, capped int
	}{
		{element.Prism, element.CDR, kernel.F32, 5, 2}, // w64 plain, staged, capped and both; w128
		{element.Prism, element.CDR, kernel.F64, 3, 0},
		{element.Prism, element.Laplace, kernel.F64, 3, 0},
		{element.Prism, element.Mass, kernel.F32, 0, 0},
		{element.Hex, element.CDR, kernel.F32, 0, 0},
		{element.Tet, element.Laplace, kernel.F64, 0, 0},
	} {
		p, err := integrate.New(tc.kind, tc.op, tc.dt, integrate.Options{})
		if err != nil {
			t.Fatal(err)
		}
		in, err := p.Instance(1 << 12)
		if err != nil {
			t.Fatal(err)
		}
		wedge, capped := 0, 0
		for _, c := range in.Candidates(family.Target{GPU: true}) {
			if v := c.(integrate.Variant); v.Wedge {
				wedge++
				if v.Blocks > 0 {
					capped++
				}
			}
		}
		if wedge != tc.wedge || capped != tc.capped {
			t.Errorf("%s %s %s: %d factored GPU candidates (%d capped), want %d (%d)", tc.kind, tc.op, tc.dt, wedge, capped, tc.wedge, tc.capped)
		}
	}
}
