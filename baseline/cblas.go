package baseline

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/internal/dl"
)

// The CPU baseline: a CBLAS library's cblas_dgemm / cblas_sgemm on host
// memory, the rival of the C backend's kernels as cuBLAS is of the CUDA
// ones. OpenBLAS (libopenblas.so.0) is looked for first, then any CBLAS
// (libcblas.so.3, or a libblas.so.3 that exports the cblas_ entries, as
// Debian's OpenBLAS and reference BLAS do); BESPOKE_BLAS_LIBRARY names
// another. The library runs with as many threads as the C backend's
// OpenMP kernels (OpenBLAS: openblas_set_num_threads), so that both use
// the same cores.

var cblas struct {
	dgemm func(layout, ta, tb, m, n, k int32, alpha float64, A unsafe.Pointer, lda int32, B unsafe.Pointer, ldb int32, beta float64, C unsafe.Pointer, ldc int32)
	sgemm func(layout, ta, tb, m, n, k int32, alpha float32, A unsafe.Pointer, lda int32, B unsafe.Pointer, ldb int32, beta float32, C unsafe.Pointer, ldc int32)
	// OpenBLAS's extensions (absent elsewhere).
	setNumThreads func(n int32)
	getNumThreads func() int32
	getConfig     func() uintptr
	getCorename   func() uintptr
}

var (
	cblasOnce sync.Once
	cblasErr  error
	// cblasMu serialises the calls: the thread count is global to the
	// library, and OpenBLAS's own pool is not meant to be entered twice.
	cblasMu sync.Mutex
)

// CBLAS constants (cblas.h).
const (
	cblasRowMajor = 101
	cblasNoTrans  = 111
)

// BLASLibraries are the sonames OpenCPUBLAS tries, in order.
var BLASLibraries = []string{"libopenblas.so.0", "libopenblas.so", "libcblas.so.3", "libblas.so.3"}

// BLASHint is how the load error says to get a CPU BLAS.
const BLASHint = "install libopenblas0, e.g. apt-get install libopenblas0-pthread"

// coreTypeSet is the OPENBLAS_CORETYPE loadCBLAS set ("" when none).
var coreTypeSet string

// openblasCore is the OPENBLAS_CORETYPE to load OpenBLAS with when the
// user has set none: "SkylakeX" on a CPU with AVX-512 (F, CD, BW, DQ,
// VL), else "" (OpenBLAS's own detection). OpenBLAS 0.3.21 (Debian 12)
// does not know newer Xeons (e.g. family 6, model 207) and falls back to
// its Prescott (SSE3) kernels. SkylakeX's GEMM kernels are those OpenBLAS
// runs on every
// AVX-512 CPU it knows (Cooper Lake and Sapphire Rapids add bf16 and
// half-precision kernels only).
func openblasCore(flags string) string {
	have := map[string]bool{}
	for _, f := range strings.Fields(flags) {
		have[f] = true
	}
	for _, f := range []string{"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"} {
		if !have[f] {
			return ""
		}
	}
	return "SkylakeX"
}

// cpuFlags are the feature flags of the first CPU in /proc/cpuinfo.
func cpuFlags() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "flags" {
			return v
		}
	}
	return ""
}

func loadCBLAS() error {
	cblasOnce.Do(func() {
		// OpenBLAS reads OPENBLAS_CORETYPE when it is loaded.
		if _, set := os.LookupEnv("OPENBLAS_CORETYPE"); !set {
			if core := openblasCore(cpuFlags()); core != "" {
				os.Setenv("OPENBLAS_CORETYPE", core)
				defer os.Unsetenv("OPENBLAS_CORETYPE")
				coreTypeSet = core
			}
		}
		lib, err := dl.OpenWithHint("cblas", "BESPOKE_BLAS_LIBRARY", BLASHint, BLASLibraries...)
		if err != nil {
			cblasErr = fmt.Errorf("baseline: %w", err)
			return
		}
		c := &cblas
		err = dl.Bind(lib, []dl.Func{
			{Ptr: &c.dgemm, Name: "cblas_dgemm"},
			{Ptr: &c.sgemm, Name: "cblas_sgemm"},
			{Ptr: &c.setNumThreads, Name: "openblas_set_num_threads", Optional: true},
			{Ptr: &c.getNumThreads, Name: "openblas_get_num_threads", Optional: true},
			{Ptr: &c.getConfig, Name: "openblas_get_config", Optional: true},
			{Ptr: &c.getCorename, Name: "openblas_get_corename", Optional: true},
		})
		if err != nil {
			cblasErr = fmt.Errorf("baseline: cblas: %w (a CBLAS is needed: %s)", err, BLASHint)
		}
	})
	return cblasErr
}

// CPUBLAS is a CBLAS library on the host.
type CPUBLAS struct {
	name    string // "openblas", or "blas" for another CBLAS
	config  string // e.g. "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY SkylakeX MAX_THREADS=64"
	core    string // OpenBLAS's kernels, e.g. "SkylakeX"
	threads int    // threads it runs with (0: unknown, the library's own choice)
}

