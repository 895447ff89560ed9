package emit

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/bespoke-hpc/bespoke/kernel"
)

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
	// Wide: some kernel asks for the widest host vectors
	// (kernel.Hints.WideVectors).
	Wide bool
	// MaxRegisters, when every kernel asks for a number of resident
	// blocks (kernel.Hints.MinBlocksPerUnit), is the fewest registers per
	// thread that lets them all fit in the 64 K registers of an NVIDIA
	// multiprocessor: what a platform without launch bounds (NVIDIA's
	// OpenCL) can be told instead. 0 otherwise.
	MaxRegisters int
	// MinArch is the least CUDA compute capability ×10 the kernels need
	// (kernel.Hints.MinArch: 80 for fp64 mma.sync …); 0 when any will do.
	MinArch int
	// ArchSpecific: some kernel uses instructions of exactly sm_MinArch
	// with its arch-specific features (sm_90a's wgmma,
	// kernel.ArchSpecific), which run on no other architecture.
	ArchSpecific bool
}

// spelling is everything that differs between dialects: a dialect is this
// table (see cuda.go, opencl.go and c.go) and nothing else.
type spelling struct {
	name Dialect
	// prelude is the text before the kernels (extensions, includes,
	// helper functions the kernels need).
	prelude func(ks []*kernel.Kernel) string
	// lower, when set, rewrites a kernel before printing (an IR pass).
	lower func(*kernel.Kernel) (*kernel.Kernel, error)
	// kernel writes one kernel: its signature, declarations and body.
	kernel func(p *printer)
	// entry is the text before a GPU kernel's name.
	entry    func(k *kernel.Kernel) string
	global   string // address-space qualifier of buffer parameters
	restrict string
	shared   string // qualifier of shared-array declarations
	// dynamicShared declares the block's dynamic shared memory, which
	// holds the shared arrays of a kernel over kernel.StaticSharedLimit
	// bytes; "" where the dialect has none (such kernels are refused).
	dynamicShared string
	sharedRef     string // prefix of a shared-array reference
	sharedPtr     string // address-space qualifier of a pointer into shared memory
	// alignBefore and alignAfter align a static shared array that vector
	// loads read to 16 bytes (before its type, after its dimensions).
	alignBefore, alignAfter string
	barrier                 string // "" where barriers are lowered away
	// partBarrier prints a barrier of the threads consecutive threads
	// holding this one (kernel.Barrier.Threads); nil where the dialect
	// has none (Render refuses such kernels).
	partBarrier   func(p *printer, threads int)
	int64         string // 64-bit integer type
	index64Always bool   // Index is 64-bit even in a kernel without Index64
	int64Suffix   string // suffix of integer literals beyond 32 bits
	special       func(k *kernel.Kernel, s kernel.Special) string
	vec           *vecSpelling // nil: vector accesses element by element
	call          func(fn kernel.Intrinsic, t kernel.Type, dt kernel.DType, args []string) string
	atomicAdd     func(p *printer, ref, value string)
	unroll        string // line before a loop to unroll, "" for none
	unrollBy      string // the same, followed by a factor; "" for none
	vectorize     string // line before a loop to vectorise, "" for none
	// minBlocks says whether the dialect honours Hints.MinBlocksPerUnit.
	minBlocks bool
	// mma writes a warp-level matrix multiply-accumulate; nil where the
	// dialect has none (Render refuses kernels with one).
	mma func(p *printer, s kernel.MMA)
	// wgmma and wgmmaSync write a warpgroup-level multiply-accumulate and
	// its fences; nil where the dialect has none (with mma nil, Render
	// refuses such kernels).
	wgmma     func(p *printer, s kernel.WGMMA)
	wgmmaSync func(p *printer, s kernel.WGMMASync)
	// copyAsync writes an asynchronous copy into shared memory; nil where
	// the dialect has none (Render makes the copies plain ones, and
	// AsyncCommit and AsyncWait are then gone).
	copyAsync func(p *printer, s kernel.CopyAsync)
	// bulk writes a bulk copy or an operation on a transaction barrier
	// (kernel.BulkCopy, kernel.TxBarrier); nil where the dialect has
	// none (Render refuses kernels with one).
	bulk func(p *printer, s kernel.Stmt)
	// atomicFetchAdd is the expression that adds the int value to the int
	// element ref atomically and yields the element's old value.
	atomicFetchAdd func(ref, value string) string
	// streamStore writes a streamed VecStore (kernel.VecStore.Stream) of
	// the values vals from the element ref on; nil: element by element.
	streamStore func(p *printer, ref string, vals []string)
	// prefetch writes a prefetch (kernel.Prefetch) of the element ref;
	// nil: none is written (it is a hint).
	prefetch func(p *printer, ref string, write bool)
}

