package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// gen --family X writes a kernel without --variant for every family and
// dialect (--variant's default names a sparse kernel).
func TestGenEveryFamilyDefault(t *testing.T) {
	dir := t.TempDir()
	for _, fam := range [][]string{
		{"--family", "contract", "--order", "3", "--axis", "z"},
		{"--family", "fem", "--kernel", "bk3", "--order", "2"},
		{"--family", "fem", "--kernel", "bk5", "--order", "4"},
		{"--family", "integrate", "--element", "tet", "--problem", "laplace"},
	} {
		for _, be := range []string{"c", "opencl", "cuda"} {
			out := filepath.Join(dir, "k.src")
			args := append(append([]string{"gen"}, fam...), "--backend", be, "-o", out)
			code, _, stderr := run(t, args...)
			src, _ := os.ReadFile(out)
			if code != ExitOK || len(src) == 0 {
				t.Errorf("%s: exit %d, %d bytes: %s", strings.Join(args, " "), code, len(src), stderr)
			}
			os.Remove(out)
		}
	}
}
