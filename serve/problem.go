package serve

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/emit"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/kernel/sparse"
	"github.com/bespoke-hpc/bespoke/operator"
	"github.com/bespoke-hpc/bespoke/tune"
)

// Limits on a request.
const (
	MaxDim = sparse.MaxDim        // rows and columns of an operator
	MaxNNZ = sparse.DefaultMaxNNZ // its non-zeros
	// MaxEntries bounds m·k: the operator is held dense in float64
	// (128 MiB at the bound).
	MaxEntries = 1 << 24
)

// staticSharedDefault is the static shared memory a block may declare
// where the client does not say: what every CUDA device and most OpenCL
// GPUs accept.
const staticSharedDefault = kernel.StaticSharedLimit

// defaultClient is the namespace of a request that names none.
const defaultClient = "serve"

// resolved is a checked problem: the instance, where it runs, the facts
// the key and the filters use.
type resolved struct {
	in      *sparse.Instance
	dialect emit.Dialect
	target  family.Target
	info    device.Info
	dev     Device // with defaults filled in
	alignB  int
	alignC  int
	client  string
}

// resolve checks a problem's fields and builds its instance: n, ldb and
// ldc baked into the kernels (the client's panels have one shape, and
// baked leading dimensions allow vector widths).
func resolve(p *Problem) (*resolved, error) {
	op, err := buildOperator(p.Operator)
	if err != nil {
		return nil, err
	}
	dt, err := parseDType(p.DType)
	if err != nil {
		return nil, err
	}
	if dt == kernel.F32 { // the operator's content in the dtype, as the key has it
		for i, a := range op.Data {
			op.Data[i] = dt.Rounded(a)
		}
		if err := op.Validate(); err != nil {
			return nil, badField("operator", "%s (in f32)", strings.TrimPrefix(err.Error(), "operator: "))
		}
	}
	if p.Alpha == nil {
		return nil, badField("alpha", "missing")
	}
	if p.Beta == nil {
		return nil, badField("beta", "missing")
	}
	switch {
	case p.N < 1:
		return nil, badField("n", "n = %d: want at least 1", p.N)
	case p.LDB < p.N:
		return nil, badField("ldb", "ldb = %d: want at least n = %d", p.LDB, p.N)
	case p.LDC < p.N:
		return nil, badField("ldc", "ldc = %d: want at least n = %d", p.LDC, p.N)
	}
	r := &resolved{alignB: p.AlignB, alignC: p.AlignC, client: p.Client}
	for _, a := range []struct {
		field string
		v     *int
	}{{"align_b", &r.alignB}, {"align_c", &r.alignC}} {
		switch {
		case *a.v < 0:
			return nil, badField(a.field, "%d bytes: want a positive alignment", *a.v)
		case *a.v == 0:
			*a.v = dt.Bytes()
		}
	}
	if r.client == "" {
		r.client = defaultClient
	}
	if err := checkName(r.client); err != nil {
		return nil, badField("client", "%v", err)
	}
	if err := r.device(p.Backend, p.Device); err != nil {
		return nil, err
	}
	pb := sparse.NewOperator(op, dt, *p.Alpha, *p.Beta).Spec()
	pb.N, pb.LDB, pb.LDC = p.N, p.LDB, p.LDC
	if err := pb.CheckOperator(); err != nil {
		return nil, badField("operator", "%v", err)
	}
	r.in = &sparse.Instance{Problem: pb, N: p.N, LDB: p.LDB, LDC: p.LDC}
	return r, nil
}

// device checks the backend and the device's facts and fills in defaults.
func (r *resolved) device(backend string, d *Device) error {
	switch backend {
	case "cuda":
		r.dialect = emit.CUDA
	case "opencl":
		r.dialect = emit.OpenCL
	case "c":
		r.dialect = emit.C
	case "":
		return badField("backend", "missing (want cuda, opencl or c)")
	default:
		return badField("backend", "unknown backend %q (want cuda, opencl or c)", backend)
	}
	if d == nil {
		if r.dialect != emit.C {
			return badField("device", "missing (a %s request describes its device)", backend)
		}
		d = &Device{}
	}
	r.dev = *d
	dev := &r.dev
	switch {
	case r.dialect == emit.CUDA && dev.CUDAArch < 10:
		return badField("device.cuda_arch", "%d: want the compute capability ×10 (e.g. 90)", dev.CUDAArch)
	case r.dialect != emit.C && dev.ComputeUnits < 1:
		return badField("device.compute_units", "%d: want at least 1", dev.ComputeUnits)
	case dev.ComputeUnits < 0:
		return badField("device.compute_units", "%d: want at least 0", dev.ComputeUnits)
	case dev.LocalMemBytes < 0:
		return badField("device.local_mem_bytes", "%d: want at least 0", dev.LocalMemBytes)
	case dev.MaxDynamicSharedBytes < 0:
		return badField("device.max_dynamic_shared_bytes", "%d: want at least 0", dev.MaxDynamicSharedBytes)
	case dev.MaxWorkGroupSize < 0:
		return badField("device.max_work_group_size", "%d: want at least 0", dev.MaxWorkGroupSize)
	case dev.BandwidthGBs < 0:
		return badField("device.bandwidth_gbs", "%g: want a positive bandwidth", dev.BandwidthGBs)
	case dev.Type != "" && dev.Type != "gpu" && dev.Type != "cpu":
		return badField("device.type", "%q: want gpu or cpu", dev.Type)
	}
	if r.dialect != emit.CUDA {
		dev.CUDAArch, dev.MaxDynamicSharedBytes = 0, 0 // CUDA's alone: ignored elsewhere
	}
	if dev.LocalMemBytes == 0 {
		dev.LocalMemBytes = staticSharedDefault
	}
	if dev.MaxWorkGroupSize == 0 {
		dev.MaxWorkGroupSize = 1024
	}
	gpu := r.dialect == emit.CUDA || (r.dialect == emit.OpenCL && dev.Type != "cpu")
	r.target = family.Target{GPU: gpu, MinBlocks: emit.HonoursMinBlocks(r.dialect)}
	r.info = device.Info{Backend: backend, Name: dev.Name, Platform: dev.Driver, ComputeUnits: dev.ComputeUnits, GPU: gpu, CopyGBs: dev.BandwidthGBs}
	if r.dialect == emit.CUDA {
		r.target.CUDAArch, r.target.Units = dev.CUDAArch, dev.ComputeUnits
		r.info.Arch = fmt.Sprintf("sm_%d", dev.CUDAArch)
	}
	return nil
}

