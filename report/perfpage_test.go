package report

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The performance page is made from the stored JSON alone: its sections,
// rows, summaries and marks come from the fixtures (three runs of bench on
// the C backend, trimmed, and one GPU run written by hand on the same
// schema, with baselines, a result from the tuning store, a baseline win
// and an unstable roof).
func TestPerformancePage(t *testing.T) {
	cases := []struct {
		name   string
		files  []string
		want   []string // lines or fragments the page must have
		absent []string
		order  []string // fragments in this order
		plots  []string
	}{
		{
			name:  "gpu with baselines",
			files: []string{"sparse-gpu-f32.json"},
			want: []string{
				"## sparse, NVIDIA Test GPU (cuda), f32",
				"| problem | best bespoke | µs | % roof | cuBLAS % roof | cuSPARSE % roof | winner |",
				"| p1/hex/m0 | cstream/x128-w2 | 1.0 | 90.0 | 45.0 | 30.0 (alg2) | bespoke |",
				"| p1/quad/m6 † | cstream/x128-w2 | 1.0 | 90.0 | 45.0 | 30.0 (alg2) | bespoke |",
				"| p1/tri/m3 | cstream/x128-w2 | 1.0 | 90.0 | 180.0 | 30.0 (alg2) | cublas |",
				"1 of 3 results from the tuning store",
				"† from the tuning store",
				"roof 4000.0 GB/s (best of 3 measurements, 2900.0–4000.0) (unstable",
				// The fixture's own date and commit, as the page must copy them.
				"date 2026-11-29; commit def5678",
				"- **hex**: 1 problem, best bespoke 90.0 % of roof (geomean), worst p1/hex/m0 90.0 %; cuBLAS 45.0 %, bespoke 2.00× faster (geomean), slower on 0; cuSPARSE 30.0 %, bespoke 3.00× faster (geomean), slower on 0.",
				"- **tri**: 1 problem, best bespoke 90.0 % of roof (geomean), worst p1/tri/m3 90.0 %; cuBLAS 180.0 %, bespoke 0.50× faster (geomean), slower on 1",
				"| [sparse](#sparse-nvidia-test-gpu-cuda-f32) | NVIDIA Test GPU (cuda) | f32 | 3 | 90.0 | 90.0 p1/hex/m0 | cuBLAS 71.4, cuSPARSE 30.0 | 2026-11-29 | def5678 |",
				"![% of roof, sparse, NVIDIA Test GPU (cuda), f32](plots/sparse-nvidia-test-gpu-cuda-f32.svg)",
			},
			plots: []string{"sparse-nvidia-test-gpu-cuda-f32.svg"},
		},
		{
			name:  "c backend, three families",
			files: []string{"integrate-c-f64.json", "fem-c-f64.json", "sparse-c-f64.json"},
			want: []string{
				"## sparse, AMD EPYC (c), f64",
				"## fem, AMD EPYC (c), f64",
				"## integrate, AMD EPYC (c), f64",
				"| problem | best bespoke | µs | % roof | OpenBLAS % roof | winner |",
				"| bk5/n1 | cpu/e1 | 18.1 | 12.1 | bespoke |",
				"| tet/mass | w16/e1 | 16.8 | 79.0 | bespoke |",
				"- **bk5**: 2 problems, best bespoke 17.7 % of roof (geomean), worst bk5/n1 12.1 %.",
				"commit abc1234",
				"median of 5 launches",
			},
			absent: []string{"†", "cuBLAS % roof"},
			order:  []string{"## Method", "## Summary", "## sparse", "## fem", "## integrate"},
			plots:  []string{"sparse-amd-epyc-c-f64.svg", "fem-amd-epyc-c-f64.svg", "integrate-amd-epyc-c-f64.svg"},
		},
		{
			name:  "pum rows",
			files: []string{"pum-gpu-f64.json", "fem-c-f64.json"},
			want: []string{
				"## pum, NVIDIA H200 (cuda), f64",
				"| 2 | 9 | 1 | 786432 | atomic (interleaved, group) | 0.64 | 1.42 | 2.32 | 3.89 | 8.27 | 0.0105 | ✓ |",
				"| 2 | 9 | 1 | 786432 | colour (interleaved, group) | 0.70 | 1.80 | 2.38 | 10.10 | 14.98 | 0.0190 |  |",
				"| [pum](#pum-nvidia-h200-cuda-f64) | NVIDIA H200 (cuda) | f64 | 2 | times, not a roof |",
			},
			order: []string{"## fem", "## pum"},
		},
		{
			// The kernels that compute the geometry (own bytes) are
			// beside the stored-factor best, not in its place: bk5/n3's
			// is faster than the stored-factor roof, bk5/n8's slower.
			name:  "fem with geometry in the kernel",
			files: []string{"fem-gpu-f64.json"},
			want: []string{
				"| problem | best bespoke | µs | % roof | geometry in the kernel | µs | × roof speed | winner |",
				"| bk5/n3 | slab2/e2 | 250.0 | 100.0 | slab-lit/e2/tri | 200.0 | 1.25 | bespoke |",
				"| bk5/n8 | pair/e2 | 400.0 | 62.5 | pair/e1/tri | 500.0 | 0.50 | bespoke |",
				"| bk1/n2 | cube-lit/e8 | 312.5 | 80.0 | | | | bespoke |",
				"- **bk5**: 2 problems, best bespoke 79.1 % of roof (geomean), worst bk5/n8 62.5 %.",
			},
			absent: []string{"| bk5/n3 | slab-lit/e2/tri"},
		},
		{
			name:  "f64 before f32, one device",
			files: []string{"sparse-gpu-f32.json", "sparse-c-f64.json"},
			order: []string{"## sparse, AMD EPYC (c), f64", "## sparse, NVIDIA Test GPU (cuda), f32"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "performance.md")
			plots := filepath.Join(dir, "plots")
			var files []string
			for _, f := range tc.files {
				files = append(files, filepath.Join("testdata", "perf", f))
			}
			if err := WritePerformancePage(nil, out, plots, "", files); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			page := string(data)
			for _, w := range tc.want {
				if !strings.Contains(page, w) {
					t.Errorf("page lacks %q", w)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(page, a) {
					t.Errorf("page has %q", a)
				}
			}
			at := -1
			for _, o := range tc.order {
				i := strings.Index(page, o)
				if i <= at {
					t.Errorf("%q missing or out of order", o)
				}
				at = i
			}
			for _, p := range tc.plots {
				if st, err := os.Stat(filepath.Join(plots, p)); err != nil || st.Size() == 0 {
					t.Errorf("chart %s not written: %v", p, err)
				}
			}
			if n := strings.Count(page, "\n"); n > 400 {
				t.Errorf("page has %d lines", n)
			}
			if t.Failed() {
				t.Logf("page:\n%s", page)
			}
		})
	}
}

