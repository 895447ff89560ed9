package load

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/operator"
	"github.com/bespoke-hpc/bespoke/operator/mtx"
	"github.com/bespoke-hpc/bespoke/operator/npy"
)

// tree writes files (path relative to a new temporary directory → content
// or operator) and returns the directory.
func tree(t *testing.T, files map[string]any) string {
	t.Helper()
	root := t.TempDir()
	for rel, c := range files {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		switch c := c.(type) {
		case string:
			err = os.WriteFile(p, []byte(c), 0o644)
		case *operator.Operator:
			if strings.HasSuffix(p, ".npy") {
				var f *os.File
				if f, err = os.Create(p); err == nil {
					err = npy.Write(f, c)
					f.Close()
				}
			} else {
				err = mtx.WriteFile(p, c)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func mustOp(t *testing.T, rows, cols int, data ...float64) *operator.Operator {
	t.Helper()
	op, err := operator.New("x", rows, cols, data)
	if err != nil {
		t.Fatal(err)
	}
	return op
}

func TestFile(t *testing.T) {
	root := tree(t, map[string]any{
		"m6-sp.mtx": mustOp(t, 1, 2, 1, 2),
		"m0.npy":    mustOp(t, 2, 1, 3, 4),
		"m3.txt":    "5 6\n7 8\n",
		"m132":      "9\n",
		"M460.MTX":  mustOp(t, 1, 1, 10),
	})
	tests := []struct {
		file, name string
		first      float64
	}{
		{"m6-sp.mtx", "m6", 1},
		{"m0.npy", "m0", 3},
		{"m3.txt", "m3", 5},
		{"m132", "m132", 9},
		{"M460.MTX", "M460", 10},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			p := filepath.Join(root, tt.file)
			op, err := File(p)
			if err != nil {
				t.Fatal(err)
			}
			if op.Name != tt.name || op.Source != p || op.Data[0] != tt.first {
				t.Errorf("Name %q Source %q first %v, want %q %q %v", op.Name, op.Source, op.Data[0], tt.name, p, tt.first)
			}
		})
	}
}

func TestPaths(t *testing.T) {
	root := tree(t, map[string]any{
		"p2/tri/m6-sp.mtx":     mustOp(t, 1, 1, 1),
		"p1/hex/m3-sp.npy":     mustOp(t, 1, 1, 2),
		"p1/hex/m0-sp.mtx":     mustOp(t, 1, 1, 3),
		"p1/hex/notes.txt":     "not an operator\n",
		".git/objects/x.mtx":   "garbage",
		"p1/.cache/stale.mtx":  "garbage",
		"single/m132-sp.mtx":   mustOp(t, 1, 1, 4),
		"single/other/m9.mtx":  mustOp(t, 1, 1, 5),
		"single/other/README":  "x",
		"single/other/m10.npy": mustOp(t, 1, 1, 6),
	})
	ops, err := Paths([]string{
		filepath.Join(root, "p1"),
		filepath.Join(root, "p2"),
		filepath.Join(root, "single", "m132-sp.mtx"),
		filepath.Join(root, "single", "other"),
	})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, op := range ops {
		names = append(names, op.Name)
	}
	want := "hex/m0 hex/m3 tri/m6 m132 m10 m9"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("names %q, want %q", got, want)
	}
}

func TestPathsErrors(t *testing.T) {
	root := tree(t, map[string]any{
		"good/a/m0.mtx":  mustOp(t, 1, 1, 1),
		"bad/a/m0.mtx":   mustOp(t, 1, 1, 1),
		"bad/b/m3.mtx":   "%%MatrixMarket matrix coordinate real general\n2 2 1\n3 1 1\n",
		"bad/c/m6.mtx":   "not even a banner",
		"none/notes.txt": "x",
		"bad.txt":        "1 2\n3\n",
	})
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"first bad file in dir", []string{"good", "bad"}, filepath.Join(root, "bad", "b", "m3.mtx") + ":3: row index 3 out of range 1..2"},
		{"no operator files", []string{"none"}, "load: no .mtx or .npy files under " + filepath.Join(root, "none")},
		{"bad file arg", []string{"bad.txt"}, filepath.Join(root, "bad.txt") + ":2: row has 1 values, expected 2"},
		{"missing", []string{"absent"}, "stat " + filepath.Join(root, "absent") + ": no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var args []string
			for _, a := range tt.args {
				args = append(args, filepath.Join(root, a))
			}
			ops, err := Paths(args)
			if err == nil {
				t.Fatalf("no error, read %d operators", len(ops))
			}
			if err.Error() != tt.want {
				t.Errorf("error\n got %s\nwant %s", err, tt.want)
			}
		})
	}
}

func TestPyFRBeta(t *testing.T) {
	tests := []struct {
		name string
		want float64
	}{
		{"p3/hex/m6", 1}, {"p3/hex/m3", 1}, {"m6", 1}, {"m3-sp.mtx", 1},
		{"p3/hex/m0", 0}, {"p3/hex/m132", 0}, {"p3/hex/m460", 0},
		{"m36", 0}, {"m3/other", 0}, {"", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PyFRBeta(tt.name); got != tt.want {
				t.Errorf("PyFRBeta(%q) = %v, want %v", tt.name, got, tt.want)
			}
		})
	}
}

// Operators of several arguments named alike get the shortest suffixes of
// their paths that tell them apart; the others keep their names.
func TestUniqueNames(t *testing.T) {
	root := t.TempDir()
	write := func(rel string) {
		p := filepath.Join(root, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte("%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 2.0\n"), 0o644)
	}
	for _, rel := range []string{"p3/hex/m0-sp.mtx", "p6/hex/m0-sp.mtx", "p6/hex/m6-sp.mtx", "a/x/m0-sp.mtx"} {
		write(rel)
	}
	ops, err := Paths([]string{filepath.Join(root, "p3"), filepath.Join(root, "p6"), filepath.Join(root, "a/x/m0-sp.mtx")})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, op := range ops {
		names = append(names, op.Name)
	}
	if got, want := strings.Join(names, " "), "p3/hex/m0 p6/hex/m0 hex/m6 m0"; got != want {
		t.Errorf("names %q, want %q", got, want)
	}
}