// OpenCPUBLAS loads the CPU BLAS (BESPOKE_BLAS_LIBRARY, else
// BLASLibraries in order) and, when threads > 0 and the library is
// OpenBLAS, sets its thread count. Without the library the error is one
// line that names what was tried and says how to install it.
func OpenCPUBLAS(threads int) (*CPUBLAS, error) {
	if err := loadCBLAS(); err != nil {
		return nil, err
	}
	b := &CPUBLAS{name: "blas"}
	if cblas.getConfig != nil {
		b.name = "openblas"
		b.config = strings.TrimSpace(dl.GoString(cblas.getConfig()))
	}
	if cblas.getCorename != nil {
		b.core = strings.TrimSpace(dl.GoString(cblas.getCorename()))
	}
	cblasMu.Lock()
	defer cblasMu.Unlock()
	if threads > 0 && cblas.setNumThreads != nil {
		cblas.setNumThreads(int32(threads))
	}
	if cblas.getNumThreads != nil {
		b.threads = int(cblas.getNumThreads())
	}
	return b, nil
}

// Name is "openblas" for OpenBLAS, else "blas".
func (b *CPUBLAS) Name() string { return b.name }

// Threads is the thread count the library runs with (0: unknown).
func (b *CPUBLAS) Threads() int { return b.threads }

// Describe is the library in a line: its configuration, kernels and
// threads as far as it tells.
func (b *CPUBLAS) Describe() string {
	s := b.config
	if s == "" {
		s = "a CBLAS (not OpenBLAS: threads as the library chooses)"
	}
	if b.core != "" {
		s += ", " + b.core + " kernels"
		if coreTypeSet != "" && b.name == "openblas" {
			s += " (OPENBLAS_CORETYPE=" + coreTypeSet + " set by bespoke: the CPU has AVX-512)"
		}
	}
	if b.threads > 0 {
		s += fmt.Sprintf(", %d threads", b.threads)
	}
	return s
}

// HostGEMM is C = α·A·B + β·C through the CPU BLAS with A kept in host
// memory (in the GEMM's precision).
type HostGEMM struct {
	b           *CPUBLAS
	dtype, m, k int
	a           []byte
}

// NewGEMM keeps A (m×k, row-major, in float64; converted to float32 when
// dtype is 4) for GEMMs in words of dtype bytes (4 or 8).
func (b *CPUBLAS) NewGEMM(dtype int, A []float64, m, k int) (*HostGEMM, error) {
	if err := checkDtype(dtype); err != nil {
		return nil, err
	}
	if m <= 0 || k <= 0 || len(A) != m*k {
		return nil, fmt.Errorf("baseline: NewGEMM: len(A)=%d for %d×%d", len(A), m, k)
	}
	// A copy the GEMM owns: words() of float64 data aliases A itself.
	a := append([]byte(nil), words(A, dtype)...)
	return &HostGEMM{b: b, dtype: dtype, m: m, k: k, a: a}, nil
}

// hostBytes returns a buffer's memory as Go sees it: host memory only (a
// device.Buffer of the C backend, whose Bytes is the mapping itself).
func hostBytes(buf device.Buffer) ([]byte, error) {
	h, ok := buf.(interface{ Bytes() []byte })
	if !ok {
		return nil, fmt.Errorf("baseline: buffer %T is not host memory", buf)
	}
	mem := h.Bytes()
	if mem == nil {
		return nil, fmt.Errorf("baseline: buffer %T is freed", buf)
	}
	return mem, nil
}

// Run computes C = α·A·B + β·C for row-major B (k×n, leading dimension
// ldb) and C (m×n, ldc) in host buffers, in words of the GEMM's dtype
// (cblas_?gemm, CblasRowMajor), and returns when it is done.
func (g *HostGEMM) Run(n int, B, C device.Buffer, ldb, ldc int, alpha, beta float64) error {
	if err := checkDims(g.m, g.k, n, B, C, ldb, ldc, g.dtype); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	bm, err := hostBytes(B)
	if err != nil {
		return err
	}
	cm, err := hostBytes(C)
	if err != nil {
		return err
	}
	// checkDims compared the buffers' sizes; the views must agree.
	if need := int64((g.k-1)*ldb+n) * int64(g.dtype); int64(len(bm)) < need {
		return fmt.Errorf("baseline: B holds %d bytes, needs %d", len(bm), need)
	}
	if need := int64((g.m-1)*ldc+n) * int64(g.dtype); int64(len(cm)) < need {
		return fmt.Errorf("baseline: C holds %d bytes, needs %d", len(cm), need)
	}
	pa, pb, pc := unsafe.Pointer(&g.a[0]), unsafe.Pointer(&bm[0]), unsafe.Pointer(&cm[0])
	m, k, nn, lb, lc := int32(g.m), int32(g.k), int32(n), int32(ldb), int32(ldc)
	cblasMu.Lock()
	if g.dtype == 8 {
		cblas.dgemm(cblasRowMajor, cblasNoTrans, cblasNoTrans, m, nn, k, alpha, pa, k, pb, lb, beta, pc, lc)
	} else {
		cblas.sgemm(cblasRowMajor, cblasNoTrans, cblasNoTrans, m, nn, k, float32(alpha), pa, k, pb, lb, float32(beta), pc, lc)
	}
	cblasMu.Unlock()
	runtime.KeepAlive(g.a)
	runtime.KeepAlive(bm)
	runtime.KeepAlive(cm)
	return nil
}

// Close releases A.
func (g *HostGEMM) Close() error {
	g.a = nil
	return nil
}
