package opencl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/emit"
)

// openTest opens the default device, skipping when OpenCL is unavailable
// unless BESPOKE_REQUIRE_OPENCL=1.
func openTest(t *testing.T) *Device {
	t.Helper()
	t.Setenv("BESPOKE_CACHE_DIR", t.TempDir())
	if err := Available(); err != nil {
		if os.Getenv("BESPOKE_REQUIRE_OPENCL") == "1" {
			t.Fatalf("BESPOKE_REQUIRE_OPENCL=1 but: %v", err)
		}
		t.Skipf("OpenCL unavailable: %v", err)
	}
	d, err := Open(os.Getenv("BESPOKE_OPENCL_DEVICE"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	})
	return d
}

const testSrc = `
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
__kernel void axpy64(__global const double *a, __global const double *x, __global double *y, int n) {
	int i = get_global_id(0);
	if (i < n) y[i] = a[0] * x[i] + y[i];
}
__kernel void axpy32(__global const float *x, __global float *y, float a, long n) {
	long i = get_global_id(0);
	if (i < n) y[i] = a * x[i] + y[i];
}
// Reverses each block of 64 through local memory; 2-D grid, row stride ld.
__kernel void reverse(__global int *v, int ld) {
	__local int tile[64];
	int t = get_local_id(0);
	int base = get_group_id(0) * 64 + get_global_id(1) * ld;
	tile[t] = v[base + t];
	barrier(CLK_LOCAL_MEM_FENCE);
	v[base + t] = tile[63 - t];
}
`

func upload(t *testing.T, d *Device, data []byte) device.Buffer {
	t.Helper()
	b, err := d.Alloc(int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Free() })
	if err := b.Upload(data); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestList(t *testing.T) {
	d := openTest(t)
	infos, err := List()
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) == 0 {
		t.Fatal("no devices listed")
	}
	for _, in := range infos {
		t.Logf("%+v", in)
		if in.Backend != "opencl" || in.Name == "" || in.Platform == "" || in.ComputeUnits <= 0 || in.MemoryBytes <= 0 || in.MaxBlock <= 0 {
			t.Errorf("incomplete info %+v", in)
		}
	}
	t.Logf("opened: %+v (driver %s)", d.Info(), d.driver)
	if d.Dialect() != emit.OpenCL {
		t.Errorf("dialect %q", d.Dialect())
	}
	// Selectors.
	first := infos[0]
	for _, sel := range []string{"0:0", strings.ToUpper(first.Platform[:3]), first.Name} {
		d2, err := Open(sel)
		if err != nil {
			t.Errorf("Open(%q): %v", sel, err)
			continue
		}
		d2.Close()
	}
	if _, err := Open("no-such-device-xyz"); err == nil || !strings.Contains(err.Error(), first.Name) {
		t.Errorf("bad selector error: %v", err)
	}
	if _, err := Open("7:9"); err == nil {
		t.Error("Open(7:9) succeeded")
	}
}

