package run

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bespoke-hpc/bespoke/build"
	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/device/cuda"
	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/device/opencl"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/kernel"
	kpum "github.com/bespoke-hpc/bespoke/kernel/pum"
	"github.com/bespoke-hpc/bespoke/pum"
)

// checkPUMDevice runs the device pipeline over the sizes, both
// strategies, against pum's float64 assembly on the same decomposition.
func checkPUMDevice(t *testing.T, dev device.Device) {
	type tc struct {
		dim, level, p int
		periodic      bool
	}
	var cases []tc
	for l := 2; l <= 4; l++ {
		for p := 1; p <= 3; p++ {
			cases = append(cases, tc{2, l, p, false})
		}
	}
	cases = append(cases, tc{3, 2, 1, false}, tc{2, 3, 2, true})
	if testing.Short() { // level 3 runs every strategy, layout and integrator
		cases = []tc{{2, 3, 1, false}}
	}
	co := kpum.Coefficients{Name: kpum.CoeffSmooth, K: 1.5, R: 2}
	for _, c := range cases {
		ref, err := Reference(Config{Dim: c.dim, Level: c.level, Degree: c.p, Periodic: c.periodic, Coeff: co})
		if err != nil {
			t.Fatal(err)
		}
		type run struct {
			st, integ string
			lay       kpum.Layout
			perCell   bool
		}
		runs := []run{{Atomic, Thread, kpum.Blocked, false}, {Colour, Thread, kpum.Blocked, false}, {Fused, Group, kpum.Blocked, false}}
		if c.level == 3 { // the layouts, the group kernel without fusion and the fused one per cell once per degree
			runs = append(runs, run{Atomic, Thread, kpum.Interleaved, false}, run{Colour, Group, kpum.Interleaved, false}, run{Atomic, Group, kpum.Blocked, false},
				run{Fused, Group, kpum.Blocked, true})
		}
		for _, rn := range runs {
			{
				st, lay := rn.st, rn.lay
				name := fmt.Sprintf("%dd-l%d-p%d-per%v-%s-%s-%s-percell%v", c.dim, c.level, c.p, c.periodic, st, rn.integ, lay, rn.perCell)
				// A small budget makes several batches, so colour groups
				// are cut across batches too.
				got, err := OnDevice(dev, Config{Dim: c.dim, Level: c.level, Degree: c.p, Periodic: c.periodic, Coeff: co,
					DType: kernel.F64, Strategy: st, Layout: lay, Budget: 20000, Integrator: rn.integ, PerCell: rn.perCell})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				// The fused strategy takes a set's 2^d cells together
				// unless told not to.
				if want := map[bool]int{true: 1 << c.dim, false: 1}[st == Fused && !rn.perCell]; got.Merge != want {
					t.Errorf("%s: %d cells merged, want %d", name, got.Merge, want)
				}
				if got.Batches < 2 {
					t.Errorf("%s: %d batches, want several", name, got.Batches)
				}
				if ea, ef := RelDiff(got.Sys, ref.Sys); ea > 1e-12 || ef > 1e-12 {
					t.Errorf("%s: relative difference from the Go reference: A %.3g, F %.3g", name, ea, ef)
				}
			}
		}
	}
}

func TestPUMDeviceHost(t *testing.T) {
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	checkPUMDevice(t, dev)
}

func TestPUMDeviceOpenCL(t *testing.T) {
	dev, err := opencl.Open(os.Getenv("BESPOKE_OPENCL_DEVICE"))
	if err != nil {
		testenv.Unavailable(t, "opencl", err)
	}
	defer dev.Close()
	checkPUMDevice(t, dev)
}

