package kernel

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// DType is the floating-point precision of a kernel's data.
type DType int

// Precisions.
const (
	F64 DType = iota
	F32
)

// Bytes is the size of one element.
func (d DType) Bytes() int {
	if d == F32 {
		return 4
	}
	return 8
}

func (d DType) String() string {
	if d == F32 {
		return "f32"
	}
	return "f64"
}

// MarshalText lets DType appear by name in JSON metadata.
func (d DType) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// ParseDType reads "f32"/"float32"/"single" or "f64"/"float64"/"double".
func ParseDType(s string) (DType, error) {
	switch strings.ToLower(s) {
	case "f64", "float64", "double", "fp64":
		return F64, nil
	case "f32", "float32", "single", "float", "fp32":
		return F32, nil
	}
	return 0, fmt.Errorf("unknown dtype %q (want f32 or f64)", s)
}

// ParamKind says whether a parameter is a buffer or a scalar.
type ParamKind string

// Parameter kinds.
const (
	BufferParam ParamKind = "buffer"
	ScalarParam ParamKind = "scalar"
)

// Param is one kernel argument, in order. Scalars are integers (Index,
// Int32 or Int64); buffers hold reals or integers.
type Param struct {
	Name  string    `json:"name"`
	Kind  ParamKind `json:"kind"`
	Type  Type      `json:"type"`            // element type of a buffer, or the scalar's type
	Const bool      `json:"const,omitempty"` // a buffer the kernel only reads
	Doc   string    `json:"doc,omitempty"`
}

// Shared is an array in block-shared (OpenCL local) memory, of Dims
// elements per dimension (row-major, one index per dimension).
type Shared struct {
	Name string `json:"name"`
	Type Type   `json:"type"`
	Dims []int  `json:"dims"`
}

// Len is the number of elements.
func (s Shared) Len() int {
	n := 1
	for _, d := range s.Dims {
		n *= d
	}
	return n
}

// Axis is one dimension of a launch grid: Fixed blocks, or, when Size names
// a size the caller gives at launch (columns, elements …), ⌈size / Per⌉
// blocks, times Fixed where it is above one (several blocks share each
// slice of the size). The zero Axis is one block.
type Axis struct {
	Size  string `json:"size,omitempty"`
	Per   int    `json:"per,omitempty"`
	Fixed int    `json:"blocks,omitempty"`
}

// Over is an axis of ⌈size / per⌉ blocks.
func Over(size string, per int) Axis { return Axis{Size: size, Per: per} }

// Launch is the launch geometry, symbolic in the sizes named by its axes.
type Launch struct {
	Block       [3]int  `json:"block"`        // threads per block
	Grid        [3]Axis `json:"grid"`         // blocks per dimension
	SharedBytes int     `json:"shared_bytes"` // static shared memory per block
}

// StaticSharedLimit is the most shared memory a block may declare
// statically on every device; a kernel over it takes its shared arrays
// from dynamic shared memory, which only CUDA sizes at launch (with the
// function opted in to more than 48 KiB on sm_70 and later).
const StaticSharedLimit = 48 << 10

// DynamicShared says whether the kernel's shared arrays go in dynamic
// shared memory: more than StaticSharedLimit bytes.
func (l Launch) DynamicShared() bool { return l.SharedBytes > StaticSharedLimit }

// TypeBytes is the size of a value of type t in the kernel.
func (k *Kernel) TypeBytes(t Type) int {
	switch t {
	case Real:
		return k.DType.Bytes()
	case Int32:
		return 4
	case Index:
		if !k.Index64 {
			return 4
		}
	}
	return 8
}

// Threads is the number of threads in a block.
func (l Launch) Threads() int { return l.Block[0] * l.Block[1] * l.Block[2] }

// Blocks resolves the grid against the named sizes.
func (l Launch) Blocks(sizes map[string]int64) ([3]int, error) {
	var g [3]int
	for i, a := range l.Grid {
		switch {
		case a.Size == "":
			g[i] = max(a.Fixed, 1)
		case a.Per < 1:
			return g, fmt.Errorf("kernel: grid axis %d over %q has %d per block", i, a.Size, a.Per)
		default:
			n, ok := sizes[a.Size]
			if !ok {
				return g, fmt.Errorf("kernel: no value for the launch size %q", a.Size)
			}
			if n < 0 {
				return g, fmt.Errorf("kernel: launch size %s = %d is negative", a.Size, n)
			}
			b := (n + int64(a.Per) - 1) / int64(a.Per) * int64(max(a.Fixed, 1))
			if b > math.MaxInt32 {
				return g, fmt.Errorf("kernel: %s = %d needs %d blocks along axis %d (at most %d)", a.Size, n, b, i, math.MaxInt32)
			}
			g[i] = int(b)
		}
	}
	return g, nil
}

// Hints are facts a compiler may use to make better code. None changes the
// result, and a dialect that cannot express one ignores it.
type Hints struct {
	// MinBlocksPerUnit asks the compiler to fit this many blocks on one
	// multiprocessor, capping registers per thread to raise occupancy
	// (CUDA's __launch_bounds__); 0 leaves the choice to the compiler.
	MinBlocksPerUnit int `json:"min_blocks_per_unit,omitempty"`
	// WideVectors marks compute-bound straight-line code that gains from
	// the host's widest vectors and largest register file: the C device
	// then builds its source with AVX-512 where the CPU has it (it is
	// off otherwise: memory-bound kernels gain nothing and compile far
	// slower). GPU dialects ignore it.
	WideVectors bool `json:"wide_vectors,omitempty"`
	// MinArch is the least CUDA compute capability ×10 the kernel needs
	// (80: sm_80, for the tensor cores of an MMA statement; see
	// MMAShape.Arch); 0 for any. It is no hint but a requirement: a CUDA
	// device below it refuses the kernel, other dialects cannot print it.
	MinArch int `json:"min_arch,omitempty"`
	// SpillOnce marks a kernel whose thread runs its body once (no loop
	// around the spilled values, as one element a thread): a value that
	// does not fit the registers is stored and reloaded about once, and
	// the cost model prices spills at their bytes instead of its
	// SpillWeight (fitted on kernels whose spills sit in dependent chains).
	SpillOnce bool `json:"spill_once,omitempty"`
}

