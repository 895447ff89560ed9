package report

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Series is one line of a LinePlot: points (X[i], Y[i]).
type Series struct {
	Name string
	X, Y []float64
}

// LinePlot writes an SVG chart of the series to path, one line with
// markers each, the y axis logarithmic when logY (points with y ≤ 0 are
// then left out). A chart without a point to draw is an error.
func LinePlot(path, title, xLabel, yLabel string, logY bool, series []Series) error {
	n := 0
	for _, s := range series {
		if len(s.X) != len(s.Y) {
			return fmt.Errorf("plot %s: series %q has %d x and %d y values", path, s.Name, len(s.X), len(s.Y))
		}
		for i := range s.X {
			if ok(s.X[i]) && ok(s.Y[i]) && (!logY || s.Y[i] > 0) {
				n++
			}
		}
	}
	if n == 0 {
		return errors.New("plot " + path + ": no points")
	}
	p, w, h, err := build(func() (*plot.Plot, vg.Length, vg.Length) {
		p := plot.New()
		p.Title.Text = title
		p.X.Label.Text = xLabel
		p.Y.Label.Text = yLabel
		if logY {
			p.Y.Scale = plot.LogScale{}
			p.Y.Tick.Marker = logTicks{}
		}
		p.Legend.Top = true
		for i, s := range series {
			var xy plotter.XYs
			for j := range s.X {
				if ok(s.X[j]) && ok(s.Y[j]) && (!logY || s.Y[j] > 0) {
					xy = append(xy, plotter.XY{X: s.X[j], Y: s.Y[j]})
				}
			}
			if len(xy) == 0 {
				continue
			}
			l, pts, err := plotter.NewLinePoints(xy)
			if err != nil {
				panic(err)
			}
			l.Color = plotutil.Color(i)
			pts.Color = plotutil.Color(i)
			pts.Shape = plotutil.Shape(i)
			p.Add(l, pts)
			p.Legend.Add(s.Name, l, pts)
		}
		return p, 16 * vg.Centimeter, 11 * vg.Centimeter
	})
	if err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	return saveSVG(p, w, h, path)
}

func ok(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
