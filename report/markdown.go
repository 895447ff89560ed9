package report

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/bespoke-hpc/bespoke/bench"
)

// WriteMarkdown writes the summary and one row per problem (best bespoke
// candidate, cuBLAS, fastest cuSPARSE algorithm) as Markdown tables, the
// form docs/performance.md keeps.
func WriteMarkdown(w io.Writer, rep *bench.Report) error {
	fmt.Fprintf(w, "Device: %s (%s, %s). dtype %s, size %s, copy roof %.0f GB/s measured in the same run. Date %s, commit %s.\n\n",
		rep.Device.Name, rep.Device.Backend, rep.Device.Platform, rep.DType, units(rep), rep.RoofGBs, rep.Date, rep.Commit)
	fmt.Fprintln(w, "| group | operators | best bespoke, % roof (geomean) | worst % roof | worst operator | cuBLAS % roof | speedup vs cuBLAS (geomean / min) | cuSPARSE % roof | speedup vs cuSPARSE (geomean / min) |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
	for _, s := range Summaries(rep) {
		cb, cs := s.Baselines["cublas"], s.Baselines["cusparse"]
		fmt.Fprintf(w, "| %s | %d | %.1f | %.1f | %s | %s | %s | %s | %s |\n", s.Group, s.Problems, 100*s.GeoRoof, 100*s.WorstRoof, s.WorstName,
			pct(cb.GeoRoof), ratio(cb.GeoSpeedup, cb.MinSpeedup), pct(cs.GeoRoof), ratio(cs.GeoSpeedup, cs.MinSpeedup))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| problem | shape | size | nnz | β | best variant | µs | % roof | regs (spill B) | cuBLAS % roof | cuSPARSE % roof (alg) |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|")
	ops := append([]bench.Result(nil), rep.Problems...)
	sort.SliceStable(ops, func(i, j int) bool { return Group(ops[i].Name) < Group(ops[j].Name) })
	for i := range ops {
		o := &ops[i]
		best := o.Best("bespoke")
		if best == nil {
			fmt.Fprintf(w, "| %s | %s | %d | %s | %s | none verified | | | | | |\n", o.Name, o.Shape, o.Units, fact(o, "nnz"), fact(o, "beta"))
			continue
		}
		cb, cs := "", ""
		var fastest *bench.Candidate
		for i := range o.Candidates {
			c := &o.Candidates[i]
			if !c.Verified || c.Kind != "baseline" {
				continue
			}
			if c.Name == "cublas" {
				cb = fmt.Sprintf("%.1f", 100*c.RoofFrac)
			} else if strings.HasPrefix(c.Name, "cusparse") && (fastest == nil || c.Timing.Median < fastest.Timing.Median) {
				fastest = c
			}
		}
		if fastest != nil {
			cs = fmt.Sprintf("%.1f (%s)", 100*fastest.RoofFrac, strings.TrimPrefix(fastest.Name, "cusparse/"))
		}
		fmt.Fprintf(w, "| %s | %s | %d | %s | %s | %s | %.1f | %.1f | %d (%d) | %s | %s |\n", o.Name, o.Shape, o.Units, fact(o, "nnz"), fact(o, "beta"), best.Name,
			float64(best.Timing.Median)/1e3, 100*best.RoofFrac, best.Resources.Registers, best.Resources.SpillBytes, cb, cs)
	}
	return nil
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
