package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/bespoke-hpc/bespoke/bench"
	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/kernel/family/registry"
)

// PUM's two kinds of result name one registered family: pum bench's rows
// and a tune --family pum report (its marker fact, patches). The latter
// measured no roof, so its tables say so instead of printing 0 % of one.
func TestPUMFamily(t *testing.T) {
	run, err := ParsePerfRun("pum.json", []byte(`[{"backend":"c","device":"cpu","dtype":"f64","strategy":"fused","dim":2,"level":5,"degree":1,"total_s":0.01}]`))
	if err != nil || !registry.Has(run.Family) {
		t.Fatalf("pum bench rows: family %q (registered: %v), %v", run.Family, registry.Names(), err)
	}
	rep := &bench.Report{Device: device.Info{Name: "cpu", Backend: "c"}, DType: "f64", Units: 1024,
		RoofMethod: "not measured: each candidate is a pipeline of kernels, timed as a whole",
		Problems: []bench.Result{{Name: "pum 2d l5 p1 smooth f64", Units: 1024, Facts: map[string]float64{"patches": 1024, "pum_dofs": 3072},
			Candidates: []bench.Candidate{{Name: "fused.group.t16.s2.k1", Kind: "bespoke", Verified: true, Timing: bench.Timing{Median: 2 * time.Millisecond, Reps: 3}}},
			Choice:     &bench.Choice{Winner: "fused.group.t16.s2.k1", Kind: "bespoke", Median: 2 * time.Millisecond, Why: "the fastest"}}}}
	if f := FamilyOf(rep); f != run.Family {
		t.Errorf("a tune report of pum is taken for %q, pum bench's rows for %q", f, run.Family)
	}
	for name, write := range map[string]func(*bytes.Buffer) error{
		"table":   func(b *bytes.Buffer) error { return WriteTable(b, rep) },
		"choices": func(b *bytes.Buffer) error { return WriteChoices(b, rep) },
	} {
		var b bytes.Buffer
		if err := write(&b); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if !strings.Contains(out, "roof: not measured") || strings.Contains(out, "0.0 GB/s") || !strings.Contains(out, "–") {
			t.Errorf("%s:\n%s", name, out)
		}
		if strings.Contains(out, "best % roof") {
			t.Errorf("%s: a summary of %% of a roof never measured:\n%s", name, out)
		}
		if name == "table" && (!strings.Contains(out, "ns/DOF") || strings.Contains(out, "roof (ideal bytes")) {
			t.Errorf("table without PUM's rate, or with a roof line:\n%s", out)
		}
	}
}
