package baseline

import (
	"errors"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/internal/dl"
)

// hostBuf is host memory in the Go heap, as the C backend's buffers are
// host memory outside it: a device.Buffer with Bytes.
type hostBuf struct{ mem []byte }

func (b *hostBuf) Size() int64 { return int64(len(b.mem)) }
func (b *hostBuf) Upload(src []byte) error {
	copy(b.mem, src)
	return nil
}
func (b *hostBuf) Download(dst []byte) error {
	copy(dst, b.mem)
	return nil
}
func (b *hostBuf) Free() error {
	b.mem = nil
	return nil
}
func (b *hostBuf) Bytes() []byte { return b.mem }

// deviceBuf is memory the host cannot read (as a CUDA buffer).
type deviceBuf struct{ size int64 }

func (b *deviceBuf) Size() int64             { return b.size }
func (b *deviceBuf) Upload(src []byte) error { return nil }
func (b *deviceBuf) Download([]byte) error   { return nil }
func (b *deviceBuf) Free() error             { return nil }

// openBLAS opens the CPU BLAS with two threads, or skips the test (fails
// where BESPOKE_REQUIRE_DEVICE lists "blas").
func openBLAS(t *testing.T) *CPUBLAS {
	t.Helper()
	b, err := OpenCPUBLAS(2)
	if err != nil {
		if slices.Contains(strings.Split(os.Getenv("BESPOKE_REQUIRE_DEVICE"), ","), "blas") {
			t.Fatalf("BESPOKE_REQUIRE_DEVICE lists blas but no CPU BLAS loads: %v", err)
		}
		t.Skipf("no CPU BLAS (%s; BESPOKE_REQUIRE_DEVICE=blas fails instead): %v", BLASHint, err)
	}
	t.Logf("CPU BLAS %s: %s", b.Name(), b.Describe())
	return b
}

