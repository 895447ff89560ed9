package emit

// Dialect names a target language for kernel source.
type Dialect string

// The dialects bespoke renders.
const (
	CUDA   Dialect = "cuda"   // CUDA C++, compiled with NVRTC or nvcc
	OpenCL Dialect = "opencl" // OpenCL C 1.2
	C      Dialect = "c"      // C11 with OpenMP, compiled by the system C compiler
)

// Source is rendered kernel text plus the entry points it defines.
type Source struct {
	Dialect Dialect
	Text    string
	Entries []string
}