// Properties of the device matrix that hold whatever the quadrature: with
// r = 0, A·e₀ = 0 (Σφ = 1 has zero gradient), and A is symmetric.
func TestPUMDeviceProperties(t *testing.T) {
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	for _, c := range []struct {
		dim, level, p int
		periodic      bool
		dt            kernel.DType
		tol           float64
	}{
		{2, 3, 2, false, kernel.F64, 1e-13},
		{2, 3, 3, true, kernel.F64, 1e-13},
		{3, 2, 1, false, kernel.F64, 1e-13},
		{2, 3, 2, false, kernel.F32, 1e-5},
	} {
		if testing.Short() && c.p != 2 {
			continue
		}
		for _, st := range []string{Atomic, Colour, Fused} {
			name := fmt.Sprintf("%dd-l%d-p%d-per%v-%s-%s", c.dim, c.level, c.p, c.periodic, c.dt, st)
			out, err := OnDevice(dev, Config{Dim: c.dim, Level: c.level, Degree: c.p, Periodic: c.periodic,
				Coeff: kpum.Coefficients{Name: kpum.CoeffSmooth, K: 1, R: 0}, DType: c.dt, Strategy: st})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			a, B := out.Sys.A, out.Sys.Space.B
			e0 := make([]float64, a.N*B)
			for i := range a.N {
				e0[i*B] = 1
			}
			y := make([]float64, len(e0))
			a.MulVec(y, e0)
			amax := 0.0
			for _, v := range a.Val {
				amax = math.Max(amax, math.Abs(v))
			}
			worst, asym := 0.0, 0.0
			for r := range y {
				worst = math.Max(worst, math.Abs(y[r])/amax)
			}
			for i := range a.N * B {
				for k := a.RowPtr[i/B]; k < a.RowPtr[i/B+1]; k++ {
					for n := range B {
						j := int(a.Col[k])*B + n
						asym = math.Max(asym, math.Abs(a.At(i, j)-a.At(j, i))/amax)
					}
				}
			}
			if worst > c.tol {
				t.Errorf("%s: |A·e₀|/max|A| = %.3g, want ≤ %g", name, worst, c.tol)
			}
			if asym > c.tol {
				t.Errorf("%s: max|A−Aᵀ|/max|A| = %.3g, want ≤ %g", name, asym, c.tol)
			}
		}
	}
}

// deviceBins runs the device decomposition alone on dev (its kernels
// in one program) and downloads the bins, the patch data and the matrix
// pattern.
func deviceBins(t *testing.T, dev device.Device, dc *kpum.Decomposer, ds kpum.DecompSpec, order kpum.BinOrder) ([]kpum.BinData, map[string][]float64) {
	t.Helper()
	dk, err := newDecompKernels(ds, order, dc.Bins)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := build.NewProgram(dev, dk.kernels()...)
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	l := &launcher{prog: prog, bufs: map[string]device.Buffer{}}
	r := &runner{dev: dev, dt: ds.DType}
	defer r.close()
	var tm time.Duration
	if err := patternOnDevice(r, r, l, dc, dk.pattern, &tm); err != nil {
		t.Fatal(err)
	}
	bins, err := decomposeOnDevice(r, l, dc, dk, &tm)
	if err != nil {
		t.Fatal(err)
	}
	if tm <= 0 || l.launches != len(dk.kernels()) {
		t.Errorf("%v in %d launches", tm, l.launches)
	}
	reals := func(b device.Buffer, n int) []float64 {
		raw := make([]byte, n*ds.DType.Bytes())
		if err := b.Download(raw); err != nil {
			t.Fatal(err)
		}
		return ds.DType.Decode(raw)
	}
	ints := func(b device.Buffer, n int) []int32 {
		raw := make([]byte, 4*n)
		if err := b.Download(raw); err != nil {
			t.Fatal(err)
		}
		var out []int32
		for _, v := range kernel.DecodeInts(4, raw) {
			out = append(out, int32(v))
		}
		return out
	}
	var out []kpum.BinData
	for _, b := range bins {
		out = append(out, kpum.BinData{DeviceBin: b.DeviceBin, Lo: reals(b.bufs["lo"], b.Cells*dc.Dim), Hi: reals(b.bufs["hi"], b.Cells*dc.Dim),
			Act: ints(b.bufs["act"], b.Cells*b.Active)})
	}
	pat := map[string][]float64{"centre": reals(l.bufs["centre"], dc.N*dc.Dim), "sup": reals(l.bufs["sup"], dc.N*dc.Dim)}
	for name, n := range map[string]int{"rowptr": dc.N + 1, "col": int(dc.Blocks)} {
		for _, v := range ints(l.bufs[name], n) {
			pat[name] = append(pat[name], float64(v))
		}
	}
	return out, pat
}

