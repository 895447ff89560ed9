// Package report turns bench results into what people read and other
// tools take: tables, JSON, CSV, the Go benchmark format, Markdown, SVG
// charts, and the performance page made from stored results
// (PerformancePage, which docs/performance.md is).
//
// It may import bench, device, tune and kernel/family/registry, but no
// backend and no family: what it knows of a family is the facts its
// workload names (m, k, nnz, β …) and the columns the family registers
// (the marker fact that tells its results, facts and rates to show). It
// sees the families the program links: the CLI imports
// kernel/family/registry/families.
package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/bespoke-hpc/bespoke/bench"
	"github.com/bespoke-hpc/bespoke/kernel/family/registry"
	"github.com/bespoke-hpc/bespoke/tune"
)

// Group is the element type in a PyFR-style name ("p3/hex/m6" → "hex"),
// or the folder of any name with one.
func Group(name string) string {
	parts := strings.Split(name, "/")
	if len(parts) >= 2 {
		return parts[len(parts)-2]
	}
	return "all"
}

// Summary aggregates per group: geometric means and worst cases.
type Summary struct {
	Group     string                     `json:"group"`
	Problems  int                        `json:"problems"`
	GeoRoof   float64                    `json:"geomean_roof"` // best bespoke candidate, fraction of roof
	WorstRoof float64                    `json:"worst_roof"`
	WorstName string                     `json:"worst_name"`
	Baselines map[string]BaselineSummary `json:"baselines,omitempty"`
}

// BaselineSummary compares the best bespoke kernel with one baseline.
type BaselineSummary struct {
	GeoRoof    float64 `json:"geomean_roof"`
	GeoSpeedup float64 `json:"geomean_speedup"` // baseline time / best bespoke time
	MinSpeedup float64 `json:"min_speedup"`
	Slower     int     `json:"bespoke_slower"` // problems where bespoke lost
}

// Summaries returns one Summary per group, then one for everything.
func Summaries(rep *bench.Report) []Summary {
	groups := map[string][]*bench.Result{}
	var names []string
	for i := range rep.Problems {
		o := &rep.Problems[i]
		g := Group(o.Name)
		if _, ok := groups[g]; !ok {
			names = append(names, g)
		}
		groups[g] = append(groups[g], o)
		if g != "all" {
			groups["all"] = append(groups["all"], o)
		}
	}
	sort.Strings(names)
	if len(names) > 1 || (len(names) == 1 && names[0] != "all") {
		names = append(names, "all")
	}
	var out []Summary
	for _, g := range names {
		out = append(out, summarise(g, groups[g]))
	}
	return out
}

func summarise(g string, ops []*bench.Result) Summary {
	s := Summary{Group: g, WorstRoof: math.Inf(1), Baselines: map[string]BaselineSummary{}}
	logSum := 0.0
	type acc struct {
		logRoof, logSpeed, min float64
		n, slower              int
	}
	bl := map[string]*acc{}
	for _, o := range ops {
		best := o.BestStored("bespoke")
		if best == nil {
			continue
		}
		s.Problems++
		logSum += math.Log(best.RoofFrac)
		if best.RoofFrac < s.WorstRoof {
			s.WorstRoof, s.WorstName = best.RoofFrac, o.Name
		}
		// Each baseline family ("cublas", "cusparse") by its fastest
		// verified configuration (cuSPARSE: its fastest algorithm).
		fam := map[string]*bench.Candidate{}
		for i := range o.Candidates {
			c := &o.Candidates[i]
			if c.Kind != "baseline" || !c.Verified {
				continue
			}
			name, _, _ := strings.Cut(c.Name, "/")
			if f := fam[name]; f == nil || c.Timing.Median < f.Timing.Median {
				fam[name] = c
			}
		}
		for name, c := range fam {
			a := bl[name]
			if a == nil {
				a = &acc{min: math.Inf(1)}
				bl[name] = a
			}
			sp := float64(c.Timing.Median) / float64(best.Timing.Median)
			a.logRoof += math.Log(c.RoofFrac)
			a.logSpeed += math.Log(sp)
			a.min = math.Min(a.min, sp)
			a.n++
			if sp < 1 {
				a.slower++
			}
		}
	}
	if s.Problems > 0 {
		s.GeoRoof = math.Exp(logSum / float64(s.Problems))
	} else {
		s.WorstRoof = 0
	}
	for name, a := range bl {
		s.Baselines[name] = BaselineSummary{GeoRoof: math.Exp(a.logRoof / float64(a.n)),
			GeoSpeedup: math.Exp(a.logSpeed / float64(a.n)), MinSpeedup: a.min, Slower: a.slower}
	}
	return s
}

