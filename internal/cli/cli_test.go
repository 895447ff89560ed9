package cli

import (
	"bytes"
	"encoding/json"
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
		// Names that parse but whose counts wrap their products: one
		// usage error before anything is built or timed.
		{"verify variant that overflows", []string{"verify", "--backend", "c", "--variant", "cstream-msplit/x16-y1152921504606846976"}, ExitUsage, "split out of"},
		{"bench variant that overflows", []string{"bench", "--backend", "c", "--no-store", "--variant", "cstream/x128,blocks/x16-y1152921504606846976"}, ExitUsage, "x·y ≤"},
		{"ops without order", []string{"ops", "--element", "hex"}, ExitUsage, "--order"},
		{"ops bad element", []string{"ops", "--element", "wedge", "--order", "2", "-o", dir}, ExitUsage, `"wedge" (want one of quad, hex, tri, tet, pri, pyr)`},
		{"ops order past the limit", []string{"ops", "--element", "prism", "--order", "9", "-o", dir}, ExitUsage, "1 ≤ p ≤ 8"},
		{"ops tabulated points without a file", []string{"ops", "--element", "tri", "--order", "2", "-o", dir}, ExitUsage, "points file"},
		{"ops unreadable points file", []string{"ops", "--element", "tri", "--order", "1", "--points-file", bad, "-o", dir}, ExitUsage, "bad.mtx: line"},
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

// ops builds the non-tensor elements from points files: a pyramid needs
// only its triangular faces' flux points, a triangle its solution points.
func TestOpsPointsFiles(t *testing.T) {
	dir := t.TempDir()
	tri := filepath.Join(dir, "tri.txt")
	// Any three points in general position inside the reference triangle.
	if err := os.WriteFile(tri, []byte("# s t\n-0.6 -0.6\n0.2 -0.6\n-0.6 0.2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args  []string
		shape string // of m132
	}{
		{[]string{"--element", "pyramid", "--face-points-file", tri}, "5×15"},
		{[]string{"--element", "tri", "--points-file", tri}, "3×6"},
		{[]string{"--element", "pri", "--face-points-file", tri, "--op", "m132"}, "6×18"},
	} {
		out := filepath.Join(dir, tc.args[1])
		args := append([]string{"ops", "--order", "1", "-o", out}, tc.args...)
		code, stdout, stderr := run(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		if !strings.Contains(stdout, "m132.mtx  "+tc.shape) {
			t.Errorf("%v: output %q, want m132 %s", args, stdout, tc.shape)
		}
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

// tune stores a choice that a second tune reuses with nothing timed and
// that gen --best writes; with the store damaged, gen --best says so.
func TestTuneThenGenBest(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("BESPOKE_CACHE_DIR", filepath.Join(dir, "cache"))
	t.Setenv("BESPOKE_NO_CACHE", "")
	op := filepath.Join(dir, "a.mtx")
	os.WriteFile(op, []byte("%%MatrixMarket matrix coordinate real general\n3 2 4\n1 1 1.5\n2 2 -2\n3 1 0.25\n3 2 1\n"), 0o644)
	sizes := []string{"--backend", "c", "--n", "4096", "--working-set", "1M", "--reps", "3"}
	out1 := filepath.Join(dir, "first.json")
	if code, _, stderr := run(t, append([]string{"tune", op, "-q", "--json", out1}, sizes...)...); code != ExitOK {
		t.Fatalf("tune: exit %d: %s", code, stderr)
	}
	out2 := filepath.Join(dir, "second.json")
	if code, _, stderr := run(t, append([]string{"tune", op, "-q", "--json", out2}, sizes...)...); code != ExitOK {
		t.Fatalf("second tune: exit %d: %s", code, stderr)
	}
	type report struct {
		Problems []struct {
			Cached bool `json:"cached"`
			Choice struct {
				Winner string `json:"winner"`
			} `json:"choice"`
		} `json:"problems"`
	}
	read := func(path string) report {
		var r report
		data, err := os.ReadFile(path)
		if err != nil || json.Unmarshal(data, &r) != nil || len(r.Problems) != 1 {
			t.Fatalf("%s: %v %.200q", path, err, data)
		}
		return r
	}
	first, second := read(out1), read(out2)
	winner := first.Problems[0].Choice.Winner
	if first.Problems[0].Cached || !second.Problems[0].Cached || second.Problems[0].Choice.Winner != winner || winner == "" {
		t.Fatalf("first %+v, second %+v: want the second from the store", first, second)
	}
	best := []string{"gen", op, "--best", "--backend", "c", "--n", "4096"}
	code, src, stderr := run(t, best...)
	switch {
	case winner == "openblas" || winner == "blas": // the CPU BLAS baseline won the race
		if code != ExitFailure || !strings.Contains(stderr, "a vendor library: no kernel to write") {
			t.Fatalf("gen --best with %s chosen: exit %d, stderr %q", winner, code, stderr)
		}
	case code != ExitOK || !strings.Contains(src, "("+winner+")"):
		t.Fatalf("gen --best: exit %d, stderr %q; want the source of %s", code, stderr, winner)
	}
	entries, _ := filepath.Glob(filepath.Join(dir, "cache", "tune", "*.entry"))
	for _, e := range entries {
		os.WriteFile(e, []byte("damaged"), 0o644)
	}
	if code, _, stderr := run(t, best...); code != ExitFailure || !strings.Contains(stderr, "run bespoke tune first") {
		t.Fatalf("gen --best on a damaged store: exit %d, %q", code, stderr)
	}
}
