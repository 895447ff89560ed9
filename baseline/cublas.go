package baseline

import (
	"fmt"
	"sync"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/device/cuda"
	"github.com/bespoke-hpc/bespoke/internal/dl"
)

var cublas struct {
	create         func(h *uintptr) int32
	destroy        func(h uintptr) int32
	setPointerMode func(h uintptr, mode int32) int32
	getVersion     func(h uintptr, v *int32) int32
	dgemm          func(h uintptr, ta, tb int32, m, n, k int32, alpha *float64, A uintptr, lda int32, B uintptr, ldb int32, beta *float64, C uintptr, ldc int32) int32
	sgemm          func(h uintptr, ta, tb int32, m, n, k int32, alpha *float32, A uintptr, lda int32, B uintptr, ldb int32, beta *float32, C uintptr, ldc int32) int32
	statusName     func(s int32) uintptr
}

var (
	cublasOnce sync.Once
	cublasErr  error
)

const (
	cublasOpN             = 0
	cublasPointerModeHost = 0
)

var cublasStatusNames = map[int32]string{
	0: "CUBLAS_STATUS_SUCCESS", 1: "CUBLAS_STATUS_NOT_INITIALIZED", 3: "CUBLAS_STATUS_ALLOC_FAILED",
	7: "CUBLAS_STATUS_INVALID_VALUE", 8: "CUBLAS_STATUS_ARCH_MISMATCH", 11: "CUBLAS_STATUS_MAPPING_ERROR",
	13: "CUBLAS_STATUS_EXECUTION_FAILED", 14: "CUBLAS_STATUS_INTERNAL_ERROR", 15: "CUBLAS_STATUS_NOT_SUPPORTED",
	16: "CUBLAS_STATUS_LICENSE_ERROR",
}

func cublasCheck(fn string, s int32) error {
	if s == 0 {
		return nil
	}
	name := ""
	if cublas.statusName != nil {
		name = dl.GoString(cublas.statusName(s))
	}
	if name == "" {
		name = cublasStatusNames[s]
	}
	if name == "" {
		name = "CUBLAS_STATUS_UNKNOWN"
	}
	return &StatusError{Func: fn, Code: s, Name: name, notSupported: s == 15}
}

func loadCUBLAS() error {
	cublasOnce.Do(func() {
		lib, err := cuda.OpenLibrary("cublas", "BESPOKE_CUBLAS_LIBRARY",
			[]string{"nvidia/cublas/lib", "nvidia/cu13/lib", "nvidia/cu12/lib"},
			"libcublas.so.13", "libcublas.so.12", "libcublas.so")
		if err != nil {
			cublasErr = err
			return
		}
		c := &cublas
		err = dl.Bind(lib, []dl.Func{
			{Ptr: &c.create, Name: "cublasCreate_v2"},
			{Ptr: &c.destroy, Name: "cublasDestroy_v2"},
			{Ptr: &c.setPointerMode, Name: "cublasSetPointerMode_v2"},
			{Ptr: &c.getVersion, Name: "cublasGetVersion_v2"},
			{Ptr: &c.dgemm, Name: "cublasDgemm_v2"},
			{Ptr: &c.sgemm, Name: "cublasSgemm_v2"},
			{Ptr: &c.statusName, Name: "cublasGetStatusName", Optional: true},
		})
		if err != nil {
			cublasErr = fmt.Errorf("baseline: cublas: %w", err)
		}
	})
	return cublasErr
}

// CUBLAS is a cuBLAS handle on a device's primary context.
type CUBLAS struct {
	d       *cuda.Device
	h       uintptr
	version int
}

