// Package serve is bespoke's machine interface: the candidates of the
// sparse family (C ← α·A·B + β·C) for an operator given by value, with
// everything a client needs to build, bind and launch them on its own
// device, and lookup and record of a client's choices in bespoke's tuning
// store. Run speaks it as newline-delimited JSON (bespoke serve, protocol
// v1, docs/serve.md); Hello, Candidates, Lookup and Record are the same
// functions for Go.
//
// It opens no device: the client describes its device by its facts. It
// may import operator, kernel, kernel/family, kernel/sparse, emit, device
// (for device.Info) and tune, but no backend.
package serve

import (
	"fmt"
)

// Protocol is the version of the protocol this package speaks.
const Protocol = 1

// Error codes.
const (
	CodeBadJSON            = "bad_json"
	CodeBadRequest         = "bad_request"
	CodeUnsupportedVersion = "unsupported_version"
	CodeUnknownOp          = "unknown_op"
	CodeLimit              = "limit"
	CodeNoCandidates       = "no_candidates"
	CodeInternal           = "internal"
)

// Error is a structured error: a code from the list above, a one-line
// message and, for a bad field, its JSON path (e.g. "operator.coo.rows[3]").
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s: %s: %s", e.Code, e.Field, e.Message)
	}
	return e.Code + ": " + e.Message
}

func errorf(code, field, format string, args ...any) *Error {
	return &Error{Code: code, Field: field, Message: fmt.Sprintf(format, args...)}
}

func badField(field, format string, args ...any) *Error {
	return errorf(CodeBadRequest, field, format, args...)
}

// Device is the client's description of its device.
type Device struct {
	Name   string `json:"name"`
	Vendor string `json:"vendor,omitempty"`
	// Driver is the driver or platform version (part of the tuning key).
	Driver string `json:"driver,omitempty"`
	// CUDAArch is the compute capability ×10 (90 for sm_90); CUDA only.
	CUDAArch     int `json:"cuda_arch,omitempty"`
	ComputeUnits int `json:"compute_units,omitempty"`
	// LocalMemBytes is the static shared (local) memory a block may
	// declare; 0: 48 KiB.
	LocalMemBytes int `json:"local_mem_bytes,omitempty"`
	// MaxDynamicSharedBytes is the dynamic shared memory a CUDA block may
	// opt in to; 0: none beyond 48 KiB.
	MaxDynamicSharedBytes int `json:"max_dynamic_shared_bytes,omitempty"`
	// MaxWorkGroupSize is the most threads (work-items) per block; 0:
	// 1024. (An addition to the contract: OpenCL devices that take fewer.)
	MaxWorkGroupSize int `json:"max_work_group_size,omitempty"`
	// Type is "gpu" or "cpu" (OpenCL's device type); "" counts as a GPU
	// for cuda and opencl. (An addition: PoCL's OpenCL runs on a CPU.)
	Type string `json:"type,omitempty"`
	// BandwidthGBs is the measured DRAM bandwidth, for the predictions;
	// 0 when unknown.
	BandwidthGBs float64 `json:"bandwidth_gbs,omitempty"`
}

// COO is an operator's non-zeros, 0-based.
type COO struct {
	Rows []int     `json:"rows"`
	Cols []int     `json:"cols"`
	Vals []float64 `json:"vals"`
}

// Operator is A, m×k, given dense (row-major) or as COO.
type Operator struct {
	M     int       `json:"m"`
	K     int       `json:"k"`
	Dense []float64 `json:"dense,omitempty"`
	COO   *COO      `json:"coo,omitempty"`
}

// Problem holds the fields shared by candidates, lookup and record.
type Problem struct {
	Operator *Operator `json:"operator"`
	DType    string    `json:"dtype"`
	Alpha    *float64  `json:"alpha"`
	Beta     *float64  `json:"beta"`
	N        int       `json:"n"`
	LDB      int       `json:"ldb"`
	LDC      int       `json:"ldc"`
	// AlignB and AlignC are the guaranteed alignment in bytes of B's and
	// C's base and of every row start; 0: one element.
	AlignB  int     `json:"align_b,omitempty"`
	AlignC  int     `json:"align_c,omitempty"`
	Backend string  `json:"backend"`
	Device  *Device `json:"device,omitempty"`
	// Client is the namespace of lookup and record; "" is "serve".
	Client string `json:"client,omitempty"`
}

