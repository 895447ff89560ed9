package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// No output may name an input or another output of the same run, compared
// as files (through links and other spellings); every size, limit and
// output is checked before anything is built; and each refusal is one line
// within seconds (issue 37: defects 1, 2, 4 and 9).
func TestOutputsAndLimitsUpFront(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("BESPOKE_CACHE_DIR", filepath.Join(dir, "cache"))
	const m0Text = "%%MatrixMarket matrix coordinate real general\n3 2 4\n1 1 1.5\n2 2 -2\n3 1 0.25\n3 2 1\n"
	v := writeFile(t, dir, "v.mtx", m0Text)
	ops := filepath.Join(dir, "ops")
	if err := os.MkdirAll(ops, 0o755); err != nil {
		t.Fatal(err)
	}
	inDir := writeFile(t, ops, "m0.mtx", m0Text)
	link := filepath.Join(dir, "link.mtx")
	if err := os.Symlink(v, link); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "sub", "..", "v.mtx") // v.mtx spelt otherwise
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A .npy E-vector of 6 elements of (N+1)³ = 64 nodes, for fem apply.
	u := filepath.Join(dir, "u.npy")
	writeNPY(t, u, 6, 64, make([]float64, 6*64))
	uLink := filepath.Join(dir, "u-link.npy")
	if err := os.Symlink(u, uLink); err != nil {
		t.Fatal(err)
	}
	nodes := filepath.Join(dir, "x.npy")
	writeNPY(t, nodes, 4, 3, []float64{0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1})
	cells := filepath.Join(dir, "c.npy")
	writeNPY(t, cells, 1, 4, []float64{0, 1, 2, 3})
	out := func(name string) string { return filepath.Join(dir, "out", name) }
	inputs := map[string]string{v: m0Text, inDir: m0Text}
	for _, tc := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		// Defect 1: outputs that are inputs.
		{"gen -o is the input", []string{"gen", v, "--backend", "c", "--variant", "cstream", "-o", v}, ExitUsage, "-o " + v + " would overwrite the input file " + v},
		{"gen --meta is the input", []string{"gen", v, "--backend", "c", "--variant", "cstream", "--meta", v}, ExitUsage, "--meta " + v + " would overwrite the input"},
		{"gen -o through a link", []string{"gen", v, "--backend", "c", "--variant", "cstream", "-o", link}, ExitUsage, "would overwrite the input"},
		{"gen -o spelt otherwise", []string{"gen", v, "--backend", "c", "--variant", "cstream", "-o", other}, ExitUsage, "would overwrite the input"},
		{"gen input through a link", []string{"gen", link, "--backend", "c", "--variant", "cstream", "-o", v}, ExitUsage, "would overwrite the input"},
		{"bench --json is the input", []string{"bench", v, "--backend", "c", "--json", v}, ExitUsage, "--json " + v + " would overwrite the input"},
		{"bench --csv is a file of an input folder", []string{"bench", ops, "--backend", "c", "--csv", inDir}, ExitUsage, "--csv " + inDir + " would overwrite the input"},
		{"tune --markdown is the input", []string{"tune", v, "--backend", "c", "--markdown", link}, ExitUsage, "would overwrite the input"},
		{"fem apply --out through a link", []string{"fem", "apply", "--mesh", "2x1x3", "--in", u, "--out", uLink}, ExitUsage, "--out " + uLink + " would overwrite the input --in " + u},
		{"integrate apply --out is --nodes", []string{"integrate", "apply", "--element", "tet", "--nodes", nodes, "--cells", cells, "--out", nodes}, ExitUsage, "would overwrite the input --nodes"},
		{"opencl-build OUTPUT is SOURCE", []string{"opencl-build", "--", "0:0", "", v, link}, ExitUsage, "OUTPUT " + link + " would overwrite the input SOURCE " + v},
		// Defects 1 and 2: two outputs that are one file.
		{"integrate bench --json is --csv", []string{"integrate", "bench", "--backend", "c", "--json", out("s.out"), "--csv", out("s.out")}, ExitUsage, "--json " + out("s.out") + " and --csv " + out("s.out") + " name the same file"},
		{"bench --markdown is --gobench", []string{"bench", v, "--backend", "c", "--gobench", out("r"), "--markdown", filepath.Join(dir, "sub", "..", "out", "r")}, ExitUsage, "name the same file"},
		{"bench --json is a chart of --plot", []string{"bench", v, "--backend", "c", "--plot", out("plots"), "--json", out("plots/roof.svg")}, ExitUsage, "name the same file"},
		{"fem bench --json is --bp-json", []string{"fem", "bench", "--kernel", "bk5,bp5", "--order", "1", "--backend", "c", "--json", out("x.json"), "--bp-json", out("x.json")}, ExitUsage, "--bp-json"},
		{"pum bench --json is --csv", []string{"pum", "bench", "--json", out("p"), "--csv", out("p")}, ExitUsage, "name the same file"},
		{"pum assemble -o is --rhs", []string{"pum", "assemble", "--dim", "2", "--level", "2", "--degree", "1", "-o", out("A.mtx"), "--rhs", out("A.mtx")}, ExitUsage, "-o " + out("A.mtx") + " and --rhs " + out("A.mtx") + " name the same file"},
		{"gen -o is --meta", []string{"gen", v, "--backend", "c", "--variant", "cstream", "-o", out("k.c"), "--meta", out("k.c")}, ExitUsage, "name the same file"},
		// Defect 4: outputs that cannot be written, refused before the run.
		{"bench --json /dev/full", []string{"bench", v, "--backend", "c", "--json", "/dev/full"}, ExitUsage, "--json /dev/full: cannot be written"},
		{"bench --json a folder", []string{"bench", v, "--backend", "c", "--json", dir}, ExitUsage, "is a folder"},
		{"pum bench --csv a folder", []string{"pum", "bench", "--csv", dir}, ExitUsage, "is a folder"},
		{"ops -o a file", []string{"ops", "--element", "hex", "--order", "2", "-o", v}, ExitUsage, "not a folder"},
		{"gen -o below a file", []string{"gen", v, "--backend", "c", "--variant", "cstream", "-o", filepath.Join(v, "k.c")}, ExitUsage, "is not a folder"},
		// Defect 4: sizes and limits before anything is built.
		{"bench two billion columns", []string{"bench", v, "--backend", "c", "--n", "2000000000"}, ExitFailure, "--max-memory"},
		{"integrate bench 2^24 hexahedra", []string{"integrate", "bench", "--element", "hex", "--problem", "laplace", "--backend", "c", "--n", "16777216", "--max-memory", "8G"}, ExitFailure, "--max-memory raises it"},
		{"bench --max-memory 1", []string{"bench", v, "--backend", "c", "--max-memory", "1"}, ExitUsage, "--max-memory \"1\": want at least 1M"},
		{"fem bench --bp-dofs 2^27", []string{"fem", "bench", "--kernel", "bp5", "--order", "1", "--bp-dofs", "134217728", "--backend", "c"}, ExitFailure, "--max-memory raises it"},
		{"fem bench bp5 --max-memory 1", []string{"fem", "bench", "--kernel", "bp5", "--order", "1", "--max-memory", "1", "--backend", "c"}, ExitUsage, "want at least 1M"},
		{"fem bench --bp-variant bogus", []string{"fem", "bench", "--kernel", "bk5,bp5", "--order", "1", "--bp-variant", "bogus", "--backend", "c"}, ExitUsage, "--bp-variant \"bogus\""},
		{"pum assemble level 9 p5", []string{"pum", "assemble", "--dim", "2", "--level", "9", "--degree", "5", "-o", out("big.mtx")}, ExitFailure, "--max-output"},
		{"pum assemble beyond --max-memory", []string{"pum", "assemble", "--dim", "2", "--level", "8", "--degree", "5", "-o", out("big.mtx"), "--max-output", "100G", "--max-memory", "1G"}, ExitFailure, "--max-memory"},
		// Defect 9.
		{"gen --best --variant", []string{"gen", v, "--best", "--variant", "cstream", "--backend", "c"}, ExitUsage, "--best or --variant"},
		{"gen --name malloc", []string{"gen", v, "--backend", "c", "--variant", "cstream", "--name", "malloc"}, ExitUsage, "C library"},
		{"gen --name sqrtf", []string{"gen", v, "--backend", "c", "--variant", "cstream", "--name", "sqrtf"}, ExitUsage, "C library"},
		{"fem gen --variant slab-lit/e0", []string{"fem", "gen", "--variant", "slab-lit/e0", "--backend", "c"}, ExitUsage, "slab-lit/e0"},
		{"pum bench --solve-tol without --solve", []string{"pum", "bench", "--solve-tol", "5"}, ExitUsage, "--solve-tol applies only with --solve"},
		{"pum bench --solve-iter without --solve", []string{"pum", "bench", "--solve-iter", "5"}, ExitUsage, "--solve-iter applies only with --solve"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			code, _, stderr := run(t, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, tc.code, stderr)
			}
			if strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "bespoke: ") || !strings.Contains(stderr, tc.msg) {
				t.Errorf("stderr %q: want one line starting with bespoke: and containing %q", stderr, tc.msg)
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("took %v (at most 5 s)", took.Round(time.Millisecond))
			}
			for p, text := range inputs {
				if b, err := os.ReadFile(p); err != nil || string(b) != text {
					t.Fatalf("input %s changed: %v %q", p, err, b)
				}
			}
			if ents, _ := os.ReadDir(filepath.Join(dir, "out")); len(ents) > 0 {
				t.Errorf("a refused run wrote %v", ents)
			}
		})
	}
}

