package cuda

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/emit"
	"github.com/bespoke-hpc/bespoke/internal/cache"
	"github.com/bespoke-hpc/bespoke/internal/dl"
)

// openTestDevice opens device 0, or skips the test when no driver or device
// is available (fails instead when BESPOKE_REQUIRE_DEVICE=cuda).
func openTestDevice(t *testing.T) *Device {
	t.Helper()
	d, err := Open(0)
	if err != nil {
		if os.Getenv("BESPOKE_REQUIRE_DEVICE") == "cuda" {
			t.Fatalf("BESPOKE_REQUIRE_DEVICE=cuda but no CUDA device: %v", err)
		}
		t.Skipf("no CUDA device (set BESPOKE_REQUIRE_DEVICE=cuda to fail instead): %v", err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return d
}

// TestBindingTypes checks, on libc, the purego type mapping the tables rely
// on: a named int32 result, a Go string argument, pointer out-parameters.
func TestBindingTypes(t *testing.T) {
	lib, err := dl.Open("libc", "", "libc.so.6")
	if err != nil {
		t.Skipf("no libc.so.6: %v", err)
	}
	var abs func(int32) Result
	var strlen func(string) uint64
	var sscanf func(s string, f string, p *int32) int32
	if err := dl.Bind(lib, []dl.Func{{Ptr: &abs, Name: "abs"}, {Ptr: &strlen, Name: "strlen"}, {Ptr: &sscanf, Name: "sscanf"}}); err != nil {
		t.Fatal(err)
	}
	if got := abs(-201); got != ErrorInvalidContext {
		t.Errorf("abs(-201) = %v", got)
	}
	if got := strlen("hello"); got != 5 {
		t.Errorf("strlen = %d", got)
	}
	var v int32
	if n := sscanf("42", "%d", &v); n != 1 || v != 42 {
		t.Errorf("sscanf = %d, %d", n, v)
	}
}

func TestErrorText(t *testing.T) {
	e := &Error{Func: "cuModuleLoadData", Code: ErrorInvalidImage}
	if got, want := e.Error(), "cuModuleLoadData: CUDA_ERROR_INVALID_IMAGE (200)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	ce := &CompileError{Code: 6, Log: strings.Repeat("line\n", 100)}
	if n := strings.Count(ce.Error(), "\n"); n > 45 {
		t.Errorf("compile error has %d lines", n)
	}
}

func TestParseSpills(t *testing.T) {
	log := `ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'k1' for 'sm_90'
ptxas info    : Function properties for k1
    8 bytes stack frame, 12 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 255 registers, 368 bytes cmem[0]
ptxas info    : Function properties for k2
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
`
	m := parseSpills(log)
	if m["k1"] != 12 || m["k2"] != 0 || len(m) != 2 {
		t.Errorf("parseSpills = %v", m)
	}
}

func TestList(t *testing.T) {
	infos, err := List()
	if err != nil {
		if os.Getenv("BESPOKE_REQUIRE_DEVICE") == "cuda" {
			t.Fatal(err)
		}
		t.Skipf("no CUDA driver: %v", err)
	}
	for _, in := range infos {
		t.Logf("%+v", in)
	}
}

const testKernels = `
extern "C" __global__ void axpby_f64(const double* __restrict__ x, double* __restrict__ y,
                                     double a, double b, long long n) {
	long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
	if (i < n) y[i] = a * x[i] + b * y[i];
}
extern "C" __global__ void axpby_f32(const float* __restrict__ x, float* __restrict__ y,
                                     float a, float b, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) y[i] = a * x[i] + b * y[i];
}
extern "C" __global__ void shared_sum(const double* x, double* out, int n) {
	extern __shared__ double s[];
	double acc = 0;
	for (int i = threadIdx.x; i < n; i += blockDim.x) acc += x[i];
	s[threadIdx.x] = acc;
	__syncthreads();
	if (threadIdx.x == 0) {
		double t = 0;
		for (int i = 0; i < blockDim.x; i++) t += s[i];
		out[0] = t;
	}
}
`

func bytesOf[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}

func TestDevice(t *testing.T) {
	if os.Getenv("BESPOKE_CACHE_DIR") == "" {
		t.Setenv("BESPOKE_CACHE_DIR", t.TempDir())
	}
	d := openTestDevice(t)
	info := d.Info()
	t.Logf("info: %+v", info)
	if maj, min, err := NVRTCVersion(); err == nil {
		t.Logf("nvrtc %d.%d, cubin %v, cache %s", maj, min, nvrtc.cubin, cache.Open("cuda").Dir())
	} else {
		t.Fatal(err)
	}
	if info.ComputeUnits <= 0 || info.MemoryBytes <= 0 || !strings.HasPrefix(info.Arch, "sm_") {
		t.Errorf("bad info %+v", info)
	}
	src := emit.Source{Dialect: emit.CUDA, Text: testKernels, Entries: []string{"axpby_f64", "axpby_f32", "shared_sum"}}
	prog, err := d.BuildProgram(src)
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	if prog.Cached() {
		t.Errorf("first build came from the cache")
	}
	t.Logf("nvrtc log:\n%s", prog.Log())
	for _, e := range src.Entries {
		k, err := prog.Kernel(e)
		if err != nil {
			t.Fatal(err)
		}
		r := k.Resources()
		t.Logf("%s: %+v", e, r)
		if r.Registers <= 0 {
			t.Errorf("%s: Registers = %d", e, r.Registers)
		}
	}
	if _, err := prog.Kernel("nope"); err == nil {
		t.Errorf("Kernel(nope) succeeded")
	}

	// Second build: cache hit.
	prog2, err := d.BuildProgram(src)
	if err != nil {
		t.Fatal(err)
	}
	if !prog2.Cached() {
		t.Errorf("second build missed the cache %s", cache.Open("cuda").Dir())
	}
	prog2.Close()

	const n = 1<<20 + 3
	rng := rand.New(rand.NewPCG(1, 2))
	t.Run("f64", func(t *testing.T) {
		x, y := make([]float64, n), make([]float64, n)
		for i := range x {
			x[i], y[i] = rng.NormFloat64(), rng.NormFloat64()
		}
		bx, _ := d.Alloc(8 * n)
		by, _ := d.Alloc(8 * n)
		defer bx.Free()
		defer by.Free()
		must(t, bx.Upload(bytesOf(x)))
		must(t, by.Upload(bytesOf(y)))
		k, _ := prog.Kernel("axpby_f64")
		l := device.Launch{Grid: [3]int{(n + 255) / 256}, Block: [3]int{256}}
		dt, err := d.Elapsed(func() error { return k.Launch(l, bx, by, 1.5, -0.25, int64(n)) })
		must(t, err)
		if dt <= 0 {
			t.Errorf("Elapsed = %v", dt)
		}
		t.Logf("axpby_f64 n=%d: %v (%.0f GB/s)", n, dt, 24*float64(n)/dt.Seconds()/1e9)
		got := make([]float64, n)
		must(t, by.Download(bytesOf(got)))
		for i := range got {
			// The device contracts a*x+b*y into an FMA: allow rounding.
			if want := 1.5*x[i] - 0.25*y[i]; math.Abs(got[i]-want) > 1e-15*(math.Abs(1.5*x[i])+math.Abs(0.25*y[i])) {
				t.Fatalf("y[%d] = %v, want %v", i, got[i], want)
			}
		}
	})
	t.Run("f32", func(t *testing.T) {
		x, y := make([]float32, n), make([]float32, n)
		for i := range x {
			x[i], y[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
		}
		bx, _ := d.Alloc(4 * n)
		by, _ := d.Alloc(4 * n)
		defer bx.Free()
		defer by.Free()
		must(t, bx.Upload(bytesOf(x)))
		must(t, by.Upload(bytesOf(y)))
		k, _ := prog.Kernel("axpby_f32")
		must(t, k.Launch(device.Launch{Grid: [3]int{(n + 127) / 128, 1, 1}, Block: [3]int{128, 1, 1}},
			bx, by, float32(2), float32(0.5), int32(n)))
		must(t, d.Sync())
		got := make([]float32, n)
		must(t, by.Download(bytesOf(got)))
		for i := range got {
			want := float64(2*x[i]) + float64(0.5*y[i])
			if math.Abs(float64(got[i])-want) > 1e-6*math.Max(1, math.Abs(want)) {
				t.Fatalf("y[%d] = %v, want %v", i, got[i], want)
			}
		}
	})
	t.Run("series", func(t *testing.T) {
		// y ← 1.0·x + 1.0·y five times: a lead-in and four timed launches,
		// enqueued in order with no wait between them.
		x, y := make([]float64, n), make([]float64, n)
		for i := range x {
			x[i], y[i] = rng.NormFloat64(), rng.NormFloat64()
		}
		bx, _ := d.Alloc(8 * n)
		by, _ := d.Alloc(8 * n)
		defer bx.Free()
		defer by.Free()
		must(t, bx.Upload(bytesOf(x)))
		must(t, by.Upload(bytesOf(y)))
		k, _ := prog.Kernel("axpby_f64")
		l := device.Launch{Grid: [3]int{(n + 255) / 256}, Block: [3]int{256}}
		var calls []int
		ds, err := d.ElapsedSeries(4, func(i int) error {
			calls = append(calls, i)
			return k.Launch(l, bx, by, 1.0, 1.0, int64(n))
		})
		must(t, err)
		if !slices.Equal(calls, []int{0, 1, 2, 3, 4}) || len(ds) != 4 {
			t.Fatalf("calls %v, %d times", calls, len(ds))
		}
		for i, dt := range ds {
			if dt <= 0 {
				t.Errorf("launch %d: %v", i+1, dt)
			}
		}
		t.Logf("series: %v", ds)
		got := make([]float64, n)
		must(t, by.Download(bytesOf(got)))
		for i := range got {
			if want := y[i] + 5*x[i]; math.Abs(got[i]-want) > 1e-14*(math.Abs(y[i])+5*math.Abs(x[i])) {
				t.Fatalf("y[%d] = %v, want %v", i, got[i], want)
			}
		}
		// An error from f ends the series and is returned.
		boom := errors.New("boom")
		if _, err := d.ElapsedSeries(3, func(i int) error {
			if i == 2 {
				return boom
			}
			return nil
		}); !errors.Is(err, boom) {
			t.Errorf("error from f: %v", err)
		}
	})
	t.Run("shared", func(t *testing.T) {
		// 1024 threads × 8 bytes = 8 KiB; ask for 64 KiB to exercise the
		// >48 KiB opt-in.
		x := make([]float64, 5000)
		want := 0.0
		for i := range x {
			x[i] = float64(i % 7)
			want += x[i]
		}
		bx, _ := d.Alloc(int64(8 * len(x)))
		bo, _ := d.Alloc(8)
		defer bx.Free()
		defer bo.Free()
		must(t, bx.Upload(bytesOf(x)))
		k, _ := prog.Kernel("shared_sum")
		must(t, k.Launch(device.Launch{Grid: [3]int{1}, Block: [3]int{1024}, SharedBytes: 64 << 10}, bx, bo, int32(len(x))))
		got := make([]float64, 1)
		must(t, bo.Download(bytesOf(got)))
		if got[0] != want {
			t.Errorf("sum = %v, want %v", got[0], want)
		}
	})
	t.Run("fill", func(t *testing.T) {
		b, err := d.AllocBuffer(100)
		must(t, err)
		defer b.Free()
		must(t, b.Fill(0xff))
		got := make([]byte, 100)
		must(t, b.Download(got))
		if got[0] != 0xff || got[99] != 0xff {
			t.Errorf("fill: %v", got[:4])
		}
		if b.Ptr() == 0 {
			t.Errorf("Ptr = 0")
		}
	})
	t.Run("compile error", func(t *testing.T) {
		bad := emit.Source{Dialect: emit.CUDA, Text: "extern \"C\" __global__ void k() { undefined_thing(); }\n", Entries: []string{"k"}}
		_, err := d.Build(bad)
		var ce *CompileError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "undefined_thing") {
			t.Fatalf("want a CompileError with the log, got %v", err)
		}
		t.Logf("%v", err)
	})
	t.Run("BuildAll", func(t *testing.T) {
		var srcs []emit.Source
		for i := range 4 {
			srcs = append(srcs, emit.Source{Dialect: emit.CUDA,
				Text:    strings.ReplaceAll(testKernels, "axpby_f64", "axpby_f64_"+string(rune('a'+i))),
				Entries: []string{"axpby_f64_" + string(rune('a'+i))}})
		}
		srcs = append(srcs, emit.Source{Dialect: emit.CUDA, Text: "syntax error", Entries: []string{"x"}})
		progs, errs := d.BuildAll(srcs)
		for i := range 4 {
			if errs[i] != nil || progs[i] == nil {
				t.Errorf("BuildAll[%d]: %v", i, errs[i])
				continue
			}
			progs[i].Close()
		}
		if errs[4] == nil {
			t.Errorf("BuildAll of a bad source succeeded")
		}
	})
	t.Run("bad arg", func(t *testing.T) {
		k, _ := prog.Kernel("axpby_f32")
		if err := k.Launch(device.Launch{Grid: [3]int{1}, Block: [3]int{1}}, "x"); err == nil {
			t.Errorf("string argument accepted")
		}
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
