package report

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bespoke-hpc/bespoke/bench"
	"github.com/bespoke-hpc/bespoke/kernel/family/registry"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
)

// PerfRun is one stored bench result (a `bench --json`, `fem bench --json`
// or `integrate bench --json` file) as the performance page reads it.
type PerfRun struct {
	Source string // the file, as the page names it
	Family string // inferred from the problems' facts (see FamilyOf), or "pum"
	Report *bench.Report
	// PUM holds the rows of a `pum bench --json` file (Report is nil).
	PUM []PUMRow
}

// FamilyOf names the family of a report from its first problem with facts:
// the first registered family whose marker fact it states (sparse: nnz,
// contract: axis, fem: dofs, integrate: integrated), or "other".
func FamilyOf(rep *bench.Report) string {
	for _, o := range rep.Problems {
		for _, f := range registry.All() {
			if _, ok := o.Facts[f.Report.Marker]; ok {
				return f.Name
			}
		}
	}
	return "other"
}

// ReadPerfRun reads a bench JSON file, or one gzipped (.json.gz: a full
// bench of every candidate runs to megabytes, kept compressed). A file
// that is not one (no device, dtype or problems) is an error naming it.
func ReadPerfRun(file string) (PerfRun, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return PerfRun{}, err
	}
	if strings.HasSuffix(file, ".gz") {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return PerfRun{}, fmt.Errorf("%s: %v", file, err)
		}
		if data, err = io.ReadAll(io.LimitReader(zr, maxPerfRunBytes+1)); err != nil {
			return PerfRun{}, fmt.Errorf("%s: %v", file, err)
		}
		if len(data) > maxPerfRunBytes {
			return PerfRun{}, fmt.Errorf("%s: more than %d MB uncompressed", file, maxPerfRunBytes>>20)
		}
	}
	return ParsePerfRun(file, data)
}

// maxPerfRunBytes bounds a results file, uncompressed.
const maxPerfRunBytes = 1 << 30

// ParsePerfRun parses the bytes of a bench JSON file named source.
func ParsePerfRun(source string, data []byte) (PerfRun, error) {
	if r, ok, err := parsePUM(source, data); ok {
		return r, err
	}
	var rep bench.Report
	if err := json.Unmarshal(data, &rep); err != nil {
		return PerfRun{}, fmt.Errorf("%s: not a bench JSON file: %v", source, err)
	}
	switch {
	case rep.Device.Name == "" && rep.Device.Backend == "":
		return PerfRun{}, fmt.Errorf("%s: not a bench JSON file: no device", source)
	case rep.DType == "":
		return PerfRun{}, fmt.Errorf("%s: not a bench JSON file: no dtype", source)
	case len(rep.Problems) == 0:
		return PerfRun{}, fmt.Errorf("%s: no problems", source)
	}
	return PerfRun{Source: source, Family: FamilyOf(&rep), Report: &rep}, nil
}

// perfSection is the runs of one family on one device in one precision,
// merged: one table, one chart.
type perfSection struct {
	family, device, dtype string
	runs                  []PerfRun
	merged                *bench.Report // every problem, in file order
	// from is, for each problem in merged, its index there and the date
	// of the run it came from: a problem measured again by a run of a
	// later date, or of the same date given later, replaces the earlier
	// row.
	from map[string]problemFrom
}

type problemFrom struct {
	at   int
	date string
}

func (s *perfSection) title() string {
	return fmt.Sprintf("%s, %s, %s", s.family, s.device, s.dtype)
}

// slug names the section's chart file and its anchor.
func (s *perfSection) slug() string { return slugOf(s.title()) }

// slugOf is a heading's anchor as GitHub makes it, for plain headings:
// lower case, letters and digits kept, each run of others one hyphen.
func slugOf(title string) string {
	var b strings.Builder
	last := '-'
	for _, r := range strings.ToLower(title) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			last = r
		} else if last != '-' {
			b.WriteRune('-')
			last = '-'
		}
	}
	return strings.TrimSuffix(b.String(), "-")
}