// checkPUMDeviceDecomposition runs the device decomposition on dev over
// 2-D and 3-D covers, levels 0–4, clipped and periodic, f64 and f32, in
// both orders: it gives the host plan, in ColourOrder NewPlan's with
// colour (the same bins and colour groups and, per group, the same cells:
// lo, hi, active patches, exactly, for both copy the same split points),
// in PatchOrder NewPlan's without, cell for cell; and the cover's patch
// data and matrix pattern.
func checkPUMDeviceDecomposition(t *testing.T, dev device.Device) {
	type tc struct {
		dim, level int
		periodic   bool
		dt         kernel.DType
		threads    int
	}
	var cases []tc
	for _, dim := range []int{2, 3} {
		for level := 0; level <= 4; level++ {
			cases = append(cases, tc{dim, level, false, kernel.F64, 16})
		}
		cases = append(cases, tc{dim, 2, true, kernel.F64, 16}, tc{dim, 3, true, kernel.F32, 7}, tc{dim, 4, true, kernel.F64, 1})
	}
	if testing.Short() { // 2-D and 3-D, clipped and periodic, f64 and f32
		cases = []tc{{2, 3, false, kernel.F64, 16}, {3, 2, false, kernel.F64, 16}, {2, 3, true, kernel.F32, 7}}
	}
	for _, c := range cases {
		name := fmt.Sprintf("%dd-l%d-per%v-%s-t%d", c.dim, c.level, c.periodic, c.dt, c.threads)
		cv, err := pum.UniformCover(c.dim, c.level, pum.DefaultAlpha, c.periodic)
		if err != nil {
			t.Fatal(err)
		}
		dec, err := pum.Decompose(cv, 0)
		if err != nil {
			t.Fatal(err)
		}
		dc, err := kpum.NewDecomposer(c.dim, c.level, pum.DefaultAlpha, c.periodic)
		if err != nil {
			t.Fatal(err)
		}
		var pat map[string][]float64
		for _, order := range []kpum.BinOrder{kpum.ColourOrder, kpum.PatchOrder} {
			pl, err := kpum.NewPlan(dec, order == kpum.ColourOrder)
			if err != nil {
				t.Fatal(err)
			}
			var bins []kpum.BinData
			bins, pat = deviceBins(t, dev, dc, kpum.DecompSpec{Dim: c.dim, DType: c.dt, Threads: c.threads}, order)
			if err := pl.CompareDevice(c.dt, bins); err != nil {
				t.Errorf("%s %s: %v", name, order, err)
			}
		}
		for n, want := range map[string][]float64{"centre": cv.Centre, "sup": kpum.Support(cv)} {
			for i, w := range want {
				if pat[n][i] != c.dt.Rounded(w) {
					t.Fatalf("%s: %s[%d] = %v, the cover's %v", name, n, i, pat[n][i], w)
				}
			}
		}
		for n, want := range map[string][]int32{"rowptr": cv.NbrPtr, "col": cv.Nbr} {
			for i, w := range want {
				if pat[n][i] != float64(w) {
					t.Fatalf("%s: %s[%d] = %v, the cover's %v", name, n, i, pat[n][i], w)
				}
			}
		}
	}
}

func TestPUMDeviceDecompositionHost(t *testing.T) {
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	checkPUMDeviceDecomposition(t, dev)
}

func TestPUMDeviceDecompositionOpenCL(t *testing.T) {
	dev, err := opencl.Open(os.Getenv("BESPOKE_OPENCL_DEVICE"))
	if err != nil {
		testenv.Unavailable(t, "opencl", err)
	}
	defer dev.Close()
	checkPUMDeviceDecomposition(t, dev)
}

func TestPUMDeviceDecompositionCUDA(t *testing.T) {
	dev, err := cuda.Open(0)
	if err != nil {
		testenv.Unavailable(t, "cuda", err)
	}
	defer dev.Close()
	checkPUMDeviceDecomposition(t, dev)
	// And the assembled systems: device against host decomposition.
	checkPUMDecomposeDeviceVsHost(t, dev)
}

