package fr

import (
	"fmt"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"math"
	"path/filepath"
	"testing"

	"github.com/bespoke-hpc/bespoke/operator/mtx"
)

// pyfrTol is the entry-wise agreement required with PyFR's dumped
// operators: PyFR's own cleaning tolerance, far above the ~1e-13 rounding
// differences between its Vandermonde-based evaluation and ours.
const pyfrTol = 1e-10

// pyfrMatsDir is testenv.PyFRMats: ../shared/pyfr-mats, or a skip naming the path.
func pyfrMatsDir(t *testing.T) string { return testenv.PyFRMats(t) }

// TestMatchesPyFR compares every quad and hex operator PyFR dumped (its
// defaults: Gauss–Legendre solution and flux points, DG correction) with
// ours: same shape, identical sparsity pattern, entries within pyfrTol.
func TestMatchesPyFR(t *testing.T) {
	dir := pyfrMatsDir(t)
	files := map[string]string{ // file stem → operator
		"m0-sp": "m0", "m3-sp": "m3", "m6-sp": "m6", "m132-sp": "m132", "m460-sp": "m460",
	}
	checked, worst := 0, 0.0
	for p := 1; p <= 6; p++ {
		for _, kind := range Kinds {
			el, err := Element(kind, p, "", "")
			if err != nil {
				t.Fatal(err)
			}
			for _, stem := range []string{"m0-sp", "m3-sp", "m6-sp", "m132-sp", "m460-sp"} {
				path := filepath.Join(dir, fmt.Sprintf("p%d", p), kind, stem+".mtx")
				t.Run(fmt.Sprintf("p%d/%s/%s", p, kind, stem), func(t *testing.T) {
					want, err := mtx.Read(path)
					if err != nil {
						t.Fatalf("reading %s: %v", path, err)
					}
					got, err := el.Operator(files[stem])
					if err != nil {
						t.Fatal(err)
					}
					if got.Rows != want.Rows || got.Cols != want.Cols {
						t.Fatalf("shape %s, PyFR %s", got.Shape(), want.Shape())
					}
					maxd, bad := 0.0, 0
					for i := range want.Data {
						g, w := got.Data[i], want.Data[i]
						if (g == 0) != (w == 0) {
							if bad++; bad <= 5 {
								t.Errorf("sparsity differs at (%d,%d): got %v, PyFR %v", i/want.Cols+1, i%want.Cols+1, g, w)
							}
						}
						d := math.Abs(g - w)
						maxd = math.Max(maxd, d)
						if d > pyfrTol {
							if bad++; bad <= 5 {
								t.Errorf("entry (%d,%d): got %.17g, PyFR %.17g", i/want.Cols+1, i%want.Cols+1, g, w)
							}
						}
					}
					if bad > 0 {
						t.Errorf("%d mismatches; max |Δ| = %.3g", bad, maxd)
					}
					t.Logf("max |Δ| = %.3g", maxd)
					worst = math.Max(worst, maxd)
					checked++
				})
			}
		}
	}
	if checked != 60 {
		t.Errorf("checked %d PyFR operators, want 60", checked)
	}
	t.Logf("checked %d PyFR operators; max |Δ| overall = %.3g", checked, worst)
}