func deviceLabel(rep *bench.Report) string {
	name := rep.Device.Name
	if name == "" {
		name = "unknown device"
	}
	return fmt.Sprintf("%s (%s)", name, rep.Device.Backend)
}

// sections groups runs by family, device and dtype: families in
// the registry's order (others after), devices by name, f64 before f32.
func sections(runs []PerfRun) []*perfSection {
	byKey := map[string]*perfSection{}
	var out []*perfSection
	for _, r := range runs {
		if r.Report == nil {
			continue
		}
		dev := deviceLabel(r.Report)
		key := r.Family + "\x00" + dev + "\x00" + r.Report.DType
		s := byKey[key]
		if s == nil {
			s = &perfSection{family: r.Family, device: dev, dtype: r.Report.DType,
				merged: &bench.Report{Device: r.Report.Device, DType: r.Report.DType}, from: map[string]problemFrom{}}
			byKey[key] = s
			out = append(out, s)
		}
		s.runs = append(s.runs, r)
		for _, o := range r.Report.Problems {
			if o.RoofGBs == 0 {
				o.RoofGBs = r.Report.RoofGBs
			}
			if f, ok := s.from[o.Name]; ok {
				if r.Report.Date >= f.date {
					s.merged.Problems[f.at] = o
					s.from[o.Name] = problemFrom{f.at, r.Report.Date}
				}
				continue
			}
			s.from[o.Name] = problemFrom{len(s.merged.Problems), r.Report.Date}
			s.merged.Problems = append(s.merged.Problems, o)
		}
		s.merged.RoofGBs = max(s.merged.RoofGBs, r.Report.RoofGBs)
		s.merged.ComputeGFLOPs = max(s.merged.ComputeGFLOPs, r.Report.ComputeGFLOPs)
		if s.merged.Units == 0 {
			s.merged.Units = r.Report.Units
		}
	}
	for _, s := range out { // an element type's rows together, as in the chart
		sort.SliceStable(s.merged.Problems, func(i, j int) bool {
			return Group(s.merged.Problems[i].Name) < Group(s.merged.Problems[j].Name)
		})
	}
	order := registry.Names()
	rank := func(f string) int {
		for i, g := range order {
			if g == f {
				return i
			}
		}
		return len(order)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.family != b.family {
			if rank(a.family) != rank(b.family) {
				return rank(a.family) < rank(b.family)
			}
			return a.family < b.family
		}
		if a.device != b.device {
			return a.device < b.device
		}
		return a.dtype > b.dtype // f64 before f32
	})
	return out
}

// baselineTitles are the page's names of the baseline families.
var baselineTitles = map[string]string{"cublas": "cuBLAS", "cusparse": "cuSPARSE", "openblas": "OpenBLAS", "blas": "CPU BLAS"}

func baselineTitle(name string) string {
	if t, ok := baselineTitles[name]; ok {
		return t
	}
	return name
}

// PageOptions says where the page's charts and side tables go.
type PageOptions struct {
	// PlotDir receives one chart per section (none when empty), linked
	// from the page as PlotLink/FILE.
	PlotDir, PlotLink string
	// TableDir, when set, receives a section's per-problem table as
	// SLUG.md (linked as TableLink/SLUG.md) where the page would otherwise
	// run over MaxLines: the largest tables move first.
	TableDir, TableLink string
	MaxLines            int
}