// WriteJSON writes the report with its summaries.
func WriteJSON(w io.Writer, rep *bench.Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		*bench.Report
		Summaries []Summary `json:"summaries"`
	}{rep, Summaries(rep)})
}

// units describes the size timed: fixed, or raised per problem.
func units(rep *bench.Report) string {
	if rep.MinLaunchBytes <= 0 {
		return strconv.Itoa(rep.Units)
	}
	return fmt.Sprintf("%d, raised per problem until a launch moves %d MiB (at most %d)", rep.Units, rep.MinLaunchBytes>>20, rep.MaxUnits)
}

func us(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e3, 'f', 1, 64) }

// fact prints a named fact, "" when the family gives none.
func fact(o *bench.Result, name string) string {
	v, ok := o.Facts[name]
	if !ok {
		return ""
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}

// tableFacts are the facts the table shows, in this order, when some
// problem of the report has them: every registered family's.
func tableFacts() []struct{ name, title string } {
	var out []struct{ name, title string }
	for _, f := range registry.All() {
		for _, c := range f.Report.Facts {
			out = append(out, struct{ name, title string }{c.Name, c.Title})
		}
	}
	return out
}

// rate is a throughput shown beside GB/s where the family states its
// work: the rates the registered families declare over their facts
// (GDOF/s from the tensor family's "dofs" …), then GFLOP/s from the fixed
// FLOP count. per: time per unit of work in ns instead.
type rate struct {
	title string
	work  func(o *bench.Result) float64
	per   bool
}

func rates() []rate {
	var out []rate
	for _, f := range registry.All() {
		for _, r := range f.Report.Rates {
			fact := r.Work
			out = append(out, rate{r.Title, func(o *bench.Result) float64 { return o.Facts[fact] }, r.Per})
		}
	}
	return append(out, rate{"GFLOP/s", func(o *bench.Result) float64 { return float64(o.Flops) }, false})
}

// presentRates are the rates some problem of the report has work for.
func presentRates(rep *bench.Report) []rate {
	var out []rate
	for _, r := range rates() {
		for i := range rep.Problems {
			if r.work(&rep.Problems[i]) > 0 {
				out = append(out, r)
				break
			}
		}
	}
	return out
}

// rateOf is work per second, in billions (or ns per unit of work).
func rateOf(r rate, o *bench.Result, d time.Duration) string {
	if d <= 0 || r.work(o) <= 0 {
		return ""
	}
	if r.per {
		return strconv.FormatFloat(float64(d.Nanoseconds())/r.work(o), 'f', 3, 64)
	}
	v := r.work(o) / d.Seconds() / 1e9
	if v < 1 { // CPUs integrate millions of elements a second, not billions
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// roofPercent is a fraction of the roof in %, or "–" for a run that
// measured no roof.
func roofPercent(rep *bench.Report, frac float64) string {
	if !(rep.RoofGBs > 0) {
		return "–"
	}
	return fmt.Sprintf("%.1f", 100*frac)
}

// roofSpread describes the roof: the best measurement and the range of all.
func roofSpread(rep *bench.Report) string {
	if !(rep.RoofGBs > 0) {
		return "not measured" // pipelines timed as a whole (RoofMethod says why)
	}
	s := fmt.Sprintf("%.1f GB/s", rep.RoofGBs)
	if n := len(rep.RoofSamples); n > 1 {
		lo, hi := rep.RoofSamples[0], rep.RoofSamples[0]
		for _, x := range rep.RoofSamples {
			lo, hi = math.Min(lo, x), math.Max(hi, x)
		}
		s += fmt.Sprintf(" (best of %d measurements, %.1f–%.1f)", n, lo, hi)
	}
	return s
}

// WriteTable writes a readable table: one line per candidate.
func WriteTable(w io.Writer, rep *bench.Report) error {
	fmt.Fprintf(w, "device: %s (%s)  dtype: %s  size: %s  roof: %s  date: %s  commit: %s\n",
		rep.Device.Name, rep.Device.Backend, rep.DType, units(rep), roofSpread(rep), rep.Date, rep.Commit)
	if rep.RoofWarning != "" {
		fmt.Fprintf(w, "warning: %s\n", rep.RoofWarning)
	}
	att := rep.ComputeGFLOPs > 0
	if att {
		fmt.Fprintf(w, "compute: %.0f GFLOP/s (%s); %% attain. is against the roofline, the longer of the ideal bytes at the roof and the operations at that rate\n",
			rep.ComputeGFLOPs, rep.ComputeMethod)
	}
	fmt.Fprintln(w)
	attTitle, attBlank := "", ""
	if att {
		attTitle, attBlank = "\t% attain.", "\t"
	}
	var facts []string
	title := "problem\tshape\tsize"
	for _, f := range presentFacts(rep) {
		facts = append(facts, f.name)
		title += "\t" + f.title
	}
	rs := presentRates(rep)
	rateTitles, rateBlanks := "", strings.Repeat("\t", len(rs))
	for _, r := range rs {
		rateTitles += "\t" + r.title
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, title+"\tcandidate\tmedian µs\tmin–max\tGB/s"+rateTitles+"\t% roof"+attTitle+"\trel err\tregs\t")
	for i := range rep.Problems {
		o := &rep.Problems[i]
		head := fmt.Sprintf("%s\t%s\t%d", o.Name, o.Shape, o.Units)
		for _, f := range facts {
			head += "\t" + fact(o, f)
		}
		if o.Err != "" {
			fmt.Fprintf(tw, "%s\terror: %s\t\t\t\t\t\t\t%s\n", head, o.Err, attBlank)
			continue
		}
		if o.Cached {
			fmt.Fprintf(tw, "%s\tfrom the tuning store, nothing timed in this run (measured %s; --retune measures again)\t\t\t\t\t\t%s%s\n", head, o.Measured, rateBlanks, attBlank)
		}
		best := o.Best("bespoke")
		for _, c := range o.Candidates {
			name := c.Name
			if best != nil && c.Name == best.Name {
				name = "*" + name
			}
			if c.Pruned {
				fmt.Fprintf(tw, "%s\t%s\tnot built: the model predicts %s µs\t\t\t\t\t\t%s%s\n", head, name, predictedUS(c.Predicted), rateBlanks, attBlank)
				continue
			}
			if c.Err != "" {
				fmt.Fprintf(tw, "%s\t%s\tfailed: %s\t\t\t\t\t\t%s%s\n", head, name, firstLine(c.Err), rateBlanks, attBlank)
				continue
			}
			if c.Screened {
				// A screening pass is a few launches, not the full median:
				// it only showed the candidate was far behind.
				name += fmt.Sprintf(" (screened: %d launches)", c.Timing.Reps)
			}
			vals := ""
			for _, r := range rs {
				vals += "\t" + rateOf(r, o, c.Timing.Median)
			}
			attCell := ""
			if att {
				attCell = fmt.Sprintf("\t%.1f", 100*c.AttainableFrac)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.1f%s\t%s%s\t%.1e\t%d\t\n", head, name,
				us(c.Timing.Median), spread(c.Timing), c.GBs, vals, roofPercent(rep, c.RoofFrac), attCell, c.MaxRelErr, c.Resources.Registers)
		}
		if !(rep.RoofGBs > 0) {
			continue // no roof to show a line of
		}
		fmt.Fprintf(tw, "%s\t\t%s\troof (ideal bytes at copy speed)\t%s\t\t%.1f%s\t100.0%s\t\t\t\n", o.Name, strings.Repeat("\t", len(facts)), us(o.RoofTime), rep.RoofGBs, rateBlanks, attBlank)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if err := WriteSummary(w, rep); err != nil {
		return err
	}
	if m := CheckModel(rep); m.Candidates > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, m)
	}
	return nil
}

// spread is how far a timing's fastest and slowest launches lie from its
// median, in per cent.
func spread(t bench.Timing) string {
	if t.Median <= 0 || t.Min <= 0 {
		return ""
	}
	m := float64(t.Median)
	return fmt.Sprintf("−%.1f/+%.1f %%", 100*(m-float64(t.Min))/m, 100*(float64(t.Max)-m)/m)
}

// predictedUS is a prediction's time in µs, or "?".
func predictedUS(p *tune.Prediction) string {
	if p == nil || !(p.Seconds > 0) {
		return "?"
	}
	return fmt.Sprintf("%.1f (%s)", p.Seconds*1e6, p.Bound)
}

// ModelCheck is how the cost model's pruning fared in a run.
type ModelCheck struct {
	// Candidates predicted, and of those Pruned (not built) or, in full
	// searches, WouldPrune.
	Candidates, Pruned, WouldPrune int
	// Readmitted: pruned, then built after all because the kept
	// candidates ran slower than those were predicted to.
	Readmitted int
	// Full searches (no candidate pruned) where the kept candidates held
	// the fastest bespoke candidate (WinnerKept), or one within 1 % of
	// it (Within1).
	Searches, WinnerKept, Within1 int
	// Worst is the largest ratio of the fastest kept candidate's time to
	// the fastest's, at WorstName.
	Worst     float64
	WorstName string
}

// CheckModel counts, over a report, what the cost model pruned or would
// have pruned, and in full searches whether the winner survived.
func CheckModel(rep *bench.Report) ModelCheck {
	m := ModelCheck{Worst: 1}
	for i := range rep.Problems {
		o := &rep.Problems[i]
		if o.Cached {
			continue
		}
		full := true
		best, bestKept := math.Inf(1), math.Inf(1)
		for _, c := range o.Candidates {
			if c.Predicted == nil {
				continue
			}
			m.Candidates++
			if c.Readmitted {
				m.Readmitted++
			}
			if c.Pruned {
				m.Pruned++
				full = false
				continue
			}
			if !c.Predicted.Keep {
				m.WouldPrune++
			}
			if c.Verified && c.Timing.Median > 0 {
				t := float64(c.Timing.Median)
				best = min(best, t)
				if c.Predicted.Keep {
					bestKept = min(bestKept, t)
				}
			}
		}
		if !full || math.IsInf(best, 1) {
			continue
		}
		m.Searches++
		if bestKept == best {
			m.WinnerKept++
		}
		if bestKept <= 1.01*best {
			m.Within1++
		}
		if r := bestKept / best; r > m.Worst {
			m.Worst, m.WorstName = r, o.Name
		}
	}
	return m
}

// String is the check in a sentence.
func (m ModelCheck) String() string {
	s := fmt.Sprintf("cost model: predicted %d candidates, did not build %d", m.Candidates, m.Pruned)
	if m.Readmitted > 0 {
		s += fmt.Sprintf(" (and built %d it had pruned, after the kept ones ran slower than those were predicted to)", m.Readmitted)
	}
	if m.Searches > 0 {
		s += fmt.Sprintf("; in %d problems where every candidate was built it would have skipped %d, and the candidates it kept held the winner in %d and one within 1 %% of it in %d", m.Searches, m.WouldPrune, m.WinnerKept, m.Within1)
		if m.Worst > 1 {
			s += fmt.Sprintf(" (worst: %.1f %% slower, %s)", 100*(m.Worst-1), m.WorstName)
		}
	}
	return s
}

// WriteChoices writes each problem's choice: the winner, its time and
// fraction of the roof, why it won, and whether it came from the tuning
// store.
func WriteChoices(w io.Writer, rep *bench.Report) error {
	fmt.Fprintf(w, "device: %s (%s)  dtype: %s  size: %s  roof: %s  date: %s  commit: %s\n",
		rep.Device.Name, rep.Device.Backend, rep.DType, units(rep), roofSpread(rep), rep.Date, rep.Commit)
	if rep.RoofWarning != "" {
		fmt.Fprintf(w, "warning: %s\n", rep.RoofWarning)
	}
	if rep.ComputeGFLOPs > 0 {
		fmt.Fprintf(w, "compute: %.0f GFLOP/s (%s); %% attain. is against the roofline, the longer of the ideal bytes at the roof and the operations at that rate\n",
			rep.ComputeGFLOPs, rep.ComputeMethod)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "problem\tshape\tsize\tchoice\tkind\tmedian µs\t% roof\tfrom\twhy")
	for i := range rep.Problems {
		o := &rep.Problems[i]
		from := "measured"
		if o.Cached {
			from = "store"
		}
		switch {
		case o.Err != "":
			fmt.Fprintf(tw, "%s\t%s\t%d\terror: %s\t\t\t\t%s\t\n", o.Name, o.Shape, o.Units, firstLine(o.Err), from)
		case o.Choice == nil:
			fmt.Fprintf(tw, "%s\t%s\t%d\tnone verified\t\t\t\t%s\t\n", o.Name, o.Shape, o.Units, from)
		default:
			c := o.Find(o.Choice.Winner)
			frac := 0.0
			if c != nil {
				frac = c.RoofFrac
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", o.Name, o.Shape, o.Units, o.Choice.Winner, o.Choice.Kind,
				us(o.Choice.Median), roofPercent(rep, frac), from, o.Choice.Why)
		}
	}
	return tw.Flush()
}

// WriteSummary writes the per-group geometric means and worst cases.
func WriteSummary(w io.Writer, rep *bench.Report) error {
	if !(rep.RoofGBs > 0) {
		return nil // every figure is a % of the roof
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "group\tproblems\tbest % roof (geomean)\tworst % roof\tworst problem\tbaseline\tbaseline % roof\tspeedup (geomean)\tmin speedup\tbespoke slower\t")
	for _, s := range Summaries(rep) {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.1f\t%s\t\t\t\t\t\t\n", s.Group, s.Problems, 100*s.GeoRoof, 100*s.WorstRoof, s.WorstName)
		var bls []string
		for name := range s.Baselines {
			bls = append(bls, name)
		}
		sort.Strings(bls)
		for _, name := range bls {
			b := s.Baselines[name]
			fmt.Fprintf(tw, "\t\t\t\t\t%s\t%.1f\t%.2f×\t%.2f×\t%d\t\n", name, 100*b.GeoRoof, b.GeoSpeedup, b.MinSpeedup, b.Slower)
		}
	}
	return tw.Flush()
}

// WriteCSV writes one row per candidate.
func WriteCSV(w io.Writer, rep *bench.Report) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"device", "dtype", "size", "problem", "shape", "m", "k", "nnz", "k_used", "density", "beta", "candidate", "kind",
		"median_us", "min_us", "gbs", "roof_frac", "max_rel_err", "verified", "registers", "spill_bytes", "error",
		"screened", "predicted_us", "model_bound", "model_keep", "pruned", "readmitted"})
	for i := range rep.Problems {
		o := &rep.Problems[i]
		for _, c := range o.Candidates {
			cw.Write([]string{rep.Device.Name, rep.DType, strconv.Itoa(o.Units), o.Name, o.Shape, fact(o, "m"), fact(o, "k"),
				fact(o, "nnz"), fact(o, "k_used"), fact(o, "density"), fact(o, "beta"), c.Name, c.Kind,
				us(c.Timing.Median), us(c.Timing.Min), fmt.Sprintf("%.2f", c.GBs), fmt.Sprintf("%.4f", c.RoofFrac),
				fmt.Sprintf("%.3g", c.MaxRelErr), strconv.FormatBool(c.Verified), strconv.Itoa(c.Resources.Registers),
				strconv.Itoa(c.Resources.SpillBytes), c.Err, strconv.FormatBool(c.Screened), predicted(c.Predicted, "us"),
				predicted(c.Predicted, "bound"), predicted(c.Predicted, "keep"), strconv.FormatBool(c.Pruned),
				strconv.FormatBool(c.Readmitted)})
		}
	}
	cw.Flush()
	return cw.Error()
}

