package serve_test

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/device/opencl"
	"github.com/bespoke-hpc/bespoke/emit"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/interp"
	"github.com/bespoke-hpc/bespoke/kernel/sparse"
	"github.com/bespoke-hpc/bespoke/operator"
	"github.com/bespoke-hpc/bespoke/serve"
)

// The tests here take each candidate exactly as an answer gives it (the
// source, the parameters with their roles and values, the launch) and run
// it as a client would, on fresh random B and C, against a float64
// α·A·B + β·C: the answers are all a client needs.

// problem is one end-to-end case.
type problem struct {
	name        string
	op          map[string]any
	dtype       string
	alpha, beta float64
	n, ldb, ldc int
}

func (p problem) request(backend string) map[string]any {
	req := request(p.op, backend, p.dtype, p.beta, p.n)
	req["alpha"], req["ldb"], req["ldc"] = p.alpha, p.ldb, p.ldc
	return req
}

// dense is A as the client holds it, m×k row-major in float64.
func (p problem) dense() (m, k int, a []float64) {
	m, k = p.op["m"].(int), p.op["k"].(int)
	if d, ok := p.op["dense"].([]float64); ok {
		return m, k, d
	}
	a = make([]float64, m*k)
	coo := p.op["coo"].(map[string]any)
	for i, v := range coo["vals"].([]float64) {
		a[coo["rows"].([]int)[i]*k+coo["cols"].([]int)[i]] = v
	}
	return m, k, a
}

// rounder rounds to the dtype, as the client's arrays hold values.
func rounder(dtype string) func(float64) float64 {
	if dtype == "f32" {
		return func(x float64) float64 { return float64(float32(x)) }
	}
	return func(x float64) float64 { return x }
}

// panels draws B (k×ldb) and C (m×ldc) in the dtype, padding marked, C
// NaN where β = 0, and the float64 reference of C afterwards.
func (p problem) panels(rng *rand.Rand) (b, c, want []float64) {
	m, k, a := p.dense()
	r := rounder(p.dtype)
	const pad = -7.25e7
	b = make([]float64, k*p.ldb)
	for i := range b {
		b[i] = pad
		if i%p.ldb < p.n {
			b[i] = r(rng.Float64()*2 - 1)
		}
	}
	c = make([]float64, m*p.ldc)
	for i := range c {
		switch {
		case i%p.ldc >= p.n:
			c[i] = pad
		case p.beta == 0:
			c[i] = math.NaN()
		default:
			c[i] = r(rng.Float64()*2 - 1)
		}
	}
	want = append([]float64(nil), c...)
	for i := 0; i < m; i++ {
		for j := 0; j < p.n; j++ {
			s := 0.0
			for l := 0; l < k; l++ {
				s += a[i*k+l] * b[l*p.ldb+j]
			}
			s *= p.alpha
			if p.beta != 0 {
				s += p.beta * c[i*p.ldc+j]
			}
			want[i*p.ldc+j] = s
		}
	}
	return b, c, want
}

// compare checks C after a run: the columns < n against the reference
// within the dtype's tolerance, the padding untouched.
func (p problem) compare(t *testing.T, name string, got, want []float64) {
	t.Helper()
	tol := sparse.TolF64
	if p.dtype == "f32" {
		tol = sparse.TolF32
	}
	norm, diff := 0.0, 0.0
	for i, w := range want {
		if i%p.ldc >= p.n {
			if got[i] != w {
				t.Errorf("%s: padding element %d changed to %g", name, i, got[i])
				return
			}
			continue
		}
		norm = math.Max(norm, math.Abs(w))
		if d := math.Abs(got[i] - w); !(d <= diff) {
			diff = d // NaN included
		}
	}
	if rel := diff / norm; !(rel <= tol) {
		t.Errorf("%s: max relative error %.3g (tolerance %g)", name, rel, tol)
	}
}

func endToEndProblems(rng *rand.Rand) []problem {
	return []problem{
		{"dense f64 β=0.5", denseOp(rng, 12, 10), "f64", 1.5, 0.5, 200, 202, 206},
		{"coo f32 β=0", cooOp(rng, 20, 16), "f32", -0.75, 0, 150, 152, 160},
	}
}

func encode(dtype string, xs []float64) []byte {
	if dtype == "f32" {
		out := make([]byte, 4*len(xs))
		for i, x := range xs {
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(float32(x)))
		}
		return out
	}
	out := make([]byte, 8*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint64(out[8*i:], math.Float64bits(x))
	}
	return out
}

