package fr

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/poly"
)

// volumeRule is a collapsed Gauss–Legendre rule with m points per direction
// on the reference element (exact for products of two order-p functions
// when m ≥ 2p+2: the pyramid's reach degree 4p+2 in z with the Jacobian).
func volumeRule(kind string, m int) (pts [][]float64, wts []float64) {
	x, w, _ := poly.GaussLegendre(m)
	switch kind {
	case "tri":
		return triRule(m)
	case "pri":
		tp, tw := triRule(m)
		for k := range m {
			for i := range tp {
				pts = append(pts, []float64{tp[i][0], tp[i][1], x[k]})
				wts = append(wts, tw[i]*w[k])
			}
		}
	case "tet", "pyr":
		for k := range m {
			for j := range m {
				for i := range m {
					a, b, c := x[i], x[j], x[k]
					if kind == "tet" {
						pts = append(pts, []float64{(1+a)*(1-b)*(1-c)/4 - 1, (1+b)*(1-c)/2 - 1, c})
						wts = append(wts, w[i]*w[j]*w[k]*(1-b)*(1-c)*(1-c)/8)
					} else {
						pts = append(pts, []float64{a * (1 - c) / 2, b * (1 - c) / 2, c})
						wts = append(wts, w[i]*w[j]*w[k]*(1-c)*(1-c)/4)
					}
				}
			}
		}
	}
	return pts, wts
}

// TestBasisOrthonormal: ∫ φ_i φ_j = δ_ij on each element, by quadrature.
func TestBasisOrthonormal(t *testing.T) {
	for _, kind := range []string{"tri", "tet", "pri", "pyr"} {
		for p := 1; p <= 5; p++ {
			pts, wts := volumeRule(kind, 2*p+2)
			v, _ := orthoMat(kind, p, pts, false)
			if len(v) != basisSize(kind, p) {
				t.Fatalf("%s p%d: %d functions, want %d", kind, p, len(v), basisSize(kind, p))
			}
			for i := range v {
				for j := range v {
					s := 0.0
					for q := range pts {
						s += wts[q] * v[i][q] * v[j][q]
					}
					want := 0.0
					if i == j {
						want = 1
					}
					if math.Abs(s-want) > 1e-12 {
						t.Fatalf("%s p%d: ∫φ_%d φ_%d = %v, want %v", kind, p, i, j, s, want)
					}
				}
			}
		}
	}
}

// TestBasisGradient compares the analytic gradients with central
// differences at random interior points.
func TestBasisGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 40))
	const h = 1e-6
	for _, kind := range []string{"tri", "tet", "pri", "pyr"} {
		nd := ndimsOf[kind]
		pts, _ := volumeRule(kind, 4)
		for trial := range 8 {
			x := pts[rng.IntN(len(pts))]
			_, g := orthoAt(kind, 4, x, true)
			for d := range nd {
				xp, xm := append([]float64(nil), x...), append([]float64(nil), x...)
				xp[d] += h
				xm[d] -= h
				vp, _ := orthoAt(kind, 4, xp, false)
				vm, _ := orthoAt(kind, 4, xm, false)
				for j := range vp {
					fd := (vp[j] - vm[j]) / (2 * h)
					if math.Abs(fd-g[j][d]) > 1e-6*math.Max(1, math.Abs(fd)) {
						t.Errorf("%s trial %d at %v: ∂_%d φ_%d = %v, difference quotient %v", kind, trial, x, d, j, g[j][d], fd)
					}
				}
			}
		}
	}
}

// TestReadPoints: coordinates with an optional weight, commas or spaces,
// comments; bad lines give the line number.
func TestReadPoints(t *testing.T) {
	for _, tc := range []struct {
		text string
		nd   int
		n    int
		err  string
	}{
		{"# s t\n-0.5 -0.5\n0.1,-0.9, 0.25\n\n-1 1\n", 2, 3, ""},
		{"-0.5 -0.5 0.1 7\n", 2, 0, "line 1: 4 numbers"},
		{"0 0\n-0.5 x\n", 2, 0, `line 2: "x" is no number`},
		{"# nothing\n", 3, 0, "no points"},
	} {
		pts, err := ReadPoints(strings.NewReader(tc.text), tc.nd)
		if tc.err == "" && (err != nil || len(pts) != tc.n) {
			t.Errorf("%q: %d points, %v", tc.text, len(pts), err)
		}
		if tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%q: error %v, want %q", tc.text, err, tc.err)
		}
	}
	// Points files that do not fit the element are refused by Build.
	tri := [][]float64{{-0.6, -0.6}, {0.2, -0.6}, {-0.6, 0.2}}
	for _, tc := range []struct {
		kind string
		opt  Options
		err  string
	}{
		{"tri", Options{SolFile: tri[:2]}, "2 solution points given, the order needs 3"},
		{"tri", Options{SolFile: [][]float64{{-0.6, -0.6}, {0.2, -0.6}, {-0.6, 3}}}, "outside"},
		{"pyr", Options{TriFaceFile: [][]float64{{0, 0, 0}, {1, 1, 1}, {2, 2, 2}}}, "has 3 coordinates"},
		{"tri", Options{SolFile: [][]float64{{-0.6, -0.6}, {0.2, -0.6}, {-0.2, -0.6}}}, "do not determine"},
		{"quad", Options{SolFile: tri}, "computed"},
	} {
		if _, err := Build(tc.kind, 1, tc.opt); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s %+v: error %v, want %q", tc.kind, tc.opt, err, tc.err)
		}
	}
}
