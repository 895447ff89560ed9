package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// report perf wires its flags to report.WritePerformancePage: a page and
// its charts from a fixture, one-line errors with their exit codes.
func TestReportPerf(t *testing.T) {
	dir := t.TempDir()
	fixture := filepath.Join("..", "..", "report", "testdata", "perf", "fem-c-f64.json")
	out := filepath.Join(dir, "docs", "performance.md")
	os.MkdirAll(filepath.Dir(out), 0o755)
	plots := filepath.Join(dir, "docs", "plots")
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte("{"), 0o644)
	for _, tc := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"page", []string{"report", "perf", "--out", out, "--plots", plots, fixture}, ExitOK, ""},
		{"no files", []string{"report", "perf", "--out", out}, ExitUsage, "arg"},
		{"bad file", []string{"report", "perf", "--out", out, bad}, ExitFailure, "bad.json: not a bench JSON file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := run(t, tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.msg) || strings.Count(stderr, "\n") > 1 {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, stderr, tc.code, tc.msg)
			}
		})
	}
	page, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "](plots/fem-amd-epyc-c-f64.svg)") {
		t.Errorf("page does not link its chart relative to itself:\n%s", page)
	}
	if _, err := os.Stat(filepath.Join(plots, "fem-amd-epyc-c-f64.svg")); err != nil {
		t.Error(err)
	}
}