// vecSpelling spells aligned vector loads and stores.
type vecSpelling struct {
	typ   func(elem string, width int) string
	field [4]string
	ctor  func(typ string, vals []string) string
}

var spellings = map[Dialect]*spelling{CUDA: &cudaSpelling, OpenCL: &openclSpelling, C: &cSpelling}

// Dialects lists the dialects in a stable order.
func Dialects() []Dialect {
	var ds []Dialect
	for d := range spellings {
		ds = append(ds, d)
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds
}

func dialectList() string {
	var s []string
	for _, d := range Dialects() {
		s = append(s, string(d))
	}
	return strings.Join(s, ", ")
}

// ParseDialect reads a dialect name.
func ParseDialect(s string) (Dialect, error) {
	if _, ok := spellings[Dialect(s)]; ok {
		return Dialect(s), nil
	}
	return "", fmt.Errorf("unknown dialect %q (want %s)", s, dialectList())
}

// HonoursMinBlocks says whether kernels rendered in d obey
// kernel.Hints.MinBlocksPerUnit (elsewhere the hint prints nothing, so a
// candidate differing only in it would be the same code).
func HonoursMinBlocks(d Dialect) bool {
	sp, ok := spellings[d]
	return ok && sp.minBlocks
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// reserved are words that cannot name anything in some dialect.
var reserved = map[string]bool{
	"auto": true, "break": true, "case": true, "char": true, "const": true, "continue": true, "default": true,
	"do": true, "double": true, "else": true, "enum": true, "extern": true, "float": true, "for": true, "goto": true,
	"if": true, "inline": true, "int": true, "long": true, "register": true, "restrict": true, "return": true,
	"short": true, "signed": true, "sizeof": true, "static": true, "struct": true, "switch": true, "typedef": true,
	"union": true, "unsigned": true, "void": true, "volatile": true, "while": true, "kernel": true, "global": true,
	"local": true, "constant": true, "private": true, "half": true, "bool": true, "class": true, "template": true,
	"new": true, "delete": true, "this": true, "namespace": true, "operator": true,
}

// library are the names the rendered sources see declared: the C headers
// they include (stdlib.h, stdint.h, math.h), CUDA's and OpenCL C's
// built-in functions, variables and types. A kernel so named redeclares
// one of them.
var library = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`
		malloc calloc realloc free aligned_alloc posix_memalign alloca abort exit atexit quick_exit at_quick_exit
		getenv system abs labs llabs div ldiv lldiv atoi atol atoll atof strtol strtoll strtoul strtoull strtod
		strtof strtold rand srand qsort bsearch mblen mbtowc wctomb mbstowcs wcstombs NULL EXIT_SUCCESS
		EXIT_FAILURE RAND_MAX MB_CUR_MAX main printf fprintf sprintf snprintf puts memcpy memset memmove memcmp
		strlen strcpy strcmp assert errno offsetof INFINITY NAN HUGE_VAL HUGE_VALF FLT_MAX DBL_MAX FLT_MIN
		DBL_MIN FLT_EPSILON DBL_EPSILON M_PI M_E isnan isinf isfinite isnormal signbit fpclassify
		threadIdx blockIdx blockDim gridDim warpSize dim3 atomicAdd atomicSub atomicCAS atomicExch atomicMin
		atomicMax atomicInc atomicDec atomicAnd atomicOr atomicXor clock clock64 min max rsqrt rsqrtf
		get_global_id get_local_id get_group_id get_global_size get_local_size get_num_groups get_work_dim
		get_global_offset barrier mem_fence read_mem_fence write_mem_fence work_group_barrier
		CLK_LOCAL_MEM_FENCE CLK_GLOBAL_MEM_FENCE mad mad24 mul24 clamp mix step smoothstep sign dot cross
		length distance normalize select shuffle shuffle2 vload_half vstore_half
		atomic_add atomic_sub atomic_xchg atomic_inc atomic_dec atomic_cmpxchg atomic_min atomic_max
		atomic_and atomic_or atomic_xor atom_add atom_cmpxchg size_t ptrdiff_t wchar_t uchar ushort uint ulong`) {
		m[w] = true
	}
	// math.h's functions, in double, float (…f) and long double (…l).
	for _, w := range strings.Fields(`
		sin cos tan asin acos atan atan2 sinh cosh tanh asinh acosh atanh exp exp2 exp10 expm1 log log2 log10
		log1p logb ilogb pow pown powr rootn sqrt cbrt hypot fabs fmod remainder remquo fma fmax fmin fdim ceil
		floor trunc round lround llround rint lrint llrint nearbyint frexp ldexp modf scalbn scalbln nextafter
		nexttoward copysign nan erf erfc tgamma lgamma sincos sinpi cospi tanpi`) {
		m[w], m[w+"f"], m[w+"l"] = true, true, true
	}
	return m
}()

