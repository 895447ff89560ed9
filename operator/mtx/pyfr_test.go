package mtx

import (
	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// pyfrMatsCount is how many operators the PyFR dump holds: p1..p6 × 4
// element types × 5 operators.
const pyfrMatsCount = 120

// pyfrMats is testenv.PyFRMats: ../shared/pyfr-mats, or a skip naming the path.
func pyfrMats(t *testing.T) string { return testenv.PyFRMats(t) }

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
