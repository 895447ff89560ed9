package report

import (
	"errors"
	"fmt"
	"image/color"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/bespoke-hpc/bespoke/bench"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Files written by Plot.
const (
	PlotSpeedupSize         = "speedup-vs-size.svg"
	PlotSpeedupSparsity     = "speedup-vs-sparsity.svg"
	PlotSpeedupCusparseSize = "speedup-cusparse-vs-size.svg"
	PlotRoof                = "roof.svg"
)

// Plot creates dir and writes SVG charts of the report into it:
//
//   - speedup-vs-size.svg: speedup of the best verified bespoke candidate
//     over the dense BLAS (cuBLAS, or OpenBLAS on the C backend) against
//     the operator size m·k (log scale), one series per element group,
//     with a line at 1;
//   - speedup-vs-sparsity.svg: the same speedups against 1 − density, as
//     in the GiMMiK paper;
//   - speedup-cusparse-vs-size.svg: the speedup over the fastest verified
//     cuSPARSE algorithm against m·k;
//   - roof.svg: % of the streaming roof of the best bespoke candidate, the
//     BLAS and the best cuSPARSE algorithm per operator, in report order.
//
// A chart with no data is not written (and a stale copy from an earlier
// run in dir is removed), so a report without baselines gives roof.svg
// only. Operators without the verified candidates a chart needs are left
// out of it.
func Plot(rep *bench.Report, dir string) error {
	if rep == nil {
		return errors.New("plot: nil report")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	groups := plotGroups(rep)
	cublas := speedups(rep, cublasOf)
	blas := blasName(rep)
	cusparse := speedups(rep, cusparseOf)
	charts := []struct {
		file string
		mk   func() (*plot.Plot, vg.Length, vg.Length)
	}{
		{PlotSpeedupSize, func() (*plot.Plot, vg.Length, vg.Length) {
			if len(cublas) == 0 {
				return nil, 0, 0
			}
			p := speedupPlot(groups, cublas, true, func(s speedup) float64 { return s.size })
			p.Title.Text = title(rep, "Best bespoke kernel vs "+blas)
			p.X.Label.Text = "operator size m·k"
			p.Y.Label.Text = "speedup over " + blas
			return p, 16 * vg.Centimeter, 11 * vg.Centimeter
		}},
		{PlotSpeedupSparsity, func() (*plot.Plot, vg.Length, vg.Length) {
			if len(cublas) == 0 {
				return nil, 0, 0
			}
			p := speedupPlot(groups, cublas, false, func(s speedup) float64 { return s.sparsity })
			p.Title.Text = title(rep, "Best bespoke kernel vs "+blas)
			p.X.Label.Text = "sparsity (1 − density)"
			p.Y.Label.Text = "speedup over " + blas
			return p, 16 * vg.Centimeter, 11 * vg.Centimeter
		}},
		{PlotSpeedupCusparseSize, func() (*plot.Plot, vg.Length, vg.Length) {
			if len(cusparse) == 0 {
				return nil, 0, 0
			}
			p := speedupPlot(groups, cusparse, true, func(s speedup) float64 { return s.size })
			p.Title.Text = title(rep, "Best bespoke kernel vs best cuSPARSE algorithm")
			p.X.Label.Text = "operator size m·k"
			p.Y.Label.Text = "speedup over cuSPARSE"
			return p, 16 * vg.Centimeter, 11 * vg.Centimeter
		}},
		{PlotRoof, func() (*plot.Plot, vg.Length, vg.Length) { return roofPlot(rep) }},
	}
	for _, c := range charts {
		path := filepath.Join(dir, c.file)
		p, w, h, err := build(c.mk)
		if err != nil {
			return fmt.Errorf("plot %s: %w", c.file, err)
		}
		if p == nil {
			if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("plot: %w", err)
			}
			continue
		}
		if err := saveSVG(p, w, h, path); err != nil {
			return fmt.Errorf("plot %s: %w", c.file, err)
		}
	}
	return nil
}

func title(rep *bench.Report, what string) string {
	dev := rep.Device.Name
	if dev == "" {
		dev = "unknown device"
	}
	return fmt.Sprintf("%s\n%s, %s, size %d", what, dev, rep.DType, rep.Units)
}

// build runs mk, turning a panic inside gonum/plot into an error.
func build(mk func() (*plot.Plot, vg.Length, vg.Length)) (p *plot.Plot, w, h vg.Length, err error) {
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, fmt.Errorf("building the chart: %v", r)
		}
	}()
	p, w, h = mk()
	return p, w, h, nil
}

