package solve

import (
	"fmt"
	"math"
	"time"

	"github.com/bespoke-hpc/bespoke/build"
	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/fem"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/kernel/vector"
)

// BSR is a block-sparse matrix already on the device, in pum.BSR's
// layout: N block rows of B×B blocks; block k of block row i is block
// column Col[k], RowPtr[i] ≤ k < RowPtr[i+1], its entry (a,b) at
// Val[(k·B + a)·B + b]. RowPtr and Col hold int32, Val reals of the
// solve's precision. PCG only reads them.
type BSR struct {
	N, B        int
	Blocks      int64 // stored blocks (RowPtr[N])
	RowPtr, Col device.Buffer
	Val         device.Buffer
}

// PCGOptions is one preconditioned solve.
type PCGOptions struct {
	DType kernel.DType // the matrix's and the vectors' precision
	// Tol is the relative residual ‖r‖/‖f‖ to reach; MaxIter bounds the
	// matrix applications.
	Tol     float64
	MaxIter int
	// Shape spreads the vector kernels over threads; the zero Shape
	// takes vector.For the device.
	Shape vector.Shape
}

// PCGResult is a finished preconditioned solve.
type PCGResult struct {
	Iterations int       // matrix applications
	Residual   float64   // ‖r‖/‖f‖ by the recurrence, from the device's rᵀr
	Converged  bool      // Residual ≤ Tol
	X          []float64 // the solution, widened to float64
	// Setup is the device time of the preconditioner's set-up (the
	// Cholesky factors) and of the first residual and direction; Time
	// that of the iterations (the per-iteration reads of the scalars
	// included). Builds and transfers are in neither.
	Setup, Time time.Duration
}

// scalar slots of PCG: rᵀz alternates between two slots so that β =
// new/old reads both; rᵀr is only for the convergence test.
const (
	pslotRZ0, pslotPQ, pslotRZ1, pslotRR = 0, 1, 2, 3
	pcgScalars                           = 4
)

