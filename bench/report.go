package bench

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/operator"
)

// Report is one bench run.
type Report struct {
	Device device.Info `json:"device"`
	DType  string      `json:"dtype"`
	N      int         `json:"n"` // columns; with MinLaunchBytes the least, see OpResult.N
	// MinLaunchBytes and MaxN: n was raised per operator until one launch
	// moved MinLaunchBytes, up to MaxN columns (0: n fixed).
	MinLaunchBytes int64      `json:"min_launch_bytes,omitempty"`
	MaxN           int        `json:"max_n,omitempty"`
	Date           string     `json:"date"`
	Commit         string     `json:"commit,omitempty"`
	RoofGBs        float64    `json:"roof_gbs"`
	Roof           Timing     `json:"roof_timing"`
	Operators      []OpResult `json:"operators"`
	// Interrupted: Config.Stop ended the run before every operator ran.
	Interrupted bool `json:"interrupted,omitempty"`
}

// Run measures the roof, then every operator, on one device.
func Run(dev device.Device, ops []*operator.Operator, cfg Config) (*Report, error) {
	r, err := NewRunner(dev, cfg)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	rep := &Report{Device: dev.Info(), DType: r.cfg.DType.String(), N: r.cfg.N,
		MinLaunchBytes: r.cfg.MinLaunchBytes, MaxN: r.cfg.MaxN, Date: time.Now().UTC().Format("2006-01-02")}
	r.cfg.Progress("copy roof")
	if rep.RoofGBs, rep.Roof, err = r.Roof(); err != nil {
		return nil, fmt.Errorf("measuring the copy roof: %w", err)
	}
	rep.Device.CopyGBs = rep.RoofGBs
	r.cfg.Progress("compiling")
	// On a GPU the timing loop runs while later operators compile, on all
	// but two host cores; a CPU device times on the cores the compilers
	// would use, so there every build finishes first.
	stop := make(chan struct{})
	workers, overlap := runtime.NumCPU(), rep.Device.GPU
	if overlap {
		workers = max(workers-2, 1)
	}
	ready, built, wait := r.precompile(ops, workers, stop)
	defer wait()
	defer close(stop)
	if !overlap {
		for _, c := range ready {
			select {
			case <-c:
			case <-r.cfg.Stop:
			}
		}
	}
	for i, op := range ops {
		select {
		case <-ready[i]:
		case <-r.cfg.Stop:
		}
		// A stop wins even when the operator is ready.
		select {
		case <-r.cfg.Stop:
			rep.Interrupted = true
			return rep, nil
		default:
		}
		rep.Operators = append(rep.Operators, r.Operator(op, built[i], rep.RoofGBs))
	}
	return rep, nil
}

// Group is the element type in a PyFR-style name ("p3/hex/m6" → "hex").
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
	Operators int                        `json:"operators"`
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
	Slower     int     `json:"bespoke_slower"` // operators where bespoke lost
}

// Summaries returns one Summary per group, then one for everything.
func (rep *Report) Summaries() []Summary {
	groups := map[string][]*OpResult{}
	var names []string
	for i := range rep.Operators {
		o := &rep.Operators[i]
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

func summarise(g string, ops []*OpResult) Summary {
	s := Summary{Group: g, WorstRoof: math.Inf(1), Baselines: map[string]BaselineSummary{}}
	logSum := 0.0
	type acc struct {
		logRoof, logSpeed, min float64
		n, slower              int
	}
	bl := map[string]*acc{}
	for _, o := range ops {
		best := o.Best("bespoke")
		if best == nil {
			continue
		}
		s.Operators++
		logSum += math.Log(best.RoofFrac)
		if best.RoofFrac < s.WorstRoof {
			s.WorstRoof, s.WorstName = best.RoofFrac, o.Name
		}
		// Each baseline family ("cublas", "cusparse") by its fastest
		// verified configuration (cuSPARSE: its fastest algorithm).
		fam := map[string]*Candidate{}
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
	if s.Operators > 0 {
		s.GeoRoof = math.Exp(logSum / float64(s.Operators))
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
func (rep *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		*Report
		Summaries []Summary `json:"summaries"`
	}{rep, rep.Summaries()})
}

// columns describes n: fixed, or raised per operator.
func (rep *Report) columns() string {
	if rep.MinLaunchBytes <= 0 {
		return strconv.Itoa(rep.N)
	}
	return fmt.Sprintf("%d, raised per operator until a launch moves %d MiB (at most %d)", rep.N, rep.MinLaunchBytes>>20, rep.MaxN)
}

func us(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e3, 'f', 1, 64) }

// WriteTable writes a readable table: one line per candidate.
func (rep *Report) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "device: %s (%s)  dtype: %s  n: %s  copy roof: %.1f GB/s  date: %s  commit: %s\n\n",
		rep.Device.Name, rep.Device.Backend, rep.DType, rep.columns(), rep.RoofGBs, rep.Date, rep.Commit)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "operator\tm×k\tn\tnnz\tβ\tcandidate\tmedian µs\tGB/s\t% roof\trel err\tregs\t")
	for _, o := range rep.Operators {
		shape := fmt.Sprintf("%d×%d\t%d", o.M, o.K, o.N)
		if o.Err != "" {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%g\terror: %s\t\t\t\t\t\t\n", o.Name, shape, o.NNZ, o.Beta, o.Err)
			continue
		}
		best := o.Best("bespoke")
		for _, c := range o.Candidates {
			name := c.Name
			if best != nil && c.Name == best.Name {
				name = "*" + name
			}
			if c.Err != "" {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%g\t%s\tfailed: %s\t\t\t\t\t\n", o.Name, shape, o.NNZ, o.Beta, name, firstLine(c.Err))
				continue
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%g\t%s\t%s\t%.1f\t%.1f\t%.1e\t%d\t\n", o.Name, shape, o.NNZ, o.Beta, name,
				us(c.Timing.Median), c.GBs, 100*c.RoofFrac, c.MaxRelErr, c.Resources.Registers)
		}
		fmt.Fprintf(tw, "%s\t\t\t\troof (ideal bytes at copy speed)\t%s\t%.1f\t100.0\t\t\t\n", o.Name, us(o.RoofTime), rep.RoofGBs)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	return rep.WriteSummary(w)
}

