package baseline

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/device/cuda"
	"github.com/bespoke-hpc/bespoke/internal/dl"
)

var cusparse struct {
	create         func(h *uintptr) int32
	destroy        func(h uintptr) int32
	getVersion     func(h uintptr, v *int32) int32
	setPointerMode func(h uintptr, mode int32) int32
	createCsr      func(d *uintptr, rows, cols, nnz int64, rowOff, colInd, vals uintptr, rowType, colType, base, valType int32) int32
	destroySpMat   func(d uintptr) int32
	createDnMat    func(d *uintptr, rows, cols, ld int64, vals uintptr, valType, order int32) int32
	destroyDnMat   func(d uintptr) int32
	dnMatSetValues func(d uintptr, vals uintptr) int32
	spMMBufferSize func(h uintptr, opA, opB int32, alpha unsafe.Pointer, A, B uintptr, beta unsafe.Pointer, C uintptr, computeType, alg int32, size *uint64) int32
	spMM           func(h uintptr, opA, opB int32, alpha unsafe.Pointer, A, B uintptr, beta unsafe.Pointer, C uintptr, computeType, alg int32, buf uintptr) int32
	errorName      func(s int32) uintptr
}

var (
	cusparseOnce sync.Once
	cusparseErr  error
)

// cuSPARSE and library_types.h constants.
const (
	cusparseOpNonTranspose = 0
	cusparseIndex32I       = 2
	cusparseIndexBaseZero  = 0
	cusparseOrderRow       = 2
	cusparsePointerHost    = 0
	cudaR32F               = 0
	cudaR64F               = 1
)

// SpMMAlg is a cusparseSpMMAlg_t.
type SpMMAlg int32

// The SpMM algorithms for CSR matrices.
const (
	SpMMDefault SpMMAlg = 0  // CUSPARSE_SPMM_ALG_DEFAULT
	SpMMCSR1    SpMMAlg = 4  // CUSPARSE_SPMM_CSR_ALG1
	SpMMCSR2    SpMMAlg = 6  // CUSPARSE_SPMM_CSR_ALG2
	SpMMCSR3    SpMMAlg = 12 // CUSPARSE_SPMM_CSR_ALG3
)

// SpMMAlgs lists the algorithms to try.
var SpMMAlgs = []SpMMAlg{SpMMDefault, SpMMCSR1, SpMMCSR2, SpMMCSR3}

func (a SpMMAlg) String() string {
	switch a {
	case SpMMDefault:
		return "DEFAULT"
	case SpMMCSR1:
		return "CSR_ALG1"
	case SpMMCSR2:
		return "CSR_ALG2"
	case SpMMCSR3:
		return "CSR_ALG3"
	}
	return fmt.Sprintf("SpMMAlg(%d)", int32(a))
}

// guardAlignment makes Run refuse configurations known to fault inside
// cuSPARSE (tests switch it off to probe).
var guardAlignment = true

// checkAlignment returns an error matching ErrNotSupported for a
// configuration that makes cuSPARSE 12.6 fault rather than refuse:
// CSR_ALG3 with row-major B and C whose rows do not start on 16-byte
// boundaries (CUDA_ERROR_MISALIGNED_ADDRESS, which poisons the context).
func checkAlignment(alg SpMMAlg, ws, ldb, ldc int, pb, pc uintptr) error {
	if !guardAlignment || alg != SpMMCSR3 {
		return nil
	}
	if (ldb*ws)%16 != 0 || (ldc*ws)%16 != 0 || pb%16 != 0 || pc%16 != 0 {
		return fmt.Errorf("%w: cuSPARSE %s faults unless every row of B and C starts on 16 bytes (ldb=%d ldc=%d, %d-byte words)",
			ErrNotSupported, alg, ldb, ldc, ws)
	}
	return nil
}

// MaxChunk is the most columns of B and C handed to one cusparseSpMM call:
// cuSPARSE 12.6 returned wrong results from n = 1,048,576 on (CSR_ALG1) and
// for some n ≥ 4M (DEFAULT, CSR_ALG2). A multiple of 128.
const MaxChunk = 1_048_448

