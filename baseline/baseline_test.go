package baseline

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"

	"github.com/bespoke-hpc/bespoke/device/cuda"
)

func openTestDevice(t *testing.T) *cuda.Device {
	t.Helper()
	d, err := cuda.Open(0)
	if err != nil {
		if os.Getenv("BESPOKE_REQUIRE_DEVICE") == "cuda" {
			t.Fatalf("BESPOKE_REQUIRE_DEVICE=cuda but no CUDA device: %v", err)
		}
		t.Skipf("no CUDA device (set BESPOKE_REQUIRE_DEVICE=cuda to fail instead): %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func TestChunks(t *testing.T) {
	for _, n := range []int{1, 1000, MaxChunk, MaxChunk + 1, 1 << 20, 4_200_077, 10_000_000} {
		w, c := chunks(n)
		if w > MaxChunk || w*c < n || w*(c-1) >= n {
			t.Errorf("chunks(%d) = %d × %d", n, w, c)
		}
		if c > 1 && w%128 != 0 {
			t.Errorf("chunks(%d): width %d not a multiple of 128", n, w)
		}
	}
}

func TestStatusError(t *testing.T) {
	err := cusparseCheck("cusparseSpMM", 10)
	if !errors.Is(err, ErrNotSupported) || err.Error() != "cusparseSpMM: CUSPARSE_STATUS_NOT_SUPPORTED (10)" {
		t.Errorf("got %v", err)
	}
	if errors.Is(cublasCheck("cublasDgemm_v2", 7), ErrNotSupported) {
		t.Errorf("INVALID_VALUE matched ErrNotSupported")
	}
}

type testCase struct {
	name     string
	m, k, n  int
	ldb, ldc int
	density  float64
	gemm     bool
}

// randomOperator is an m×k matrix with about density of its entries non-zero.
func randomOperator(rng *rand.Rand, m, k int, density float64) []float64 {
	a := make([]float64, m*k)
	for i := range a {
		if rng.Float64() < density {
			a[i] = rng.Float64()*2 - 1
		}
	}
	return a
}

// reference computes A·B (m×n, leading dimension n) in float64.
func reference(a []float64, m, k int, b []float64, ldb, n int) []float64 {
	out := make([]float64, m*n)
	workers := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			j0, j1 := n*w/workers, n*(w+1)/workers
			for i := 0; i < m; i++ {
				row := out[i*n+j0 : i*n+j1]
				for l := 0; l < k; l++ {
					if v := a[i*k+l]; v != 0 {
						bl := b[l*ldb+j0 : l*ldb+j1]
						for j := range row {
							row[j] += v * bl[j]
						}
					}
				}
			}
		}(w)
	}
	wg.Wait()
	return out
}

func round32(v []float64) {
	for i, x := range v {
		v[i] = float64(float32(x))
	}
}

func download(t *testing.T, b *cuda.Buffer, n, dtype int) []float64 {
	t.Helper()
	out := make([]float64, n)
	if dtype == 8 {
		if err := b.Download(bytesOf(out)); err != nil {
			t.Fatal(err)
		}
		return out
	}
	f := make([]float32, n)
	if err := b.Download(bytesOf(f)); err != nil {
		t.Fatal(err)
	}
	for i, x := range f {
		out[i] = float64(x)
	}
	return out
}

// libs opens the device and both libraries for a test.
func libs(t *testing.T) (*cuda.Device, *CUBLAS, *CUSPARSE) {
	d := openTestDevice(t)
	bl, err := OpenCUBLAS(d)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bl.Close() })
	sp, err := OpenCUSPARSE(d)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sp.Close() })
	t.Logf("device %s, cuBLAS %d, cuSPARSE %d", d.Info().Name, bl.Version(), sp.Version())
	return d, bl, sp
}

// TestBaselines compares cuBLAS and cuSPARSE (all algorithms but CSR_ALG3,
// which TestSpMMAlg3 runs in a process of its own, since a fault inside
// cuSPARSE poisons the context) with a float64 host reference.
func TestBaselines(t *testing.T) {
	d, bl, sp := libs(t)
	cases := []testCase{
		{name: "96x64_n5000", m: 96, k: 64, n: 5000, ldb: 5003, ldc: 5001, density: 0.3, gemm: true},
		{name: "96x64_n1M+1000", m: 96, k: 64, n: 1<<20 + 1000, ldb: 1<<20 + 1008, ldc: 1<<20 + 1000, density: 0.25, gemm: true},
		{name: "12x8_n4.2M", m: 12, k: 8, n: 4_200_077, ldb: 4_200_077, ldc: 4_200_080, density: 0.7},
	}
	if testing.Short() {
		cases = cases[:1]
	}
	for _, tc := range cases {
		for _, dtype := range []int{8, 4} {
			runCase(t, d, bl, sp, tc, dtype, []SpMMAlg{SpMMDefault, SpMMCSR1, SpMMCSR2})
		}
	}
}

