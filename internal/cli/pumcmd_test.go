package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	pumrun "github.com/bespoke-hpc/bespoke/pum/run"
	"github.com/bespoke-hpc/bespoke/pum/tuned"
)

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
	for _, be := range []string{"reference", "c", "c-host"} {
		mtx := filepath.Join(dir, be+".mtx")
		npyf := filepath.Join(dir, be+".npy")
		var so, se bytes.Buffer
		backend, decomp := strings.CutSuffix(be, "-host")
		if code := Main([]string{"pum", "assemble", "--dim", "2", "--level", "2", "--degree", "2", "--kappa", "2", "--r", "0.5",
			"--backend", backend, "--decompose", map[bool]string{true: "host", false: "device"}[decomp], "-o", mtx, "--rhs", npyf}, &so, &se); code != ExitOK {
			t.Fatalf("%s: exit %d: %s", be, code, se.String())
		}
		if !strings.Contains(so.String(), "wrote") {
			t.Errorf("%s: output %q", be, so.String())
		}
		// A device run says which candidate assembled (on a CPU the
		// default strategy's only one).
		if backend != "reference" && !strings.Contains(se.String(), "ran atomic.thread.t1, the only candidate") {
			t.Errorf("%s: stderr %q does not say which candidate ran", be, se.String())
		}
		files[be] = mtx
	}
	n, ref := readMTX(t, files["reference"])
	for _, be := range []string{"c", "c-host"} {
		n2, got := readMTX(t, files[be])
		if n != 16*6 || n2 != n || len(ref) != len(got) || len(ref) == 0 {
			t.Fatalf("%s: sizes: %d, %d; %d and %d entries", be, n, n2, len(ref), len(got))
		}
		amax, diff := 0.0, 0.0
		for k, v := range ref {
			amax = math.Max(amax, math.Abs(v))
			diff = math.Max(diff, math.Abs(got[k]-v))
		}
		if diff/amax > 1e-12 {
			t.Errorf("%s: device and reference MatrixMarket differ by %.3g relative", be, diff/amax)
		}
	}
	// κ = 2, r = 0.5 constant: the (0,0) entry of patch 0 is 0.5·∫φ₀².
	if ref[[2]int{1, 1}] <= 0 {
		t.Errorf("A₁₁ = %g, want > 0", ref[[2]int{1, 1}])
	}
	// The default r = 0 makes a singular matrix: assemble says so (and
	// says nothing of the kind when r > 0, above).
	var so, se bytes.Buffer
	if code := Main([]string{"pum", "assemble", "--dim", "2", "--level", "2", "--degree", "1", "-o", filepath.Join(dir, "r0.mtx")}, &so, &se); code != ExitOK ||
		!strings.Contains(se.String(), "singular") {
		t.Errorf("r = 0: exit %d, stderr %q: want a note that A is singular", code, se.String())
	}
}

