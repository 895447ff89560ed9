package host

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/emit"
	"github.com/bespoke-hpc/bespoke/internal/cache"
)

// axpy follows the C convention: y[i] = a*x[i] + y[i] for blocks of 64
// elements, n elements in all; a is a double passed through a buffer since
// kernel parameters are buffers and integers only.
const axpySrc = `
#include <stdint.h>
void axpy(int64_t grid_x, const double *restrict a, const double *restrict x,
          double *restrict y, int n) {
	#pragma omp parallel for
	for (int64_t b = 0; b < grid_x; b++) {
		for (int64_t t = 0; t < 64; t++) {
			int64_t i = b * 64 + t;
			if (i < n) y[i] = a[0] * x[i] + y[i];
		}
	}
}
void scale32(int64_t grid_x, float *x, int64_t n, int32_t s) {
	#pragma omp parallel for
	for (int64_t b = 0; b < grid_x; b++)
		for (int64_t i = b * 128; i < (b + 1) * 128 && i < n; i++) x[i] *= (float)s;
}
`

func open(t *testing.T) *Device {
	t.Helper()
	t.Setenv("BESPOKE_CACHE_DIR", t.TempDir())
	d, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func f64bytes(v []float64) []byte {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(x))
	}
	return b
}

func bytesf64(b []byte) []float64 {
	v := make([]float64, len(b)/8)
	for i := range v {
		v[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return v
}

func upload(t *testing.T, d device.Device, data []byte) device.Buffer {
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

func TestInfo(t *testing.T) {
	d := open(t)
	info := d.Info()
	t.Logf("info: %+v flags: %v", info, d.Flags())
	if info.Backend != "c" || info.Name == "" || info.ComputeUnits <= 0 || !info.FP64 || info.Arch == "" {
		t.Errorf("incomplete info %+v", info)
	}
	if d.Dialect() != emit.C {
		t.Errorf("dialect %q", d.Dialect())
	}
	// Wide-vector kernels get 512-bit vectors exactly where the build
	// drops -mno-avx512f for them (srcFlags), and the model is told so.
	cpuinfo, _ := os.ReadFile("/proc/cpuinfo")
	avx512 := strings.Contains(string(cpuinfo), " avx512f")
	if want := map[bool]int{true: 512}[avx512 && slices.Contains(d.Flags(), "-mno-avx512f")]; info.WideVectorBits != want {
		t.Errorf("WideVectorBits %d, want %d (avx512f %v, flags %v)", info.WideVectorBits, want, avx512, d.Flags())
	}
	if _, short := d.Compiler(); strings.HasPrefix(short, "gcc") {
		found := false
		for _, f := range d.Flags() {
			found = found || f == gccFlags[0]
		}
		if !found {
			t.Errorf("gcc without %s: %v", gccFlags[0], d.Flags())
		}
	}
	t.Setenv("OMP_NUM_THREADS", "3")
	if d2, err := Open(); err != nil || d2.Info().ComputeUnits != 3 {
		t.Errorf("OMP_NUM_THREADS=3 gives %d compute units (%v)", d2.Info().ComputeUnits, err)
	}
}

func TestAxpy(t *testing.T) {
	d := open(t)
	prog, err := d.Build(emit.Source{Dialect: emit.C, Text: axpySrc, Entries: []string{"axpy", "scale32"}})
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	k, err := prog.Kernel("axpy")
	if err != nil {
		t.Fatal(err)
	}
	if k.Name() != "axpy" {
		t.Errorf("name %q", k.Name())
	}
	const n = 10007
	r := rand.New(rand.NewPCG(1, 2))
	x, y := make([]float64, n), make([]float64, n)
	for i := range x {
		x[i], y[i] = r.Float64()*2-1, r.Float64()*2-1
	}
	a := 0.75
	ab, xb, yb := upload(t, d, f64bytes([]float64{a})), upload(t, d, f64bytes(x)), upload(t, d, f64bytes(y))
	grid := (n + 63) / 64
	el, err := d.Elapsed(func() error {
		return k.Launch(device.Launch{Grid: [3]int{grid, 1, 1}, Block: [3]int{64, 1, 1}}, ab, xb, yb, int32(n))
	})
	if err != nil {
		t.Fatal(err)
	}
	if el <= 0 {
		t.Errorf("elapsed %v", el)
	}
	got := make([]byte, 8*n)
	if err := yb.Download(got); err != nil {
		t.Fatal(err)
	}
	for i, g := range bytesf64(got) {
		// gcc may contract a*x+y into an FMA: compare with a tolerance.
		if want := a*x[i] + y[i]; math.Abs(g-want) > 1e-15 {
			t.Fatalf("y[%d] = %v, want %v", i, g, want)
		}
	}
	// Zero-copy view.
	if v := bytesf64(yb.(*Buffer).Bytes()); math.Abs(v[n-1]-(a*x[n-1]+y[n-1])) > 1e-15 {
		t.Errorf("Bytes() view: %v", v[n-1])
	}

	// int64 and a negative-capable int32 argument, float data.
	k2, err := prog.Kernel("scale32")
	if err != nil {
		t.Fatal(err)
	}
	const m = 1000
	fb, err := d.Alloc(4 * m)
	if err != nil {
		t.Fatal(err)
	}
	defer fb.Free()
	raw := fb.(*Buffer).Bytes()
	for i := 0; i < m; i++ {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(float32(i)))
	}
	if err := k2.Launch(device.Launch{Grid: [3]int{(m + 127) / 128, 1, 1}}, fb, int64(m), int32(-3)); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < m; i++ {
		if g := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:])); g != float32(-3*i) {
			t.Fatalf("x[%d] = %v, want %v", i, g, -3*i)
		}
	}
	if err := k2.Launch(device.Launch{Grid: [3]int{1, 1, 1}}, fb, 1.5, int32(1)); err == nil {
		t.Error("float argument accepted")
	}
	if err := k2.Launch(device.Launch{Grid: [3]int{1, 2, 1}}, fb, int64(1), int32(1)); err == nil {
		t.Error("2-D grid accepted")
	}
	if _, err := prog.Kernel("nope"); err == nil {
		t.Error("missing entry accepted")
	}
}