// saveSVG draws p on a w×h SVG canvas and writes it to path.
func saveSVG(p *plot.Plot, w, h vg.Length, path string) (err error) {
	c := vgsvg.New(w, h)
	if err := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("drawing the chart: %v", r)
			}
		}()
		p.Draw(draw.New(c))
		return nil
	}(); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	_, err = c.WriteTo(f)
	return err
}

// bespokeOf is the fastest verified bespoke candidate that reads the
// problem's stored inputs (bench.Result.BestStored), with a usable time.
func bespokeOf(o *bench.Result) *bench.Candidate { return timed(o.BestStored("bespoke")) }

// blasBaselines are the dense BLAS baselines, in the order looked for:
// cuBLAS on CUDA, the CPU BLAS on the C backend (baseline.BLASBaseline:
// "openblas", or "blas" for another CBLAS), with their names in charts.
var blasBaselines = []struct{ name, label string }{{"cublas", "cuBLAS"}, {"openblas", "OpenBLAS"}, {"blas", "CPU BLAS"}}

// cublasOf is the verified dense BLAS candidate: cuBLAS, or the CPU BLAS.
func cublasOf(o *bench.Result) *bench.Candidate {
	for _, b := range blasBaselines {
		if c := o.Find(b.name); c != nil && c.Verified {
			return timed(c)
		}
	}
	return nil
}

// blasName is how charts name the report's dense BLAS: that of its first
// problem with one (cuBLAS when none has).
func blasName(rep *bench.Report) string {
	for i := range rep.Problems {
		for _, b := range blasBaselines {
			if c := rep.Problems[i].Find(b.name); c != nil && c.Verified {
				return b.label
			}
		}
	}
	return "cuBLAS"
}

// cusparseOf is the fastest verified cuSPARSE algorithm.
func cusparseOf(o *bench.Result) *bench.Candidate {
	var best *bench.Candidate
	for i := range o.Candidates {
		c := &o.Candidates[i]
		if c.Kind != "baseline" || !c.Verified || c.Timing.Median <= 0 ||
			(c.Name != "cusparse" && !strings.HasPrefix(c.Name, "cusparse/")) {
			continue
		}
		if best == nil || c.Timing.Median < best.Timing.Median {
			best = c
		}
	}
	return best
}

func timed(c *bench.Candidate) *bench.Candidate {
	if c == nil || c.Timing.Median <= 0 {
		return nil
	}
	return c
}

type speedup struct {
	group          string
	size, sparsity float64
	value          float64 // baseline median / best bespoke median
}

// speedups returns, per operator with a verified bespoke candidate and a
// verified baseline, the speedup of the bespoke candidate over it.
func speedups(rep *bench.Report, baseline func(*bench.Result) *bench.Candidate) []speedup {
	var out []speedup
	for i := range rep.Problems {
		o := &rep.Problems[i]
		best, bl := bespokeOf(o), baseline(o)
		m, k, density := o.Facts["m"], o.Facts["k"], o.Facts["density"]
		if best == nil || bl == nil || m <= 0 || k <= 0 {
			continue
		}
		out = append(out, speedup{group: Group(o.Name), size: m * k,
			sparsity: 1 - density, value: float64(bl.Timing.Median) / float64(best.Timing.Median)})
	}
	return out
}

// plotGroups gives every element group of the report a fixed index, so that
// a group has the same colour and glyph in every chart.
func plotGroups(rep *bench.Report) map[string]int {
	idx := map[string]int{}
	var names []string
	for _, o := range rep.Problems {
		g := Group(o.Name)
		if _, ok := idx[g]; !ok {
			idx[g] = 0
			names = append(names, g)
		}
	}
	sort.Strings(names)
	for i, g := range names {
		idx[g] = i
	}
	return idx
}

