package serve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/operator/load"
)

// TestPyFRParamsClassified: every parameter of every candidate of the PyFR
// operators gets a role, on every target (CPU; CUDA sm_80 and sm_90 with
// their tensor-core families), in both precisions, so that no candidate is
// withheld from PyFR because a client could not bind it. Order 3 (every
// element type, the tets with the tensor-core families) by default;
// BESPOKE_PYFR_DIGESTS=all takes all 120 operators.
func TestPyFRParamsClassified(t *testing.T) {
	root := testenv.PyFRMats(t)
	orders := []string{"p3"}
	if os.Getenv("BESPOKE_PYFR_DIGESTS") == "all" {
		orders = []string{"p1", "p2", "p3", "p4", "p5", "p6"}
	}
	alpha, beta := 1.0, 1.0
	checked := 0
	for _, order := range orders {
		files, err := filepath.Glob(filepath.Join(root, order, "*", "*.mtx"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no operators under %s: %v", filepath.Join(root, order), err)
		}
		for _, f := range files {
			op, err := load.File(f)
			if err != nil {
				t.Fatal(err)
			}
			dense := op.Data
			for _, target := range []struct {
				backend string
				dev     *Device
			}{
				{"c", nil},
				{"cuda", &Device{Name: "sm_80", CUDAArch: 80, ComputeUnits: 108}},
				{"cuda", &Device{Name: "sm_90", CUDAArch: 90, ComputeUnits: 132}},
			} {
				for _, dtype := range []string{"f64", "f32"} {
					p := &Problem{Operator: &Operator{M: op.Rows, K: op.Cols, Dense: dense}, DType: dtype, Alpha: &alpha, Beta: &beta,
						N: 1000, LDB: 1024, LDC: 1024, AlignB: 64, AlignC: 64, Backend: target.backend, Device: target.dev}
					r, err := resolve(p)
					if err != nil {
						t.Fatalf("%s: %v", f, err)
					}
					work, err := r.workload()
					if err != nil {
						t.Fatal(err)
					}
					for _, c := range r.in.Candidates(r.target) {
						k, err := r.in.Build(c)
						if err != nil {
							continue // a candidate the family cannot build is no client's concern
						}
						if _, err := r.params(k, work); err != nil {
							t.Errorf("%s %s %s %s: %v", strings.TrimPrefix(f, root), r.info.Arch, dtype, c.Name(), err)
						}
						checked++
					}
				}
			}
		}
	}
	t.Logf("%d candidates' parameters classified", checked)
}
