package baseline

import (
	"fmt"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/device/cuda"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/kernel/sparse"
)

// The vendor libraries as rivals of the GEMM family's kernels: each Setup
// takes a sparse.Instance (and applies to no other family), uploads A once
// and runs the library on a set's B and C.

// GEMMBaseline is cuBLAS GEMM with A dense.
type GEMMBaseline struct {
	Lib  *CUBLAS
	gemm *GEMM
}

// Name is "cublas".
func (g *GEMMBaseline) Name() string { return "cublas" }

// Setup uploads A for the instance.
func (g *GEMMBaseline) Setup(in family.Instance, _ *family.Workload) (func(map[string]device.Buffer) error, bool, error) {
	si, ok := in.(*sparse.Instance)
	if !ok {
		return nil, false, nil
	}
	if g.gemm != nil {
		g.gemm.Close()
		g.gemm = nil
	}
	op := si.Op
	gemm, err := g.Lib.NewGEMM(si.Problem.DType.Bytes(), op.Data, op.Rows, op.Cols)
	if err != nil {
		return nil, true, err
	}
	g.gemm = gemm
	return func(a map[string]device.Buffer) error {
		return gemm.Run(si.N, a["b"], a["c"], si.LDB, si.LDC, si.Alpha, si.Beta)
	}, true, nil
}

// Close frees the last operator's A.
func (g *GEMMBaseline) Close() {
	if g.gemm != nil {
		g.gemm.Close()
		g.gemm = nil
	}
}

// BLASBaseline is the CPU BLAS's GEMM (OpenBLAS) with A dense, on the C
// backend's host buffers.
type BLASBaseline struct {
	Lib  *CPUBLAS
	gemm *HostGEMM
}

// Name is the library's: "openblas", or "blas" for another CBLAS.
func (g *BLASBaseline) Name() string { return g.Lib.Name() }

// Describe is the library's configuration in a line.
func (g *BLASBaseline) Describe() string { return g.Lib.Describe() }

// Setup keeps A for the instance.
func (g *BLASBaseline) Setup(in family.Instance, _ *family.Workload) (func(map[string]device.Buffer) error, bool, error) {
	si, ok := in.(*sparse.Instance)
	if !ok {
		return nil, false, nil
	}
	g.Close()
	op := si.Op
	gemm, err := g.Lib.NewGEMM(si.Problem.DType.Bytes(), op.Data, op.Rows, op.Cols)
	if err != nil {
		return nil, true, err
	}
	g.gemm = gemm
	return func(a map[string]device.Buffer) error {
		return gemm.Run(si.N, a["b"], a["c"], si.LDB, si.LDC, si.Alpha, si.Beta)
	}, true, nil
}

// Close releases the last operator's A.
func (g *BLASBaseline) Close() {
	if g.gemm != nil {
		g.gemm.Close()
		g.gemm = nil
	}
}

// SpMMBaseline is cuSPARSE SpMM with A in CSR, one algorithm.
type SpMMBaseline struct {
	Lib  *CUSPARSE
	Alg  SpMMAlg
	spmm *SpMM
}

// Name is "cusparse/ALG".
func (s *SpMMBaseline) Name() string { return "cusparse/" + s.Alg.String() }

// Setup uploads A for the instance.
func (s *SpMMBaseline) Setup(in family.Instance, _ *family.Workload) (func(map[string]device.Buffer) error, bool, error) {
	si, ok := in.(*sparse.Instance)
	if !ok {
		return nil, false, nil
	}
	s.Close()
	op := si.Op
	spmm, err := s.Lib.NewSpMM(si.Problem.DType.Bytes(), op.Data, op.Rows, op.Cols)
	if err != nil {
		return nil, true, err
	}
	s.spmm = spmm
	return func(a map[string]device.Buffer) error {
		return spmm.Run(si.N, a["b"], a["c"], si.LDB, si.LDC, si.Alpha, si.Beta, s.Alg)
	}, true, nil
}

// Close frees the last operator's A.
func (s *SpMMBaseline) Close() {
	if s.spmm != nil {
		s.spmm.Close()
		s.spmm = nil
	}
}

// Rival is a library run as a baseline (the shape bench.Baseline asks
// for).
type Rival interface {
	Name() string
	Setup(in family.Instance, w *family.Workload) (run func(arrays map[string]device.Buffer) error, applies bool, err error)
}

// ForGEMM opens the baselines of the GEMM family on a device: cuBLAS and
// cuSPARSE on a CUDA device, the CPU BLAS (OpenBLAS, with as many threads
// as the device's OpenMP kernels, Info().ComputeUnits) on the C backend;
// on any other device there are none. A library that does not open is
// reported through warn, not fatal: the bench runs without it. The
// returned function closes them.
func ForGEMM(dev device.Device, warn func(string)) (rivals []Rival, closeAll func()) {
	var closers []func()
	closeAll = func() {
		for _, c := range closers {
			c()
		}
	}
	if info := dev.Info(); info.Backend == "c" {
		blas, err := OpenCPUBLAS(info.ComputeUnits)
		if err != nil {
			warn(fmt.Sprintf("CPU BLAS baseline unavailable: %v", err))
			return nil, closeAll
		}
		g := &BLASBaseline{Lib: blas}
		return []Rival{g}, g.Close
	}
	cd, ok := dev.(*cuda.Device)
	if !ok {
		return nil, closeAll
	}
	if blas, err := OpenCUBLAS(cd); err != nil {
		warn(fmt.Sprintf("cuBLAS baseline unavailable: %v", err))
	} else {
		g := &GEMMBaseline{Lib: blas}
		rivals = append(rivals, g)
		closers = append(closers, g.Close, func() { blas.Close() })
	}
	if sp, err := OpenCUSPARSE(cd); err != nil {
		warn(fmt.Sprintf("cuSPARSE baseline unavailable: %v", err))
	} else {
		for _, alg := range SpMMAlgs {
			s := &SpMMBaseline{Lib: sp, Alg: alg}
			rivals = append(rivals, s)
			closers = append(closers, s.Close)
		}
		closers = append(closers, func() { sp.Close() })
	}
	return rivals, closeAll
}