// The assembled system with device decomposition matches the one with
// host decomposition (and the Go reference), over the strategies, p = 1
// and 2, clipped and periodic covers; the timings split as before.
func TestPUMDecomposeDeviceVsHost(t *testing.T) {
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	checkPUMDecomposeDeviceVsHost(t, dev)
}

func checkPUMDecomposeDeviceVsHost(t *testing.T, dev device.Device) {
	co := kpum.Coefficients{Name: kpum.CoeffSmooth, K: 1.5, R: 2}
	type tc struct {
		dim, level, p int
		periodic      bool
		strategy      string
	}
	var cases []tc
	for level := 1; level <= 4; level++ {
		cases = append(cases, tc{2, level, 1 + level%2, false, []string{Atomic, Colour, Fused}[level%3]})
	}
	cases = append(cases, tc{2, 3, 2, true, Colour}, tc{2, 4, 1, true, Atomic}, tc{3, 1, 1, false, Atomic}, tc{3, 2, 2, false, Colour},
		tc{3, 2, 1, true, Fused})
	if testing.Short() { // every strategy, 2-D and 3-D, clipped and periodic
		cases = []tc{cases[1], cases[2], cases[4], cases[8]}
	}
	for _, c := range cases {
		name := fmt.Sprintf("%dd-l%d-p%d-per%v-%s", c.dim, c.level, c.p, c.periodic, c.strategy)
		cfg := Config{Dim: c.dim, Level: c.level, Degree: c.p, Periodic: c.periodic, Coeff: co, DType: kernel.F64, Strategy: c.strategy, Budget: 20000}
		ref, err := Reference(cfg)
		if err != nil {
			t.Fatal(err)
		}
		outs := map[string]*Outcome{}
		for _, d := range []string{DecompDevice, DecompHost} {
			cfg.Decompose = d
			if outs[d], err = OnDevice(dev, cfg); err != nil {
				t.Fatalf("%s %s: %v", name, d, err)
			}
		}
		got, want := outs[DecompDevice], outs[DecompHost]
		if ea, ef := RelDiff(got.Sys, want.Sys); ea > 1e-12 || ef > 1e-12 {
			t.Errorf("%s: device against host decomposition: A %.3g, F %.3g", name, ea, ef)
		}
		if ea, ef := RelDiff(got.Sys, ref.Sys); ea > 1e-12 || ef > 1e-12 {
			t.Errorf("%s: device decomposition against the Go reference: A %.3g, F %.3g", name, ea, ef)
		}
		gd, wd := got.Sys.Dec, want.Sys.Dec
		if gd.NCells != wd.NCells || gd.MaxActive != wd.MaxActive || !slices.Equal(gd.BinPtr, wd.BinPtr) || got.Sys.ModelFlops() != want.Sys.ModelFlops() {
			t.Errorf("%s: device decomposition %d cells, bins %v; host %d, %v", name, gd.NCells, gd.BinPtr, wd.NCells, wd.BinPtr)
		}
		dks := 2 // pattern and fill
		if c.strategy == Colour {
			dks = 3 // and count
		}
		if got.Batches != want.Batches || got.Launches != want.Launches+dks {
			t.Errorf("%s: %d batches and %d launches; host decomposition %d and %d (+%d decomposition kernels)", name, got.Batches, got.Launches, want.Batches, want.Launches, dks)
		}
		tm := got.Tm
		if tm.Decompose <= 0 || tm.Setup <= 0 || tm.Total != tm.Setup+tm.Decompose+tm.Integrate+tm.Assemble {
			t.Errorf("%s: timings %v", name, tm)
		}
	}
	if _, err := OnDevice(dev, Config{Dim: 2, Level: 2, Degree: 1, Coeff: co, DType: kernel.F64, Strategy: Atomic, Decompose: "gpu"}); err == nil || strings.Contains(err.Error(), "\n") {
		t.Errorf("decompose gpu: %v", err)
	}
}

// memBuffer is a device.Buffer in host memory.
type memBuffer struct{ b []byte }