// libraryPattern matches the families of library names: <stdint.h>'s
// types and limits (and POSIX's _t types), CUDA's and OpenCL's vector
// types, OpenCL's conversions and native functions, and the SIMD types.
var libraryPattern = regexp.MustCompile(`^(.*_t|U?INT[A-Z0-9_]*_(MAX|MIN|C)|SIZE_MAX|PTRDIFF_(MAX|MIN)|` +
	`(u?char|u?short|u?int|u?long|longlong|ulonglong|float|double|half)(1|2|3|4|8|16)|` +
	`(convert|as|native|half|vload|vstore|vloada|atomic|async)_[A-Za-z0-9_]*|vload(1|2|3|4|8|16)|vstore(1|2|3|4|8|16))$`)

// CheckIdentifier reports why s cannot name a kernel or a variable in every
// dialect, or nil.
func CheckIdentifier(s string) error {
	switch {
	case !identifier.MatchString(s):
		return fmt.Errorf("%q is not an identifier (letters, digits and _, not starting with a digit)", s)
	case reserved[s]:
		return fmt.Errorf("%q is a reserved word in C, C++ or OpenCL C", s)
	case strings.HasPrefix(s, "_"):
		return fmt.Errorf("%q starts with _ (reserved for the compilers and bespoke's passes)", s)
	case len(s) > 200:
		return fmt.Errorf("identifier of %d characters (at most 200)", len(s))
	}
	return nil
}

// CheckEntryPoint reports why s cannot name a kernel, a global name in
// every dialect, or nil: an identifier that no header the sources include,
// nor CUDA or OpenCL C, declares.
func CheckEntryPoint(s string) error {
	if err := CheckIdentifier(s); err != nil {
		return err
	}
	if library[s] || libraryPattern.MatchString(s) {
		return fmt.Errorf("%q names a function, type or macro of the C library, CUDA or OpenCL C: the source would not compile", s)
	}
	return nil
}

// checkNames checks every name a kernel declares.
func checkNames(k *kernel.Kernel) error {
	bad := CheckEntryPoint(k.Name)
	for _, p := range k.Params {
		bad = firstErr(bad, CheckIdentifier(p.Name))
	}
	for _, s := range k.Shared {
		bad = firstErr(bad, CheckIdentifier(s.Name))
	}
	kernel.WalkStmts(k.Body, func(s kernel.Stmt) bool {
		switch s := s.(type) {
		case kernel.Decl:
			bad = firstErr(bad, CheckIdentifier(s.Name))
		case kernel.For:
			bad = firstErr(bad, CheckIdentifier(s.Var))
		}
		return bad == nil
	})
	if bad != nil {
		return fmt.Errorf("kernel %s: %w", k.Name, bad)
	}
	return nil
}

func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