// WriteSummary writes the per-group geometric means and worst cases.
func (rep *Report) WriteSummary(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "group\toperators\tbest % roof (geomean)\tworst % roof\tworst operator\tbaseline\tbaseline % roof\tspeedup (geomean)\tmin speedup\tbespoke slower\t")
	for _, s := range rep.Summaries() {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.1f\t%s\t\t\t\t\t\t\n", s.Group, s.Operators, 100*s.GeoRoof, 100*s.WorstRoof, s.WorstName)
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
func (rep *Report) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"device", "dtype", "n", "operator", "m", "k", "nnz", "k_used", "density", "beta", "candidate", "kind",
		"median_us", "min_us", "gbs", "roof_frac", "max_rel_err", "verified", "registers", "spill_bytes", "error"})
	for _, o := range rep.Operators {
		for _, c := range o.Candidates {
			cw.Write([]string{rep.Device.Name, rep.DType, strconv.Itoa(o.N), o.Name, strconv.Itoa(o.M), strconv.Itoa(o.K),
				strconv.Itoa(o.NNZ), strconv.Itoa(o.KUsed), fmt.Sprintf("%.4f", o.Density), fmt.Sprint(o.Beta), c.Name, c.Kind,
				us(c.Timing.Median), us(c.Timing.Min), fmt.Sprintf("%.2f", c.GBs), fmt.Sprintf("%.4f", c.RoofFrac),
				fmt.Sprintf("%.3g", c.MaxRelErr), strconv.FormatBool(c.Verified), strconv.Itoa(c.Resources.Registers),
				strconv.Itoa(c.Resources.SpillBytes), c.Err})
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteGoBench writes the Go benchmark format, one line per verified
// candidate, so that benchstat can compare two runs.
func (rep *Report) WriteGoBench(w io.Writer) error {
	fmt.Fprintf(w, "goos: linux\npkg: bespoke\ndevice: %s\nbackend: %s\ndriver: %s\ncommit: %s\ndate: %s\n",
		rep.Device.Name, rep.Device.Backend, rep.Device.Platform, rep.Commit, rep.Date)
	fmt.Fprintf(w, "BenchmarkCopyRoof/%s/bytes=%d\t%d\t%.6g sec/op\t%.1f GB/s\n", rep.DType, 0, rep.Roof.Reps, rep.Roof.Median.Seconds(), rep.RoofGBs)
	for _, o := range rep.Operators {
		for _, c := range o.Candidates {
			if !c.Verified {
				continue
			}
			name := strings.NewReplacer(" ", "_", "/", ":").Replace(c.Name)
			fmt.Fprintf(w, "BenchmarkSparse/%s/%s/n=%d/%s\t%d\t%.6g sec/op\t%.2f GB/s\t%.4f roof\n",
				o.Name, rep.DType, o.N, name, c.Timing.Reps, c.Timing.Median.Seconds(), c.GBs, c.RoofFrac)
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
