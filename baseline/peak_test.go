package baseline

import (
	"math"
	"testing"

	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/kernel"
)

// The compute probe on the C backend: the CPU BLAS's GEMM, which must
// compute what it is timed at (C = A·B of its size), at 2n³ operations.
func TestComputeProbeCPU(t *testing.T) {
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	p, err := ForCompute(dev)
	if err != nil {
		t.Skipf("no CPU BLAS: %v", err) // the BLAS tests say so where it is required
	}
	defer p.Close()
	p.size = 48 // small, to check its result in Go
	for _, dt := range []kernel.DType{kernel.F64, kernel.F32} {
		run, flops, release, err := p.Setup(dev, dt)
		if err != nil {
			t.Fatal(err)
		}
		if err := run(); err != nil {
			t.Fatal(err)
		}
		n := p.size
		if flops != 2*int64(n*n*n) {
			t.Errorf("%s: %d operations, want 2n³ = %d", dt, flops, 2*n*n*n)
		}
		host, err := hostBytes(p.lastC)
		if err != nil {
			t.Fatal(err)
		}
		got := dt.Decode(host)
		v := func(i int) float64 { return dt.Rounded(0.5 + float64(i%97)/97) }
		worst := 0.0
		for i := range n {
			for j := range n {
				want := 0.0
				for k := range n {
					want += v(i*n+k) * v(k*n+j)
				}
				worst = math.Max(worst, math.Abs(got[i*n+j]-want)/want)
			}
		}
		if tol := map[kernel.DType]float64{kernel.F64: 1e-13, kernel.F32: 1e-5}[dt]; worst > tol {
			t.Errorf("%s: C = A·B off by %.2g relative", dt, worst)
		}
		release()
	}
}