func decodeReals(dtype string, raw []byte) []float64 {
	if dtype == "f32" {
		out := make([]float64, len(raw)/4)
		for i := range out {
			out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:])))
		}
		return out
	}
	out := make([]float64, len(raw)/8)
	for i := range out {
		out[i] = math.Float64frombits(binary.LittleEndian.Uint64(raw[8*i:]))
	}
	return out
}

// runOnDevice builds the candidate's source on dev, binds its parameters
// by role and launches it as the answer says; it returns C.
func runOnDevice(t *testing.T, dev device.Device, c serve.Candidate, dtype string, b, cInit []float64) []float64 {
	t.Helper()
	prog, err := dev.Build(emit.Source{Dialect: emit.Dialect(c.Language), Text: c.Source, Entries: []string{c.Entry}})
	if err != nil {
		t.Fatalf("%s: build: %v", c.Name, err)
	}
	defer prog.Close()
	kern, err := prog.Kernel(c.Entry)
	if err != nil {
		t.Fatalf("%s: %v", c.Name, err)
	}
	var args []any
	var cBuf device.Buffer
	upload := func(xs []float64) device.Buffer {
		raw := encode(dtype, xs)
		buf, err := dev.Alloc(int64(len(raw)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { buf.Free() })
		if err := buf.Upload(raw); err != nil {
			t.Fatal(err)
		}
		return buf
	}
	for _, p := range c.Params {
		switch {
		case p.Role == "b":
			args = append(args, upload(b))
		case p.Role == "c":
			cBuf = upload(cInit)
			args = append(args, cBuf)
		case p.Role == "data":
			args = append(args, upload(p.Values))
		case p.Type == "int32":
			args = append(args, int32(*p.Value))
		case p.Type == "int64":
			args = append(args, *p.Value)
		default:
			t.Fatalf("%s: param %+v", c.Name, p)
		}
	}
	l := device.Launch{Grid: c.Launch.Grid, Block: c.Launch.Block, SharedBytes: c.Launch.DynamicSharedBytes}
	if err := kern.Launch(l, args...); err != nil {
		t.Fatalf("%s: launch: %v", c.Name, err)
	}
	if err := dev.Sync(); err != nil {
		t.Fatal(err)
	}
	raw := make([]byte, cBuf.Size())
	if err := cBuf.Download(raw); err != nil {
		t.Fatal(err)
	}
	return decodeReals(dtype, raw)
}

// endToEnd runs up to most candidates of each problem on dev.
func endToEnd(t *testing.T, dev device.Device, backend string, most int) {
	rng := testenv.Rand(t)
	for _, p := range endToEndProblems(rng) {
		req := p.request(backend)
		req["limit"] = most
		var a serve.CandidatesAnswer
		if err := jsonInto(exchange(t, serve.Options{}, line(t, req))[0], &a); err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		for _, c := range a.Candidates {
			b, c0, want := p.panels(rng)
			got := runOnDevice(t, dev, c, p.dtype, b, c0)
			p.compare(t, p.name+" "+c.Name, got, want)
		}
		t.Logf("%s: %d candidates ran on %s", p.name, len(a.Candidates), dev.Info().Name)
	}
}

// TestCFlags: the C build options an answer gives are the host backend's.
func TestCFlags(t *testing.T) {
	req := request(cooOp(testenv.Rand(t), 4, 4), "c", "f64", 0, 64)
	var a serve.CandidatesAnswer
	if err := jsonInto(exchange(t, serve.Options{}, line(t, req))[0], &a); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(a.Candidates[0].Build.Options, " "); got != strings.Join(host.BaseFlags, " ") {
		t.Errorf("C build options %q, the host backend's %q", got, strings.Join(host.BaseFlags, " "))
	}
}

// TestAnswersRunOnC runs the best five C answers through the host
// backend.
func TestAnswersRunOnC(t *testing.T) {
	t.Setenv("BESPOKE_CACHE_DIR", t.TempDir())
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	endToEnd(t, dev, "c", 5)
}

// TestAnswersRunOnOpenCL runs the best four OpenCL answers on the OpenCL
// device (PoCL in CI).
func TestAnswersRunOnOpenCL(t *testing.T) {
	t.Setenv("BESPOKE_CACHE_DIR", t.TempDir())
	dev, err := opencl.Open(os.Getenv("BESPOKE_OPENCL_DEVICE"))
	if err != nil {
		testenv.Unavailable(t, "opencl", err)
	}
	defer dev.Close()
	endToEnd(t, dev, "opencl", 4)
}

// TestAnswersInterpretCUDA checks CUDA answers without a GPU: the kernel
// the answer's source was printed from is run in the interpreter with the
// answer's parameters, values and grid. Among them the tensor-core kernels
// (α·A from a buffer, more than 48 KiB of dynamic shared memory).
func TestAnswersInterpretCUDA(t *testing.T) {
	rng := testenv.Rand(t)
	cases := []struct {
		backend string
		p       problem
	}{
		{"cuda80", problem{"dense f64 β=1", denseOp(rng, 40, 30), "f64", 1.25, 1, 70, 72, 76}},
		{"cuda90", problem{"dense f32 β=0", denseOp(rng, 40, 30), "f32", 0.5, 0, 70, 72, 76}},
	}
	for _, tc := range cases {
		p := tc.p
		req := p.request(tc.backend)
		req["limit"] = 0
		rs := exchange(t, serve.Options{}, line(t, req))
		var a serve.CandidatesAnswer
		if err := jsonInto(rs[0], &a); err != nil {
			t.Fatal(err)
		}
		// The best predicted, the first of each family, and the first
		// with dynamic shared memory.
		picked := map[string]bool{}
		var run []serve.Candidate
		for i, c := range a.Candidates {
			fam, _, _ := strings.Cut(c.Name, "/")
			key := fam
			if c.Launch.DynamicSharedBytes > 0 {
				key = "dynamic"
			}
			if i == 0 || !picked[key] {
				picked[key] = true
				run = append(run, c)
			}
		}
		dyn := false
		for _, c := range run {
			dyn = dyn || (c.Launch.DynamicSharedBytes > kernel.StaticSharedLimit && len(c.Launch.Attributes) > 0)
			k := rebuild(t, p, c)
			b, c0, want := p.panels(rng)
			args := map[string]any{}
			for _, prm := range c.Params {
				switch prm.Role {
				case "b":
					args[prm.Name] = b
				case "c":
					args[prm.Name] = c0
				case "data":
					args[prm.Name] = append([]float64(nil), prm.Values...)
				default:
					args[prm.Name] = *prm.Value
				}
			}
			if err := interp.Run(k, c.Launch.Grid, args); err != nil {
				t.Fatalf("%s %s: %v", p.name, c.Name, err)
			}
			p.compare(t, p.name+" "+c.Name, c0, want)
		}
		if !dyn {
			t.Errorf("%s on %s: no candidate with dynamic shared memory was run", p.name, tc.backend)
		}
		t.Logf("%s on %s: %d candidates interpreted", p.name, tc.backend, len(run))
	}
}

// rebuild is the kernel the answer's CUDA source was printed from: the
// same variant of the same problem, which must print the very source.
func rebuild(t *testing.T, p problem, c serve.Candidate) *kernel.Kernel {
	t.Helper()
	m, k, a := p.dense()
	r := rounder(p.dtype)
	data := make([]float64, len(a))
	for i, x := range a {
		data[i] = r(x)
	}
	op, err := operator.New("a", m, k, data)
	if err != nil {
		t.Fatal(err)
	}
	dt, _ := kernel.ParseDType(p.dtype)
	pb := sparse.NewOperator(op, dt, p.alpha, p.beta).Spec()
	pb.N, pb.LDB, pb.LDC = p.n, p.ldb, p.ldc
	in := &sparse.Instance{Problem: pb, N: p.n, LDB: p.ldb, LDC: p.ldc}
	v, err := in.Variant(c.Name)
	if err != nil {
		t.Fatal(err)
	}
	kern, err := in.Build(v)
	if err != nil {
		t.Fatal(err)
	}
	src, err := emit.Render(emit.CUDA, kern)
	if err != nil {
		t.Fatal(err)
	}
	if src.Text != c.Source || kern.Name != c.Entry || kern.Launch.Block != c.Launch.Block {
		t.Fatalf("%s: the rebuilt kernel is not the answer's", c.Name)
	}
	return kern
}

// jsonInto reads an answer's result into v.
func jsonInto(r reply, v any) error {
	if !r.OK {
		return fmt.Errorf("error answer %+v", r.Error)
	}
	return json.Unmarshal(r.Result, v)
}
