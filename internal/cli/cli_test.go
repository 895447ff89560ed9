package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// run calls Main and returns its exit code, stdout and stderr.
func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(args, &out, &errb)
	return code, out.String(), errb.String()
}

// Bad input and bad usage get one line on stderr and their exit codes.
func TestErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.mtx")
	os.WriteFile(bad, []byte("%%MatrixMarket matrix coordinate real general\n2 2 1\n3 1 1.0\n"), 0o644)
	for _, tc := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"index out of range", []string{"stats", bad}, ExitFailure, "bad.mtx:3: row index 3 out of range 1..2"},
		{"missing file", []string{"stats", filepath.Join(dir, "none.mtx")}, ExitFailure, "none.mtx"},
		{"unknown flag", []string{"stats", "--nope", bad}, ExitUsage, "unknown flag"},
		{"unknown command", []string{"frobnicate"}, ExitUsage, "unknown command"},
		{"bad variant", []string{"gen", "--variant", "xstream", bad}, ExitFailure, "bad.mtx:3"},
		{"bad suite", []string{"bench", "--suite", "hex"}, ExitUsage, "suite"},
		{"ops without order", []string{"ops", "--element", "hex"}, ExitUsage, "--order"},
		{"ops bad element", []string{"ops", "--element", "prism", "--order", "2", "-o", dir}, ExitUsage, "prism"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := run(t, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, tc.code, stderr)
			}
			if strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "bespoke: ") || !strings.Contains(stderr, tc.msg) {
				t.Errorf("stderr %q: want one line starting with bespoke: and containing %q", stderr, tc.msg)
			}
			if strings.Contains(stderr, "goroutine") || strings.Contains(stderr, "panic") {
				t.Errorf("stack trace on stderr: %q", stderr)
			}
		})
	}
}

// ops writes operators that stats and gen read back.
func TestOpsRoundTrip(t *testing.T) {
	dir := t.TempDir()
	if code, _, stderr := run(t, "ops", "--element", "hex", "--order", "2", "--op", "all", "-o", dir); code != 0 {
		t.Fatalf("ops: exit %d: %s", code, stderr)
	}
	for _, name := range []string{"m0", "m1", "m2", "m3", "m4", "m6", "m132", "m460"} {
		if _, err := os.Stat(filepath.Join(dir, name+".mtx")); err != nil {
			t.Errorf("ops wrote no %s.mtx: %v", name, err)
		}
	}
	code, out, stderr := run(t, "stats", dir)
	if code != 0 || !strings.Contains(out, "m460") || !strings.Contains(out, "81") {
		t.Fatalf("stats: exit %d, out %q, err %q", code, out, stderr)
	}
	src := filepath.Join(dir, "k.cu")
	meta := filepath.Join(dir, "k.json")
	code, _, stderr = run(t, "gen", filepath.Join(dir, "m6.mtx"), "--backend", "cuda", "--variant", "cstream/x128-w2",
		"--beta", "1", "--n", "1000", "--ldb", "1000", "--ldc", "1000", "-o", src, "--meta", meta)
	if code != 0 {
		t.Fatalf("gen: exit %d: %s", code, stderr)
	}
	text, _ := os.ReadFile(src)
	js, _ := os.ReadFile(meta)
	if !strings.Contains(string(text), "__global__") || !strings.Contains(string(js), `"per": 256`) {
		t.Errorf("gen output looks wrong:\n%.300s\n%s", text, js)
	}
}

// The built-in suite is PyFR's operator set, named as in PyFR's dumps.
func TestSuite(t *testing.T) {
	ops, err := Suite(DefaultSuite)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, op := range ops {
		names = append(names, op.Name+" "+op.Shape())
	}
	want := "p3/hex/m0 96×64,p3/hex/m3 64×96,p3/hex/m6 192×96,p3/hex/m132 64×192,p3/hex/m460 192×64"
	if got := strings.Join(names, ","); got != want {
		t.Errorf("suite %s = %s, want %s", DefaultSuite, got, want)
	}
	if ops, err := Suite("hex:p1-2,quad:p3"); err != nil || len(ops) != 15 {
		t.Errorf("hex:p1-2,quad:p3 gave %d operators, %v", len(ops), err)
	}
}
