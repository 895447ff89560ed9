package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/device/opencl"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/kernel"
	kpum "github.com/bespoke-hpc/bespoke/kernel/pum"
	"github.com/bespoke-hpc/bespoke/pum"
)

// pumRelDiff is max|a−b| / max|b| over the matrix and over the load.
func pumRelDiff(got, want *pum.System) (ea, ef float64) {
	am, fm := 0.0, 0.0
	for i, w := range want.A.Val {
		am = math.Max(am, math.Abs(w))
		ea = math.Max(ea, math.Abs(got.A.Val[i]-w))
	}
	for i, w := range want.F {
		fm = math.Max(fm, math.Abs(w))
		ef = math.Max(ef, math.Abs(got.F[i]-w))
	}
	return ea / am, ef / fm
}

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
	co := kpum.Coefficients{Name: kpum.CoeffSmooth, K: 1.5, R: 2}
	for _, c := range cases {
		ref, err := pumReference(pumConfig{dim: c.dim, level: c.level, degree: c.p, periodic: c.periodic, coeff: co})
		if err != nil {
			t.Fatal(err)
		}
		type run struct {
			st, integ string
			lay       kpum.Layout
		}
		runs := []run{{pumAtomic, pumThread, kpum.Blocked}, {pumColour, pumThread, kpum.Blocked}, {pumFused, pumGroup, kpum.Blocked}}
		if c.level == 3 { // the layouts and the group kernel without fusion once per degree
			runs = append(runs, run{pumAtomic, pumThread, kpum.Interleaved}, run{pumColour, pumGroup, kpum.Interleaved}, run{pumAtomic, pumGroup, kpum.Blocked})
		}
		for _, rn := range runs {
			{
				st, lay := rn.st, rn.lay
				name := fmt.Sprintf("%dd-l%d-p%d-per%v-%s-%s-%s", c.dim, c.level, c.p, c.periodic, st, rn.integ, lay)
				// A small budget makes several batches, so colour groups
				// are cut across batches too.
				got, err := pumOnDevice(dev, pumConfig{dim: c.dim, level: c.level, degree: c.p, periodic: c.periodic, coeff: co,
					dt: kernel.F64, strategy: st, layout: lay, budget: 20000, integrator: rn.integ})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if got.batches < 2 {
					t.Errorf("%s: %d batches, want several", name, got.batches)
				}
				if ea, ef := pumRelDiff(got.sys, ref.sys); ea > 1e-12 || ef > 1e-12 {
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
		for _, st := range []string{pumAtomic, pumColour, pumFused} {
			name := fmt.Sprintf("%dd-l%d-p%d-per%v-%s-%s", c.dim, c.level, c.p, c.periodic, c.dt, st)
			out, err := pumOnDevice(dev, pumConfig{dim: c.dim, level: c.level, degree: c.p, periodic: c.periodic,
				coeff: kpum.Coefficients{Name: kpum.CoeffSmooth, K: 1, R: 0}, dt: c.dt, strategy: st})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			a, B := out.sys.A, out.sys.Space.B
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

// readMTX reads a MatrixMarket coordinate file into a map.
func readMTX(t *testing.T, path string) (int, map[[2]int]float64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := map[[2]int]float64{}
	n := 0
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if i == 0 && !strings.HasPrefix(line, "%%MatrixMarket matrix coordinate real general") {
			t.Fatalf("banner %q", line)
		}
		if strings.HasPrefix(line, "%") {
			continue
		}
		var r, c int
		var v float64
		if n == 0 {
			var nnz int
			if _, err := fmt.Sscan(line, &n, &c, &nnz); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if _, err := fmt.Sscan(line, &r, &c, &v); err != nil {
			t.Fatal(err)
		}
		m[[2]int{r, c}] = v
	}
	return n, m
}

func TestPUMAssembleCLI(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{}
	for _, be := range []string{"reference", "c"} {
		mtx := filepath.Join(dir, be+".mtx")
		npyf := filepath.Join(dir, be+".npy")
		var so, se bytes.Buffer
		if code := Main([]string{"pum", "assemble", "--dim", "2", "--level", "2", "--degree", "2", "--kappa", "2", "--r", "0.5",
			"--backend", be, "-o", mtx, "--rhs", npyf}, &so, &se); code != ExitOK {
			t.Fatalf("%s: exit %d: %s", be, code, se.String())
		}
		if !strings.Contains(so.String(), "wrote") {
			t.Errorf("%s: output %q", be, so.String())
		}
		files[be] = mtx
	}
	n, ref := readMTX(t, files["reference"])
	n2, got := readMTX(t, files["c"])
	if n != 16*6 || n2 != n || len(ref) != len(got) || len(ref) == 0 {
		t.Fatalf("sizes: %d, %d; %d and %d entries", n, n2, len(ref), len(got))
	}
	amax, diff := 0.0, 0.0
	for k, v := range ref {
		amax = math.Max(amax, math.Abs(v))
		diff = math.Max(diff, math.Abs(got[k]-v))
	}
	if diff/amax > 1e-12 {
		t.Errorf("device and reference MatrixMarket differ by %.3g relative", diff/amax)
	}
	// κ = 2, r = 0.5 constant: the (0,0) entry of patch 0 is 0.5·∫φ₀².
	if ref[[2]int{1, 1}] <= 0 {
		t.Errorf("A₁₁ = %g, want > 0", ref[[2]int{1, 1}])
	}
}

func TestPUMBenchCLI(t *testing.T) {
	dir := t.TempDir()
	js, cs := filepath.Join(dir, "b.json"), filepath.Join(dir, "b.csv")
	var so, se bytes.Buffer
	if code := Main([]string{"pum", "bench", "--dim", "2", "--level", "7", "--degree", "1", "--backend", "c", "--json", js, "--csv", cs}, &so, &se); code != ExitOK {
		t.Fatalf("exit %d: %s", code, se.String())
	}
	var rows []pumBenchRow
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Strategy != pumAtomic || rows[1].Strategy != pumColour {
		t.Fatalf("rows %+v", rows)
	}
	for _, r := range rows {
		sum := r.SetupS + r.DecompS + r.IntegS + r.AssemS // the download is reported outside the total
		if r.TotalS <= 0 || math.Abs(sum-r.TotalS) > 1e-6*r.TotalS+1e-6 || r.DOF != 128*128*3 || r.GFLOPS <= 0 {
			t.Errorf("row %+v: split sums to %g", r, sum)
		}
		if r.ThesisGPU != 0.65 || r.ThesisCPU != 1.50 {
			t.Errorf("thesis figures %g, %g; want 0.65 s and 1.50 s (2-D level 7 p = 1)", r.ThesisGPU, r.ThesisCPU)
		}
	}
	if !strings.Contains(so.String(), "thesis GPU") {
		t.Errorf("table lacks the thesis column:\n%s", so.String())
	}
	c, err := os.ReadFile(cs)
	if err != nil || strings.Count(string(c), "\n") != 3 {
		t.Errorf("csv: %v, %q", err, c)
	}
}

func TestPUMBadFlags(t *testing.T) {
	out := filepath.Join(t.TempDir(), "a.mtx")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "--dim", "4"}, "--dim 4"},
		{[]string{"bench", "--level", "11"}, "--level 11"},
		{[]string{"bench", "--dim", "3", "--level", "7"}, "--level 7"},
		{[]string{"bench", "--degree", "6"}, "--degree 6"},
		{[]string{"bench", "--dim", "3", "--degree", "4"}, "--degree 4"},
		{[]string{"bench", "--kappa", "0"}, "MaxCoeff"},
		{[]string{"bench", "--r", "-1"}, "MaxCoeff"},
		{[]string{"bench", "--coeff", "sin"}, "coefficient set"},
		{[]string{"bench", "--dtype", "f16"}, "dtype"},
		{[]string{"bench", "--strategy", "tree"}, "--strategy"},
		{[]string{"bench", "--layout", "diagonal"}, "--layout"},
		{[]string{"bench", "--integrator", "warp"}, "--integrator"},
		{[]string{"bench", "--reps", "0"}, "--reps"},
		{[]string{"bench", "--periodic", "--level", "1"}, "periodic"},
		{[]string{"assemble", "--level", "2"}, "-o"},
		{[]string{"assemble", "--level", "10", "--degree", "5", "-o", out}, "MaxMatrixEntries"},
		{[]string{"assemble", "--level", "2", "--backend", "c", "--strategy", "both", "-o", out}, "--strategy"},
	} {
		var so, se bytes.Buffer
		code := Main(append([]string{"pum"}, tc.args...), &so, &se)
		msg := se.String()
		if code == ExitOK || !strings.Contains(msg, tc.want) || strings.Count(msg, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q (want a one-line error naming %q)", tc.args, code, msg, tc.want)
		}
	}
}