func (m *memBuffer) Size() int64             { return int64(len(m.b)) }
func (m *memBuffer) Upload(src []byte) error { copy(m.b, src); return nil }
func (m *memBuffer) Free() error             { return nil }
func (m *memBuffer) Download(dst []byte) error {
	if len(dst) > len(m.b) {
		return fmt.Errorf("download of %d bytes from a buffer of %d", len(dst), len(m.b))
	}
	copy(dst, m.b)
	return nil
}

// downloadReals gives the buffer's reals in float64, whether it reads
// them in place (f64) or decodes them (f32), and only the first n.
func TestDownloadReals(t *testing.T) {
	want := []float64{1, -2.5, 3e-300, 0.125, 7}
	for _, tc := range []struct {
		dt kernel.DType
		n  int64
	}{{kernel.F64, 5}, {kernel.F64, 3}, {kernel.F32, 5}, {kernel.F32, 2}, {kernel.F64, 0}} {
		w := want[:tc.n]
		if tc.dt == kernel.F32 {
			w = []float64{1, -2.5, 0, 0.125, 7}[:tc.n] // 3e-300 underflows in f32
		}
		got, err := downloadReals(&memBuffer{b: tc.dt.Encode(want)}, tc.n, tc.dt)
		if err != nil {
			t.Fatalf("%s n=%d: %v", tc.dt, tc.n, err)
		}
		if len(got) != len(w) {
			t.Fatalf("%s n=%d: got %d reals", tc.dt, tc.n, len(got))
		}
		for i := range w {
			if got[i] != w[i] {
				t.Errorf("%s n=%d: [%d] = %g, want %g", tc.dt, tc.n, i, got[i], w[i])
			}
		}
	}
}

// The convergence check on the device pipeline (C backend, fused,
// device decomposition): on the periodic domain the wave set's
// manufactured solution u = Π sin 2πx_k, solved on the device by
// solve.PCG from the device's matrix and load, has L² errors falling as
// h^{p+1} and H¹ as h^p over the levels. On the smallest level the device
// solve agrees with pum.Solve's (the same recurrence in Go).
func TestPUMDeviceConvergence(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the convergence study runs without -short (CI); TestPUMDeviceSolveHost solves on the device")
	}
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	for _, c := range []struct {
		dim, p, l0, l1 int
	}{{2, 1, 2, 5}, {2, 2, 2, 5}} { // 3-D p = 1 is pre-asymptotic up to level 4 (L² rate 1.74) and takes a minute here
		var l2s, h1s []float64
		for level := c.l0; level <= c.l1; level++ {
			name := fmt.Sprintf("%d-D p=%d level %d", c.dim, c.p, level)
			out, err := OnDevice(dev, Config{Dim: c.dim, Level: level, Degree: c.p, Periodic: true,
				Coeff: kpum.Coefficients{Name: kpum.CoeffWave, K: 1, R: 1}, DType: kernel.F64, Strategy: Fused,
				Solve: &Solve{Tol: 1e-12, MaxIter: 10000, Host: level == c.l0}}) // the matrix for checkPUMSolveAgrees
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			res := out.Solved
			if !res.Converged {
				t.Fatalf("%s: device PCG not converged: residual %.3g after %d iterations", name, res.Residual, res.Iterations)
			}
			u := res.X
			if level == c.l0 {
				checkPUMSolveAgrees(t, name, out, kernel.F64)
			}
			// The error integrals need the cells, which a device
			// decomposition leaves on the device: the host's (the same).
			if out.Sys.Dec, err = pum.Decompose(out.Sys.Cover, 0); err != nil {
				t.Fatal(err)
			}
			l2, h1, err := out.Sys.Errors(u, kpum.WaveExact, c.p+4)
			if err != nil {
				t.Fatal(err)
			}
			l2s, h1s = append(l2s, l2), append(h1s, h1)
			t.Logf("%s: device PCG %d its (%v), L² %.3e, H¹ %.3e", name, res.Iterations, res.Time, l2, h1)
		}
		n := len(l2s) - 1
		r0, r1 := math.Log2(l2s[n-1]/l2s[n]), math.Log2(h1s[n-1]/h1s[n])
		if r0 < float64(c.p+1)-0.2 || r1 < float64(c.p)-0.2 {
			t.Errorf("%d-D p=%d: final rates L² %.2f (want ≈ %d), H¹ %.2f (want ≈ %d)", c.dim, c.p, r0, c.p+1, r1, c.p)
		}
	}
}

