package cli

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// No command writes NaN or infinities: a degenerate element, an input
// beyond the precision's range and a result that overflows are one-line
// errors naming the cause, and no output file is left.
func TestNoNonFiniteOutput(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("BESPOKE_CACHE_DIR", filepath.Join(dir, "cache"))
	file := func(name string, rows, cols int, data []float64) string {
		p := filepath.Join(dir, name)
		integrateNPY(t, p, rows, cols, data)
		return p
	}
	tet := func(name string, top [3]float64, scale float64) string {
		x := []float64{0, 0, 0, 1, 0, 0, 0, 1, 0, top[0], top[1], top[2]}
		for i := range x {
			x[i] *= scale
		}
		return file(name, 4, 3, x)
	}
	cells := filepath.Join(dir, "cells.npy")
	integrateInts(t, cells, 1, 4, []int64{0, 1, 2, 3})
	sliver := tet("sliver.npy", [3]float64{0.3, 0.3, 1e-300}, 1)
	flat := tet("flat.npy", [3]float64{0.3, 0.3, 1e-17}, 1)
	tiny := tet("tiny.npy", [3]float64{0, 0, 1}, 1e-120)
	huge := tet("huge.npy", [3]float64{0, 0, 1}, 1e120)
	past32 := tet("past32.npy", [3]float64{0, 0, 1}, 1e300)

	const order, elems = 3, 1
	nodes := (order + 1) * (order + 1) * (order + 1)
	rng := rand.New(rand.NewPCG(7, 8))
	u := make([]float64, elems*nodes)
	for i := range u {
		u[i] = rng.Float64() - 0.5
	}
	small := file("u.npy", elems, nodes, u)
	big := make([]float64, len(u))
	for i := range big {
		big[i] = 1e308 * float64(1-2*(i%2))
	}
	u308 := file("u308.npy", elems, nodes, big)
	big = append([]float64(nil), u...)
	big[3] = 1e300
	u300 := file("u300.npy", elems, nodes, big)

	out := filepath.Join(dir, "out.npy")
	integrate := func(x string, args ...string) []string {
		return append([]string{"integrate", "apply", "--element", "tet", "--nodes", x, "--cells", cells, "--out", out}, args...)
	}
	fem := func(in string, args ...string) []string {
		return append([]string{"fem", "apply", "--kernel", "bk5", "--order", "3", "--mesh", "1x1x1", "--in", in, "--out", out}, args...)
	}
	for _, tc := range []struct {
		name string
		args []string
		want []string // all in the one line
	}{
		{"sliver tet", integrate(sliver), []string{"element 0", "Jacobian determinant", "zero"}},
		{"sliver tet on C", integrate(sliver, "--backend", "c"), []string{"element 0", "Jacobian determinant", "zero"}},
		{"sliver tet mass", integrate(sliver, "--problem", "mass"), []string{"element 0", "Jacobian determinant", "zero"}},
		{"flat to rounding", integrate(flat), []string{"element 0", "zero to rounding"}},
		{"vanishingly small", integrate(tiny), []string{"element 0", "underflows"}},
		{"coordinates too large", integrate(huge), []string{"element 0", "overflows"}},
		{"f32 coordinates", integrate(past32, "--backend", "c", "--dtype", "f32"), []string{"past32.npy: value 1e+300 at index 3 is beyond the f32 range (3.4e+38)"}},
		{"fem input of 1e308", fem(u308), []string{"out.npy not written", "overflows f64", "element"}},
		{"fem lambda 1e300", fem(u300, "--lambda", "1e300"), []string{"out.npy not written", "overflows"}},
		{"fem f32 input", fem(u300, "--backend", "c", "--dtype", "f32"), []string{"u300.npy: value 1e+300 at index 3 is beyond the f32 range (3.4e+38)"}},
		{"fem f32 lambda", fem(small, "--backend", "c", "--dtype", "f32", "--lambda", "1e300"), []string{"--lambda 1e+300 is beyond the f32 range"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(out)
			code, _, stderr := run(t, tc.args...)
			if code == ExitOK || strings.Count(stderr, "\n") != 1 || strings.Contains(stderr, "det J = NaN") || strings.Contains(stderr, "inverted") {
				t.Errorf("exit %d, stderr %q: want one line naming the cause (not 'det J = NaN', not 'inverted')", code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q: want %q", stderr, w)
				}
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s written", out)
			}
		})
	}
}

// A coefficient an f32 run cannot hold is refused before anything is
// built (its kernels would fold in an infinity).
func TestCoefficientsInRange(t *testing.T) {
	op := filepath.Join(t.TempDir(), "a.mtx")
	os.WriteFile(op, []byte("%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1.5\n2 2 -2\n"), 0o644)
	for _, tc := range []struct {
		name string
		args []string
		msg  string
	}{
		{"alpha", []string{"verify", op, "--backend", "c", "--dtype", "f32", "--alpha", "1e300"}, "--alpha 1e+300 is beyond the f32 range"},
		{"beta", []string{"bench", op, "--backend", "c", "--dtype", "f32", "--beta", "-1e39"}, "--beta -1e+39 is beyond the f32 range"},
		{"lambda", []string{"verify", "--family", "fem", "--order", "1", "--backend", "c", "--dtype", "f64,f32", "--lambda", "1e300"}, "--lambda 1e+300 is beyond the f32 range"},
		{"gen lambda", []string{"gen", "--family", "fem", "--order", "1", "--backend", "c", "--dtype", "f32", "--lambda", "1e40", "--variant", "cpu/e1"}, "--lambda 1e+40 is beyond the f32 range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := run(t, tc.args...)
			if code != ExitUsage || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.msg) {
				t.Errorf("exit %d, stderr %q; want a usage error with %q", code, stderr, tc.msg)
			}
		})
	}
}
