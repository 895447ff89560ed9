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

// fem bench --bp-scatter transpose,fused: each layout solved both ways,
// side by side, the fused row's variant ending in +fused; an unknown
// method is a one-line usage error.
func TestFEMBenchBakeOffScatters(t *testing.T) {
	if _, err := host.Open(); err != nil {
		testenv.Unavailable(t, "c", err)
	}
	dir := t.TempDir()
	t.Setenv("BESPOKE_CACHE_DIR", filepath.Join(dir, "cache"))
	out := filepath.Join(dir, "bp.json")
	code, stdout, stderr := run(t, "fem", "bench", "--kernel", "bp5", "--order", "2", "--backend", "c", "--bp-dofs", "4000", "--iterations", "5",
		"--bp-variant", "cpu/e1", "--bp-scatter", "transpose,fused", "--bp-json", out)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "cpu/e1+fused") {
		t.Errorf("no fused row in\n%s", stdout)
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
	want := []bpRow{{Variant: "cpu/e1", Scatter: "transpose"}, {Variant: "cpu/e1+fused", Scatter: "fused"}}
	if len(rep.Solves) != len(want) {
		t.Fatalf("%d solves, want %d: %+v", len(rep.Solves), len(want), rep.Solves)
	}
	for i, s := range rep.Solves {
		if s.Variant != want[i].Variant || s.Scatter != want[i].Scatter || s.Err != "" || s.Iterations != 5 || !(s.GDOFs > 0) || !(s.Error > 0 && s.Error < 1) {
			t.Errorf("solve %d: %+v, want %s with %s", i, s, want[i].Variant, want[i].Scatter)
		}
	}
	code, _, stderr = run(t, "fem", "bench", "--kernel", "bp5", "--order", "2", "--backend", "c", "--bp-scatter", "fused,gossip")
	if code != ExitUsage || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, `unknown method "gossip"`) {
		t.Errorf("--bp-scatter gossip: exit %d, stderr %q", code, stderr)
	}
}