// A file that is not a bench result is one error naming it, not a page.
func TestPerformancePageErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name  string
		files []string
		want  string
	}{
		{"none", nil, "no results files"},
		{"missing", []string{filepath.Join(dir, "nope.json")}, "nope.json"},
		{"not json", []string{write("a.json", "hello")}, "a.json: not a bench JSON file"},
		{"no device", []string{write("b.json", `{"dtype":"f64","problems":[{"name":"x"}]}`)}, "b.json: not a bench JSON file: no device"},
		{"no dtype", []string{write("c.json", `{"device":{"backend":"c"},"problems":[{"name":"x"}]}`)}, "c.json: not a bench JSON file: no dtype"},
		{"no problems", []string{write("d.json", `{"device":{"backend":"c"},"dtype":"f64","problems":[]}`)}, "d.json: no problems"},
		{"pum, no rows", []string{write("e.json", `[]`)}, "e.json: no rows"},
		{"pum, not rows", []string{write("f.json", `[{"device":"x","dtype":"f64"}]`)}, "f.json: row 1: not a pum bench row"},
		{"pum, bad", []string{write("g.json", `[1]`)}, "g.json: not a pum bench JSON file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, "page.md")
			err := WritePerformancePage(nil, out, "", "", tc.files)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("a page was written")
			}
		})
	}
}

// The family comes from the facts only its workloads state.
func TestFamilyOf(t *testing.T) {
	for file, want := range map[string]string{"sparse-c-f64.json": "sparse", "fem-c-f64.json": "fem",
		"integrate-c-f64.json": "integrate", "sparse-gpu-f32.json": "sparse", "pum-gpu-f64.json": "pum"} {
		r, err := ReadPerfRun(filepath.Join("testdata", "perf", file))
		if err != nil {
			t.Fatal(err)
		}
		if r.Family != want {
			t.Errorf("%s: family %q, want %q", file, r.Family, want)
		}
	}
	var b bytes.Buffer
	if err := PerformancePage(&b, nil, PageOptions{}); err == nil {
		t.Error("a page of no runs")
	}
}

