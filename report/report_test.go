package report

import (
	"bytes"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/bench"
)

// The table shows a family's facts only where the report has them, marks
// the best candidate, and summarises per group.
func TestWriteTable(t *testing.T) {
	rep := plotReport(3, true)
	var b bytes.Buffer
	if err := WriteTable(&b, rep); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"nnz", "*vector", "roof (ideal bytes at copy speed)", "geomean", "cublas"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "β") {
		t.Errorf("table shows β, which no problem has:\n%s", out)
	}
	rep = &bench.Report{Problems: []bench.Result{{Name: "q4/x", Shape: "4³ along x", Units: 100,
		Candidates: []bench.Candidate{plotCandidate("slab/e1", "bespoke", 10, 0.5)}}}}
	b.Reset()
	if err := WriteTable(&b, rep); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "nnz") || !strings.Contains(b.String(), "4³ along x") {
		t.Errorf("a family without facts:\n%s", b.String())
	}
	if strings.Contains(b.String(), "tuning store") {
		t.Errorf("a measured problem reads as replayed:\n%s", b.String())
	}
	// A result replayed from the tuning store says so, and when it was
	// measured (a record's date and commit, as data): it must not read as
	// this run's measurement.
	rep.Problems[0].Cached, rep.Problems[0].Measured = true, "2026-11-20, commit abc1234"
	b.Reset()
	if err := WriteTable(&b, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "from the tuning store, nothing timed in this run (measured 2026-11-20, commit abc1234") {
		t.Errorf("a replayed result:\n%s", b.String())
	}
	// An unstable roof is said above the table.
	rep.RoofWarning = "the roof varied from 26.0 to 44.0 GB/s"
	b.Reset()
	if err := WriteTable(&b, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "warning: the roof varied") {
		t.Errorf("no roof warning:\n%s", b.String())
	}
}

// An interrupted run with no problem done is still valid JSON, with an
// empty list, not null.
func TestWriteJSONEmpty(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJSON(&b, &bench.Report{Problems: []bench.Result{}, Interrupted: true}); err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if ps, ok := back["problems"].([]any); !ok || len(ps) != 0 || back["interrupted"] != true {
		t.Errorf("JSON %s", b.String())
	}
}

// The Markdown tables carry baseline columns only when a baseline ran.
func TestWriteMarkdown(t *testing.T) {
	var b bytes.Buffer
	if err := WriteMarkdown(&b, plotReport(3, true)); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| cublas % roof |", "speedup vs cusparse", "(CSR_ALG1)", "| nnz |"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	if err := WriteMarkdown(&b, plotReport(3, false)); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "cublas") {
		t.Errorf("baseline columns without baselines:\n%s", b.String())
	}
	// Every row of a table has as many cells as its header.
	for _, block := range strings.Split(b.String(), "\n\n") {
		lines := strings.Split(strings.TrimSpace(block), "\n")
		if !strings.HasPrefix(lines[0], "|") {
			continue
		}
		for _, line := range lines[1:] {
			if strings.Count(line, "|") != strings.Count(lines[0], "|") {
				t.Errorf("row %q does not match header %q", line, lines[0])
			}
		}
	}
}

// ns/elem and Gelem/s appear where a problem states the elements it
// integrates, with values from the median time; not elsewhere.
func TestIntegrateRates(t *testing.T) {
	c := plotCandidate("w64/e1", "bespoke", 10, 0.5)
	rep := &bench.Report{Problems: []bench.Result{{Name: "prism/laplace", Units: 1000,
		Facts: map[string]float64{"integrated": 1000, "elements": 1000}, Candidates: []bench.Candidate{c}}}}
	var b bytes.Buffer
	if err := WriteTable(&b, rep); err != nil {
		t.Fatal(err)
	}
	ns := float64(c.Timing.Median.Nanoseconds()) / 1000
	gel := 1000 / c.Timing.Median.Seconds() / 1e9 // 0.1: three digits below 1
	for _, want := range []string{"ns/elem", "Gelem/s", strconv.FormatFloat(ns, 'f', 3, 64), strconv.FormatFloat(gel, 'g', 3, 64)} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	rep.Problems[0].Facts = map[string]float64{"elements": 1000} // contract, tensor
	b.Reset()
	if err := WriteTable(&b, rep); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "elem") {
		t.Errorf("rates of a family that integrates nothing:\n%s", b.String())
	}
}

func TestLinePlot(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/l.svg"
	s := []Series{{Name: "p=1", X: []float64{5, 6, 7}, Y: []float64{1e-3, 2e-4, 1e-4}}, {Name: "p=2", X: []float64{5, 6}, Y: []float64{3e-3, 0}}}
	if err := LinePlot(path, "t", "level", "µs/DOF", true, s); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || !strings.Contains(string(b), "<svg") || !strings.Contains(string(b), "p=2") {
		t.Errorf("svg: %v", err)
	}
	if err := LinePlot(path, "t", "x", "y", true, []Series{{Name: "none", X: []float64{1}, Y: []float64{0}}}); err == nil {
		t.Error("a chart with no points: no error")
	}
	if err := LinePlot(path, "t", "x", "y", false, []Series{{Name: "bad", X: []float64{1, 2}, Y: []float64{1}}}); err == nil {
		t.Error("uneven series: no error")
	}
}