var cusparseStatusNames = map[int32]string{
	0: "CUSPARSE_STATUS_SUCCESS", 1: "CUSPARSE_STATUS_NOT_INITIALIZED", 2: "CUSPARSE_STATUS_ALLOC_FAILED",
	3: "CUSPARSE_STATUS_INVALID_VALUE", 4: "CUSPARSE_STATUS_ARCH_MISMATCH", 5: "CUSPARSE_STATUS_MAPPING_ERROR",
	6: "CUSPARSE_STATUS_EXECUTION_FAILED", 7: "CUSPARSE_STATUS_INTERNAL_ERROR",
	8: "CUSPARSE_STATUS_MATRIX_TYPE_NOT_SUPPORTED", 9: "CUSPARSE_STATUS_ZERO_PIVOT",
	10: "CUSPARSE_STATUS_NOT_SUPPORTED", 11: "CUSPARSE_STATUS_INSUFFICIENT_RESOURCES",
}

func cusparseCheck(fn string, s int32) error {
	if s == 0 {
		return nil
	}
	name := ""
	if cusparse.errorName != nil {
		name = dl.GoString(cusparse.errorName(s))
	}
	if name == "" {
		name = cusparseStatusNames[s]
	}
	if name == "" {
		name = "CUSPARSE_STATUS_UNKNOWN"
	}
	return &StatusError{Func: fn, Code: s, Name: name, notSupported: s == 10 || s == 8}
}

func loadCUSPARSE() error {
	cusparseOnce.Do(func() {
		lib, err := cuda.OpenLibrary("cusparse", "BESPOKE_CUSPARSE_LIBRARY",
			[]string{"nvidia/cusparse/lib", "nvidia/cu13/lib", "nvidia/cu12/lib"},
			"libcusparse.so.13", "libcusparse.so.12", "libcusparse.so")
		if err != nil {
			cusparseErr = err
			return
		}
		c := &cusparse
		err = dl.Bind(lib, []dl.Func{
			{Ptr: &c.create, Name: "cusparseCreate"},
			{Ptr: &c.destroy, Name: "cusparseDestroy"},
			{Ptr: &c.getVersion, Name: "cusparseGetVersion"},
			{Ptr: &c.setPointerMode, Name: "cusparseSetPointerMode"},
			{Ptr: &c.createCsr, Name: "cusparseCreateCsr"},
			{Ptr: &c.destroySpMat, Name: "cusparseDestroySpMat"},
			{Ptr: &c.createDnMat, Name: "cusparseCreateDnMat"},
			{Ptr: &c.destroyDnMat, Name: "cusparseDestroyDnMat"},
			{Ptr: &c.dnMatSetValues, Name: "cusparseDnMatSetValues"},
			{Ptr: &c.spMMBufferSize, Name: "cusparseSpMM_bufferSize"},
			{Ptr: &c.spMM, Name: "cusparseSpMM"},
			{Ptr: &c.errorName, Name: "cusparseGetErrorName", Optional: true},
		})
		if err != nil {
			cusparseErr = fmt.Errorf("baseline: cusparse: %w", err)
		}
	})
	return cusparseErr
}

// CUSPARSE is a cuSPARSE handle on a device's primary context.
type CUSPARSE struct {
	d       *cuda.Device
	h       uintptr
	version int
}

