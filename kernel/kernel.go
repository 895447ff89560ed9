package kernel

import (
	"encoding/json"
	"fmt"
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

// Param is one kernel argument, in order.
type Param struct {
	Name  string    `json:"name"`
	Kind  ParamKind `json:"kind"`
	Type  Type      `json:"type"`            // element type of a buffer, or the scalar's type
	Const bool      `json:"const,omitempty"` // a buffer the kernel only reads
	Doc   string    `json:"doc,omitempty"`
}

// Shared is a real array in block-shared (OpenCL local) memory.
type Shared struct {
	Name string `json:"name"`
	Len  int    `json:"len"`
}

// Launch is the launch geometry as a function of the column count n.
type Launch struct {
	Block        [3]int `json:"block"`          // threads per block
	ColsPerBlock int    `json:"cols_per_block"` // grid.x = ceil(n / ColsPerBlock)
	SharedBytes  int    `json:"shared_bytes"`   // static shared memory per block
	// MinBlocks asks the compiler to fit this many blocks on one
	// multiprocessor (CUDA __launch_bounds__), capping registers per
	// thread to raise occupancy; 0 leaves the choice to the compiler.
	MinBlocks int `json:"min_blocks,omitempty"`
}

// Grid returns the number of blocks along x for n columns.
func (l Launch) Grid(n int) int { return (n + l.ColsPerBlock - 1) / l.ColsPerBlock }

// Kernel is a complete dialect-neutral kernel.
type Kernel struct {
	Name    string   `json:"name"`    // entry point
	Variant string   `json:"variant"` // e.g. "bstream/x128-w2"
	DType   DType    `json:"dtype"`
	Index64 bool     `json:"index64"` // index arithmetic in 64 bits
	Params  []Param  `json:"params"`
	Shared  []Shared `json:"shared,omitempty"`
	Launch  Launch   `json:"launch"`
	// Active is the number of threads along x that have work; the printer
	// returns early (GPU) or bounds its loop (C) with it. Kernels with
	// barriers guard their own statements and leave Active nil.
	Active Expr   `json:"-"`
	Body   []Stmt `json:"-"`
	// Doc is the reference loop the kernel computes, printed as a comment.
	Doc string `json:"doc,omitempty"`
	// Meta holds variant-specific facts for reports (m, k, nnz, α, β …).
	Meta map[string]any `json:"meta,omitempty"`
}

// HasBarrier reports whether the body synchronises a block.
func (k *Kernel) HasBarrier() bool {
	for _, s := range k.Body {
		if _, ok := s.(Barrier); ok {
			return true
		}
	}
	return false
}

// JSON returns the kernel's launch metadata as indented JSON.
func (k *Kernel) JSON() ([]byte, error) { return json.MarshalIndent(k, "", "  ") }

// Args orders named launch arguments as the kernel's parameters: buffers
// as given, integers converted to the index width (int32 or int64).
func (k *Kernel) Args(named map[string]any) ([]any, error) {
	args := make([]any, 0, len(k.Params))
	for _, p := range k.Params {
		v, ok := named[p.Name]
		if !ok {
			return nil, fmt.Errorf("kernel %s: no value for parameter %q", k.Name, p.Name)
		}
		if p.Kind == ScalarParam {
			i, ok := v.(int)
			if !ok {
				return nil, fmt.Errorf("kernel %s: parameter %q wants an int, got %T", k.Name, p.Name, v)
			}
			if k.Index64 || p.Type != Index {
				v = int64(i)
			} else {
				v = int32(i)
			}
			if p.Type == Int32 {
				v = int32(i)
			}
		}
		args = append(args, v)
	}
	return args, nil
}