// predicted is one field of a prediction for the CSV ("" without one).
func predicted(p *tune.Prediction, field string) string {
	if p == nil {
		return ""
	}
	switch field {
	case "us":
		return fmt.Sprintf("%.2f", p.Seconds*1e6)
	case "bound":
		return p.Bound
	}
	return strconv.FormatBool(p.Keep)
}

// WriteGoBench writes the Go benchmark format, one line per verified
// candidate, so that benchstat can compare two runs.
func WriteGoBench(w io.Writer, rep *bench.Report) error {
	fmt.Fprintf(w, "goos: linux\npkg: bespoke\ndevice: %s\nbackend: %s\ndriver: %s\ncommit: %s\ndate: %s\n",
		rep.Device.Name, rep.Device.Backend, rep.Device.Platform, rep.Commit, rep.Date)
	fmt.Fprintf(w, "BenchmarkCopyRoof/%s/bytes=%d\t%d\t%.6g sec/op\t%.1f GB/s\n", rep.DType, 0, rep.Roof.Reps, rep.Roof.Median.Seconds(), rep.RoofGBs)
	for _, o := range rep.Problems {
		for _, c := range o.Candidates {
			if !c.Verified {
				continue
			}
			name := strings.NewReplacer(" ", "_", "/", ":").Replace(c.Name)
			fmt.Fprintf(w, "BenchmarkBespoke/%s/%s/n=%d/%s\t%d\t%.6g sec/op\t%.2f GB/s\t%.4f roof\n",
				o.Name, rep.DType, o.Units, name, c.Timing.Reps, c.Timing.Median.Seconds(), c.GBs, c.RoofFrac)
		}
	}
	return nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 100 {
		s = s[:100] + "…"
	}
	return s
}