// A page that would run over PageLines moves its largest per-problem
// tables to their own files, every row kept; the small ones stay inline.
func TestPerformancePageLong(t *testing.T) {
	big, err := ReadPerfRun(filepath.Join("testdata", "perf", "sparse-gpu-f32.json"))
	if err != nil {
		t.Fatal(err)
	}
	base := big.Report.Problems
	big.Report.Problems = nil
	for i := 0; i < 150; i++ {
		for _, o := range base {
			o.Name = fmt.Sprintf("%s-%d", o.Name, i)
			big.Report.Problems = append(big.Report.Problems, o)
		}
	}
	small, err := ReadPerfRun(filepath.Join("testdata", "perf", "fem-c-f64.json"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tables := filepath.Join(dir, "perf")
	var b bytes.Buffer
	if err := PerformancePage(&b, []PerfRun{big, small}, PageOptions{TableDir: tables, TableLink: "perf", MaxLines: PageLines}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if n := strings.Count(page, "\n"); n > PageLines {
		t.Errorf("page has %d lines, want at most %d", n, PageLines)
	}
	side, err := os.ReadFile(filepath.Join(tables, "sparse-nvidia-test-gpu-cuda-f32.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(side), "| p1/"); n != 450 {
		t.Errorf("side table has %d rows, want 450", n)
	}
	for _, want := range []string{"One row per problem: [sparse-nvidia-test-gpu-cuda-f32.md](perf/sparse-nvidia-test-gpu-cuda-f32.md)", "| bk5/n1 | cpu/e1 |"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// A gzipped results file reads as the file itself; a damaged one is an
// error naming it.
func TestReadPerfRunGzip(t *testing.T) {
	plain := filepath.Join("testdata", "perf", "fem-c-f64.json")
	data, err := os.ReadFile(plain)
	if err != nil {
		t.Fatal(err)
	}
	var zb bytes.Buffer
	zw := gzip.NewWriter(&zb)
	zw.Write(data)
	zw.Close()
	dir := t.TempDir()
	gz := filepath.Join(dir, "fem-c-f64.json.gz")
	if err := os.WriteFile(gz, zb.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	want, err := ReadPerfRun(plain)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadPerfRun(gz)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Report.Problems) != len(want.Report.Problems) || got.Report.RoofGBs != want.Report.RoofGBs {
		t.Fatalf("gzipped: %d problems, roof %g; plain: %d, %g", len(got.Report.Problems), got.Report.RoofGBs, len(want.Report.Problems), want.Report.RoofGBs)
	}
	bad := filepath.Join(dir, "bad.json.gz")
	os.WriteFile(bad, data, 0o644) // not gzip
	if _, err := ReadPerfRun(bad); err == nil || !strings.Contains(err.Error(), "bad.json.gz") {
		t.Fatalf("a file that is not gzip: %v", err)
	}
}

// A problem measured by several runs of one section is shown once, from
// the run of the latest date (of one date, the one given last).
func TestPerformancePageRemeasured(t *testing.T) {
	// day is a run's date, d days after any fixed day: the page compares
	// the dates as ISO strings.
	day := func(d int) string { return time.Unix(int64(d)*86400, 0).UTC().Format(time.DateOnly) }
	read := func() PerfRun {
		r, err := ReadPerfRun(filepath.Join("testdata", "perf", "sparse-gpu-f32.json"))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, tc := range []struct {
		name         string
		dates        [3]string // the three runs' dates, in the order given
		wantVariant  string
		wantProblems int
	}{
		{"later date wins", [3]string{day(2), day(1), day(0)}, "first/x1", 3},
		{"same date: given last wins", [3]string{day(1), day(1), day(1)}, "third/x1", 3},
		{"middle", [3]string{day(0), day(2), day(1)}, "second/x1", 3},
	} {
		var runs []PerfRun
		for i, v := range []string{"first/x1", "second/x1", "third/x1"} {
			r := read()
			r.Report.Date = tc.dates[i]
			for j := range r.Report.Problems {
				for k := range r.Report.Problems[j].Candidates {
					if r.Report.Problems[j].Candidates[k].Kind == "bespoke" {
						r.Report.Problems[j].Candidates[k].Name = v
					}
				}
				if c := r.Report.Problems[j].Choice; c != nil && c.Kind == "bespoke" {
					c.Winner = v
				}
			}
			runs = append(runs, r)
		}
		secs := sections(runs)
		if len(secs) != 1 {
			t.Fatalf("%s: %d sections, want 1", tc.name, len(secs))
		}
		probs := secs[0].merged.Problems
		if len(probs) != tc.wantProblems {
			t.Errorf("%s: %d problems, want %d", tc.name, len(probs), tc.wantProblems)
		}
		for _, o := range probs {
			for _, c := range o.Candidates {
				if c.Kind == "bespoke" && c.Name != tc.wantVariant {
					t.Errorf("%s: %s shows %s, want %s", tc.name, o.Name, c.Name, tc.wantVariant)
				}
			}
		}
	}
}