// bench with --strategy both: one row per strategy, the split summing to
// the total, in the JSON, the CSV and the table.
func TestPUMBenchCLI(t *testing.T) {
	dir := t.TempDir()
	js, cs := filepath.Join(dir, "b.json"), filepath.Join(dir, "b.csv")
	var so, se bytes.Buffer
	if code := Main([]string{"pum", "bench", "--dim", "2", "--level", "6", "--degree", "1", "--strategy", "both", "--backend", "c", "--json", js, "--csv", cs}, &so, &se); code != ExitOK {
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
	if len(rows) != 2 || rows[0].Strategy != pumrun.Atomic || rows[1].Strategy != pumrun.Colour || rows[0].Decompose != pumrun.DecompDevice {
		t.Fatalf("rows %+v", rows)
	}
	for _, r := range rows {
		sum := r.SetupS + r.DecompS + r.IntegS + r.AssemS // the download is reported outside the total
		if r.TotalS <= 0 || math.Abs(sum-r.TotalS) > 1e-6*r.TotalS+1e-6 || r.DOF != 64*64*3 || r.GFLOPS <= 0 {
			t.Errorf("row %+v: split sums to %g", r, sum)
		}
		// One candidate per strategy on a CPU: nothing to choose.
		if r.Choice != tuned.Only || !strings.HasPrefix(r.Candidate, r.Strategy+".") {
			t.Errorf("row %s: candidate %q, choice %q; want the strategy's only candidate", r.Strategy, r.Candidate, r.Choice)
		}
	}
	if !strings.Contains(so.String(), "candidate") || !strings.Contains(so.String(), "ran atomic.thread.t1, the only candidate") {
		t.Errorf("table lacks the candidates:\n%s", so.String())
	}
	c, err := os.ReadFile(cs)
	if err != nil || strings.Count(string(c), "\n") != 3 || !strings.Contains(string(c), ",candidate,choice,") {
		t.Errorf("csv: %v, %q", err, c)
	}
}

// The default bench (no --strategy) on the C backend runs the tuned best:
// measured and stored the first time, read from the tuning store the
// second (saying so, and timing nothing for the choice); a forced
// strategy still runs that strategy.
func TestPUMBenchTunedDefault(t *testing.T) {
	t.Setenv("BESPOKE_CACHE_DIR", t.TempDir())
	t.Setenv("BESPOKE_NO_CACHE", "")
	dir := t.TempDir()
	bench := func(name string, extra ...string) (pumBenchRow, string) {
		js := filepath.Join(dir, name+".json")
		var so, se bytes.Buffer
		args := append([]string{"pum", "bench", "--dim", "2", "--level", "3", "--degree", "1", "--backend", "c", "--json", js}, extra...)
		if code := Main(args, &so, &se); code != ExitOK {
			t.Fatalf("%s: exit %d: %s", name, code, se.String())
		}
		var rows []pumBenchRow
		b, err := os.ReadFile(js)
		if err == nil {
			err = json.Unmarshal(b, &rows)
		}
		if err != nil || len(rows) != 1 {
			t.Fatalf("%s: %d rows, %v", name, len(rows), err)
		}
		return rows[0], so.String()
	}
	first, out1 := bench("first")
	if first.Choice != tuned.Measured || first.ChoiceDate == "" || !strings.Contains(out1, "measured now and stored") {
		t.Errorf("first run: choice %q (%s), output:\n%s", first.Choice, first.ChoiceDate, out1)
	}
	c, err := tuned.Parse(first.Candidate)
	if err != nil || c.Strategy != first.Strategy {
		t.Errorf("first run: candidate %q of strategy %q: %v", first.Candidate, first.Strategy, err)
	}
	second, out2 := bench("second")
	if second.Choice != tuned.FromStore || second.Candidate != first.Candidate || second.ChoiceDate != first.ChoiceDate ||
		!strings.Contains(out2, "from the tuning store (measured "+first.ChoiceDate+"; nothing timed for the choice)") {
		t.Errorf("second run: %s %q (%s), want %s from the store; output:\n%s", second.Choice, second.Candidate, second.ChoiceDate, first.Candidate, out2)
	}
	forced := pumrun.Strategies
	if testing.Short() {
		forced = []string{pumrun.Atomic} // one that did not win here
		if first.Strategy == pumrun.Atomic {
			forced = []string{pumrun.Fused}
		}
	}
	for _, st := range forced {
		if r, _ := bench("forced-"+st, "--strategy", st); r.Strategy != st || r.Choice != tuned.Only {
			t.Errorf("--strategy %s ran %s (%s, %s)", st, r.Strategy, r.Candidate, r.Choice)
		}
	}
}

// bench --solve: the device PCG after a device assembly and pum.Solve
// after the reference's, in the JSON, the CSV and a second table; both
// converge to the tolerance in about the same iterations.
func TestPUMBenchSolveCLI(t *testing.T) {
	dir := t.TempDir()
	rowsOf := func(backend string) []pumBenchRow {
		js, cs := filepath.Join(dir, backend+".json"), filepath.Join(dir, backend+".csv")
		var so, se bytes.Buffer
		if code := Main([]string{"pum", "bench", "--dim", "2", "--level", "3", "--degree", "2", "--strategy", "fused", "--backend", backend,
			"--solve", "--solve-tol", "1e-11", "--json", js, "--csv", cs}, &so, &se); code != ExitOK {
			t.Fatalf("%s: exit %d: %s", backend, code, se.String())
		}
		if !strings.Contains(so.String(), "rel. residual") {
			t.Errorf("%s: no solve table:\n%s", backend, so.String())
		}
		var rows []pumBenchRow
		b, err := os.ReadFile(js)
		if err == nil {
			err = json.Unmarshal(b, &rows)
		}
		if err != nil || len(rows) != 1 {
			t.Fatalf("%s: %d rows, %v", backend, len(rows), err)
		}
		c, err := os.ReadFile(cs)
		if err != nil || !strings.Contains(string(c), "solve_iterations") || !strings.Contains(string(c), ","+strconv.Itoa(rows[0].SolveIters)+",") {
			t.Errorf("%s: csv without the solve: %v, %q", backend, err, c)
		}
		return rows
	}
	dv, ref := rowsOf("c")[0], rowsOf("reference")[0]
	for _, r := range []pumBenchRow{dv, ref} {
		if !r.Solved || !r.SolveConverged || r.SolveIters < 10 || !(r.SolveRelRes <= 1e-11) || !(r.SolveS > 0) {
			t.Errorf("%s: solve %v converged %v, %d iterations, residual %g, %g s", r.Backend, r.Solved, r.SolveConverged, r.SolveIters, r.SolveRelRes, r.SolveS)
		}
	}
	if d := dv.SolveIters - ref.SolveIters; d < -3 || d > 3 || !(dv.SolveSetupS > 0) {
		t.Errorf("device %d iterations (set-up %g s), reference %d", dv.SolveIters, dv.SolveSetupS, ref.SolveIters)
	}
	// The device's matrix and load stayed there for its solve: nothing
	// downloaded, and the row says so.
	if !dv.SystemOnDevice || dv.DownloadS != 0 || ref.SystemOnDevice {
		t.Errorf("system on the device: device %v (download %g s), reference %v", dv.SystemOnDevice, dv.DownloadS, ref.SystemOnDevice)
	}
}

// Levels and degrees as lists and ranges: one row per (degree, level),
// and a chart of µs per DOF against the level.
func TestPUMBenchGrid(t *testing.T) {
	dir := t.TempDir()
	js, svg := filepath.Join(dir, "g.json"), filepath.Join(dir, "g.svg")
	var so, se bytes.Buffer
	if code := Main([]string{"pum", "bench", "--level", "2-3", "--degree", "0,1", "--backend", "reference", "--json", js, "--plot", svg}, &so, &se); code != ExitOK {
		t.Fatalf("exit %d: %s", code, se.String())
	}
	var rows []pumBenchRow
	b, err := os.ReadFile(js)
	if err == nil {
		err = json.Unmarshal(b, &rows)
	}
	if err != nil || len(rows) != 4 {
		t.Fatalf("%d rows, %v", len(rows), err)
	}
	for i, want := range [][2]int{{0, 2}, {0, 3}, {1, 2}, {1, 3}} {
		if rows[i].Degree != want[0] || rows[i].Level != want[1] || !(rows[i].USPerDOF > 0) {
			t.Errorf("row %d: p %d level %d µs/DOF %g, want p %d level %d", i, rows[i].Degree, rows[i].Level, rows[i].USPerDOF, want[0], want[1])
		}
	}
	if c, err := os.ReadFile(svg); err != nil || !strings.Contains(string(c), "p=1 f64") {
		t.Errorf("chart: %v", err)
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
		{[]string{"bench", "--decompose", "gpu"}, "--decompose"},
		{[]string{"assemble", "--decompose", "both", "-o", out}, "--decompose"},
		{[]string{"bench", "--reps", "0"}, "--reps"},
		{[]string{"bench", "--level", "3-x"}, "--level"},
		{[]string{"bench", "--level", "5-3"}, "--level"},
		{[]string{"bench", "--degree", "1,99"}, "--degree"},
		{[]string{"bench", "--tiles", "17"}, "--tiles"},
		{[]string{"bench", "--side", "7"}, "--side"},
		{[]string{"bench", "--vec", "3"}, "--vec"},
		{[]string{"bench", "--vec", "4", "--level", "2", "--backend", "c"}, "widest load"},
		{[]string{"bench", "--mma", "65"}, "--mma"},
		{[]string{"bench", "--mma", "16", "--level", "2", "--backend", "c"}, "tensor cores"},
		{[]string{"bench", "--dim", "3", "--level", "1,6", "--degree", "3", "--backend", "c"}, "MaxMatrixEntries"},
		{[]string{"bench", "--threads", "5000"}, "--threads"},
		{[]string{"bench", "--solve", "--solve-tol", "2"}, "--solve-tol"},
		{[]string{"bench", "--solve", "--solve-iter", "0"}, "--solve-iter"},
		{[]string{"assemble", "--level", "3-4", "-o", out}, "one level"},
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