// Outputs are written whole or not at all, and a run with distinct
// outputs writes them.
func TestOutputsWritten(t *testing.T) {
	dir := t.TempDir()
	a, f := filepath.Join(dir, "A.mtx"), filepath.Join(dir, "f.npy")
	if code, _, stderr := run(t, "pum", "assemble", "--dim", "2", "--level", "2", "--degree", "1", "-o", a, "--rhs", f); code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	ma, err := os.ReadFile(a)
	if err != nil || !strings.HasPrefix(string(ma), "%%MatrixMarket") {
		t.Fatalf("A.mtx: %v %.40q", err, ma)
	}
	if b, err := os.ReadFile(f); err != nil || !strings.HasPrefix(string(b), "\x93NUMPY") {
		t.Fatalf("f.npy: %v %.20q", err, b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("files left beside the outputs: %v", ents)
	}
}

// The reproducers of sizes bounded too late, run as a user runs
// them: each refused within 5 s and 1 GB.
func TestSizeReproducersBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	env := []string{"BESPOKE_CACHE_DIR=" + filepath.Join(dir, "cache"), "TMPDIR=" + dir}
	v := writeFile(t, dir, "v.mtx", denseMTX(8))
	for _, tc := range []struct {
		name string
		args []string
		msg  string
	}{
		{"bench --n 2000000000", []string{"bench", v, "--backend", "c", "--n", "2000000000"}, "--max-memory"},
		{"integrate bench --n 67108864", []string{"integrate", "bench", "--element", "hex", "--problem", "laplace", "--backend", "c", "--n", "67108864"}, "--max-memory"},
		{"integrate bench --n 16777216", []string{"integrate", "bench", "--element", "hex", "--problem", "laplace", "--backend", "c", "--n", "16777216", "--max-memory", "8G"}, "--max-memory"},
		{"fem bench bp5 --bp-dofs 2^27", []string{"fem", "bench", "--kernel", "bp5", "--order", "1", "--bp-dofs", "134217728", "--backend", "c"}, "--max-memory"},
		{"pum assemble level 9 p5", []string{"pum", "assemble", "--dim", "2", "--level", "9", "--degree", "5", "-o", filepath.Join(dir, "big.mtx")}, "--max-output"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runBinary(t, env, tc.args...)
			if r.code == ExitOK || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, tc.msg) {
				t.Errorf("exit %d, stderr %q: want a one-line error naming %s", r.code, r.stderr, tc.msg)
			}
			if r.took > 5*time.Second || r.maxRSSKB > 1<<20 {
				t.Errorf("took %v and %d MB (limits 5 s, 1 GB)", r.took.Round(time.Millisecond), r.maxRSSKB>>10)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "big.mtx")); err == nil {
		t.Error("a refused assembly wrote its matrix")
	}
}
