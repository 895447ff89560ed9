package pum

import (
	"fmt"
	"math"
	"testing"
)

// benchCoeffs are variable coefficients evaluated per point (the fairness
// guard of the background digest: no reuse across patches).
var benchCoeffs = Coefficients{
	Kappa: func(x []float64) float64 {
		return 1 + 0.5*math.Sin(2*math.Pi*x[0])*math.Sin(2*math.Pi*x[1])
	},
	R: func(x []float64) float64 { return 1 + x[0]*x[1] },
	F: func(x []float64) float64 { return math.Cos(math.Pi*x[0]) + x[1] },
}

func benchBuild(b *testing.B, cfg Config) {
	var sum Timings
	for b.Loop() {
		_, tm, err := Build(cfg)
		if err != nil {
			b.Fatal(err)
		}
		sum.Setup += tm.Setup
		sum.Decompose += tm.Decompose
		sum.Integrate += tm.Integrate
		sum.Assemble += tm.Assemble
		sum.Total += tm.Total
	}
	n := float64(b.N)
	b.ReportMetric(sum.Setup.Seconds()/n, "setup-s/op")
	b.ReportMetric(sum.Decompose.Seconds()/n, "decomp-s/op")
	b.ReportMetric(sum.Integrate.Seconds()/n, "integr-s/op")
	b.ReportMetric(sum.Assemble.Seconds()/n, "assem-s/op")
}

// BenchmarkBuild2D times the whole pipeline on 2-D uniform covers;
// level 9, p = 1 is the thesis's headline case (24.73 s on one CPU core,
// 10.0 s on its GPU, inner patches only).
func BenchmarkBuild2D(b *testing.B) {
	for _, c := range []struct{ level, p int }{{6, 1}, {7, 1}, {8, 1}, {9, 1}, {7, 2}, {7, 3}, {6, 4}, {6, 5}} {
		b.Run(fmt.Sprintf("l%d-p%d", c.level, c.p), func(b *testing.B) {
			benchBuild(b, Config{Dim: 2, Level: c.level, Degree: c.p, Coeffs: benchCoeffs})
		})
	}
}

// BenchmarkBuild3D times 3-D uniform covers (the thesis: level 6, p = 1
// took 344 s on one CPU core, 224 s on its GPU).
func BenchmarkBuild3D(b *testing.B) {
	for _, c := range []struct{ level, p int }{{4, 1}, {5, 1}, {4, 2}} {
		b.Run(fmt.Sprintf("l%d-p%d", c.level, c.p), func(b *testing.B) {
			benchBuild(b, Config{Dim: 3, Level: c.level, Degree: c.p, Coeffs: benchCoeffs})
		})
	}
}
