package cli

import (
	"fmt"

	"github.com/bespoke-hpc/bespoke/baseline"
	"github.com/bespoke-hpc/bespoke/bench"
	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/device/cuda"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/operator"
)

// vendorBaselines opens cuBLAS and cuSPARSE for a CUDA device. A library
// that does not open is reported, not fatal: the bench runs without it.
func vendorBaselines(dev device.Device, warn func(string)) (bls []bench.Baseline, closers []func() error) {
	cd, ok := dev.(*cuda.Device)
	if !ok {
		return nil, nil
	}
	if blas, err := baseline.OpenCUBLAS(cd); err != nil {
		warn(fmt.Sprintf("cuBLAS baseline unavailable: %v", err))
	} else {
		bls = append(bls, &gemmBaseline{lib: blas})
		closers = append(closers, blas.Close)
	}
	if sp, err := baseline.OpenCUSPARSE(cd); err != nil {
		warn(fmt.Sprintf("cuSPARSE baseline unavailable: %v", err))
	} else {
		for _, alg := range baseline.SpMMAlgs {
			bls = append(bls, &spmmBaseline{lib: sp, alg: alg})
		}
		closers = append(closers, sp.Close)
	}
	return bls, closers
}

// gemmBaseline is dense cuBLAS GEMM with A uploaded once per operator.
type gemmBaseline struct {
	lib  *baseline.CUBLAS
	gemm *baseline.GEMM
}

func (g *gemmBaseline) Name() string { return "cublas" }

func (g *gemmBaseline) Setup(op *operator.Operator, dt kernel.DType, alpha, beta float64, n, ld int) (func(b, c device.Buffer) error, error) {
	if g.gemm != nil {
		g.gemm.Close()
		g.gemm = nil
	}
	gemm, err := g.lib.NewGEMM(dt.Bytes(), op.Data, op.Rows, op.Cols)
	if err != nil {
		return nil, err
	}
	g.gemm = gemm
	return func(b, c device.Buffer) error { return gemm.Run(n, b, c, ld, ld, alpha, beta) }, nil
}

// spmmBaseline is cuSPARSE SpMM with A in CSR, one algorithm.
type spmmBaseline struct {
	lib  *baseline.CUSPARSE
	alg  baseline.SpMMAlg
	spmm *baseline.SpMM
}

func (s *spmmBaseline) Name() string { return "cusparse/" + s.alg.String() }

func (s *spmmBaseline) Setup(op *operator.Operator, dt kernel.DType, alpha, beta float64, n, ld int) (func(b, c device.Buffer) error, error) {
	if s.spmm != nil {
		s.spmm.Close()
		s.spmm = nil
	}
	spmm, err := s.lib.NewSpMM(dt.Bytes(), op.Data, op.Rows, op.Cols)
	if err != nil {
		return nil, err
	}
	s.spmm = spmm
	return func(b, c device.Buffer) error { return spmm.Run(n, b, c, ld, ld, alpha, beta, s.alg) }, nil
}
