package solve_test

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/device/opencl"
	"github.com/bespoke-hpc/bespoke/fem"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/tensor"
	"github.com/bespoke-hpc/bespoke/kernel/vector"
	"github.com/bespoke-hpc/bespoke/solve"
)

const lambda = 1.0

// reference is fem's float64 solve of the same problem.
func reference(t *testing.T, op fem.Kernel, n int, m *fem.Mesh, tol float64) (*fem.Assembly, *fem.CGResult) {
	t.Helper()
	b, err := fem.NewBasis(op, n)
	if err != nil {
		t.Fatal(err)
	}
	a, err := fem.NewAssembly(b, m, lambda)
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Solve(tol, 2000)
	if err != nil {
		t.Fatal(err)
	}
	return a, res
}

type devCase struct {
	op      fem.Kernel // BK5 when empty (BP5); BK3 is BP3
	n, side int
	shape   vector.Shape // zero: the device's own
	scatter string
	variant string
	every   int // Options.CheckEvery
	// cartesian: the box unperturbed, the problem on it (its affine
	// variants allowed).
	cartesian bool
}

// agree runs each case on dev in fp64 and checks it against fem.CG: the
// same iterations within one, the solution to 1e-10 relative, the same
// discretisation error.
func agree(t *testing.T, dev device.Device, cases []devCase) {
	t.Helper()
	const tol = 1e-10
	for _, c := range cases {
		perturb := 0.2
		if c.cartesian {
			perturb = 0
		}
		m, err := fem.NewMesh(c.side, c.side, c.side+1, perturb)
		if err != nil {
			t.Fatal(err)
		}
		if c.op == "" {
			c.op = fem.BK5
		}
		a, ref := reference(t, c.op, c.n, m, tol)
		p, err := tensor.New(c.op, c.n, lambda, kernel.F64)
		if err != nil {
			t.Fatal(err)
		}
		if c.cartesian {
			if p, err = p.WithMesh(m, "box"); err != nil {
				t.Fatal(err)
			}
		}
		got, err := solve.Run(dev, solve.Options{Problem: p, Variant: c.variant, Mesh: m, Tol: tol, MaxIter: 2000, Scatter: c.scatter, Shape: c.shape, CheckEvery: c.every})
		if err != nil {
			t.Fatalf("N=%d %+v: %v", c.n, c, err)
		}
		label := func() string { return strings.TrimSpace(strings.Join([]string{got.Variant, c.scatter}, " ")) }
		// Read every k iterations, a solve stops at the first read after
		// convergence.
		slack := max(c.every, 2) - 1
		if !got.Converged || got.Iterations < ref.Iterations-1 || got.Iterations > ref.Iterations+slack {
			t.Errorf("N=%d %s %+v: %d iterations (converged %v, residual %.3g), reference %d", c.n, label(), c.shape, got.Iterations, got.Converged, got.Residual, ref.Iterations)
		}
		var d2, x2 float64
		for i, x := range ref.X {
			d2 += (got.X[i] - x) * (got.X[i] - x)
			x2 += x * x
		}
		if rel := math.Sqrt(d2 / x2); rel > 1e-10 {
			t.Errorf("N=%d %s %+v: solution differs from the reference by %.3g relative", c.n, label(), c.shape, rel)
		}
		refErr, _ := a.NodalError(ref.X)
		if math.Abs(got.Error-refErr) > 1e-6*refErr {
			t.Errorf("N=%d: error %.6g, reference %.6g", c.n, got.Error, refErr)
		}
		if want := (c.side*c.n + 1) * (c.side*c.n + 1) * ((c.side+1)*c.n + 1); got.DOFs != want || got.Unknowns >= want || got.Rate <= 0 {
			t.Errorf("N=%d: %d DOFs (want %d), %d unknowns, rate %g", c.n, got.DOFs, want, got.Unknowns, got.Rate)
		}
		t.Logf("N=%d %dx%dx%d %s %+v: %d iterations (reference %d), residual %.2g, error %.3g, %.3g MDOF/s",
			c.n, c.side, c.side, c.side+1, label(), c.shape, got.Iterations, ref.Iterations, got.Residual, got.Error, got.Rate/1e6)
	}
}

func abs(i int) int { return max(i, -i) }