func TestAxpy(t *testing.T) {
	d := openTest(t)
	prog, err := d.Build(emit.Source{Dialect: emit.OpenCL, Text: testSrc, Entries: []string{"axpy64", "axpy32", "reverse"}})
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	r := rand.New(rand.NewPCG(3, 4))
	const n = 10007
	const block = 64
	grid := (n + block - 1) / block

	t.Run("fp64", func(t *testing.T) {
		if !d.Info().FP64 {
			t.Skip("device has no fp64")
		}
		k, err := prog.Kernel("axpy64")
		if err != nil {
			t.Fatal(err)
		}
		x, y := make([]float64, n), make([]float64, n)
		xb, yb := make([]byte, 8*n), make([]byte, 8*n)
		for i := range x {
			x[i], y[i] = r.Float64()*2-1, r.Float64()*2-1
			binary.LittleEndian.PutUint64(xb[8*i:], math.Float64bits(x[i]))
			binary.LittleEndian.PutUint64(yb[8*i:], math.Float64bits(y[i]))
		}
		a := -1.25
		ab := binary.LittleEndian.AppendUint64(nil, math.Float64bits(a))
		A, X, Y := upload(t, d, ab), upload(t, d, xb), upload(t, d, yb)
		el, err := d.Elapsed(func() error {
			return k.Launch(device.Launch{Grid: [3]int{grid, 1, 1}, Block: [3]int{block, 1, 1}}, A, X, Y, int32(n))
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("elapsed %v (markers disabled: %v)", el, d.noMarkers)
		if el <= 0 {
			t.Errorf("elapsed %v", el)
		}
		if err := Y.Download(yb); err != nil {
			t.Fatal(err)
		}
		for i := range y {
			g := math.Float64frombits(binary.LittleEndian.Uint64(yb[8*i:]))
			if want := a*x[i] + y[i]; math.Abs(g-want) > 1e-15 {
				t.Fatalf("y[%d] = %v, want %v", i, g, want)
			}
		}
	})

	t.Run("fp32", func(t *testing.T) {
		k, err := prog.Kernel("axpy32")
		if err != nil {
			t.Fatal(err)
		}
		x, y := make([]float32, n), make([]float32, n)
		xb, yb := make([]byte, 4*n), make([]byte, 4*n)
		for i := range x {
			x[i], y[i] = r.Float32()*2-1, r.Float32()*2-1
			binary.LittleEndian.PutUint32(xb[4*i:], math.Float32bits(x[i]))
			binary.LittleEndian.PutUint32(yb[4*i:], math.Float32bits(y[i]))
		}
		a := float32(0.5)
		X, Y := upload(t, d, xb), upload(t, d, yb)
		if err := k.Launch(device.Launch{Grid: [3]int{grid}, Block: [3]int{block}}, X, Y, a, int64(n)); err != nil {
			t.Fatal(err)
		}
		if err := Y.Download(yb); err != nil {
			t.Fatal(err)
		}
		for i := range y {
			g := math.Float32frombits(binary.LittleEndian.Uint32(yb[4*i:]))
			if want := a*x[i] + y[i]; math.Abs(float64(g-want)) > 1e-6 {
				t.Fatalf("y[%d] = %v, want %v", i, g, want)
			}
		}
		// Wrong argument size is an error naming the call.
		err = k.Launch(device.Launch{Grid: [3]int{grid}, Block: [3]int{block}}, X, Y, a, int32(n))
		var ce *Error
		if !errors.As(err, &ce) || ce.Call != "clSetKernelArg" {
			t.Errorf("int32 for long: %v", err)
		}
		if err := k.Launch(device.Launch{Grid: [3]int{1}}, X, Y, a, "x"); err == nil {
			t.Error("string argument accepted")
		}
	})

	t.Run("series", func(t *testing.T) {
		// y ← 0.5·x + y five times: a lead-in and four timed launches.
		k, err := prog.Kernel("axpy32")
		if err != nil {
			t.Fatal(err)
		}
		x, y := make([]float32, n), make([]float32, n)
		xb, yb := make([]byte, 4*n), make([]byte, 4*n)
		for i := range x {
			x[i], y[i] = float32(r.IntN(64)-32), float32(r.IntN(64)-32)
			binary.LittleEndian.PutUint32(xb[4*i:], math.Float32bits(x[i]))
			binary.LittleEndian.PutUint32(yb[4*i:], math.Float32bits(y[i]))
		}
		X, Y := upload(t, d, xb), upload(t, d, yb)
		var calls []int
		ds, err := d.ElapsedSeries(4, func(i int) error {
			calls = append(calls, i)
			return k.Launch(device.Launch{Grid: [3]int{grid}, Block: [3]int{block}}, X, Y, float32(0.5), int64(n))
		})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(calls, []int{0, 1, 2, 3, 4}) || len(ds) != 4 {
			t.Fatalf("calls %v, %d times", calls, len(ds))
		}
		for i, dt := range ds {
			if dt <= 0 {
				t.Errorf("launch %d: %v", i+1, dt)
			}
		}
		t.Logf("series %v (markers disabled: %v)", ds, d.noMarkers)
		if err := Y.Download(yb); err != nil {
			t.Fatal(err)
		}
		for i := range y {
			// Small integers and halves: every sum is exact.
			if g, want := math.Float32frombits(binary.LittleEndian.Uint32(yb[4*i:])), y[i]+2.5*x[i]; g != want {
				t.Fatalf("y[%d] = %v, want %v", i, g, want)
			}
		}
		boom := errors.New("boom")
		if _, err := d.ElapsedSeries(3, func(i int) error {
			if i == 1 {
				return boom
			}
			return nil
		}); !errors.Is(err, boom) {
			t.Errorf("error from f: %v", err)
		}
	})

	t.Run("local2d", func(t *testing.T) {
		k, err := prog.Kernel("reverse")
		if err != nil {
			t.Fatal(err)
		}
		res := k.Resources()
		t.Logf("resources %+v", res)
		if res.SharedBytes < 256 {
			t.Errorf("local memory %d < 256", res.SharedBytes)
		}
		const rows, cols = 3, 256
		vb := make([]byte, 4*rows*cols)
		for i := 0; i < rows*cols; i++ {
			binary.LittleEndian.PutUint32(vb[4*i:], uint32(i))
		}
		V := upload(t, d, vb)
		if err := k.Launch(device.Launch{Grid: [3]int{cols / 64, rows}, Block: [3]int{64, 1, 1}}, V, int32(cols)); err != nil {
			t.Fatal(err)
		}
		if err := V.Download(vb); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < rows*cols; i++ {
			want := i - i%64 + 63 - i%64
			if g := int(binary.LittleEndian.Uint32(vb[4*i:])); g != want {
				t.Fatalf("v[%d] = %d, want %d", i, g, want)
			}
		}
	})
}

func TestBuildError(t *testing.T) {
	d := openTest(t)
	_, err := d.Build(emit.Source{Dialect: emit.OpenCL, Text: "__kernel void broken(__global int *x) { x[0] = undefined_thing + ; }\n", Entries: []string{"broken"}})
	if err == nil {
		t.Fatal("broken kernel built")
	}
	t.Logf("%v", err)
	var ce *Error
	if !errors.As(err, &ce) || ce.Code != clBuildProgramFailureCode {
		t.Errorf("not CL_BUILD_PROGRAM_FAILURE: %v", err)
	}
	if !strings.Contains(err.Error(), "CL_BUILD_PROGRAM_FAILURE (-11)") || !strings.Contains(err.Error(), "undefined_thing") {
		t.Errorf("error lacks the build log: %v", err)
	}
	_, err = d.Build(emit.Source{Dialect: emit.OpenCL, Text: "__kernel void f(__global int *x) { x[0] = 1; }\n", Entries: []string{"g"}})
	if err == nil || !strings.Contains(err.Error(), "CL_INVALID_KERNEL_NAME") {
		t.Errorf("missing entry: %v", err)
	}
}

func TestBinaryCache(t *testing.T) {
	d := openTest(t)
	src := emit.Source{Dialect: emit.OpenCL, Text: testSrc + "\n// cache\n", Entries: []string{"axpy32"}}
	p1, err := d.Build(src)
	if err != nil {
		t.Fatal(err)
	}
	p1.Close()
	start := time.Now()
	p2, err := d.Build(src)
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Close()
	t.Logf("second build %v, binary hits %d, source builds %d", time.Since(start), d.binaryHits, d.sourceBuild)
	switch {
	case d.ownCache() && (d.binaryHits != 0 || d.sourceBuild != 2):
		t.Errorf("%s caches programs itself, yet bespoke's binary cache was used (hits %d, source builds %d)",
			d.info.Platform, d.binaryHits, d.sourceBuild)
	case !d.ownCache() && d.binaryHits != 1:
		t.Errorf("binary cache not used (hits %d)", d.binaryHits)
	}
	k, err := p2.Kernel("axpy32")
	if err != nil {
		t.Fatal(err)
	}
	xb := make([]byte, 4*100)
	for i := 0; i < 100; i++ {
		binary.LittleEndian.PutUint32(xb[4*i:], math.Float32bits(float32(i)))
	}
	X, Y := upload(t, d, xb), upload(t, d, make([]byte, 4*100))
	if err := k.Launch(device.Launch{Grid: [3]int{2}, Block: [3]int{64}}, X, Y, float32(2), int64(100)); err != nil {
		t.Fatal(err)
	}
	if err := Y.Download(xb); err != nil {
		t.Fatal(err)
	}
	if g := math.Float32frombits(binary.LittleEndian.Uint32(xb[4*99:])); g != 198 {
		t.Errorf("y[99] = %v", g)
	}
}

func TestBuffer(t *testing.T) {
	d := openTest(t)
	b, err := d.Alloc(16)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Upload(make([]byte, 17)); err == nil {
		t.Error("oversized upload accepted")
	}
	if err := b.Upload([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 5)
	if err := b.Download(got); err != nil || string(got) != "hello" {
		t.Fatalf("download %q %v", got, err)
	}
	if err := b.Free(); err != nil {
		t.Fatal(err)
	}
	if err := b.Free(); err != nil {
		t.Errorf("double free: %v", err)
	}
	z, err := d.Alloc(0)
	if err != nil {
		t.Fatal(err)
	}
	z.Free()
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
}

func TestErrorNames(t *testing.T) {
	e := &Error{Call: "clBuildProgram", Code: -11}
	if e.Error() != "opencl: clBuildProgram: CL_BUILD_PROGRAM_FAILURE (-11)" {
		t.Errorf("%q", e.Error())
	}
	if CodeName(-9999) != "CL_ERROR" {
		t.Error(CodeName(-9999))
	}
}

// bigKernel is a fully unrolled C = A·B with a constant m×k matrix A, one
// work-item per column of B: about m*k+m+k lines.
func bigKernel(m, k int) string {
	r := rand.New(rand.NewPCG(5, 6))
	var b strings.Builder
	b.WriteString("#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n")
	b.WriteString("__kernel void big(__global const double *restrict B, __global double *restrict C, long n) {\n")
	b.WriteString("\tlong j = get_global_id(0);\n\tif (j >= n) return;\n")
	for p := 0; p < k; p++ {
		fmt.Fprintf(&b, "\tconst double b%d = B[%d * n + j];\n", p, p)
	}
	for i := 0; i < m; i++ {
		fmt.Fprintf(&b, "\tdouble c%d = 0.0;\n", i)
		for p := 0; p < k; p++ {
			fmt.Fprintf(&b, "\tc%d = fma(%.17g, b%d, c%d);\n", i, r.Float64()*2-1, p, i)
		}
		fmt.Fprintf(&b, "\tC[%d * n + j] = c%d;\n", i, i)
	}
	b.WriteString("}\n")
	return b.String()
}

// Extra build options reach the compiler: a valid one builds, a bogus one
// is refused, and "" restores the defaults.
func TestExtraOptions(t *testing.T) {
	d := openTest(t)
	defer d.SetExtraOptions("")
	src := emit.Source{Dialect: emit.OpenCL, Text: "__kernel void one(__global int *x) { x[0] = 1; }\n", Entries: []string{"one"}}
	for _, tc := range []struct {
		opts string
		ok   bool
	}{
		{"-cl-opt-disable", true},
		{"-cl-no-such-option-bespoke", false},
		{"", true},
	} {
		d.SetExtraOptions(tc.opts)
		p, err := d.Build(src)
		switch {
		case err != nil && tc.ok:
			t.Errorf("options %q: %v", tc.opts, err)
		case err == nil && !tc.ok && isPoCL(d.Info().Platform): // others may ignore unknown options
			t.Errorf("options %q: built, want an error", tc.opts)
		}
		if err == nil {
			p.Close()
		}
	}
}

// A register cap goes into NVIDIA's PTX (whose compiler ignores its
// -cl-nv-maxrregcount option), never into the options: other compilers
// reject -cl-nv options.
func TestRegisterCapOption(t *testing.T) {
	src := emit.Source{Dialect: emit.OpenCL, Text: "kernel void f(void) {}\n"}
	capped := src
	capped.MaxRegisters = 128
	for _, c := range []struct {
		platform string
		want     int
	}{{"NVIDIA CUDA", 128}, {"Portable Computing Language", 0}} {
		d := &Device{info: device.Info{Platform: c.platform}, options: BuildOptions}
		if got := d.regCap(capped); got != c.want || d.regCap(src) != 0 {
			t.Errorf("%s: cap %d (plain %d), want %d", c.platform, got, d.regCap(src), c.want)
		}
		if strings.Contains(d.srcOptions(capped), "maxrregcount") {
			t.Errorf("%s: options %q", c.platform, d.srcOptions(capped))
		}
		// One binary serves both: the cap is applied when it is loaded.
		if d.key(src) != d.key(capped) {
			t.Errorf("%s: capped and plain keys differ", c.platform)
		}
	}
}

func TestCapRegisters(t *testing.T) {
	ptx := ".version 8.0\n.target sm_90\n.visible .entry f(\n\t.param .u32 f_param_0\n)\n.reqntid 128, 1, 1\n{\n\tret;\n}\n" +
		".visible .entry g(\n\t.param .u64 g_param_0\n)\n.maxnreg 200\n{\n\tret;\n}\n"
	for _, tc := range []struct {
		name string
		in   string
		n    int
		want string
	}{
		{"two entries, one capped already", ptx, 96,
			".version 8.0\n.target sm_90\n.visible .entry f(\n\t.param .u32 f_param_0\n)\n.reqntid 128, 1, 1\n.maxnreg 96\n{\n\tret;\n}\n" +
				".visible .entry g(\n\t.param .u64 g_param_0\n)\n.maxnreg 96\n{\n\tret;\n}\n"},
		{"no cap", ptx, 0, ptx},
		{"not PTX", "\x7fELF binary .entry (", 64, "\x7fELF binary .entry ("},
	} {
		if got := string(capRegisters([]byte(tc.in), tc.n)); got != tc.want {
			t.Errorf("%s:\n%s\nwant\n%s", tc.name, got, tc.want)
		}
	}
}