// checkPUMSolveAgrees compares a device solve (to 1e-12 in f64) with
// pum.Solve on the downloaded system: the solutions to 1e-8 relative, the
// iterations within 3. In f32 (to a looser tolerance) the solution within
// 1e-4 of pum.Solve's in float64 on the f32 matrix.
func checkPUMSolveAgrees(t *testing.T, name string, out *Outcome, dt kernel.DType) {
	t.Helper()
	u, ref, err := pum.Solve(out.Sys.A, out.Sys.F, 1e-12, 10000)
	if err != nil {
		t.Fatalf("%s: pum.Solve: %v", name, err)
	}
	got := out.Solved
	d2, u2 := 0.0, 0.0
	for i, x := range u {
		d2 += (got.X[i] - x) * (got.X[i] - x)
		u2 += x * x
	}
	diff := math.Sqrt(d2 / u2)
	if dt == kernel.F32 {
		if diff > 1e-4 {
			t.Errorf("%s: f32 device PCG (%d iterations) differs from pum.Solve by %.3g relative (want ≤ 1e-4)", name, got.Iterations, diff)
		}
	} else if diff > 1e-8 || max(got.Iterations-ref.Iterations, ref.Iterations-got.Iterations) > 3 {
		t.Errorf("%s: device PCG %d iterations, pum.Solve %d; solutions differ by %.3g relative (want ≤ 1e-8)", name, got.Iterations, ref.Iterations, diff)
	}
	t.Logf("%s: device PCG %d iterations (residual %.2g, %v), pum.Solve %d, solutions differ by %.2g", name, got.Iterations, got.Residual, got.Time, ref.Iterations, diff)
}

type pumSolveCase struct {
	dim, level, p    int
	periodic         bool
	coeff            kpum.Coefficients
	strategy, decomp string
	dt               kernel.DType
}

// checkPUMDeviceSolve assembles and solves each case on dev and checks
// the solve against pum.Solve.
func checkPUMDeviceSolve(t *testing.T, dev device.Device, cases []pumSolveCase) {
	t.Helper()
	if testing.Short() {
		cases = cases[:1]
	}
	for _, c := range cases {
		name := fmt.Sprintf("%d-D p=%d level %d periodic %v %s %s %s %s", c.dim, c.p, c.level, c.periodic, c.coeff.Name, c.strategy, c.decomp, c.dt)
		tol := map[kernel.DType]float64{kernel.F64: 1e-12, kernel.F32: 1e-5}[c.dt]
		out, err := OnDevice(dev, Config{Dim: c.dim, Level: c.level, Degree: c.p, Periodic: c.periodic,
			Coeff: c.coeff, DType: c.dt, Strategy: c.strategy, Decompose: c.decomp,
			Solve: &Solve{Tol: tol, MaxIter: 10000, Host: true}})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !out.Solved.Converged {
			t.Fatalf("%s: device PCG not converged: residual %.3g after %d iterations", name, out.Solved.Residual, out.Solved.Iterations)
		}
		checkPUMSolveAgrees(t, name, out, c.dt)
	}
}

var (
	pumWave   = kpum.Coefficients{Name: kpum.CoeffWave, K: 1, R: 1}
	pumSmooth = kpum.Coefficients{Name: kpum.CoeffSmooth, K: 1.5, R: 2}
)

// The device solve on the C backend: a variable coefficient (tens of
// iterations), 3-D, the host decomposition's uploaded pattern, f32.
func TestPUMDeviceSolveHost(t *testing.T) {
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	checkPUMDeviceSolve(t, dev, []pumSolveCase{
		{2, 4, 3, false, pumSmooth, Fused, DecompDevice, kernel.F64},
		{2, 3, 5, false, pumSmooth, Colour, DecompDevice, kernel.F64},
		{3, 2, 2, true, pumSmooth, Atomic, DecompHost, kernel.F64},
		{2, 4, 2, false, pumSmooth, Fused, DecompDevice, kernel.F32},
	})
}