// PerformancePage writes docs/performance.md's content to w, from the runs
// alone: the method once, a summary of every family × device × dtype, then
// per section its runs (device, date, commit, roof and its spread), a chart
// of % of roof per problem, one row per problem (the best bespoke variant,
// its % of roof, each baseline's, the winner) and a line per element type
// with the geometric means. Charts of sections no longer on the page are
// not removed.
func PerformancePage(w io.Writer, runs []PerfRun, opt PageOptions) error {
	if len(runs) == 0 {
		return errors.New("performance page: no results")
	}
	secs := sections(runs)
	for _, dir := range []string{opt.PlotDir, opt.TableDir} {
		if dir != "" {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return fmt.Errorf("performance page: %w", err)
			}
		}
	}
	var sources []string
	for _, r := range runs {
		sources = append(sources, "`"+filepath.ToSlash(r.Source)+"`")
	}
	var head strings.Builder
	p := &pageWriter{w: &head}
	p.f("# Performance\n\n")
	p.f("<!-- Generated by `bespoke report perf` (report/perfpage.go) from %s. Do not edit by hand: run scripts/perf-page.sh. -->\n\n", strings.Join(sources, ", "))
	p.f("Current figures of bespoke's kernels, one table per family, device and precision,\n")
	p.f("each from the stored result of one `bench --json` run (files under `docs/results/`).\n")
	p.f("The dated history of how they were reached is in [the journal](journal/performance-journal.md).\n\n")
	writeMethod(p, runs)
	writeSummary(p, secs, pumSections(runs))
	parts := make([]sectionParts, len(secs))
	for i, s := range secs {
		var err error
		if parts[i], err = renderSection(s, opt); err != nil {
			return err
		}
	}
	var pum string
	for _, ps := range pumSections(runs) {
		pum += renderPUM(ps)
	}
	if opt.TableDir != "" && opt.MaxLines > 0 {
		lines := strings.Count(head.String(), "\n") + strings.Count(pum, "\n")
		for _, sp := range parts {
			lines += sp.lines()
		}
		order := make([]int, len(parts))
		for i := range order {
			order[i] = i
		}
		sort.SliceStable(order, func(a, b int) bool {
			return strings.Count(parts[order[a]].table, "\n") > strings.Count(parts[order[b]].table, "\n")
		})
		moved := map[int]bool{}
		for _, i := range order {
			if lines <= opt.MaxLines {
				break
			}
			// a family's tables move together, so that its sections look alike
			for j, s := range secs {
				if s.family != secs[i].family || moved[j] {
					continue
				}
				moved[j] = true
				sp := &parts[j]
				file := s.slug() + ".md"
				body := fmt.Sprintf("# %s\n\n<!-- Generated by `bespoke report perf`; see docs/performance.md. -->\n\n%s", s.title(), sp.table)
				if err := os.WriteFile(filepath.Join(opt.TableDir, file), []byte(body), 0o644); err != nil {
					return fmt.Errorf("performance page: %w", err)
				}
				before := sp.lines()
				sp.table = fmt.Sprintf("One row per problem: [%s](%s).\n\n", file, path.Join(opt.TableLink, file))
				lines -= before - sp.lines()
			}
		}
	}
	p.w = w
	p.f("%s", head.String())
	for _, sp := range parts {
		p.f("%s%s%s", sp.head, sp.table, sp.tail)
	}
	p.f("%s", pum)
	return p.err
}

// sectionParts is a rendered section: its heading, runs and chart; its
// per-problem table; its summary lines.
type sectionParts struct{ head, table, tail string }

func (sp sectionParts) lines() int {
	return strings.Count(sp.head, "\n") + strings.Count(sp.table, "\n") + strings.Count(sp.tail, "\n")
}

// pageWriter keeps the first write error.
type pageWriter struct {
	w   io.Writer
	err error
}

