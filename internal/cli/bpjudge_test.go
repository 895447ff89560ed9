package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
)

// A BP solve is judged, not only timed: a λ whose load the precision
// cannot hold is refused before anything is built, and a solve that
// breaks down fails the run, in one line.
func TestFEMBenchBakeOffJudged(t *testing.T) {
	if _, err := host.Open(); err != nil {
		testenv.Unavailable(t, "c", err)
	}
	t.Setenv("BESPOKE_CACHE_DIR", filepath.Join(t.TempDir(), "cache"))
	bp := []string{"fem", "bench", "--kernel", "bp3", "--order", "1", "--backend", "c", "--bp-dofs", "1000", "--iterations", "5"}
	for _, tc := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"λ = 1e300", []string{"--lambda", "1e300"}, ExitUsage, "beyond the f64 range"},
		{"λ = 1e30 in f32", []string{"--lambda", "1e30", "--dtype", "f32"}, ExitUsage, "beyond the f32 range"},
		// pᵀAp overflows: α = 0, and x stays 0.
		{"solve that computes nothing", []string{"--lambda", "1e120"}, ExitFailure, "no better than x = 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := run(t, append(bp, tc.args...)...)
			// Progress lines ("bench: …"), then the one error line.
			lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
			last := lines[len(lines)-1]
			if code != tc.code || strings.Count(stderr, "bespoke: ") != 1 || !strings.HasPrefix(last, "bespoke: ") || !strings.Contains(last, tc.msg) {
				t.Errorf("exit %d, stderr %q; want exit %d and one error line with %q", code, stderr, tc.code, tc.msg)
			}
		})
	}
}