// OpenCUSPARSE loads cuSPARSE (BESPOKE_CUSPARSE_LIBRARY, libcusparse.so.13,
// .12 or libcusparse.so in the CUDA library folders) and creates a handle on
// d with host pointer mode and the default stream.
func OpenCUSPARSE(d *cuda.Device) (*CUSPARSE, error) {
	if err := loadCUSPARSE(); err != nil {
		return nil, err
	}
	s := &CUSPARSE{d: d}
	err := d.Do(func() error {
		if err := cusparseCheck("cusparseCreate", cusparse.create(&s.h)); err != nil {
			return err
		}
		if err := cusparseCheck("cusparseSetPointerMode", cusparse.setPointerMode(s.h, cusparsePointerHost)); err != nil {
			cusparse.destroy(s.h)
			return err
		}
		var v int32
		if cusparse.getVersion(s.h, &v) == 0 {
			s.version = int(v)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("baseline: %w", err)
	}
	return s, nil
}

// Version is cuSPARSE's version number (e.g. 12603).
func (s *CUSPARSE) Version() int { return s.version }

// Close destroys the handle.
func (s *CUSPARSE) Close() error {
	if s.h == 0 {
		return nil
	}
	h := s.h
	s.h = 0
	return s.d.Do(func() error { return cusparseCheck("cusparseDestroy", cusparse.destroy(h)) })
}

// SpMM is C = α·A·B + β·C through cusparseSpMM with A stored as CSR of its
// non-zeros (int32 indices, base 0) and B, C dense row-major.
type SpMM struct {
	s           *CUSPARSE
	dtype, m, k int
	nnz         int
	rowPtr      *cuda.Buffer
	colInd      *cuda.Buffer
	vals        *cuda.Buffer
	matA        uintptr

	mu    sync.Mutex
	dense map[denseKey][2]uintptr // B and C descriptors per chunk shape
	work  map[workKey]*cuda.Buffer
}

type denseKey struct{ w, ldb, ldc int }

type workKey struct {
	alg SpMMAlg
	denseKey
}

// NewSpMM builds the CSR of A's non-zeros (A is m×k row-major, in float64;
// converted to float32 when dtype is 4) and uploads it.
func (s *CUSPARSE) NewSpMM(dtype int, A []float64, m, k int) (*SpMM, error) {
	if err := checkDtype(dtype); err != nil {
		return nil, err
	}
	if m <= 0 || k <= 0 || len(A) != m*k {
		return nil, fmt.Errorf("baseline: NewSpMM: len(A)=%d for %d×%d", len(A), m, k)
	}
	rowPtr := make([]int32, m+1)
	var colInd []int32
	var vals []float64
	for i := 0; i < m; i++ {
		for j := 0; j < k; j++ {
			if v := A[i*k+j]; v != 0 {
				colInd = append(colInd, int32(j))
				vals = append(vals, v)
			}
		}
		rowPtr[i+1] = int32(len(vals))
	}
	p := &SpMM{s: s, dtype: dtype, m: m, k: k, nnz: len(vals),
		dense: map[denseKey][2]uintptr{}, work: map[workKey]*cuda.Buffer{}}
	upload := func(data []byte) (*cuda.Buffer, error) {
		b, err := s.d.AllocBuffer(int64(max(len(data), 4)))
		if err != nil {
			return nil, err
		}
		return b, b.Upload(data)
	}
	var err error
	if p.rowPtr, err = upload(bytesOf(rowPtr)); err == nil {
		if p.colInd, err = upload(bytesOf(colInd)); err == nil {
			p.vals, err = upload(words(vals, dtype))
		}
	}
	if err == nil {
		err = s.d.Do(func() error {
			return cusparseCheck("cusparseCreateCsr", cusparse.createCsr(&p.matA, int64(m), int64(k), int64(p.nnz),
				p.rowPtr.Ptr(), p.colInd.Ptr(), p.vals.Ptr(), cusparseIndex32I, cusparseIndex32I,
				cusparseIndexBaseZero, p.valueType()))
		})
	}
	if err != nil {
		p.Close()
		return nil, fmt.Errorf("baseline: NewSpMM: %w", err)
	}
	return p, nil
}

// NNZ is the number of non-zeros of A.
func (p *SpMM) NNZ() int { return p.nnz }

func (p *SpMM) valueType() int32 {
	if p.dtype == 4 {
		return cudaR32F
	}
	return cudaR64F
}

// chunks splits n columns into near-equal chunks of at most MaxChunk
// columns, each a multiple of 128 wide except the last.
func chunks(n int) (w, count int) {
	if n <= MaxChunk {
		return n, 1
	}
	count = (n + MaxChunk - 1) / MaxChunk
	w = (n + count - 1) / count
	w = (w + 127) / 128 * 128
	return w, (n + w - 1) / w
}

// Run enqueues C = α·A·B + β·C for row-major B (k×n, leading dimension ldb)
// and C (m×n, ldc) with algorithm alg, in chunks of at most MaxChunk
// columns. Descriptors and workspace are kept per chunk shape and
// algorithm, so repeated runs allocate nothing.
func (p *SpMM) Run(n int, B, C device.Buffer, ldb, ldc int, alpha, beta float64, alg SpMMAlg) error {
	if err := checkDims(p.m, p.k, n, B, C, ldb, ldc, p.dtype); err != nil {
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
	if err := checkAlignment(alg, p.dtype, ldb, ldc, pb, pc); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.s.d.Do(func() error {
		var arena dl.Arena
		defer arena.Free()
		var al, be unsafe.Pointer
		if p.dtype == 8 {
			a, b := []float64{alpha}, []float64{beta}
			arena.Pin(&a[0])
			arena.Pin(&b[0])
			al, be = unsafe.Pointer(&a[0]), unsafe.Pointer(&b[0])
		} else {
			a, b := []float32{float32(alpha)}, []float32{float32(beta)}
			arena.Pin(&a[0])
			arena.Pin(&b[0])
			al, be = unsafe.Pointer(&a[0]), unsafe.Pointer(&b[0])
		}
		w, count := chunks(n)
		for c := 0; c < count; c++ {
			c0 := c * w
			cw := min(w, n-c0)
			descs, err := p.denseDescs(denseKey{cw, ldb, ldc}, pb, pc)
			if err != nil {
				return err
			}
			off := uintptr(c0 * p.dtype)
			if err := cusparseCheck("cusparseDnMatSetValues", cusparse.dnMatSetValues(descs[0], pb+off)); err != nil {
				return err
			}
			if err := cusparseCheck("cusparseDnMatSetValues", cusparse.dnMatSetValues(descs[1], pc+off)); err != nil {
				return err
			}
			buf, err := p.workspace(workKey{alg, denseKey{cw, ldb, ldc}}, descs, al, be)
			if err != nil {
				return err
			}
			if err := cusparseCheck("cusparseSpMM", cusparse.spMM(p.s.h, cusparseOpNonTranspose, cusparseOpNonTranspose,
				al, p.matA, descs[0], be, descs[1], p.valueType(), int32(alg), buf)); err != nil {
				return fmt.Errorf("%w (%s, columns %d..%d of %d)", err, alg, c0, c0+cw, n)
			}
		}
		return nil
	})
}

// denseDescs returns the B and C descriptors for a chunk shape (called in Do
// with p.mu held).
func (p *SpMM) denseDescs(key denseKey, pb, pc uintptr) ([2]uintptr, error) {
	if d, ok := p.dense[key]; ok {
		return d, nil
	}
	var d [2]uintptr
	if err := cusparseCheck("cusparseCreateDnMat", cusparse.createDnMat(&d[0], int64(p.k), int64(key.w), int64(key.ldb),
		pb, p.valueType(), cusparseOrderRow)); err != nil {
		return d, err
	}
	if err := cusparseCheck("cusparseCreateDnMat", cusparse.createDnMat(&d[1], int64(p.m), int64(key.w), int64(key.ldc),
		pc, p.valueType(), cusparseOrderRow)); err != nil {
		cusparse.destroyDnMat(d[0])
		return d, err
	}
	p.dense[key] = d
	return d, nil
}

// workspace returns the SpMM workspace for an algorithm and chunk shape
// (called in Do with p.mu held). A zero-sized workspace is a 0 pointer.
func (p *SpMM) workspace(key workKey, descs [2]uintptr, al, be unsafe.Pointer) (uintptr, error) {
	if b, ok := p.work[key]; ok {
		return b.Ptr(), nil
	}
	var size uint64
	if err := cusparseCheck("cusparseSpMM_bufferSize", cusparse.spMMBufferSize(p.s.h, cusparseOpNonTranspose, cusparseOpNonTranspose,
		al, p.matA, descs[0], be, descs[1], p.valueType(), int32(key.alg), &size)); err != nil {
		return 0, fmt.Errorf("%w (%s)", err, key.alg)
	}
	b, err := p.s.d.AllocBuffer(int64(size))
	if err != nil {
		return 0, err
	}
	p.work[key] = b
	return b.Ptr(), nil
}

// Close frees A, the descriptors and the workspaces.
func (p *SpMM) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	_ = p.s.d.Do(func() error {
		for _, d := range p.dense {
			cusparse.destroyDnMat(d[0])
			cusparse.destroyDnMat(d[1])
		}
		if p.matA != 0 {
			cusparse.destroySpMat(p.matA)
		}
		return nil
	})
	p.dense, p.matA = map[denseKey][2]uintptr{}, 0
	for k, b := range p.work {
		b.Free()
		delete(p.work, k)
	}
	for _, b := range []*cuda.Buffer{p.rowPtr, p.colInd, p.vals} {
		if b != nil {
			b.Free()
		}
	}
	return nil
}
