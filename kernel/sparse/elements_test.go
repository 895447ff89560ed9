package sparse

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/bespoke-hpc/bespoke/emit"
	"github.com/bespoke-hpc/bespoke/fr"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/operator"
	"github.com/bespoke-hpc/bespoke/tune"
)

// elementOp builds operator name of an element kind at order p with
// PyFR's default points: quad, hex, pyr and the prism's line factor are
// computed by package fr; the tabulated triangle and tetrahedron sets come
// from PyFR's export in testdata (as points files would).
func elementOp(t *testing.T, kind string, p int, name string) *operator.Operator {
	t.Helper()
	var opt fr.Options
	if kind != "quad" && kind != "hex" {
		dir := filepath.Join(testenv.PyFROps(t), kind+"-default", fmt.Sprintf("p%d", p))
		var err error
		if kind == "tri" || kind == "tet" {
			if opt.SolFile, err = fr.ReadPointsFile(filepath.Join(dir, "upts.txt"), fr.NDims(kind)); err != nil {
				t.Fatal(err)
			}
		}
		if tf := filepath.Join(dir, "tri-fpts.txt"); kind != "tri" {
			if _, err := os.Stat(tf); err != nil {
				t.Fatal(err)
			}
			if opt.TriFaceFile, err = fr.ReadPointsFile(tf, 2); err != nil {
				t.Fatal(err)
			}
		}
	}
	e, err := fr.Build(kind, p, opt)
	if err != nil {
		t.Fatal(err)
	}
	op, err := e.Operator(name)
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// Every element kind's operators get candidates that all build, for CPUs
// and GPUs; the cost model prices every SIMT GPU candidate at the bench's
// size no faster than the copy roof allows; and the first candidate of
// each matches the float64 reference in the interpreter (as written and
// lowered for the host).
func TestElementKinds(t *testing.T) {
	rng := rand.New(rand.NewPCG(40, 1))
	for _, kind := range fr.Elements {
		for _, name := range []string{"m0", "m132", "m460", "m6"} {
			t.Run(kind+"/"+name, func(t *testing.T) {
				op := elementOp(t, kind, 2, name)
				if s := operator.Analyze(op); s.NNZ == 0 || s.NNZ > op.Rows*op.Cols {
					t.Fatalf("%s: %d non-zeros", op.Name, s.NNZ)
				}
				pb := Problem{Op: op, DType: kernel.F64, Alpha: 1, LDB: 96, LDC: 96}
				plain, gpu := Candidates(pb), GPUCandidates(pb)
				if len(plain) == 0 || len(gpu) < len(plain) {
					t.Fatalf("%d candidates, %d for GPUs", len(plain), len(gpu))
				}
				in, err := NewOperator(op, kernel.F64, 1, 0).Timed(1 << 16)
				if err != nil {
					t.Fatal(err)
				}
				w, err := in.Workload()
				if err != nil {
					t.Fatal(err)
				}
				m := tune.Machine{GPU: true, RoofGBs: 4000, CacheFactor: 4, SharedFactor: 10, IssueRate: 3e13, Registers: 255, SpillWeight: 10}
				floor := float64(w.IdealBytes) / (m.RoofGBs * 1e9)
				priced := 0
				for _, v := range gpu {
					k, err := in.Build(v)
					if err != nil {
						t.Errorf("%s: %v", v, err)
						continue
					}
					p, err := tune.Estimate(m, emit.CUDA, k, w.Values, w.IdealBytes)
					if err != nil {
						continue // tensor-core kernels go unpriced
					}
					if !(p.Seconds >= floor*(1-1e-9)) || math.IsInf(p.Seconds, 0) {
						t.Errorf("%s: predicted %s, under the roof's %.3g s", v, p.Describe(), floor)
					}
					priced++
				}
				if priced == 0 {
					t.Error("no candidate priced")
				}
				first := plain[0].Name()
				for _, c := range variantCases(t, rng, op, kernel.F64, 0, 45, nil, []string{first}) {
					interpretBoth(t, c, nil)
				}
			})
		}
	}
}