func speedupPlot(groups map[string]int, pts []speedup, logX bool, x func(speedup) float64) *plot.Plot {
	p := plot.New()
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())

	byGroup := map[string]plotter.XYs{}
	xmin, xmax := math.Inf(1), math.Inf(-1)
	ymin, ymax := 1.0, 1.0
	for _, s := range pts {
		xv := x(s)
		byGroup[s.group] = append(byGroup[s.group], plotter.XY{X: xv, Y: s.value})
		xmin, xmax = math.Min(xmin, xv), math.Max(xmax, xv)
		ymin, ymax = math.Min(ymin, s.value), math.Max(ymax, s.value)
	}

	var lo, hi float64
	if logX {
		lo, hi = xmin/1.5, xmax*1.5
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = logTicks{}
	} else {
		pad := math.Max(0.05*(xmax-xmin), 0.02)
		lo, hi = math.Max(0, xmin-pad), math.Min(1, xmax+pad)
		if hi <= lo {
			lo, hi = xmin-pad, xmax+pad
		}
	}
	if ymax/ymin > 8 {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = logTicks{}
		p.Y.Min, p.Y.Max = ymin/1.3, ymax*3 // room for the legend
	} else {
		p.Y.Min, p.Y.Max = 0, ymax*1.4
	}

	one, _ := plotter.NewLine(plotter.XYs{{X: lo, Y: 1}, {X: hi, Y: 1}})
	one.Color = color.Gray{Y: 64}
	one.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(one)

	names := make([]string, 0, len(byGroup))
	for g := range byGroup {
		names = append(names, g)
	}
	sort.Strings(names)
	for _, g := range names {
		s, err := plotter.NewScatter(byGroup[g])
		if err != nil {
			panic(err) // only NaN or Inf, which speedups cannot give
		}
		i := groups[g]
		s.Color = plotutil.Color(i)
		s.Shape = plotutil.Shape(i)
		s.Radius = vg.Points(3)
		p.Add(s)
		p.Legend.Add(fmt.Sprintf("%s (%d)", g, len(byGroup[g])), s)
	}
	// After Add, which widens the axes to the data.
	p.X.Min, p.X.Max = lo, hi
	p.Y.Min, p.Y.Max = math.Min(p.Y.Min, ymin), math.Max(p.Y.Max, ymax)
	return p
}

// maxNamedOps is the most operators for which roof.svg labels every one by
// name; beyond it the x axis is labelled by element group.
const maxNamedOps = 60