// PCG solves A x = f on dev by conjugate gradients preconditioned with
// block Jacobi (the inverses of A's diagonal blocks, by their Cholesky
// factors): pum.Solve's recurrence, with A and f left where they are
// and x, r, z, p, q on the device too; the host reads the scalars once
// per iteration (to test convergence) and x at the end. A must be
// symmetric with positive definite diagonal blocks (an error otherwise).
func PCG(dev device.Device, a BSR, f device.Buffer, o PCGOptions) (_ *PCGResult, err error) {
	if err := fem.CheckCG(o.Tol, o.MaxIter); err != nil {
		return nil, err
	}
	dt := o.DType
	if dt == kernel.F64 && !dev.Info().FP64 {
		return nil, fmt.Errorf("solve: %s has no fp64", dev.Info().Name)
	}
	if a.N < 1 || a.B < 1 || a.Blocks < int64(a.N) {
		return nil, fmt.Errorf("solve: BSR matrix of %d block rows, %d blocks of %d×%d: want a diagonal block in every row at least", a.N, a.Blocks, a.B, a.B)
	}
	if a.B > vector.MaxBlock {
		return nil, fmt.Errorf("solve: %d×%d blocks exceed vector.MaxBlock = %d (one thread factors a diagonal block)", a.B, a.B, vector.MaxBlock)
	}
	n := a.N * a.B
	entries := a.Blocks * int64(a.B) * int64(a.B)
	// The vector kernels index in 32 bits on a GPU.
	if entries > math.MaxInt32 {
		return nil, fmt.Errorf("solve: BSR matrix of %d entries: the kernels index up to %d", entries, math.MaxInt32)
	}
	rb := int64(dt.Bytes())
	for _, c := range []struct {
		what string
		b    device.Buffer
		want int64
	}{{"row pointers", a.RowPtr, 4 * int64(a.N+1)}, {"block columns", a.Col, 4 * a.Blocks}, {"values", a.Val, rb * entries}, {"right-hand side", f, rb * int64(n)}} {
		if c.b == nil || c.b.Size() < c.want {
			size := int64(0)
			if c.b != nil {
				size = c.b.Size()
			}
			return nil, fmt.Errorf("solve: BSR %s buffer holds %d bytes, want %d", c.what, size, c.want)
		}
	}
	shape := o.Shape
	if shape == (vector.Shape{}) {
		shape = vector.For(family.Target{GPU: dev.Info().GPU})
	}
	np := max(shape.Blocks(n), shape.Blocks(a.N))
	if need := rb * (5*int64(n) + int64(a.N*a.B*a.B) + int64(np)); dev.Info().MemoryBytes > 0 && need > dev.Info().MemoryBytes {
		return nil, fmt.Errorf("solve: PCG's vectors need %d MB of device memory beside the matrix, %s has %d MB", need>>20, dev.Info().Name, dev.Info().MemoryBytes>>20)
	}

	// Kernels, in one program, in a fixed order (the build cache's key).
	s := &solver{dt: dt}
	defer s.close()
	vk := map[string]*kernel.Kernel{}
	var ks []*kernel.Kernel
	for _, b := range []struct {
		name  string
		build func() (*kernel.Kernel, error)
	}{
		{"spmv", func() (*kernel.Kernel, error) { return vector.BSRMulDot(dt, shape, a.B) }},
		{"cholesky", func() (*kernel.Kernel, error) { return vector.BlockCholesky(dt, shape, a.B) }},
		{"jacobi", func() (*kernel.Kernel, error) { return vector.BlockJacobiDot(dt, shape, a.B) }},
		{"update", func() (*kernel.Kernel, error) { return vector.Update(dt, shape) }},
		{"direction", func() (*kernel.Kernel, error) { return vector.Direction(dt, shape) }},
		{"sum", func() (*kernel.Kernel, error) { return vector.Sum(dt, shape) }},
		{"dot", func() (*kernel.Kernel, error) { return vector.Dot(dt, shape) }},
		{"zero", func() (*kernel.Kernel, error) { return vector.Zero(dt, shape) }},
		{"copy", func() (*kernel.Kernel, error) { return vector.Copy(dt, shape) }},
	} {
		k, err := b.build()
		if err != nil {
			return nil, err
		}
		vk[b.name] = k
		ks = append(ks, k)
	}
	if s.prog, err = build.NewProgram(dev, ks...); err != nil {
		return nil, err
	}

	// Buffers: the caller's and PCG's own.
	for name, b := range map[string]device.Buffer{"rowptr": a.RowPtr, "col": a.Col, "val": a.Val, "f": f} {
		if err := s.prog.Use(name, b); err != nil {
			return nil, err
		}
	}
	for name, cnt := range map[string]int{"x": n, "r": n, "z": n, "p": n, "q": n, "l": a.N * a.B * a.B, "partial": np, "sc": pcgScalars} {
		if _, err := s.prog.Alloc(name, int64(cnt)*rb); err != nil {
			return nil, err
		}
	}
	if err := s.ints("fail", []int32{0}); err != nil {
		return nil, err
	}
	s.sc = s.prog.Buffer("sc")

	// Steps: buffers by parameter name, or by the renames.
	s.prog.Set(vector.Nodes, int64(n))
	s.prog.Set(vector.Rows, int64(n))
	s.prog.Set(vector.BlockRows, int64(a.N))
	sumOver := func(partials, slot int) map[string]int64 {
		return map[string]int64{vector.Partials: int64(partials), vector.Slot: int64(slot)}
	}
	var zeroX, copyR, chol, dotRR, sumRR0, jacobi, sumRZ0, copyP, spmv, sumPQ, sumRR *build.Step
	var update, sumRZ, direction [2]*build.Step // by the slot rᵀz is in (0: slot 0, 1: slot 2)
	rz := [2]int{pslotRZ0, pslotRZ1}
	type job struct {
		dst    **build.Step
		k      string
		values map[string]int64
		rename map[string]string
	}
	jobs := []job{
		{&zeroX, "zero", nil, map[string]string{"l": "x"}},
		{&copyR, "copy", nil, map[string]string{"src": "f", "dst": "r"}},
		{&chol, "cholesky", nil, nil},
		{&dotRR, "dot", nil, map[string]string{"a": "r", "b": "r"}},
		{&sumRR0, "sum", sumOver(shape.Blocks(n), pslotRR), nil},
		{&jacobi, "jacobi", nil, nil},
		{&sumRZ0, "sum", sumOver(shape.Blocks(a.N), pslotRZ0), nil},
		{&copyP, "copy", nil, map[string]string{"src": "z", "dst": "p"}},
		{&spmv, "spmv", nil, nil},
		{&sumPQ, "sum", sumOver(shape.Blocks(n), pslotPQ), nil},
		{&sumRR, "sum", sumOver(shape.Blocks(n), pslotRR), nil},
	}
	for c := range 2 {
		jobs = append(jobs,
			job{&update[c], "update", map[string]int64{vector.Num: int64(rz[c]), vector.Den: pslotPQ}, nil},
			job{&sumRZ[c], "sum", sumOver(shape.Blocks(a.N), rz[1-c]), nil},
			// p = z + β·p, β = new rᵀz / old.
			job{&direction[c], "direction", map[string]int64{vector.Num: int64(rz[1-c]), vector.Den: int64(rz[c])}, map[string]string{"r": "z"}})
	}
	for _, j := range jobs {
		if *j.dst, err = s.prog.Bind(vk[j.k].Name, build.With{Values: j.values, Buffers: j.rename}); err != nil {
			return nil, err
		}
	}
	// Set-up: x = 0, r = f, the factors, rᵀr, z = M⁻¹r and rᵀz, p = z.
	res := &PCGResult{}
	if res.Setup, err = s.prog.Elapsed(func() error {
		return s.prog.Run(zeroX, copyR, chol, dotRR, sumRR0, jacobi, sumRZ0, copyP)
	}); err != nil {
		return nil, err
	}
	raw := make([]byte, 4)
	if err := s.prog.Buffer("fail").Download(raw); err != nil {
		return nil, err
	}
	if bad := kernel.DecodeInts(4, raw)[0]; bad != 0 {
		return nil, fmt.Errorf("solve: block Jacobi: %d of the %d diagonal %d×%d blocks are missing or not positive definite", bad, a.N, a.B, a.B)
	}
	sc, err := s.readScalars(pcgScalars)
	if err != nil {
		return nil, err
	}
	rr := sc[pslotRR]
	bnorm := math.Sqrt(rr)
	cur := 0
	iterate := func() error {
		for res.Iterations < o.MaxIter && bnorm > 0 && math.Sqrt(rr) > o.Tol*bnorm {
			if err := s.prog.Run(spmv, sumPQ, update[cur], sumRR, jacobi, sumRZ[cur], direction[cur]); err != nil {
				return err
			}
			res.Iterations++
			cur = 1 - cur
			sc, err := s.readScalars(pcgScalars)
			if err != nil {
				return err
			}
			rr = sc[pslotRR]
			if err := checkScalars("PCG", res.Iterations, sc[pslotPQ], rr); err != nil {
				return err
			}
		}
		return nil
	}
	if res.Time, err = s.prog.Elapsed(iterate); err != nil {
		return nil, err
	}
	if bnorm > 0 {
		res.Residual = math.Sqrt(rr) / bnorm
	}
	res.Converged = res.Residual <= o.Tol
	if res.X, err = s.read(s.prog.Buffer("x"), n); err != nil {
		return nil, err
	}
	return res, nil
}
