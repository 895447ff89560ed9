package baseline

import (
	"fmt"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/device/cuda"
	"github.com/bespoke-hpc/bespoke/kernel"
)

// gemmRun is a GEMM with A uploaded: cuBLAS's or the CPU BLAS's.
type gemmRun interface {
	Run(n int, B, C device.Buffer, ldb, ldc int, alpha, beta float64) error
	Close() error
}

// GEMMPeak is the compute side of the roofline: a square GEMM large
// enough that the library runs at its arithmetic peak (the tensor cores
// where it uses them), timed by the bench like any kernel (bench.ComputeProbe).
type GEMMPeak struct {
	lib     string
	size    int
	newGEMM func(dtype int, A []float64, m, k int) (gemmRun, error)
	close   func()
	lastC   device.Buffer // the product of the last Setup, for checking it
}

// Name says which library and size, e.g. "cublas GEMM 4096³".
func (p *GEMMPeak) Name() string { return fmt.Sprintf("%s GEMM %d³", p.lib, p.size) }

// Setup uploads A, B and C of the size in dt; run computes C = A·B.
func (p *GEMMPeak) Setup(dev device.Device, dt kernel.DType) (run func() error, flops int64, release func(), err error) {
	n := p.size
	// Values of one magnitude: no denormals or overflow to slow a path.
	vals := make([]float64, n*n)
	for i := range vals {
		vals[i] = 0.5 + float64(i%97)/97
	}
	g, err := p.newGEMM(dt.Bytes(), vals, n, n)
	if err != nil {
		return nil, 0, nil, err
	}
	var bufs []device.Buffer
	release = func() {
		for _, b := range bufs {
			b.Free()
		}
		g.Close()
	}
	for range 2 {
		b, err := dev.Alloc(int64(n * n * dt.Bytes()))
		if err != nil {
			release()
			return nil, 0, nil, err
		}
		bufs = append(bufs, b)
		if err := b.Upload(words(vals, dt.Bytes())); err != nil {
			release()
			return nil, 0, nil, err
		}
	}
	p.lastC = bufs[1]
	run = func() error { return g.Run(n, bufs[0], bufs[1], n, n, 1, 0) }
	return run, 2 * int64(n) * int64(n) * int64(n), release, nil
}

// Close releases the library.
func (p *GEMMPeak) Close() {
	if p.close != nil {
		p.close()
	}
}

// The GEMM sizes of the compute roof: on a GPU enough blocks to fill every
// multiprocessor many times over; on a CPU a product that takes tens of
// milliseconds on a few cores.
const (
	peakSizeGPU = 4096
	peakSizeCPU = 1024
)

// ForCompute is the compute probe of dev's vendor BLAS: cuBLAS on CUDA,
// the CPU BLAS on the C backend; nil where there is none (OpenCL).
func ForCompute(dev device.Device) (*GEMMPeak, error) {
	if info := dev.Info(); info.Backend == "c" {
		blas, err := OpenCPUBLAS(info.ComputeUnits)
		if err != nil {
			return nil, err
		}
		return &GEMMPeak{lib: blas.Name(), size: peakSizeCPU, newGEMM: func(dtype int, A []float64, m, k int) (gemmRun, error) {
			return blas.NewGEMM(dtype, A, m, k)
		}}, nil
	}
	cd, ok := dev.(*cuda.Device)
	if !ok {
		return nil, nil
	}
	blas, err := OpenCUBLAS(cd)
	if err != nil {
		return nil, err
	}
	return &GEMMPeak{lib: "cublas", size: peakSizeGPU, newGEMM: func(dtype int, A []float64, m, k int) (gemmRun, error) {
		return blas.NewGEMM(dtype, A, m, k)
	}, close: func() { blas.Close() }}, nil
}