// On the C backend: N = 1…4, both scatters, the CPU shape and a GPU one
// (barriers lowered to loops), mesh sides whose nodes fill no reduction
// block exactly.
func TestHost(t *testing.T) {
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	agree(t, dev, []devCase{
		{n: 1, side: 3},
		{n: 2, side: 3, scatter: solve.Atomic},
		{n: 3, side: 2, shape: vector.Shape{Threads: 64, PerThread: 3}},
		{n: 4, side: 2, variant: "slab/e2"},
		{op: fem.BK3, n: 2, side: 2, every: 4},
		{op: fem.BK3, n: 3, side: 2, variant: "cube/e2", scatter: solve.Atomic},
	})
}

// The solves with the geometry computed in the operator's kernel: from
// the vertices on the perturbed box, from one map per element on the
// Cartesian one, on C and, where there is one, OpenCL.
func TestGeometry(t *testing.T) {
	cases := []devCase{
		{n: 2, side: 2, variant: "cpu/e1/tri"},
		{n: 3, side: 2, variant: "slab-lit/e1/tri"},
		{n: 3, side: 2, variant: "cpu/e1/aff", cartesian: true},
		{n: 2, side: 2, variant: "slab/e2/aff", cartesian: true},
		{op: fem.BK3, n: 2, side: 2, variant: "cpu/e1/tri"},
		{op: fem.BK3, n: 2, side: 2, variant: "cube-lit/e1/aff", cartesian: true},
	}
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	agree(t, dev, cases)
	if os.Getenv("POCL_WORK_GROUP_METHOD") == "" {
		os.Setenv("POCL_WORK_GROUP_METHOD", "auto")
	}
	cl, err := opencl.Open(os.Getenv("BESPOKE_OPENCL_DEVICE"))
	if err != nil {
		t.Logf("no OpenCL: %v", err)
		return
	}
	defer cl.Close()
	agree(t, cl, []devCase{cases[0], cases[2]})
}

// A variant that computes an affine geometry is refused on a mesh that
// is not affine, with an error rather than a wrong solve.
func TestGeometryRefused(t *testing.T) {
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	box, _ := fem.NewMesh(2, 2, 2, 0)
	bent, _ := fem.NewMesh(2, 2, 3, 0.2)
	p, _ := tensor.New(fem.BK5, 2, lambda, kernel.F64)
	onBox, err := p.WithMesh(box, "box")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		p       *tensor.Problem
		variant string
		want    string
	}{
		{onBox, "cpu/e1/aff", "solve's mesh is not one"},
		{p, "cpu/e1/aff", "is not affine"},
	} {
		_, err := solve.Run(dev, solve.Options{Problem: tc.p, Variant: tc.variant, Mesh: bent, Tol: 1e-8, MaxIter: 10})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.variant, err, tc.want)
		}
	}
}

// On OpenCL (PoCL here): the CPU shape, the GPU shape with its barriers,
// atomic scatter (compare-and-swap on doubles).
func TestOpenCL(t *testing.T) {
	if os.Getenv("POCL_WORK_GROUP_METHOD") == "" {
		os.Setenv("POCL_WORK_GROUP_METHOD", "auto") // as the conformance suite: faster PoCL builds
	}
	dev, err := opencl.Open(os.Getenv("BESPOKE_OPENCL_DEVICE"))
	if err != nil {
		testenv.Unavailable(t, "opencl", err)
	}
	defer dev.Close()
	agree(t, dev, []devCase{
		{n: 1, side: 3},
		{n: 2, side: 2, shape: vector.Shape{Threads: 256, PerThread: 4}, scatter: solve.Atomic},
		{n: 3, side: 2, shape: vector.Shape{Threads: 256, PerThread: 4}},
		{n: 4, side: 2},
	})
	checkF32(t, dev, solve.Options{Shape: vector.Shape{Threads: 256, PerThread: 4}, Scatter: solve.Atomic})
}

// fp32 converges to a looser tolerance, and its error stays that of the
// discretisation.
func TestHostF32(t *testing.T) {
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	checkF32(t, dev, solve.Options{})
}