// key is the problem's tuning key: the instance's (operator content,
// dtype, α, β …), the device's facts, and what else decides which
// candidates are offered (exact sizes, alignments, limits) and the
// client's namespace, so that a client's choices never meet bespoke's own.
func (r *resolved) key() string {
	d := r.dev
	kind := "cpu"
	if r.target.GPU {
		kind = "gpu"
	}
	return tune.KeyFor(r.in, r.info, "serve", "client="+r.client,
		fmt.Sprintf("n=%d ldb=%d ldc=%d", r.in.N, r.in.LDB, r.in.LDC),
		fmt.Sprintf("align=%d,%d", r.alignB, r.alignC), "vendor="+d.Vendor, "type="+kind,
		fmt.Sprintf("shared=%d,%d wg=%d", d.LocalMemBytes, d.MaxDynamicSharedBytes, d.MaxWorkGroupSize))
}

func parseDType(s string) (kernel.DType, error) {
	switch s {
	case "f64":
		return kernel.F64, nil
	case "f32":
		return kernel.F32, nil
	case "":
		return 0, badField("dtype", "missing (want f64 or f32)")
	}
	return 0, badField("dtype", "unknown dtype %q (want f64 or f32)", s)
}

// buildOperator makes A from dense or COO values, within the limits.
func buildOperator(o *Operator) (*operator.Operator, error) {
	switch {
	case o == nil:
		return nil, badField("operator", "missing")
	case o.M < 1:
		return nil, badField("operator.m", "m = %d: want at least 1", o.M)
	case o.K < 1:
		return nil, badField("operator.k", "k = %d: want at least 1", o.K)
	case o.M > MaxDim || o.K > MaxDim:
		return nil, errorf(CodeLimit, "operator", "operator of %d×%d: at most %d rows and columns", o.M, o.K, MaxDim)
	case int64(o.M)*int64(o.K) > MaxEntries:
		return nil, errorf(CodeLimit, "operator", "operator of %d×%d: at most %d entries (m·k)", o.M, o.K, MaxEntries)
	case (o.Dense == nil) == (o.COO == nil):
		return nil, badField("operator", "give one of dense and coo")
	}
	data := make([]float64, o.M*o.K)
	if o.Dense != nil {
		if len(o.Dense) != len(data) {
			return nil, badField("operator.dense", "%d values for a %d×%d operator", len(o.Dense), o.M, o.K)
		}
		copy(data, o.Dense)
	} else {
		c := o.COO
		if len(c.Rows) != len(c.Vals) || len(c.Cols) != len(c.Vals) {
			return nil, badField("operator.coo", "%d rows, %d cols and %d vals: want as many of each", len(c.Rows), len(c.Cols), len(c.Vals))
		}
		if len(c.Vals) > MaxNNZ {
			return nil, errorf(CodeLimit, "operator.coo", "%d non-zeros: at most %d (nnz)", len(c.Vals), MaxNNZ)
		}
		seen := make(map[int]bool, len(c.Vals))
		for i, v := range c.Vals {
			r, col := c.Rows[i], c.Cols[i]
			switch {
			case r < 0 || r >= o.M:
				return nil, badField(fmt.Sprintf("operator.coo.rows[%d]", i), "row %d outside 0..%d", r, o.M-1)
			case col < 0 || col >= o.K:
				return nil, badField(fmt.Sprintf("operator.coo.cols[%d]", i), "column %d outside 0..%d", col, o.K-1)
			case seen[r*o.K+col]:
				return nil, badField(fmt.Sprintf("operator.coo.rows[%d]", i), "entry (%d, %d) given twice", r, col)
			}
			seen[r*o.K+col] = true
			data[r*o.K+col] = v
		}
	}
	nnz := 0
	for _, v := range data {
		if v != 0 {
			nnz++
		}
	}
	if nnz > MaxNNZ {
		return nil, errorf(CodeLimit, "operator", "%d non-zeros: at most %d (nnz)", nnz, MaxNNZ)
	}
	op, err := operator.New(fmt.Sprintf("%d×%d", o.M, o.K), o.M, o.K, data)
	if err != nil {
		return nil, badField("operator", "%s", strings.TrimPrefix(err.Error(), "operator: "))
	}
	return op, nil
}

// checkName refuses an empty name, or one with control characters, for
// names that go into the store and onto logs.
func checkName(s string) error {
	if s == "" {
		return fmt.Errorf("empty")
	}
	if i := strings.IndexFunc(s, unicode.IsControl); i >= 0 {
		return fmt.Errorf("%q has a control character", s)
	}
	return nil
}
