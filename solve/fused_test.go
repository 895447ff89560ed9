package solve_test

import (
	"math"
	"os"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/device/cuda"
	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/device/opencl"
	"github.com/bespoke-hpc/bespoke/fem"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/tensor"
	"github.com/bespoke-hpc/bespoke/kernel/vector"
	"github.com/bespoke-hpc/bespoke/solve"
)

// fusedCase is a solve run with the fused operator and with the
// transposed scatter.
type fusedCase struct {
	op      fem.Kernel
	n, side int
	dt      kernel.DType
	variant string       // "" the device's first
	shape   vector.Shape // zero: the device's own
}

// sameSolve runs each case with Fused and with Transpose on dev: the
// same iterations within one, solutions within 1e-10 relative in fp64
// (1e-4 in fp32), and the fused variant named as such.
func sameSolve(t *testing.T, dev device.Device, cases []fusedCase) {
	t.Helper()
	for _, c := range cases {
		m, err := fem.NewMesh(c.side, c.side, c.side+1, 0.2)
		if err != nil {
			t.Fatal(err)
		}
		p, err := tensor.New(c.op, c.n, lambda, c.dt)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(c.variant, "/tri") {
			if p, err = p.WithMesh(m, "bent"); err != nil {
				t.Fatal(err)
			}
		}
		tol, diff := 1e-10, 1e-10
		if c.dt == kernel.F32 {
			tol, diff = 1e-5, 1e-4
		}
		var res [2]*solve.Result
		for i, sc := range []string{solve.Transpose, solve.Fused} {
			res[i], err = solve.Run(dev, solve.Options{Problem: p, Variant: c.variant, Mesh: m, Tol: tol, MaxIter: 2000, Scatter: sc, Shape: c.shape})
			if err != nil {
				t.Fatalf("%s %s %+v: %v", p.Label(), sc, c, err)
			}
			if err := res[i].Check(); err != nil || !res[i].Converged {
				t.Fatalf("%s %s %+v: %v (converged %v)", p.Label(), sc, c, err, res[i].Converged)
			}
		}
		tr, fu := res[0], res[1]
		if !strings.HasSuffix(fu.Variant, tensor.FusedSuffix) || fu.Variant != tr.Variant+tensor.FusedSuffix {
			t.Errorf("%s: fused variant %q, transpose's %q", p.Label(), fu.Variant, tr.Variant)
		}
		var d2, x2 float64
		for i, x := range tr.X {
			d2 += (fu.X[i] - x) * (fu.X[i] - x)
			x2 += x * x
		}
		rel := math.Sqrt(d2 / x2)
		if rel > diff || abs(fu.Iterations-tr.Iterations) > 1 {
			t.Errorf("%s %s: fused %d iterations, transpose %d; solutions differ by %.3g relative (at most %.0g)", p.Label(), fu.Variant, fu.Iterations, tr.Iterations, rel, diff)
		}
		t.Logf("%s %s %+v: %d iterations (transpose %d), solutions %.2g apart, error %.3g", p.Label(), fu.Variant, c.shape, fu.Iterations, tr.Iterations, rel, fu.Error)
	}
}

// On the C backend: BP5 and BP3 with the CPU layouts (cpu-vec/e8's last
// lanes past the batch), GPU layouts lowered to loops (blocks of several
// elements, their pᵀq a tree over the block), computed geometry, fp32.
func TestFusedHost(t *testing.T) {
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	cases := []fusedCase{
		{op: fem.BK5, n: 3, side: 2, dt: kernel.F64, variant: "slab/e2", shape: vector.Shape{Threads: 64, PerThread: 3}},
		{op: fem.BK5, n: 4, side: 3, dt: kernel.F64, variant: "cpu-vec/e8"},
		{op: fem.BK5, n: 3, side: 3, dt: kernel.F32},
	}
	if !testing.Short() {
		cases = append(cases,
			fusedCase{op: fem.BK5, n: 2, side: 3, dt: kernel.F64},
			fusedCase{op: fem.BK3, n: 3, side: 2, dt: kernel.F64, variant: "cube/e2"},
			fusedCase{op: fem.BK5, n: 3, side: 2, dt: kernel.F64, variant: "cpu/e1/tri"},
			fusedCase{op: fem.BK3, n: 2, side: 2, dt: kernel.F64})
	}
	sameSolve(t, dev, cases)
}

// On OpenCL (PoCL here): the CPU shape, and a GPU layout and shape with
// barriers and compare-and-swap adds.
func TestFusedOpenCL(t *testing.T) {
	if os.Getenv("POCL_WORK_GROUP_METHOD") == "" {
		os.Setenv("POCL_WORK_GROUP_METHOD", "auto")
	}
	dev, err := opencl.Open(os.Getenv("BESPOKE_OPENCL_DEVICE"))
	if err != nil {
		testenv.Unavailable(t, "opencl", err)
	}
	defer dev.Close()
	gpu := vector.Shape{Threads: 256, PerThread: 4}
	cases := []fusedCase{
		{op: fem.BK3, n: 2, side: 2, dt: kernel.F64, variant: "cube/e1", shape: gpu},
	}
	if !testing.Short() {
		// fp32 (TestFusedHost has it on C): PoCL's builds are slow.
		cases = append(cases,
			fusedCase{op: fem.BK5, n: 2, side: 3, dt: kernel.F64},
			fusedCase{op: fem.BK5, n: 3, side: 2, dt: kernel.F64, variant: "slab/e2", shape: gpu},
			fusedCase{op: fem.BK5, n: 2, side: 3, dt: kernel.F32, variant: "slab/e1", shape: gpu})
	}
	sameSolve(t, dev, cases)
}

// On CUDA: the layouts of every BK5 family the tuner picks from on a GPU,
// BP3's cube, computed geometry, fp32 (hardware atomics and block sums).
func TestFusedCUDA(t *testing.T) {
	dev, err := cuda.Open(0)
	if err != nil {
		testenv.Unavailable(t, "cuda", err)
	}
	defer dev.Close()
	sameSolve(t, dev, []fusedCase{
		{op: fem.BK5, n: 3, side: 3, dt: kernel.F64},
		{op: fem.BK5, n: 6, side: 2, dt: kernel.F64, variant: "pair/e1"},
		{op: fem.BK5, n: 7, side: 2, dt: kernel.F64, variant: "slab2/e2"},
		{op: fem.BK5, n: 4, side: 2, dt: kernel.F64, variant: "slab-lit/e4/tri"},
		{op: fem.BK3, n: 3, side: 2, dt: kernel.F64, variant: "cube-lit/e4"},
		{op: fem.BK5, n: 3, side: 3, dt: kernel.F32, variant: "slab/e2"},
	})
}