// CandidatesRequest asks for the candidates of a problem.
type CandidatesRequest struct {
	Problem
	// Limit is the most candidates returned, best predicted first; nil:
	// DefaultLimit, 0: all.
	Limit *int `json:"limit,omitempty"`
	// Source: whether sources are returned; nil: true.
	Source *bool `json:"source,omitempty"`
}

// DefaultLimit is the candidates returned when a request gives no limit.
const DefaultLimit = 8

// LookupRequest asks for the stored choice of a problem.
type LookupRequest struct {
	Problem
}

// RecordRequest stores a client's choice for a problem.
type RecordRequest struct {
	Problem
	Winner string             `json:"winner"`
	Times  map[string]float64 `json:"times"`
}

// HelloAnswer describes the server.
type HelloAnswer struct {
	Protocol int      `json:"protocol"`
	Bespoke  string   `json:"bespoke"`
	Ops      []string `json:"ops"`
	DTypes   []string `json:"dtypes"`
	Backends []string `json:"backends"`
}

// Param is one kernel parameter, in order, with what the client passes.
type Param struct {
	Name string `json:"name"`
	Kind string `json:"kind"` // "buffer" or "scalar"
	// Type is the element type of a buffer or the scalar's C type:
	// "f64", "f32", "int32", "int64".
	Type  string `json:"type"`
	Const *bool  `json:"const,omitempty"` // buffers: read only
	// Role is "b", "c", "data" (a buffer of Values the client uploads
	// once), or for scalars "n", "ldb", "ldc".
	Role   string    `json:"role"`
	Value  *int64    `json:"value,omitempty"`
	Values []float64 `json:"values,omitempty"`
	// Align is the alignment in bytes the kernel needs of a data
	// buffer's base (vector loads); 0: one element. (An addition.)
	Align int `json:"align,omitempty"`
}

// Launch is a candidate's launch resolved to numbers.
type Launch struct {
	Grid               [3]int `json:"grid"`  // blocks (work-groups); C: grid_x is Grid[0]
	Block              [3]int `json:"block"` // threads (work-items) per block
	DynamicSharedBytes int    `json:"dynamic_shared_bytes"`
	StaticSharedBytes  int    `json:"static_shared_bytes"`
	// Attributes are CUDA function attributes to set before the launch.
	Attributes map[string]int `json:"attributes"`
}

// Build says how the source must be compiled. (An addition to the
// contract: wgmma kernels build for sm_90a only.)
type Build struct {
	// Options are the compiler options bespoke builds the source with
	// (NVRTC's for CUDA, clBuildProgram's for OpenCL, the C compiler's).
	Options []string `json:"options"`
	// MinArch is the least compute capability ×10 the kernel needs.
	MinArch int `json:"min_arch,omitempty"`
	// ArchSpecific: the kernel uses sm_<MinArch>a instructions and runs
	// on that architecture only, built for its arch-specific target.
	ArchSpecific bool `json:"arch_specific,omitempty"`
}

// Candidate is one kernel a client may build and time.
type Candidate struct {
	Name     string  `json:"name"` // the variant, e.g. "bstream/x128-w2"
	Family   string  `json:"family"`
	Entry    string  `json:"entry"`
	Language string  `json:"language"`
	Source   string  `json:"source,omitempty"`
	Params   []Param `json:"params"`
	Launch   Launch  `json:"launch"`
	Build    Build   `json:"build"`
	// PredictedS is bespoke's cost model's time for one launch, for
	// ordering only. Where the model has no estimate (tensor-core
	// kernels), Modelled is false and PredictedS is the time at the
	// bandwidth given, a bound nothing beats. Rank is the order to try
	// candidates in: the modelled ones by PredictedS, alternating with
	// the others.
	PredictedS float64 `json:"predicted_s"`
	Modelled   bool    `json:"modelled"`
	Rank       int     `json:"rank"`
}

// CandidatesAnswer lists candidates in the order to try them.
type CandidatesAnswer struct {
	Key        string      `json:"key"`
	Offered    int         `json:"offered"`
	Returned   int         `json:"returned"`
	Candidates []Candidate `json:"candidates"`
}

// LookupAnswer is a stored choice, or found = false.
type LookupAnswer struct {
	Found     bool               `json:"found"`
	Key       string             `json:"key"`
	Winner    string             `json:"winner,omitempty"`
	Times     map[string]float64 `json:"times,omitempty"`
	Date      string             `json:"date,omitempty"`
	Candidate *Candidate         `json:"candidate,omitempty"`
}

// RecordAnswer confirms a stored choice.
type RecordAnswer struct {
	Stored bool   `json:"stored"`
	Key    string `json:"key"`
}