// TestSpMMAlg3 runs CSR_ALG3: on a misaligned leading dimension it must be
// refused (ErrNotSupported), on aligned ones it must be right.
func TestSpMMAlg3(t *testing.T) {
	d, bl, sp := libs(t)
	cases := []testCase{
		{name: "96x64_n5000_odd_ld", m: 96, k: 64, n: 5000, ldb: 5003, ldc: 5001, density: 0.3},
		{name: "96x64_n5000", m: 96, k: 64, n: 5000, ldb: 5008, ldc: 5008, density: 0.3},
		{name: "96x64_n1M+1000", m: 96, k: 64, n: 1<<20 + 1000, ldb: 1<<20 + 1008, ldc: 1<<20 + 1008, density: 0.25},
	}
	for _, tc := range cases {
		for _, dtype := range []int{8, 4} {
			runCase(t, d, bl, sp, tc, dtype, []SpMMAlg{SpMMCSR3})
		}
	}
}

var rng = rand.New(rand.NewPCG(7, 11))

func runCase(t *testing.T, d *cuda.Device, bl *CUBLAS, sp *CUSPARSE, tc testCase, dtype int, algs []SpMMAlg) {
	const alpha = 0.75
	tol := 1e-12
	if dtype == 4 {
		tol = 1e-5
	}
	name := tc.name + map[int]string{4: "_f32", 8: "_f64"}[dtype]
	t.Run(name, func(t *testing.T) {
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
		bufB, err := d.AllocBuffer(int64(len(b) * dtype))
		if err != nil {
			t.Fatal(err)
		}
		defer bufB.Free()
		bufC, err := d.AllocBuffer(int64(len(c0) * dtype))
		if err != nil {
			t.Fatal(err)
		}
		defer bufC.Free()
		if err := bufB.Upload(words(b, dtype)); err != nil {
			t.Fatal(err)
		}

		check := func(t *testing.T, label string, beta float64, run func() error) {
			if beta == 0 {
				if err := bufC.Fill(0xff); err != nil { // NaN in both widths
					t.Fatal(err)
				}
			} else if err := bufC.Upload(words(c0, dtype)); err != nil {
				t.Fatal(err)
			}
			if err := run(); err != nil {
				if errors.Is(err, ErrNotSupported) {
					t.Logf("%s β=%g: %v", label, beta, err)
					return
				}
				t.Errorf("%s β=%g: %v", label, beta, err)
				return
			}
			got := download(t, bufC, len(c0), dtype)
			var num, den float64
			bad, badPad := -1, -1
			for i := 0; i < tc.m; i++ {
				for j := 0; j < tc.ldc; j++ {
					g := got[i*tc.ldc+j]
					if j >= tc.n { // padding: untouched
						ok := (beta == 0 && math.IsNaN(g)) || (beta != 0 && g == c0[i*tc.ldc+j])
						if !ok && badPad < 0 {
							badPad = i*tc.ldc + j
						}
						continue
					}
					want := alpha * ab[i*tc.n+j]
					if beta != 0 {
						want += beta * c0[i*tc.ldc+j]
					}
					e := g - want
					if !(math.Abs(e) <= 1e3*tol*(1+math.Abs(want))) && bad < 0 {
						bad = i*tc.ldc + j
					}
					num += e * e
					den += want * want
				}
			}
			rel := math.Sqrt(num / den)
			if !(rel <= tol) || bad >= 0 || badPad >= 0 {
				msg := ""
				if bad >= 0 {
					i, j := bad/tc.ldc, bad%tc.ldc
					msg = "first bad C[" + strconv.Itoa(i) + "][" + strconv.Itoa(j) + "]"
				}
				if badPad >= 0 {
					msg += " padding written at column " + strconv.Itoa(badPad%tc.ldc)
				}
				t.Errorf("%s β=%g: rel err %.3g > %.0g %s", label, beta, rel, tol, msg)
				return
			}
			t.Logf("%s β=%g: rel err %.3g", label, beta, rel)
		}

		if tc.gemm {
			g, err := bl.NewGEMM(dtype, a, tc.m, tc.k)
			if err != nil {
				t.Fatal(err)
			}
			for _, beta := range []float64{0, 1} {
				check(t, "cuBLAS", beta, func() error { return g.Run(tc.n, bufB, bufC, tc.ldb, tc.ldc, alpha, beta) })
			}
			g.Close()
		}
		s, err := sp.NewSpMM(dtype, a, tc.m, tc.k)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		for _, alg := range algs {
			for _, beta := range []float64{0, 1} {
				check(t, "cuSPARSE "+alg.String(), beta, func() error {
					return s.Run(tc.n, bufB, bufC, tc.ldb, tc.ldc, alpha, beta, alg)
				})
			}
		}
		// Timing, for the record.
		if tc.gemm {
			g, _ := bl.NewGEMM(dtype, a, tc.m, tc.k)
			dt, err := d.Elapsed(func() error { return g.Run(tc.n, bufB, bufC, tc.ldb, tc.ldc, alpha, 1) })
			t.Logf("cuBLAS time %v (err %v)", dt, err)
			g.Close()
		}
		for _, alg := range algs {
			dt, err := d.Elapsed(func() error { return s.Run(tc.n, bufB, bufC, tc.ldb, tc.ldc, alpha, 1, alg) })
			t.Logf("cuSPARSE %s time %v (err %v, nnz %d)", alg, dt, err, s.NNZ())
		}
	})
}
