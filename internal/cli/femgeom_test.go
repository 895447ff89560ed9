package cli

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/operator/npy"
)

// fem bench solves the BPs and times the operators with the geometry
// computed in the kernel beside the stored factors: every source the
// mesh allows is a layout (the BPs' box is Cartesian: trilinear and
// affine), and the solves agree.
func TestFEMBenchGeometry(t *testing.T) {
	if _, err := host.Open(); err != nil {
		testenv.Unavailable(t, "c", err)
	}
	dir := t.TempDir()
	t.Setenv("BESPOKE_CACHE_DIR", filepath.Join(dir, "cache"))
	out := filepath.Join(dir, "bp.json")
	code, stdout, stderr := run(t, "fem", "bench", "--kernel", "bp5", "--order", "2", "--backend", "c", "--bp-dofs", "4000", "--iterations", "5", "--bp-json", out)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
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
	errs := map[string]float64{}
	for _, s := range rep.Solves {
		if s.Err != "" || !(s.GDOFs > 0) {
			t.Errorf("%+v", s)
		}
		errs[s.Variant] = s.Error
	}
	for _, v := range []string{"cpu/e1", "cpu/e1/tri", "cpu/e1/aff"} {
		e, ok := errs[v]
		if !ok {
			t.Errorf("no solve with %s in\n%s", v, stdout)
			continue
		}
		if d := e - errs["cpu/e1"]; d > 1e-9*e || -d > 1e-9*e {
			t.Errorf("%s: error %.12g, the stored factors' %.12g", v, e, errs["cpu/e1"])
		}
	}
	jsonOut := filepath.Join(dir, "bk.json")
	code, _, stderr = run(t, "fem", "bench", "--kernel", "bk5", "--order", "2", "--backend", "c", "--n", "64", "--reps", "3",
		"--variant", "cpu/e1,cpu/e1/tri", "--no-store", "--json", jsonOut)
	if code != ExitOK {
		t.Fatalf("bench: exit %d: %s", code, stderr)
	}
	raw, err = os.ReadFile(jsonOut)
	if err != nil {
		t.Fatal(err)
	}
	var bk struct {
		Problems []struct {
			Candidates []struct {
				Name     string `json:"name"`
				Verified bool   `json:"verified"`
				Bytes    int64  `json:"bytes"`
			} `json:"candidates"`
		} `json:"problems"`
	}
	if err := json.Unmarshal(raw, &bk); err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, p := range bk.Problems {
		for _, c := range p.Candidates {
			seen++
			if !c.Verified || (c.Bytes > 0) != strings.HasSuffix(c.Name, "/tri") {
				t.Errorf("%s: verified %v, %d bytes", c.Name, c.Verified, c.Bytes)
			}
		}
	}
	if seen != 2 {
		t.Errorf("%d candidates, want 2", seen)
	}
}

// fem apply runs the variants that compute the geometry on the meshes
// that allow them, matching the float64 reference, and refuses an
// affine variant on a perturbed box with a one-line usage error.
func TestFEMApplyGeometry(t *testing.T) {
	if _, err := host.Open(); err != nil {
		testenv.Unavailable(t, "c", err)
	}
	dir := t.TempDir()
	t.Setenv("BESPOKE_CACHE_DIR", filepath.Join(dir, "cache"))
	const order, elems = 2, 2 * 2 * 1
	nodes := (order + 1) * (order + 1) * (order + 1)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	u := make([]float64, elems*nodes)
	for i := range u {
		u[i] = rng.Float64() - 0.5
	}
	in := filepath.Join(dir, "u.npy")
	writeNPY(t, in, elems, nodes, u)
	for _, tc := range []struct {
		kernel, variant, perturb string
	}{
		{"bk5", "slab-lit/e1/tri", "0.2"},
		{"bk3", "cube-lit/e1/tri", "0.2"},
		{"bk5", "cpu/e1/aff", "0"},
		{"bk1", "cube/e2/aff", "0"},
	} {
		common := []string{"fem", "apply", "--kernel", tc.kernel, "--order", "2", "--mesh", "2x2x1", "--perturb", tc.perturb, "--in", in}
		ref, got := filepath.Join(dir, "ref.npy"), filepath.Join(dir, "got.npy")
		if code, _, stderr := run(t, append(common, "--out", ref)...); code != ExitOK {
			t.Fatalf("%s reference: exit %d: %s", tc.kernel, code, stderr)
		}
		if code, _, stderr := run(t, append(common, "--out", got, "--backend", "c", "--variant", tc.variant)...); code != ExitOK {
			t.Fatalf("%s %s: exit %d: %s", tc.kernel, tc.variant, code, stderr)
		}
		_, _, want, err := npy.ReadMatrix(ref)
		if err != nil {
			t.Fatal(err)
		}
		_, _, v, err := npy.ReadMatrix(got)
		if err != nil {
			t.Fatal(err)
		}
		if e := relErr(v, want); e > 1e-12 {
			t.Errorf("%s %s: relative error %.3g", tc.kernel, tc.variant, e)
		}
	}
	// 2×2×2: the middle vertex moves (2×2×1 has no interior vertex).
	in8 := filepath.Join(dir, "u8.npy")
	writeNPY(t, in8, 8, nodes, append(u, u...))
	code, _, stderr := run(t, "fem", "apply", "--kernel", "bk5", "--order", "2", "--mesh", "2x2x2", "--perturb", "0.2", "--in", in8,
		"--out", filepath.Join(dir, "x.npy"), "--backend", "c", "--variant", "cpu/e1/aff")
	if code != ExitUsage || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "not affine") {
		t.Errorf("affine on a perturbed box: exit %d, stderr %q", code, stderr)
	}
}

// relErr is max|a−b| / max|b|.
func relErr(a, b []float64) float64 {
	diff, norm := 0.0, 0.0
	for i := range b {
		diff = math.Max(diff, math.Abs(a[i]-b[i]))
		norm = math.Max(norm, math.Abs(b[i]))
	}
	return diff / norm
}
