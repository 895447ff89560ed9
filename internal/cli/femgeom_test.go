package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
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