func roofPlot(rep *bench.Report) (*plot.Plot, vg.Length, vg.Length) {
	type row struct {
		name, group             string
		bespoke, cublas, sparse *bench.Candidate
	}
	var rows []row
	for i := range rep.Problems {
		o := &rep.Problems[i]
		r := row{name: o.Name, group: Group(o.Name), bespoke: bespokeOf(o), cublas: cublasOf(o), sparse: cusparseOf(o)}
		if r.bespoke != nil || r.cublas != nil || r.sparse != nil {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return nil, 0, 0
	}

	p := plot.New()
	p.Title.Text = title(rep, "Fraction of the streaming roof")
	if rep.RoofGBs > 0 {
		p.Title.Text += fmt.Sprintf(", roof %.0f GB/s", rep.RoofGBs)
	}
	p.Y.Label.Text = "% of roof"
	p.Legend.Top = true
	p.Add(plotter.NewGrid())

	var bes, cub, csp plotter.XYs
	ymax := 100.0
	for i, r := range rows {
		add := func(xys *plotter.XYs, c *bench.Candidate) {
			if c != nil && !math.IsNaN(c.RoofFrac) && !math.IsInf(c.RoofFrac, 0) {
				*xys = append(*xys, plotter.XY{X: float64(i), Y: 100 * c.RoofFrac})
				ymax = math.Max(ymax, 100*c.RoofFrac)
			}
		}
		add(&bes, r.bespoke)
		add(&cub, r.cublas)
		add(&csp, r.sparse)
	}
	ytop := ymax * 1.3
	n := float64(len(rows))

	roof, _ := plotter.NewLine(plotter.XYs{{X: -0.5, Y: 100}, {X: n - 0.5, Y: 100}})
	roof.Color = color.Gray{Y: 64}
	roof.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(roof)

	// Separators between runs of element groups.
	var ticks []plot.Tick
	start := 0
	for i := 1; i <= len(rows); i++ {
		if i < len(rows) && rows[i].group == rows[start].group {
			continue
		}
		if len(rows) > maxNamedOps {
			ticks = append(ticks, plot.Tick{Value: float64(start+i-1) / 2, Label: rows[start].group})
		}
		if i < len(rows) {
			sep, _ := plotter.NewLine(plotter.XYs{{X: float64(i) - 0.5, Y: 0}, {X: float64(i) - 0.5, Y: ytop}})
			sep.Color = color.Gray{Y: 160}
			sep.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
			p.Add(sep)
		}
		start = i
	}

	series := []struct {
		name  string
		xys   plotter.XYs
		shape draw.GlyphDrawer
		col   int
	}{
		{"best bespoke", bes, draw.CircleGlyph{}, 0},
		{blasName(rep), cub, draw.TriangleGlyph{}, 1},
		{"best cuSPARSE", csp, draw.CrossGlyph{}, 2},
	}
	for _, s := range series {
		if len(s.xys) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(s.xys)
		if err != nil {
			panic(err) // NaN and Inf were dropped above
		}
		sc.Color = plotutil.Color(s.col)
		sc.Shape = s.shape
		sc.Radius = vg.Points(2.5)
		p.Add(sc)
		p.Legend.Add(s.name, sc)
	}

	width := 16 * vg.Centimeter
	if len(rows) <= maxNamedOps {
		for i, r := range rows {
			ticks = append(ticks, plot.Tick{Value: float64(i), Label: r.name})
		}
		p.X.Tick.Label.Rotation = math.Pi / 2
		p.X.Tick.Label.XAlign = draw.XRight
		p.X.Tick.Label.YAlign = draw.YCenter
		if len(rows) > 24 {
			p.X.Tick.Label.Font.Size = vg.Points(7)
		}
		width = max(width, vg.Length(len(rows))*0.45*vg.Centimeter)
	} else {
		p.X.Label.Text = "operators, in report order, by element group"
		for i := range rows {
			ticks = append(ticks, plot.Tick{Value: float64(i)}) // minor
		}
		width = max(width, vg.Length(len(rows))*0.15*vg.Centimeter)
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.X.Min, p.X.Max = -0.5, n-0.5
	p.Y.Min, p.Y.Max = 0, ytop
	return p, width, 12 * vg.Centimeter
}

// logTicks marks 1, 2, 5 × 10^k (only 10^k over more than two decades),
// with unlabelled minor ticks in between.
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(lo > 0) || !(hi > lo) || math.IsInf(hi, 0) {
		return nil
	}
	e0, e1 := int(math.Floor(math.Log10(lo))), int(math.Ceil(math.Log10(hi)))
	wide := e1-e0 > 2
	var ts []plot.Tick
	labelled := 0
	for e := e0; e <= e1; e++ {
		for m := 1; m <= 9; m++ {
			v := float64(m) * math.Pow10(e)
			if e < 0 {
				v = float64(m) / math.Pow10(-e)
			}
			if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || (!wide && (m == 2 || m == 5)) {
				t.Label = tickLabel(v, e)
				labelled++
			}
			ts = append(ts, t)
		}
	}
	if labelled < 2 { // a narrow range: label every tick
		for i := range ts {
			ts[i].Label = tickLabel(ts[i].Value, int(math.Floor(math.Log10(ts[i].Value)+1e-9)))
		}
	}
	return ts
}

func tickLabel(v float64, e int) string {
	if e >= 0 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', -e, 64)
}