// The device solve on CUDA: the cases of the C backend's test, larger
// (2-D level 6 p = 5: 4,096 blocks of 21×21).
func TestPUMDeviceSolveCUDA(t *testing.T) {
	dev, err := cuda.Open(0)
	if err != nil {
		testenv.Unavailable(t, "cuda", err)
	}
	defer dev.Close()
	checkPUMDeviceSolve(t, dev, []pumSolveCase{
		{2, 6, 3, false, pumSmooth, Fused, DecompDevice, kernel.F64},
		{2, 6, 5, false, pumSmooth, Colour, DecompDevice, kernel.F64},
		{3, 4, 2, true, pumSmooth, Atomic, DecompHost, kernel.F64},
		{3, 4, 1, false, pumSmooth, Fused, DecompDevice, kernel.F64},
		{2, 6, 2, false, pumSmooth, Fused, DecompDevice, kernel.F32},
	})
}

// The device solve on OpenCL (PoCL here), small levels: the fused
// strategy's matrix, and the atomic one's with host decomposition (its
// pattern uploaded).
func TestPUMDeviceSolveOpenCL(t *testing.T) {
	dev, err := opencl.Open(os.Getenv("BESPOKE_OPENCL_DEVICE"))
	if err != nil {
		testenv.Unavailable(t, "opencl", err)
	}
	defer dev.Close()
	checkPUMDeviceSolve(t, dev, []pumSolveCase{
		{2, 3, 2, true, pumWave, Fused, DecompDevice, kernel.F64},
		{2, 3, 3, false, pumSmooth, Atomic, DecompHost, kernel.F64},
	})
}

// Keep leaves the matrix and load on the device: nothing downloaded, the
// system's A and F nil, the timings as without it.
func TestPUMKeep(t *testing.T) {
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	for _, st := range Strategies {
		cfg := Config{Dim: 2, Level: 2, Degree: 1, Coeff: kpum.Coefficients{Name: kpum.CoeffConst, K: 1, R: 1}, DType: kernel.F64, Strategy: st}
		for _, keep := range []bool{false, true} {
			cfg.Keep = keep
			out, err := OnDevice(dev, cfg)
			if err != nil {
				t.Fatalf("%s keep %v: %v", st, keep, err)
			}
			if out.DeviceOnly != keep || (out.Sys.A == nil) != keep || (out.Sys.F == nil) != keep || (out.Download > 0) == keep || !(out.Tm.Total > 0) {
				t.Errorf("%s keep %v: device only %v, A nil %v, F nil %v, download %v, total %v", st, keep, out.DeviceOnly, out.Sys.A == nil, out.Sys.F == nil, out.Download, out.Tm.Total)
			}
		}
	}
}

func TestRelDiff(t *testing.T) {
	sys := func(a, f []float64) *pum.System {
		return &pum.System{A: &pum.BSR{Val: a}, F: f}
	}
	inf := math.Inf(1)
	for _, tc := range []struct {
		name         string
		got, want    *pum.System
		wantA, wantF float64
	}{
		{"equal", sys([]float64{1, -2}, []float64{3}), sys([]float64{1, -2}, []float64{3}), 0, 0},
		{"relative to the largest", sys([]float64{1.5, -2}, []float64{3}), sys([]float64{1, -2}, []float64{4}), 0.25, 0.25},
		{"lengths differ", sys([]float64{1}, []float64{3}), sys([]float64{1, -2}, []float64{3}), inf, 0},
		{"no matrix", &pum.System{F: []float64{3}}, sys([]float64{1}, []float64{3}), inf, 0},
	} {
		ea, ef := RelDiff(tc.got, tc.want)
		if ea != tc.wantA || ef != tc.wantF {
			t.Errorf("%s: %g, %g; want %g, %g", tc.name, ea, ef, tc.wantA, tc.wantF)
		}
	}
}
