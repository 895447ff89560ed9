package bench

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// WriteMarkdown writes the summary and one row per operator (best bespoke
// candidate, cuBLAS, fastest cuSPARSE algorithm) as Markdown tables, the
// form docs/performance.md keeps.
func (rep *Report) WriteMarkdown(w io.Writer) error {
	fmt.Fprintf(w, "Device: %s (%s, %s). dtype %s, n = %s, copy roof %.0f GB/s measured in the same run. Date %s, commit %s.\n\n",
		rep.Device.Name, rep.Device.Backend, rep.Device.Platform, rep.DType, rep.columns(), rep.RoofGBs, rep.Date, rep.Commit)
	fmt.Fprintln(w, "| group | operators | best bespoke, % roof (geomean) | worst % roof | worst operator | cuBLAS % roof | speedup vs cuBLAS (geomean / min) | cuSPARSE % roof | speedup vs cuSPARSE (geomean / min) |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
	for _, s := range rep.Summaries() {
		cb, cs := s.Baselines["cublas"], s.Baselines["cusparse"]
		fmt.Fprintf(w, "| %s | %d | %.1f | %.1f | %s | %s | %s | %s | %s |\n", s.Group, s.Operators, 100*s.GeoRoof, 100*s.WorstRoof, s.WorstName,
			pct(cb.GeoRoof), ratio(cb.GeoSpeedup, cb.MinSpeedup), pct(cs.GeoRoof), ratio(cs.GeoSpeedup, cs.MinSpeedup))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| operator | m×k | n | nnz | β | best variant | µs | % roof | regs (spill B) | cuBLAS % roof | cuSPARSE % roof (alg) |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|")
	ops := append([]OpResult(nil), rep.Operators...)
	sort.SliceStable(ops, func(i, j int) bool { return Group(ops[i].Name) < Group(ops[j].Name) })
	for _, o := range ops {
		best := o.Best("bespoke")
		if best == nil {
			fmt.Fprintf(w, "| %s | %d×%d | %d | %d | %g | none verified | | | | | |\n", o.Name, o.M, o.K, o.N, o.NNZ, o.Beta)
			continue
		}
		cb, cs := "", ""
		var fastest *Candidate
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
		fmt.Fprintf(w, "| %s | %d×%d | %d | %d | %g | %s | %.1f | %.1f | %d (%d) | %s | %s |\n", o.Name, o.M, o.K, o.N, o.NNZ, o.Beta, best.Name,
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
