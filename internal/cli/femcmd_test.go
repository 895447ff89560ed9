package cli

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/operator/npy"
)

func writeNPY(t *testing.T, path string, rows, cols int, data []float64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := npy.WriteMatrix(f, rows, cols, data); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// fem apply: the reference and the C kernel agree on a random E-vector of a
// perturbed mesh; constants are in the Laplacian's null space; bad shapes
// and meshes are one-line errors.
func TestFEMApply(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("BESPOKE_CACHE_DIR", filepath.Join(dir, "cache"))
	const order, elems = 3, 2 * 1 * 3
	nodes := (order + 1) * (order + 1) * (order + 1)
	rng := rand.New(rand.NewPCG(5, 6))
	u := make([]float64, elems*nodes)
	for i := range u {
		u[i] = rng.Float64() - 0.5
	}
	in := filepath.Join(dir, "u.npy")
	writeNPY(t, in, elems, nodes, u)
	read := func(path string) []float64 {
		rows, cols, v, err := npy.ReadMatrix(path)
		if err != nil || rows != elems || cols != nodes {
			t.Fatalf("%s: %d×%d, %v", path, rows, cols, err)
		}
		return v
	}
	ref := filepath.Join(dir, "ref.npy")
	_, noHost := host.Open()
	for _, k := range []string{"bk1", "bk3", "bk5"} {
		common := []string{"fem", "apply", "--kernel", k, "--order", "3", "--mesh", "2x1x3", "--perturb", "0.2", "--lambda", "0.5", "--in", in}
		if code, _, stderr := run(t, append(common, "--out", ref)...); code != ExitOK {
			t.Fatalf("%s reference: exit %d: %s", k, code, stderr)
		}
		want := read(ref)
		if noHost != nil {
			testenv.Unavailable(t, "c", noHost)
			continue
		}
		got := filepath.Join(dir, "c.npy")
		if code, _, stderr := run(t, append(common, "--backend", "c", "--out", got)...); code != ExitOK {
			t.Fatalf("%s c: exit %d: %s", k, code, stderr)
		}
		scale, worst := 0.0, 0.0
		for i, x := range read(got) {
			scale = math.Max(scale, math.Abs(want[i]))
			worst = math.Max(worst, math.Abs(x-want[i]))
		}
		if worst > 1e-12*scale || scale == 0 {
			t.Errorf("%s: C kernel against the reference: max error %.3g of %.3g", k, worst, scale)
		}
	}
	// S·1 = 0 (λ = 0).
	ones := make([]float64, elems*nodes)
	for i := range ones {
		ones[i] = 1
	}
	onesIn, onesOut := filepath.Join(dir, "ones.npy"), filepath.Join(dir, "s1.npy")
	writeNPY(t, onesIn, elems, nodes, ones)
	if code, _, stderr := run(t, "fem", "apply", "--order", "3", "--mesh", "2x1x3", "--perturb", "0.2", "--lambda", "0", "--in", onesIn, "--out", onesOut); code != ExitOK {
		t.Fatalf("ones: exit %d: %s", code, stderr)
	}
	for i, x := range read(onesOut) {
		if math.Abs(x) > 1e-12 {
			t.Fatalf("(S·1)[%d] = %g", i, x)
		}
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"shape", []string{"fem", "apply", "--order", "2", "--mesh", "2x1x3", "--in", in, "--out", ref}, ExitFailure, "want (6, 27)"},
		{"mesh", []string{"fem", "apply", "--mesh", "2x1", "--in", in, "--out", ref}, ExitUsage, "NXxNYxNZ"},
		{"same file", []string{"fem", "apply", "--mesh", "2x1x3", "--in", in, "--out", in}, ExitUsage, "would overwrite the input --in"},
		{"huge mesh", []string{"fem", "apply", "--mesh", "999999x999999x9", "--in", in, "--out", ref}, ExitUsage, "more than"},
		{"bk5's layout for bk1", []string{"fem", "apply", "--kernel", "bk1", "--mesh", "2x1x3", "--backend", "c", "--variant", "slab/e1", "--in", in, "--out", ref}, ExitUsage, "no layout"},
		{"missing input", []string{"fem", "apply", "--mesh", "2x1x3", "--in", filepath.Join(dir, "none.npy"), "--out", ref}, ExitFailure, "none.npy"},
	} {
		code, _, stderr := run(t, tc.args...)
		if code != tc.code || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.msg) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d and one line with %q", tc.name, code, stderr, tc.code, tc.msg)
		}
	}
}

