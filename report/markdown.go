package report

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/bespoke-hpc/bespoke/bench"
)

// WriteMarkdown writes the summary and one row per problem (the best bespoke
// candidate, and each baseline family's fastest configuration) as Markdown
// tables, one run's form of docs/performance.md's. Columns for facts (nnz, β)
// and baselines appear only when some problem has them.
func WriteMarkdown(w io.Writer, rep *bench.Report) error {
	fmt.Fprintf(w, "Device: %s (%s, %s). dtype %s, size %s, streaming roof %s measured in the same run. Date %s, commit %s.\n\n",
		rep.Device.Name, rep.Device.Backend, rep.Device.Platform, rep.DType, units(rep), roofSpread(rep), rep.Date, rep.Commit)
	sums := Summaries(rep)
	bls := baselineNames(rep)
	head := "| group | problems | best bespoke, % roof (geomean) | worst % roof | worst problem |"
	for _, b := range bls {
		head += fmt.Sprintf(" %s %% roof | speedup vs %s (geomean / min) |", b, b)
	}
	table(w, head)
	for _, s := range sums {
		row := fmt.Sprintf("| %s | %d | %.1f | %.1f | %s |", s.Group, s.Problems, 100*s.GeoRoof, 100*s.WorstRoof, s.WorstName)
		for _, b := range bls {
			bs := s.Baselines[b]
			row += fmt.Sprintf(" %s | %s |", pct(bs.GeoRoof), ratio(bs.GeoSpeedup, bs.MinSpeedup))
		}
		fmt.Fprintln(w, row)
	}
	fmt.Fprintln(w)
	facts := presentFacts(rep)
	head = "| problem | shape | size |"
	for _, f := range facts {
		head += " " + f.title + " |"
	}
	rs := presentRates(rep)
	head += " best variant | µs |"
	for _, r := range rs {
		head += " " + r.title + " |"
	}
	head += " % roof | regs (spill B) |"
	for _, b := range bls {
		head += " " + b + " % roof |"
	}
	table(w, head)
	ops := append([]bench.Result(nil), rep.Problems...)
	sort.SliceStable(ops, func(i, j int) bool { return Group(ops[i].Name) < Group(ops[j].Name) })
	for i := range ops {
		o := &ops[i]
		row := fmt.Sprintf("| %s | %s | %d |", o.Name, o.Shape, o.Units)
		for _, f := range facts {
			row += " " + fact(o, f.name) + " |"
		}
		best := o.BestStored("bespoke")
		if best == nil {
			fmt.Fprintln(w, row+" none verified |"+strings.Repeat(" |", 3+len(rs)+len(bls)))
			continue
		}
		row += fmt.Sprintf(" %s | %.1f |", best.Name, float64(best.Timing.Median)/1e3)
		for _, r := range rs {
			row += " " + rateOf(r, o, best.Timing.Median) + " |"
		}
		row += fmt.Sprintf(" %.1f | %d (%d) |", 100*best.RoofFrac, best.Resources.Registers, best.Resources.SpillBytes)
		for _, b := range bls {
			row += " " + fastestOf(o, b) + " |"
		}
		fmt.Fprintln(w, row)
	}
	return nil
}

// table writes a header row and its rule.
func table(w io.Writer, head string) {
	fmt.Fprintln(w, head)
	fmt.Fprintln(w, "|"+strings.Repeat("---|", strings.Count(head, "|")-1))
}

// baselineNames are the baseline families ("cublas", "cusparse") that some
// problem of the report ran, sorted.
func baselineNames(rep *bench.Report) []string {
	seen := map[string]bool{}
	for _, o := range rep.Problems {
		for _, c := range o.Candidates {
			if c.Kind == "baseline" {
				name, _, _ := strings.Cut(c.Name, "/")
				seen[name] = true
			}
		}
	}
	var names []string
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// presentFacts are the tableFacts some problem of the report has.
func presentFacts(rep *bench.Report) []struct{ name, title string } {
	var out []struct{ name, title string }
	for _, f := range tableFacts() {
		for _, o := range rep.Problems {
			if _, ok := o.Facts[f.name]; ok {
				out = append(out, f)
				break
			}
		}
	}
	return out
}

// fastestOf is a baseline family's fastest verified configuration on a
// problem: its % of the roof, and its configuration when it has several.
func fastestOf(o *bench.Result, family string) string {
	var fastest *bench.Candidate
	for i := range o.Candidates {
		c := &o.Candidates[i]
		name, _, _ := strings.Cut(c.Name, "/")
		if c.Verified && c.Kind == "baseline" && name == family && (fastest == nil || c.Timing.Median < fastest.Timing.Median) {
			fastest = c
		}
	}
	if fastest == nil {
		return ""
	}
	if _, alg, ok := strings.Cut(fastest.Name, "/"); ok {
		return fmt.Sprintf("%.1f (%s)", 100*fastest.RoofFrac, alg)
	}
	return fmt.Sprintf("%.1f", 100*fastest.RoofFrac)
}

func pct(f float64) string {
	if f == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f", 100*f)
}

func ratio(geo, min float64) string {
	if geo == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f× / %.2f×", geo, min)
}