// TestCPUBLASArgs checks the arguments before any library call, so it runs
// with or without a BLAS installed.
func TestCPUBLASArgs(t *testing.T) {
	lib := &CPUBLAS{name: "openblas"} // no call reaches the library
	a := make([]float64, 6*4)
	for _, tc := range []struct {
		name  string
		dtype int
		a     []float64
		m, k  int
		want  string
	}{
		{"dtype", 2, a, 6, 4, "dtype must be 4 or 8"},
		{"len", 8, a[:23], 6, 4, "len(A)=23 for 6×4"},
		{"rows", 8, a, 0, 4, "len(A)=24 for 0×4"},
		{"cols", 4, a, 6, -1, "len(A)=24 for 6×-1"},
	} {
		t.Run("new_"+tc.name, func(t *testing.T) {
			if _, err := lib.NewGEMM(tc.dtype, tc.a, tc.m, tc.k); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("NewGEMM: got %v, want an error with %q", err, tc.want)
			}
		})
	}
	g, err := lib.NewGEMM(8, a, 6, 4)
	if err != nil {
		t.Fatal(err)
	}
	// B 4×n (ldb), C 6×n (ldc): the sizes that just fit n=10, ld=12.
	buf := func(rows int) *hostBuf { return &hostBuf{mem: make([]byte, ((rows-1)*12+10)*8)} }
	freed := buf(6)
	freed.Free()
	for _, tc := range []struct {
		name         string
		n, ldb, ldc  int
		B, C         device.Buffer
		want         string
		wantNoResult bool
	}{
		{name: "negative_n", n: -1, ldb: 12, ldc: 12, B: buf(4), C: buf(6), want: "bad n=-1"},
		{name: "ldb<n", n: 10, ldb: 9, ldc: 12, B: buf(4), C: buf(6), want: "bad n=10 ldb=9"},
		{name: "ldc<n", n: 10, ldb: 12, ldc: 9, B: buf(4), C: buf(6), want: "ldc=9"},
		{name: "int32", n: 10, ldb: math.MaxInt32 + 1, ldc: 12, B: buf(4), C: buf(6), want: "exceed int32"},
		{name: "small_B", n: 11, ldb: 12, ldc: 12, B: buf(4), C: &hostBuf{mem: make([]byte, 1<<12)}, want: "B holds"},
		{name: "small_C", n: 10, ldb: 12, ldc: 13, B: buf(4), C: buf(6), want: "C holds"},
		{name: "device_memory", n: 10, ldb: 12, ldc: 12, B: &deviceBuf{size: 1 << 12}, C: buf(6), want: "not host memory"},
		{name: "freed", n: 10, ldb: 12, ldc: 12, B: buf(4), C: freed, want: "C holds 0 bytes"},
		{name: "n=0", n: 0, ldb: 12, ldc: 12, B: buf(4), C: buf(6), wantNoResult: true},
	} {
		t.Run("run_"+tc.name, func(t *testing.T) {
			err := g.Run(tc.n, tc.B, tc.C, tc.ldb, tc.ldc, 1, 0)
			if tc.wantNoResult {
				if err != nil {
					t.Errorf("Run: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Run: got %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// TestCPUBLASLoadError: a library that is not there is one line naming
// what was tried and how to install it.
func TestCPUBLASLoadError(t *testing.T) {
	_, err := dl.OpenWithHint("cblas", "", BLASHint, "libbespoke-no-such-blas.so.0")
	var le *dl.LoadError
	if !errors.As(err, &le) {
		t.Fatalf("got %v, want a *dl.LoadError", err)
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || !strings.Contains(msg, "install libopenblas0") || !strings.Contains(msg, "libbespoke-no-such-blas.so.0") {
		t.Errorf("message %q: want one line naming the library and libopenblas0", msg)
	}
}

// TestCPUBLAS compares cblas_?gemm with the float64 reference on small
// random shapes, padded leading dimensions and β = 0 (C poisoned with
// NaN), 1 and 0.5; the padding must stay untouched.
func TestCPUBLAS(t *testing.T) {
	lib := openBLAS(t)
	for _, tc := range []testCase{
		{name: "1x1_n1", m: 1, k: 1, n: 1, ldb: 1, ldc: 1, density: 1},
		{name: "7x5_n33", m: 7, k: 5, n: 33, ldb: 35, ldc: 40, density: 0.6},
		{name: "84x252_n1000", m: 84, k: 252, n: 1000, ldb: 1003, ldc: 1001, density: 0.96},
		{name: "252x84_n4099", m: 252, k: 84, n: 4099, ldb: 4099, ldc: 4104, density: 0.96},
		{name: "35x105_n2048", m: 35, k: 105, n: 2048, ldb: 2048, ldc: 2048, density: 0.3},
	} {
		for _, dtype := range []int{8, 4} {
			name := tc.name + map[int]string{4: "_f32", 8: "_f64"}[dtype]
			t.Run(name, func(t *testing.T) { hostCase(t, lib, tc, dtype) })
		}
	}
}

func hostCase(t *testing.T, lib *CPUBLAS, tc testCase, dtype int) {
	const alpha = 0.75
	tol := 1e-12
	if dtype == 4 {
		tol = 1e-5
	}
	a := randomOperator(rng, tc.m, tc.k, tc.density)
	b := make([]float64, tc.k*tc.ldb)
	c0 := make([]float64, tc.m*tc.ldc)
	for i := range b {
		b[i] = rng.Float64()*2 - 1
	}
	for i := range c0 {
		c0[i] = rng.Float64()*2 - 1
	}
	if dtype == 4 {
		round32(a)
		round32(b)
		round32(c0)
	}
	ab := reference(a, tc.m, tc.k, b, tc.ldb, tc.n)
	g, err := lib.NewGEMM(dtype, a, tc.m, tc.k)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	bufB := &hostBuf{mem: append([]byte(nil), words(b, dtype)...)}
	bufC := &hostBuf{mem: make([]byte, len(c0)*dtype)}
	for _, beta := range []float64{0, 1, 0.5} {
		if beta == 0 {
			for i := range bufC.mem {
				bufC.mem[i] = 0xff // NaN in both widths
			}
		} else {
			copy(bufC.mem, words(c0, dtype))
		}
		if err := g.Run(tc.n, bufB, bufC, tc.ldb, tc.ldc, alpha, beta); err != nil {
			t.Fatalf("β=%g: %v", beta, err)
		}
		got := make([]float64, len(c0))
		if dtype == 8 {
			copy(bytesOf(got), bufC.mem)
		} else {
			f := make([]float32, len(c0))
			copy(bytesOf(f), bufC.mem)
			for i, x := range f {
				got[i] = float64(x)
			}
		}
		var num, den float64
		for i := 0; i < tc.m; i++ {
			for j := 0; j < tc.ldc; j++ {
				g := got[i*tc.ldc+j]
				if j >= tc.n {
					if ok := (beta == 0 && math.IsNaN(g)) || (beta != 0 && g == c0[i*tc.ldc+j]); !ok {
						t.Fatalf("β=%g: padding C[%d][%d] written: %g", beta, i, j, g)
					}
					continue
				}
				want := alpha*ab[i*tc.n+j] + beta*c0[i*tc.ldc+j]
				e := g - want
				if !(math.Abs(e) <= 1e3*tol*(1+math.Abs(want))) {
					t.Fatalf("β=%g: C[%d][%d] = %g, want %g", beta, i, j, g, want)
				}
				num += e * e
				den += want * want
			}
		}
		if rel := math.Sqrt(num / math.Max(den, 1e-300)); !(rel <= tol) {
			t.Errorf("β=%g: rel err %.3g > %.0g", beta, rel, tol)
		}
	}
}

func TestOpenBLASCore(t *testing.T) {
	for _, tc := range []struct{ flags, want string }{
		{"fpu sse2 avx2 fma avx512f avx512dq avx512cd avx512bw avx512vl avx512_bf16", "SkylakeX"},
		{"fpu sse2 avx2 fma avx512f avx512cd", ""}, // Xeon Phi: no BW/DQ/VL
		{"fpu sse2 avx avx2 fma", ""},
		{"", ""},
	} {
		if got := openblasCore(tc.flags); got != tc.want {
			t.Errorf("openblasCore(%q) = %q, want %q", tc.flags, got, tc.want)
		}
	}
}