// fem bench --kernel bp5,bp3: CG solves on the C backend for every layout,
// their rates and errors in the table and the JSON; bad settings are
// one-line errors.
func TestFEMBenchBakeOffs(t *testing.T) {
	if _, err := host.Open(); err != nil {
		testenv.Unavailable(t, "c", err)
	}
	dir := t.TempDir()
	t.Setenv("BESPOKE_CACHE_DIR", filepath.Join(dir, "cache"))
	out := filepath.Join(dir, "bp.json")
	code, stdout, stderr := run(t, "fem", "bench", "--kernel", "bp5,bp3", "--order", "2", "--backend", "c", "--bp-dofs", "4000", "--iterations", "5", "--bp-json", out)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"bp5/n2", "bp3/n2", "GDOF/s"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("no %q in\n%s", want, stdout)
		}
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Solves []bpRow `json:"solves"`
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Solves) < 2 {
		t.Fatalf("%d solves in the JSON", len(rep.Solves))
	}
	// On a CPU, every CPU layout by default.
	for _, bp := range []string{"bp5/n2", "bp3/n2"} {
		for _, layout := range []string{"cpu/e1", "cpu-vec/e4", "cpu-vec/e8"} {
			if !slices.ContainsFunc(rep.Solves, func(s bpRow) bool { return s.Problem == bp && s.Variant == layout }) {
				t.Errorf("%s: no solve with %s", bp, layout)
			}
		}
	}
	for _, s := range rep.Solves {
		// A 5³ mesh at N = 2: 11³ nodes; 5 iterations.
		if s.Err != "" || s.Iterations != 5 || s.DOFs != 11*11*11 || !(s.GDOFs > 0) || !(s.Error > 0 && s.Error < 1) {
			t.Errorf("%+v", s)
		}
	}
	for _, tc := range []struct {
		name string
		args []string
		msg  string
	}{
		{"no iterations", []string{"--iterations", "0"}, "--iterations 0"},
		{"huge mesh", []string{"--bp-dofs", "1000000000000"}, "--bp-dofs"},
		{"negative λ", []string{"--lambda", "-1"}, "λ ≥ 0"},
	} {
		code, _, stderr := run(t, append([]string{"fem", "bench", "--kernel", "bp5", "--order", "2", "--backend", "c"}, tc.args...)...)
		if code != ExitUsage || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.msg) {
			t.Errorf("%s: exit %d, stderr %q", tc.name, code, stderr)
		}
	}
}

// fem gen: each operator's default layout in each dialect, with launch
// metadata; a layout of another operator is a one-line usage error.
func TestFEMGen(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		kernel, backend, want string
	}{
		{"bk5", "cuda", "slab-lit/e1"},
		{"bk3", "opencl", "cube-lit/e1"},
		{"bk1", "c", "cpu/e1"},
	} {
		meta := filepath.Join(dir, tc.kernel+".json")
		code, stdout, stderr := run(t, "fem", "gen", "--kernel", tc.kernel, "--order", "2", "--backend", tc.backend, "--meta", meta)
		if code != ExitOK || !strings.Contains(stdout, tc.want) {
			t.Errorf("%s %s: exit %d, %q in the source: %v; %s", tc.kernel, tc.backend, code, tc.want, strings.Contains(stdout, tc.want), stderr)
			continue
		}
		raw, err := os.ReadFile(meta)
		if err != nil || !strings.Contains(string(raw), `"variant": "`+tc.want+`"`) {
			t.Errorf("%s: metadata %v: %.200s", tc.kernel, err, raw)
		}
	}
	code, _, stderr := run(t, "fem", "gen", "--kernel", "bk5", "--order", "3", "--variant", "cube/e1")
	if code == ExitOK || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "no layout") {
		t.Errorf("bk5 with cube/e1: exit %d, %q", code, stderr)
	}
}