func TestBuffer(t *testing.T) {
	d := open(t)
	b, err := d.Alloc(10)
	if err != nil {
		t.Fatal(err)
	}
	hb := b.(*Buffer)
	if b.Size() != 10 || len(hb.Bytes()) != 10 || hb.Ptr()%uintptr(os.Getpagesize()) != 0 {
		t.Fatalf("size %d len %d ptr %#x", b.Size(), len(hb.Bytes()), hb.Ptr())
	}
	if err := b.Upload(make([]byte, 11)); err == nil {
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
	if err := b.Upload([]byte("x")); err == nil {
		t.Error("upload after free accepted")
	}
	z, err := d.Alloc(0)
	if err != nil {
		t.Fatal(err)
	}
	z.Free()
}

// Views of one allocation (device.Slicer): their bytes are the
// allocation's, their Free leaves it alone, and bad slices are refused.
func TestSlice(t *testing.T) {
	d := open(t)
	b, err := d.Alloc(1000)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free()
	v, err := d.Slice(b, 256, 5)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Upload([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if got := string(b.(*Buffer).Bytes()[256:261]); got != "hello" || v.Size() != 5 || v.(*Buffer).Ptr() != b.(*Buffer).Ptr()+256 {
		t.Fatalf("view bytes %q size %d", got, v.Size())
	}
	if err := v.Upload(make([]byte, 6)); err == nil {
		t.Error("upload past the view accepted")
	}
	if err := v.Free(); err != nil {
		t.Fatal(err)
	}
	if got := string(b.(*Buffer).Bytes()[256:261]); got != "hello" {
		t.Fatalf("the view's Free changed the allocation: %q", got)
	}
	if z, err := d.Slice(b, 768, 0); err != nil || z.(*Buffer).Ptr() == 0 {
		t.Errorf("empty view: %v", err)
	}
	w, _ := d.Slice(b, 0, 8)
	for name, c := range map[string]struct {
		b      device.Buffer
		off, n int64
	}{
		"misaligned":   {b, 8, 8},
		"past the end": {b, 768, 300},
		"negative":     {b, 0, -1},
		"of a view":    {w, 0, 8},
	} {
		if _, err := d.Slice(c.b, c.off, c.n); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestCompileError(t *testing.T) {
	d := open(t)
	_, err := d.Build(emit.Source{Dialect: emit.C, Text: "void broken(int64_t g) { this is not C; }\n", Entries: []string{"broken"}})
	if err == nil {
		t.Fatal("broken source built")
	}
	t.Logf("error: %v", err)
	if !strings.Contains(err.Error(), "error") || !strings.Contains(err.Error(), "broken") {
		t.Errorf("error lacks the compiler's message: %v", err)
	}
	// Entry not defined by the source.
	if _, err := d.Build(emit.Source{Dialect: emit.C, Text: "void f(long g) {}\n", Entries: []string{"g"}}); err == nil {
		t.Error("missing entry accepted")
	}
	if _, err := d.Build(emit.Source{Dialect: emit.OpenCL, Text: "", Entries: nil}); err == nil {
		t.Error("OpenCL source accepted")
	}
}

// A CC that names no compiler is an error naming CC, not a quiet fall back
// to cc; only an unset CC looks through cc, gcc and clang.
func TestNoCompiler(t *testing.T) {
	empty := t.TempDir()
	for _, tc := range []struct {
		name, cc, path string
		want           []string
	}{
		{"CC unset, empty PATH", "", empty, []string{"cc, gcc, clang"}},
		{"CC missing, empty PATH", "bespoke-no-such-compiler", empty, []string{`CC="bespoke-no-such-compiler"`}},
		{"CC a missing path", "/nonexistent/cc", os.Getenv("PATH"), []string{`CC="/nonexistent/cc"`, "no such compiler"}},
		{"CC missing, gcc in PATH", "bespoke-no-such-compiler -O1", os.Getenv("PATH"), []string{`CC="bespoke-no-such-compiler -O1"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("CC", tc.cc)
			t.Setenv("PATH", tc.path)
			d, err := Open()
			if err == nil {
				t.Fatalf("opened %v", d.cc)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) || strings.Contains(err.Error(), "\n") {
					t.Errorf("error %q: want one line containing %q", err, w)
				}
			}
		})
	}
}

// Every compiler runs with a private TMPDIR, removed when it ends: a
// killed gcc leaves its cc*.s there.
func TestRunPrivateTempDir(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	out, err := Run(exec.Command("sh", "-c", `echo "$TMPDIR"; touch "$TMPDIR/ccXXXX.s"`))
	if err != nil {
		t.Fatal(err)
	}
	dir := strings.TrimSpace(string(out))
	if dir == tmp || filepath.Dir(dir) != tmp {
		t.Errorf("the compiler's TMPDIR is %q, want a fresh folder in %s", dir, tmp)
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("left in TMPDIR: %v", left)
	}
}

func TestCache(t *testing.T) {
	d := open(t)
	src := emit.Source{Dialect: emit.C, Text: axpySrc + "\n// cache test\n", Entries: []string{"axpy"}}
	p1, err := d.Build(src)
	if err != nil {
		t.Fatal(err)
	}
	defer p1.Close()
	obj := p1.(*Program).Path()
	if dir := cache.Open("c").Dir(); filepath.Dir(obj) != dir {
		t.Errorf("object %s not in %s", obj, dir)
	}
	st1, err := os.Stat(obj)
	if err != nil {
		t.Fatal(err)
	}
	if n := d.compiles.Load(); n != 1 {
		t.Fatalf("%d compiles", n)
	}
	time.Sleep(10 * time.Millisecond)
	start := time.Now()
	p2, err := d.Build(src)
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Close()
	t.Logf("cached build took %v", time.Since(start))
	st2, _ := os.Stat(obj)
	if n := d.compiles.Load(); n != 1 || !st2.ModTime().Equal(st1.ModTime()) {
		t.Errorf("second build compiled again (%d compiles, mtime %v → %v)", n, st1.ModTime(), st2.ModTime())
	}
	// A fresh Device (another process, say) reuses the object too.
	d2, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	p3, err := d2.Build(src)
	if err != nil {
		t.Fatal(err)
	}
	p3.Close()
	if d2.compiles.Load() != 0 {
		t.Error("fresh device compiled again")
	}
	// BESPOKE_NO_CACHE=1 always compiles, outside the cache.
	t.Setenv("BESPOKE_NO_CACHE", "1")
	p4, err := d.Build(src)
	if err != nil {
		t.Fatal(err)
	}
	defer p4.Close()
	if d.compiles.Load() != 2 {
		t.Error("BESPOKE_NO_CACHE=1 did not compile")
	}
	if k, err := p4.Kernel("axpy"); err != nil || k.Name() != "axpy" {
		t.Errorf("kernel from uncached build: %v", err)
	}
}

// A damaged object in the cache (here truncated, which made dlopen die
// with SIGBUS) is found by its checksum and compiled again; a cache folder
// that cannot be written gives way to a temporary one.
func TestCacheDamage(t *testing.T) {
	d := open(t)
	src := emit.Source{Dialect: emit.C, Text: axpySrc + "\n// damage test\n", Entries: []string{"axpy"}}
	p, err := d.Build(src)
	if err != nil {
		t.Fatal(err)
	}
	obj := p.(*Program).Path()
	p.Close()
	for _, damage := range []func() error{
		func() error { fi, _ := os.Stat(obj); return os.Truncate(obj, fi.Size()/2) },
		func() error { return os.WriteFile(obj, []byte("not an ELF object"), 0o644) },
		func() error { return os.Remove(obj + ".sum") },
	} {
		if err := damage(); err != nil {
			t.Fatal(err)
		}
		before := d.compiles.Load()
		p, err := d.Build(src)
		if err != nil {
			t.Fatal(err)
		}
		p.Close()
		if d.compiles.Load() != before+1 {
			t.Error("a damaged object was not compiled again")
		}
	}
	if os.Getuid() == 0 {
		t.Log("running as root: a read-only folder is writable, the fallback is not exercised")
		return
	}
	ro := t.TempDir()
	os.Chmod(ro, 0o500)
	t.Setenv("BESPOKE_CACHE_DIR", ro)
	var warned []string
	old := cache.Warn
	cache.Warn = func(s string) { warned = append(warned, s) }
	defer func() { cache.Warn = old }()
	p, err = d.Build(src)
	if err != nil {
		t.Fatalf("read-only cache: %v", err)
	}
	p.Close()
	if len(warned) != 1 {
		t.Errorf("warnings %q, want one", warned)
	}
}

func TestConcurrentBuild(t *testing.T) {
	d := open(t)
	// Several Devices share the cache directory like separate processes would.
	devs := []*Device{d}
	for i := 0; i < 2; i++ {
		di, err := Open()
		if err != nil {
			t.Fatal(err)
		}
		devs = append(devs, di)
	}
	src := emit.Source{Dialect: emit.C, Text: axpySrc + "\n// concurrent\n", Entries: []string{"axpy", "scale32"}}
	var wg sync.WaitGroup
	errs := make(chan error, 12)
	for i := 0; i < 12; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			p, err := devs[i%len(devs)].Build(src)
			if err != nil {
				errs <- err
				return
			}
			defer p.Close()
			k, err := p.Kernel("scale32")
			if err != nil {
				errs <- err
				return
			}
			b, _ := d.Alloc(4 * 256)
			defer b.Free()
			raw := b.(*Buffer).Bytes()
			for j := 0; j < 256; j++ {
				binary.LittleEndian.PutUint32(raw[4*j:], math.Float32bits(1))
			}
			if err := k.Launch(device.Launch{Grid: [3]int{2, 1, 1}}, b, int64(256), int32(i)); err != nil {
				errs <- err
				return
			}
			if g := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*255:])); g != float32(i) {
				errs <- fmt.Errorf("goroutine %d: got %v", i, g)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	left, _ := filepath.Glob(filepath.Join(cache.Open("c").Dir(), "*.tmp"))
	if len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
	t.Logf("compiles per device: %d %d %d", devs[0].compiles.Load(), devs[1].compiles.Load(), devs[2].compiles.Load())
}

// A source that asks for wide vectors is built with AVX-512 where the CPU
// has it, and under its own cache key; any other keeps -mno-avx512f.
func TestWideFlags(t *testing.T) {
	d := open(t)
	src := emit.Source{Dialect: emit.C, Text: "void f(void) {}\n"}
	wide := src
	wide.Wide = true
	has := func(fs []string, f string) bool {
		for _, x := range fs {
			if x == f {
				return true
			}
		}
		return false
	}
	narrow, w := d.srcFlags(src), d.srcFlags(wide)
	if has(d.flags, "-mno-avx512f") && !has(narrow, "-mno-avx512f") {
		t.Errorf("plain source without -mno-avx512f: %v", narrow)
	}
	switch {
	case has(d.flags, "-mno-avx512f") && d.avx512():
		if has(w, "-mno-avx512f") || !has(w, "-mprefer-vector-width=512") {
			t.Errorf("wide source on an AVX-512 CPU: %v", w)
		}
		if d.key(src) == d.key(wide) {
			t.Error("wide and plain builds share a cache key")
		}
	default:
		if strings.Join(w, " ") != strings.Join(narrow, " ") {
			t.Errorf("wide source without AVX-512 changed flags: %v against %v", w, narrow)
		}
	}
}