func (p *pageWriter) f(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

func writeMethod(p *pageWriter, runs []PerfRun) {
	p.f("## Method\n\n")
	p.f("- **Verified before timed.** Every candidate kernel and every vendor baseline is first run on\n")
	p.f("  fresh random data and compared with a float64 reference; one that fails is not timed.\n")
	p.f("- **Timing.** Data stay on the device; each timed launch rotates through copies of the arrays so\n")
	p.f("  that it streams from memory, not from cache. After warm-up launches, a candidate's time is the\n")
	p.f("  **median** of its launches (GPU: device events, enqueued back to back; CPU: a monotonic clock).\n")
	p.f("  The candidates timed in full take turns in rounds, so that clock changes under a power cap\n")
	p.f("  fall on all of them alike. Launch counts are in each section.\n")
	p.f("- **Search.** A cost model prunes candidates predicted far slower than the best prediction, a\n")
	p.f("  short screening drops those clearly slower, and the rest are timed in full; the winner is the\n")
	p.f("  fastest verified kernel or baseline.\n")
	p.f("- **The roof** is measured in the same run, on the same device and working-set size: the best\n")
	p.f("  bandwidth of streaming kernels (a copy and an in-place update), measured before the first\n")
	p.f("  problem and again before each. It is the attainable streaming bandwidth, not the datasheet's.\n")
	p.f("  **%% of roof** = (ideal bytes ÷ time) ÷ roof, where the ideal bytes are the least traffic the\n")
	p.f("  problem needs (each input read once, each output written once; read too when it is accumulated\n")
	p.f("  into). 100 %% means as fast as streaming those bytes can be; a baseline's %% is on the same bytes.\n")
	p.f("  A kernel that reads less than the problem's stored inputs (the fem layouts that compute\n")
	p.f("  the geometry, /tri and /aff) solves it from other inputs: the best bespoke and the\n")
	p.f("  summaries count only the kernels that read the stored inputs, and such a kernel is shown\n")
	p.f("  beside them with its speed as a multiple of the stored-input roof's (the roof's time over\n")
	p.f("  its own: above 1 it beats any kernel that reads the stored factors).\n")
	p.f("- **The attainable roof**, where a run measured it, counts compute too: the vendor BLAS's large\n")
	p.f("  GEMM is timed in the same run, and **%% attainable** = the longer of the ideal bytes at the roof\n")
	p.f("  and the problem's operations at that rate, ÷ time.\n")
	p.f("- **Summaries** are geometric means over the problems of an element type (or kernel).\n")
	p.f("  A result replayed from the tuning store is marked and keeps the roof of the run that measured it.\n")
	methods := map[string]bool{}
	var list []string
	for _, r := range runs {
		if r.Report == nil {
			continue
		}
		if m := r.Report.RoofMethod; m != "" && !methods[m] {
			methods[m] = true
			list = append(list, m)
		}
		if r.Report.ComputeGFLOPs > 0 {
			if m := fmt.Sprintf("compute: %.0f GFLOP/s, %s", r.Report.ComputeGFLOPs, r.Report.ComputeMethod); !methods[m] {
				methods[m] = true
				list = append(list, m)
			}
		}
	}
	if len(list) > 0 {
		p.f("\nThe roof, as the runs state it:\n\n")
		for _, m := range list {
			p.f("- %s.\n", strings.TrimSuffix(m, "."))
		}
	}
	p.f("\n")
}

func writeSummary(p *pageWriter, secs []*perfSection, pums []*pumSection) {
	p.f("## Summary\n\n")
	p.f("| family | device | dtype | problems | best bespoke, %% roof (geomean) | worst | baselines, %% roof (geomean) | date | commit |\n")
	p.f("|---|---|---|---|---|---|---|---|---|\n")
	for _, s := range secs {
		all := overall(s.merged)
		var bls []string
		for _, b := range sortedKeys(all.Baselines) {
			bls = append(bls, fmt.Sprintf("%s %s", baselineTitle(b), pct(all.Baselines[b].GeoRoof)))
		}
		worst := "–"
		if all.Problems > 0 {
			worst = fmt.Sprintf("%s %s", pct(all.WorstRoof), all.WorstName)
		}
		p.f("| [%s](#%s) | %s | %s | %d | %s | %s | %s | %s | %s |\n", s.family, s.slug(), s.device, s.dtype,
			all.Problems, pct(all.GeoRoof), worst, dash(strings.Join(bls, ", ")), dash(joinField(s.runs, func(r *bench.Report) string { return r.Date })),
			dash(joinField(s.runs, func(r *bench.Report) string { return r.Commit })))
	}
	for _, s := range pums {
		p.f("| [pum](#%s) | %s | %s | %d | times, not a roof | | | – | – |\n", slugOf(s.title()), s.device, s.dtype, len(s.rows))
	}
	p.f("\n")
}

// overall is the summary over every problem of a report.
func overall(rep *bench.Report) Summary {
	ops := make([]*bench.Result, len(rep.Problems))
	for i := range rep.Problems {
		ops[i] = &rep.Problems[i]
	}
	return summarise("all", ops)
}

func renderSection(s *perfSection, opt PageOptions) (sectionParts, error) {
	var hb, tb, lb strings.Builder
	p := &pageWriter{w: &hb}
	p.f("## %s\n\n", s.title())
	for _, r := range s.runs {
		rep := r.Report
		line := fmt.Sprintf("`%s`: %s", filepath.ToSlash(r.Source), rep.Device.Name)
		if rep.Device.Arch != "" {
			line += ", " + rep.Device.Arch
		}
		if rep.Device.Platform != "" {
			line += ", " + rep.Device.Platform
		}
		line += fmt.Sprintf("; roof %s", roofSpread(rep))
		if unstable(rep) {
			line += " (unstable: the lowest measurement is under 80 % of the best)"
		}
		if n := launches(rep); n > 0 {
			line += fmt.Sprintf("; median of %d launches", n)
		}
		line += fmt.Sprintf("; size %s; date %s; commit %s", units(rep), dash(rep.Date), dash(rep.Commit))
		if c := cachedCount(rep); c > 0 {
			line += fmt.Sprintf("; %d of %d results from the tuning store", c, len(rep.Problems))
		}
		if rep.Interrupted {
			line += "; interrupted before every problem ran"
		}
		p.f("%s.\n\n", line)
	}
	if plotDir, plotLink := opt.PlotDir, opt.PlotLink; plotDir != "" {
		file := s.slug() + ".svg"
		pl, w, h, err := build(func() (*plot.Plot, vg.Length, vg.Length) { return roofPlot(s.merged) })
		if err != nil {
			return sectionParts{}, fmt.Errorf("performance page: chart %s: %w", file, err)
		}
		if pl != nil {
			if err := saveSVG(pl, w, h, filepath.Join(plotDir, file)); err != nil {
				return sectionParts{}, fmt.Errorf("performance page: chart %s: %w", file, err)
			}
			p.f("![%% of roof, %s](%s)\n\n", s.title(), path.Join(plotLink, file))
		}
	}
	p.w = &tb
	bls := baselineNames(s.merged)
	head := "| problem | best bespoke | µs | % roof |"
	att := s.merged.ComputeGFLOPs > 0
	if att {
		head += " % attainable |"
	}
	for _, b := range bls {
		head += " " + baselineTitle(b) + " % roof |"
	}
	geom := false
	for i := range s.merged.Problems {
		geom = geom || s.merged.Problems[i].GeometryBest() != nil
	}
	if geom {
		head += " geometry in the kernel | µs | × roof speed |"
	}
	head += " winner |"
	p.f("%s\n|%s\n", head, strings.Repeat("---|", strings.Count(head, "|")-1))
	for i := range s.merged.Problems {
		o := &s.merged.Problems[i]
		name := o.Name
		if o.Cached {
			name += " †"
		}
		row := "| " + name + " |"
		best := o.BestStored("bespoke")
		switch {
		case o.Err != "":
			row += " error | | |"
		case best == nil:
			row += " none verified | | |"
		default:
			row += fmt.Sprintf(" %s | %.1f | %s |", best.Name, float64(best.Timing.Median)/1e3, pct(best.RoofFrac))
		}
		if att {
			if best != nil && best.AttainableFrac > 0 {
				row += " " + pct(best.AttainableFrac) + " |"
			} else {
				row += " |"
			}
		}
		for _, b := range bls {
			row += " " + fastestOf(o, b) + " |"
		}
		if geom {
			if g := o.GeometryBest(); g != nil && o.RoofTime > 0 {
				row += fmt.Sprintf(" %s | %.1f | %.2f |", g.Name, float64(g.Timing.Median)/1e3, float64(o.RoofTime)/float64(g.Timing.Median))
			} else {
				row += " | | |"
			}
		}
		row += " " + winner(o) + " |"
		p.f("%s\n", row)
	}
	p.f("\n")
	if cachedCount(s.merged) > 0 {
		p.f("† from the tuning store: nothing timed in this run; measured by an earlier run against its own roof.\n\n")
	}
	p.w = &lb
	for _, sum := range Summaries(s.merged) {
		if sum.Group == "all" && len(Summaries(s.merged)) > 1 {
			continue
		}
		line := fmt.Sprintf("- **%s**: %s, best bespoke %s %% of roof (geomean)", sum.Group, plural(sum.Problems, "problem"), pct(sum.GeoRoof))
		if sum.Problems > 0 {
			line += fmt.Sprintf(", worst %s %s %%", sum.WorstName, pct(sum.WorstRoof))
		}
		for _, b := range sortedKeys(sum.Baselines) {
			bs := sum.Baselines[b]
			line += fmt.Sprintf("; %s %s %%, bespoke %.2f× faster (geomean), slower on %d", baselineTitle(b), pct(bs.GeoRoof), bs.GeoSpeedup, bs.Slower)
		}
		p.f("%s.\n", line)
	}
	p.f("\n")
	return sectionParts{hb.String(), tb.String(), lb.String()}, p.err
}

// winner is the problem's choice: "bespoke", or the baseline that won.
func winner(o *bench.Result) string {
	if o.Choice != nil {
		if o.Choice.Kind == "baseline" {
			return o.Choice.Winner
		}
		return "bespoke"
	}
	if c := o.Best(""); c != nil {
		if c.Kind == "baseline" {
			return c.Name
		}
		return "bespoke"
	}
	return "–"
}

// launches is the most launches a candidate's median was taken over.
func launches(rep *bench.Report) int {
	n := 0
	for _, o := range rep.Problems {
		for _, c := range o.Candidates {
			if !c.Screened {
				n = max(n, c.Timing.Reps)
			}
		}
	}
	return n
}

// unstable: the roof's measurements spread by more than 20 % below the best.
func unstable(rep *bench.Report) bool {
	for _, x := range rep.RoofSamples {
		if x < 0.8*rep.RoofGBs {
			return true
		}
	}
	return false
}

func cachedCount(rep *bench.Report) int {
	n := 0
	for _, o := range rep.Problems {
		if o.Cached {
			n++
		}
	}
	return n
}

// joinField is the distinct values of a field over the runs, in order.
func joinField(runs []PerfRun, field func(*bench.Report) string) string {
	seen := map[string]bool{}
	var out []string
	for _, r := range runs {
		if v := field(r.Report); v != "" && !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return strings.Join(out, ", ")
}

func dash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// PageLines is the most lines the performance page is to have; a section's
// per-problem table moves to its own file beyond it (PageOptions.TableDir).
const PageLines = 390

// WritePerformancePage reads the bench JSON files, writes the page to out
// (whole or not at all), its charts into plotDir and the per-problem tables
// that do not fit in PageLines into tableDir, both linked relative to out's
// folder. With out "" or "-" the page goes to stdout.
func WritePerformancePage(stdout io.Writer, out, plotDir, tableDir string, files []string) error {
	if len(files) == 0 {
		return errors.New("no results files given")
	}
	runs := make([]PerfRun, 0, len(files))
	for _, f := range files {
		r, err := ReadPerfRun(f)
		if err != nil {
			return err
		}
		runs = append(runs, r)
	}
	rel := func(dir string) string {
		if dir == "" || out == "" || out == "-" {
			return filepath.ToSlash(dir)
		}
		r, err := filepath.Rel(filepath.Dir(out), dir)
		if err != nil {
			return filepath.ToSlash(dir)
		}
		return filepath.ToSlash(r)
	}
	opt := PageOptions{PlotDir: plotDir, PlotLink: rel(plotDir), TableDir: tableDir, TableLink: rel(tableDir), MaxLines: PageLines}
	var buf strings.Builder
	if err := PerformancePage(&buf, runs, opt); err != nil {
		return err
	}
	if out == "" || out == "-" {
		_, err := io.WriteString(stdout, buf.String())
		return err
	}
	tmp := out + ".tmp"
	if err := os.WriteFile(tmp, []byte(buf.String()), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, out)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
