package load

import (
	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"path/filepath"
	"testing"
)

// pyfrMatsCount is how many operators the PyFR dump holds: p1..p6 × 4
// element types × 5 operators.
const pyfrMatsCount = 120

// pyfrMats is testenv.PyFRMats: ../shared/pyfr-mats, or a skip naming the path.
func pyfrMats(t *testing.T) string { return testenv.PyFRMats(t) }

// TestPyFRMats loads the whole PyFR dump the way the command line does.
func TestPyFRMats(t *testing.T) {
	dir := pyfrMats(t)
	ops, err := Paths([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != pyfrMatsCount {
		t.Errorf("%d operators in %s, want %d", len(ops), dir, pyfrMatsCount)
	}
	names := map[string]bool{}
	betaOne := 0
	for _, op := range ops {
		if op.Rows <= 0 || op.Cols <= 0 {
			t.Errorf("%s: shape %s", op.Name, op.Shape())
		}
		if names[op.Name] {
			t.Errorf("duplicate name %s", op.Name)
		}
		names[op.Name] = true
		if PyFRBeta(op.Name) == 1 {
			betaOne++
		}
	}
	if !names["p3/hex/m6"] {
		t.Error("no operator named p3/hex/m6")
	}
	if want := pyfrMatsCount * 2 / 5; betaOne != want {
		t.Errorf("%d operators with β = 1, want %d (m3 and m6)", betaOne, want)
	}
	single, err := Paths([]string{filepath.Join(dir, "p3", "hex", "m6-sp.mtx")})
	if err != nil {
		t.Fatal(err)
	}
	if single[0].Name != "m6" {
		t.Errorf("file argument named %q, want m6", single[0].Name)
	}
}
