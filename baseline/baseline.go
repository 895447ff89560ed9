// Package baseline runs the vendor libraries that bespoke kernels are
// measured against: cuBLAS GEMM and cuSPARSE SpMM on CUDA, and a CPU BLAS's
// GEMM (OpenBLAS's cblas_dgemm / cblas_sgemm) on the C backend's host
// memory, all computing the row-major C(m×n) = α·A(m×k)·B(k×n) + β·C with a
// constant A. The libraries are opened at run time through purego (no cgo);
// cuBLAS and cuSPARSE share the primary context and the default stream of a
// cuda.Device.
package baseline

import (
	"errors"
	"fmt"
	"math"
	"unsafe"

	"github.com/bespoke-hpc/bespoke/device"
)

// ErrNotSupported matches (errors.Is) a library status that says the call's
// configuration is not supported (e.g. an SpMM algorithm for this layout).
var ErrNotSupported = errors.New("baseline: not supported")

// StatusError is a failed cuBLAS or cuSPARSE call.
type StatusError struct {
	Func         string // e.g. "cusparseSpMM"
	Code         int32
	Name         string // e.g. "CUSPARSE_STATUS_NOT_SUPPORTED"
	notSupported bool
}

func (e *StatusError) Error() string { return fmt.Sprintf("%s: %s (%d)", e.Func, e.Name, e.Code) }

// Is reports whether target is ErrNotSupported and the status says so.
func (e *StatusError) Is(target error) bool { return target == ErrNotSupported && e.notSupported }

// ptrOf returns a Buffer's device address.
func ptrOf(b device.Buffer) (uintptr, error) {
	p, ok := b.(interface{ Ptr() uintptr })
	if !ok {
		return 0, fmt.Errorf("baseline: buffer %T is not CUDA memory", b)
	}
	return p.Ptr(), nil
}

// checkDims validates a row-major B(k×n, ldb) and C(m×n, ldc) against their
// buffers, for words of ws bytes.
func checkDims(m, k, n int, B, C device.Buffer, ldb, ldc, ws int) error {
	if n < 0 || ldb < max(n, 1) || ldc < max(n, 1) {
		return fmt.Errorf("baseline: bad n=%d ldb=%d ldc=%d", n, ldb, ldc)
	}
	if n > math.MaxInt32 || ldb > math.MaxInt32 || ldc > math.MaxInt32 {
		return fmt.Errorf("baseline: n=%d ldb=%d ldc=%d exceed int32", n, ldb, ldc)
	}
	if need := int64((k-1)*ldb+n) * int64(ws); k > 0 && B.Size() < need {
		return fmt.Errorf("baseline: B holds %d bytes, needs %d (k=%d ldb=%d n=%d)", B.Size(), need, k, ldb, n)
	}
	if need := int64((m-1)*ldc+n) * int64(ws); m > 0 && C.Size() < need {
		return fmt.Errorf("baseline: C holds %d bytes, needs %d (m=%d ldc=%d n=%d)", C.Size(), need, m, ldc, n)
	}
	return nil
}

// words converts v to the bytes of float32 or float64 words.
func words(v []float64, dtype int) []byte {
	if dtype == 4 {
		f := make([]float32, len(v))
		for i, x := range v {
			f[i] = float32(x)
		}
		return bytesOf(f)
	}
	return bytesOf(v)
}

func bytesOf[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}

func checkDtype(dtype int) error {
	if dtype != 4 && dtype != 8 {
		return fmt.Errorf("baseline: dtype must be 4 or 8 bytes, not %d", dtype)
	}
	return nil
}
