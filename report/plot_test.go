package report

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bespoke-hpc/bespoke/bench"
	"github.com/bespoke-hpc/bespoke/device"
)

func plotCandidate(name, kind string, us float64, roof float64) bench.Candidate {
	return bench.Candidate{Name: name, Kind: kind, Timing: bench.Timing{Median: time.Duration(us * 1e3), Reps: 10},
		GBs: 3000 * roof, RoofFrac: roof, Verified: true}
}

func plotReport(n int, baselines bool) *bench.Report {
	rep := &bench.Report{Device: device.Info{Name: "NVIDIA H100 80GB HBM3", Backend: "cuda"}, DType: "fp64", Units: 1 << 20,
		Date: "2025-01-01", RoofGBs: 3000}
	groups := []string{"hex", "quad"}
	for i := range n {
		g := groups[i*len(groups)/n]
		m, k := 8*(i+1), 4*(i%5+1)
		o := bench.Result{Name: fmt.Sprintf("p%d/%s/m%d", i%4+1, g, i), Units: 1 << 20,
			Facts: map[string]float64{"m": float64(m), "k": float64(k), "nnz": float64(m * k / (i%3 + 1)), "density": 1 / float64(i%3+1)}}
		o.Candidates = append(o.Candidates,
			plotCandidate("scalar", "bespoke", 12+float64(i), 0.8-0.01*float64(i%7)),
			plotCandidate("vector", "bespoke", 10+float64(i), 0.9-0.01*float64(i%7)))
		if baselines {
			o.Candidates = append(o.Candidates,
				plotCandidate("cublas", "baseline", 30+5*float64(i), 0.3),
				plotCandidate("cusparse/DEFAULT", "baseline", 40+float64(i), 0.25),
				plotCandidate("cusparse/CSR_ALG1", "baseline", 35+float64(i), 0.28))
		}
		rep.Problems = append(rep.Problems, o)
	}
	// An operator whose candidates all failed verification is skipped.
	bad := plotCandidate("scalar", "bespoke", 5, 0.9)
	bad.Verified = false
	rep.Problems = append(rep.Problems, bench.Result{Name: "p1/tri/m0", Facts: map[string]float64{"m": 3, "k": 6, "density": 1}, Candidates: []bench.Candidate{bad}})
	return rep
}

func checkSVG(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		t.Fatalf("%s is empty", path)
	}
	if !bytes.HasPrefix(b, []byte("<?xml")) && !bytes.HasPrefix(b, []byte("<svg")) {
		t.Fatalf("%s does not start as SVG: %.40q", path, b)
	}
	if !bytes.Contains(b, []byte("</svg>")) {
		t.Fatalf("%s is not a complete SVG document", path)
	}
}

func TestPlot(t *testing.T) {
	for _, n := range []int{1, 5, 120} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "plots")
			if err := Plot(plotReport(n, true), dir); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{PlotSpeedupSize, PlotSpeedupSparsity, PlotSpeedupCusparseSize, PlotRoof} {
				checkSVG(t, filepath.Join(dir, f))
			}
			b, _ := os.ReadFile(filepath.Join(dir, PlotRoof))
			if !strings.Contains(string(b), "size 1048576") || !strings.Contains(string(b), "fp64") {
				t.Error("roof.svg title lacks dtype and n")
			}
		})
	}
}

func TestPlotWithoutBaselines(t *testing.T) {
	dir := t.TempDir()
	// A stale chart from an earlier run must not survive.
	if err := Plot(plotReport(4, true), dir); err != nil {
		t.Fatal(err)
	}
	if err := Plot(plotReport(4, false), dir); err != nil {
		t.Fatal(err)
	}
	checkSVG(t, filepath.Join(dir, PlotRoof))
	for _, f := range []string{PlotSpeedupSize, PlotSpeedupSparsity, PlotSpeedupCusparseSize} {
		if _, err := os.Stat(filepath.Join(dir, f)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: want no file, got %v", f, err)
		}
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("want roof.svg only, got %d files", len(ents))
	}
}

func TestPlotWriteError(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Plot(plotReport(3, true), filepath.Join(file, "sub")); err == nil {
		t.Error("want an error when dir cannot be created")
	}
	if err := os.Mkdir(filepath.Join(dir, "out"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A directory where roof.svg should go makes the write fail.
	if err := os.Mkdir(filepath.Join(dir, "out", PlotRoof), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Plot(plotReport(3, true), filepath.Join(dir, "out")); err == nil {
		t.Error("want an error when roof.svg cannot be written")
	}
	if err := Plot(nil, dir); err == nil {
		t.Error("want an error for a nil report")
	}
}

// The dense BLAS of a C-backend report is OpenBLAS (or another CBLAS):
// the speedup charts compare with it and say so, and the Markdown table
// has its column.
func TestPlotCPUBLAS(t *testing.T) {
	for _, tc := range []struct{ baseline, label string }{
		{"cublas", "cuBLAS"}, {"openblas", "OpenBLAS"}, {"blas", "CPU BLAS"},
	} {
		t.Run(tc.baseline, func(t *testing.T) {
			rep := plotReport(3, false)
			rep.Device = device.Info{Name: "Intel(R) Xeon(R) Processor", Backend: "c"}
			for i := range rep.Problems[:3] {
				rep.Problems[i].Candidates = append(rep.Problems[i].Candidates, plotCandidate(tc.baseline, "baseline", 20, 0.4))
			}
			if got := blasName(rep); got != tc.label {
				t.Errorf("blasName = %q, want %q", got, tc.label)
			}
			dir := t.TempDir()
			if err := Plot(rep, dir); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{PlotSpeedupSize, PlotSpeedupSparsity, PlotRoof} {
				checkSVG(t, filepath.Join(dir, f))
				b, _ := os.ReadFile(filepath.Join(dir, f))
				if !strings.Contains(string(b), tc.label) {
					t.Errorf("%s does not name %s", f, tc.label)
				}
			}
			var md bytes.Buffer
			if err := WriteMarkdown(&md, rep); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(md.String(), " "+tc.baseline+" % roof |") {
				t.Errorf("Markdown lacks the %s column:\n%s", tc.baseline, md.String())
			}
		})
	}
}