// NeedsArch is the least CUDA compute capability ×10 k's MMA statements,
// bulk copies and TF32 roundings need, or 0 when it has none.
func NeedsArch(ss []Stmt) int {
	arch := 0
	WalkStmts(ss, func(s Stmt) bool {
		switch m := s.(type) {
		case MMA:
			arch = max(arch, m.Type.Arch(m.Shape))
		case WGMMA, WGMMASync, BulkCopy, TxBarrier:
			arch = max(arch, 90)
		}
		StmtExprs(s, func(e Expr) {
			WalkExpr(e, func(e Expr) {
				if c, ok := e.(Call); ok && (c.Fn == TF32 || c.Fn == TF32Trunc) {
					arch = max(arch, 80)
				}
			})
		})
		return true
	})
	return arch
}

// HasMMA reports whether ss hold a warp-level mma (or a warpgroup's WGMMA).
func HasMMA(ss []Stmt) bool {
	has := false
	WalkStmts(ss, func(s Stmt) bool {
		switch s.(type) {
		case MMA, WGMMA:
			has = true
		}
		return !has
	})
	return has
}

// Kernel is a complete dialect-neutral kernel, written from the point of
// view of one thread of a block.
type Kernel struct {
	Name    string   `json:"name"`    // entry point
	Variant string   `json:"variant"` // e.g. "bstream/x128-w2"
	DType   DType    `json:"dtype"`
	Index64 bool     `json:"index64"` // index arithmetic in 64 bits
	Params  []Param  `json:"params"`
	Shared  []Shared `json:"shared,omitempty"`
	Launch  Launch   `json:"launch"`
	Hints   Hints    `json:"hints"`
	// Active, when set, is how many threads along x (counted over the
	// whole grid) have work: the rest return at once (GPU) or are never
	// run (C). Kernels with barriers guard their own statements and leave
	// it nil.
	Active Expr   `json:"-"`
	Body   []Stmt `json:"-"`
	// Doc is the reference loop the kernel computes, printed as a comment.
	Doc string `json:"doc,omitempty"`
	// Meta holds facts for reports (m, k, nnz, α, β …).
	Meta map[string]any `json:"meta,omitempty"`
}

// PartBarrier is the Threads of ss's barriers of part of a block (see
// Barrier), 0 where it has none; -1 where they differ.
func PartBarrier(ss []Stmt) int {
	n := 0
	WalkStmts(ss, func(s Stmt) bool {
		if b, ok := s.(Barrier); ok && b.Threads > 0 {
			if n != 0 && n != b.Threads {
				n = -1
				return false
			}
			n = b.Threads
		}
		return true
	})
	return n
}

// HasBarrier reports whether the body synchronises a block anywhere.
func (k *Kernel) HasBarrier() bool { return HasBarrier(k.Body) }

// HasBarrier reports whether ss holds a barrier at any depth.
func HasBarrier(ss []Stmt) bool {
	found := false
	WalkStmts(ss, func(s Stmt) bool {
		if _, ok := s.(Barrier); ok {
			found = true
		}
		return !found
	})
	return found
}

// Param returns the parameter named name.
func (k *Kernel) Param(name string) (Param, bool) {
	for _, p := range k.Params {
		if p.Name == name {
			return p, true
		}
	}
	return Param{}, false
}

// JSON returns the kernel's launch metadata as indented JSON.
func (k *Kernel) JSON() ([]byte, error) { return json.MarshalIndent(k, "", "  ") }

// ScalarBytes is the width of an integer type in this kernel's device
// code (Index follows Index64).
func (k *Kernel) ScalarBytes(t Type) int {
	switch t {
	case Int32:
		return 4
	case Index:
		if !k.Index64 {
			return 4
		}
	case Real:
		return k.DType.Bytes()
	}
	return 8
}

// Args orders named launch arguments as the kernel's parameters: buffers
// as given, integer scalars (int or int64) converted to the parameter's
// width (int32 or int64).
func (k *Kernel) Args(named map[string]any) ([]any, error) {
	args := make([]any, 0, len(k.Params))
	for _, p := range k.Params {
		v, ok := named[p.Name]
		if !ok {
			return nil, fmt.Errorf("kernel %s: no value for parameter %q", k.Name, p.Name)
		}
		if p.Kind == ScalarParam {
			var i int64
			switch x := v.(type) {
			case int:
				i = int64(x)
			case int64:
				i = x
			default:
				return nil, fmt.Errorf("kernel %s: parameter %q wants an integer, got %T", k.Name, p.Name, v)
			}
			if k.ScalarBytes(p.Type) == 4 {
				if i != int64(int32(i)) {
					return nil, fmt.Errorf("kernel %s: parameter %q = %d does not fit 32 bits", k.Name, p.Name, i)
				}
				v = int32(i)
			} else {
				v = i
			}
		}
		args = append(args, v)
	}
	return args, nil
}