func checkF32(t *testing.T, dev device.Device, o solve.Options) {
	t.Helper()
	m, _ := fem.NewMesh(3, 3, 3, 0.2)
	a, ref := reference(t, fem.BK5, 3, m, 1e-5)
	o.Problem, _ = tensor.New(fem.BK5, 3, lambda, kernel.F32)
	o.Mesh, o.Tol, o.MaxIter = m, 1e-5, 500
	got, err := solve.Run(dev, o)
	if err != nil {
		t.Fatal(err)
	}
	refErr, _ := a.NodalError(ref.X)
	if !got.Converged || abs(got.Iterations-ref.Iterations) > 3 || got.Error > 1.2*refErr+1e-5 {
		t.Errorf("fp32 %s %+v: %d iterations (reference %d), converged %v, error %.3g (reference %.3g)", o.Scatter, o.Shape, got.Iterations, ref.Iterations, got.Converged, got.Error, refErr)
	}
	t.Logf("fp32 N=3 3³ %s %+v: %d iterations (reference %d), residual %.2g, error %.3g (reference %.3g)", o.Scatter, o.Shape, got.Iterations, ref.Iterations, got.Residual, got.Error, refErr)
}

func TestErrors(t *testing.T) {
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	m, _ := fem.NewMesh(2, 2, 2, 0)
	p, _ := tensor.New(fem.BK5, 2, lambda, kernel.F64)
	neg, _ := tensor.New(fem.BK5, 2, -1, kernel.F64)
	for _, tc := range []struct {
		name string
		o    solve.Options
		msg  string
	}{
		{"no problem", solve.Options{Mesh: m, Tol: 1e-8, MaxIter: 10}, "need a problem"},
		{"no mesh", solve.Options{Problem: p, Tol: 1e-8, MaxIter: 10}, "need a problem and a mesh"},
		{"tol", solve.Options{Problem: p, Mesh: m, Tol: 2, MaxIter: 10}, "0 < tol < 1"},
		{"iterations", solve.Options{Problem: p, Mesh: m, Tol: 1e-8, MaxIter: 1 << 20}, "1..100000"},
		{"scatter", solve.Options{Problem: p, Mesh: m, Tol: 1e-8, MaxIter: 10, Scatter: "gossip"}, "want transpose, atomic or fused"},
		{"variant", solve.Options{Problem: p, Mesh: m, Tol: 1e-8, MaxIter: 10, Variant: "tile/e1"}, "unknown variant"},
		{"shape", solve.Options{Problem: p, Mesh: m, Tol: 1e-8, MaxIter: 10, Shape: vector.Shape{Threads: 3, PerThread: 1}}, "power of two"},
		{"lambda", solve.Options{Problem: neg, Mesh: m, Tol: 1e-8, MaxIter: 10}, "λ ≥ 0"},
	} {
		if _, err := solve.Run(dev, tc.o); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.msg)
		}
	}
	// Too few iterations: a result, not converged.
	res, err := solve.Run(dev, solve.Options{Problem: p, Mesh: m, Tol: 1e-12, MaxIter: 2})
	if err != nil || res.Converged || res.Iterations != 2 || !(res.Residual > 1e-12) {
		t.Errorf("two iterations: %+v, %v", res, err)
	}
}

// BenchmarkHostBP5 is BP5 on the C backend, fp64, about 390,000 DOFs
// ((72+1)³ global nodes; N = 5 on 14³ elements, 71³), 100 iterations
// (the tolerance out of reach), reporting DOFs × iterations / s.
func BenchmarkHostBP5(b *testing.B) {
	dev, err := host.Open()
	if err != nil {
		b.Skip(err)
	}
	defer dev.Close()
	for _, n := range []int{3, 4, 5, 6} {
		for _, variant := range []string{"slab/e1", "slab-lit/e1"} {
			b.Run(fmt.Sprintf("N=%d/%s", n, variant), func(b *testing.B) {
				side := 72 / n
				m, err := fem.NewMesh(side, side, side, 0)
				if err != nil {
					b.Fatal(err)
				}
				p, err := tensor.New(fem.BK5, n, lambda, kernel.F64)
				if err != nil {
					b.Fatal(err)
				}
				var rate float64
				for b.Loop() {
					res, err := solve.Run(dev, solve.Options{Problem: p, Variant: variant, Mesh: m, Tol: 1e-14, MaxIter: 100})
					if err != nil {
						b.Fatal(err)
					}
					rate = res.Rate
				}
				b.ReportMetric(rate/1e9, "GDOF/s")
			})
		}
	}
}