// OpenCUBLAS loads cuBLAS (BESPOKE_CUBLAS_LIBRARY, libcublas.so.13, .12 or
// libcublas.so in the CUDA library folders) and creates a handle on d, with
// host pointer mode and the default stream.
func OpenCUBLAS(d *cuda.Device) (*CUBLAS, error) {
	if err := loadCUBLAS(); err != nil {
		return nil, err
	}
	c := &CUBLAS{d: d}
	err := d.Do(func() error {
		if err := cublasCheck("cublasCreate_v2", cublas.create(&c.h)); err != nil {
			return err
		}
		if err := cublasCheck("cublasSetPointerMode_v2", cublas.setPointerMode(c.h, cublasPointerModeHost)); err != nil {
			cublas.destroy(c.h)
			return err
		}
		var v int32
		if cublas.getVersion(c.h, &v) == 0 {
			c.version = int(v)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("baseline: %w", err)
	}
	return c, nil
}

// Version is cuBLAS's version number (e.g. 130100).
func (c *CUBLAS) Version() int { return c.version }

// Close destroys the handle.
func (c *CUBLAS) Close() error {
	if c.h == 0 {
		return nil
	}
	h := c.h
	c.h = 0
	return c.d.Do(func() error { return cublasCheck("cublasDestroy_v2", cublas.destroy(h)) })
}

// GEMM is C = α·A·B + β·C through cuBLAS with A uploaded once.
type GEMM struct {
	c           *CUBLAS
	dtype, m, k int
	a           *cuda.Buffer
}

// NewGEMM uploads A (m×k, row-major, in float64; converted to float32 when
// dtype is 4) for GEMMs in words of dtype bytes (4 or 8).
func (c *CUBLAS) NewGEMM(dtype int, A []float64, m, k int) (*GEMM, error) {
	if err := checkDtype(dtype); err != nil {
		return nil, err
	}
	if m <= 0 || k <= 0 || len(A) != m*k {
		return nil, fmt.Errorf("baseline: NewGEMM: len(A)=%d for %d×%d", len(A), m, k)
	}
	a, err := c.d.AllocBuffer(int64(m * k * dtype))
	if err != nil {
		return nil, err
	}
	if err := a.Upload(words(A, dtype)); err != nil {
		a.Free()
		return nil, err
	}
	return &GEMM{c: c, dtype: dtype, m: m, k: k, a: a}, nil
}

// Run enqueues C = α·A·B + β·C for row-major B (k×n, leading dimension ldb)
// and C (m×n, ldc), in words of the GEMM's dtype. It calls the column-major
// gemm with the operands swapped: Cᵀ(n×m) = Bᵀ(n×k)·Aᵀ(k×m).
func (g *GEMM) Run(n int, B, C device.Buffer, ldb, ldc int, alpha, beta float64) error {
	if err := checkDims(g.m, g.k, n, B, C, ldb, ldc, g.dtype); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	pb, err := ptrOf(B)
	if err != nil {
		return err
	}
	pc, err := ptrOf(C)
	if err != nil {
		return err
	}
	pa := g.a.Ptr()
	return g.c.d.Do(func() error {
		var arena dl.Arena
		defer arena.Free()
		if g.dtype == 8 {
			al, be := []float64{alpha}, []float64{beta}
			arena.Pin(&al[0])
			arena.Pin(&be[0])
			return cublasCheck("cublasDgemm_v2", cublas.dgemm(g.c.h, cublasOpN, cublasOpN,
				int32(n), int32(g.m), int32(g.k), &al[0], pb, int32(ldb), pa, int32(g.k), &be[0], pc, int32(ldc)))
		}
		al, be := []float32{float32(alpha)}, []float32{float32(beta)}
		arena.Pin(&al[0])
		arena.Pin(&be[0])
		return cublasCheck("cublasSgemm_v2", cublas.sgemm(g.c.h, cublasOpN, cublasOpN,
			int32(n), int32(g.m), int32(g.k), &al[0], pb, int32(ldb), pa, int32(g.k), &be[0], pc, int32(ldc)))
	})
}

// Close frees A.
func (g *GEMM) Close() error { return g.a.Free() }
