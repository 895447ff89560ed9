package mtx

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// pyfrMatsCount is how many operators the PyFR dump holds: p1..p6 × 4
// element types × 5 operators.
const pyfrMatsCount = 120

// pyfrMats returns the PyFR operator directory, a sibling of the repository
// root (../shared/pyfr-mats), or skips the test when it is absent.
func pyfrMats(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skip("go.mod not found above the package directory; cannot locate ../shared/pyfr-mats")
		}
		dir = parent
	}
	mats := filepath.Join(filepath.Dir(dir), "shared", "pyfr-mats")
	if _, err := os.Stat(mats); err != nil {
		t.Skipf("PyFR operators not available at %s: %v", mats, err)
	}
	return mats
}

// TestPyFRMats reads every operator PyFR dumped.
func TestPyFRMats(t *testing.T) {
	dir := pyfrMats(t)
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".mtx") {
			return err
		}
		op, err := Read(path)
		if err != nil {
			return err
		}
		if op.Rows <= 0 || op.Cols <= 0 {
			t.Errorf("%s: shape %s", path, op.Shape())
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != pyfrMatsCount {
		t.Errorf("read %d operators from %s, want %d", n, dir, pyfrMatsCount)
	}
}
