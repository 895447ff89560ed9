package cli

import (
	"bytes"
	le "encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/element"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/operator/npy"
)

// integrateNPY writes a float64 matrix.
func integrateNPY(t *testing.T, path string, rows, cols int, data []float64) {
	t.Helper()
	var b bytes.Buffer
	if err := npy.WriteMatrix(&b, rows, cols, data); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// integrateInts writes an int64 (<i8) matrix as numpy does, header padded
// to 64 bytes.
func integrateInts(t *testing.T, path string, rows, cols int, data []int64) {
	t.Helper()
	dict := fmt.Sprintf("{'descr': '<i8', 'fortran_order': False, 'shape': (%d, %d), }", rows, cols)
	dict += strings.Repeat(" ", 63-(10+len(dict))%64) + "\n"
	var b bytes.Buffer
	b.WriteString(npy.Magic + "\x01\x00")
	le.Write(&b, le.LittleEndian, uint16(len(dict)))
	b.WriteString(dict)
	le.Write(&b, le.LittleEndian, data)
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// readMatrices reads apply's (E, n, n) output: the header by hand (npy
// reads 2-D arrays only), the data as float64.
func readMatrices(t *testing.T, path string, e, n int) []float64 {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	hl := int(le.LittleEndian.Uint16(raw[8:10]))
	if want := fmt.Sprintf("'shape': (%d, %d, %d)", e, n, n); !strings.Contains(string(raw[10:10+hl]), want) || !strings.Contains(string(raw[10:10+hl]), "'<f8'") {
		t.Fatalf("%s: header %q, want <f8 and %s", path, raw[10:10+hl], want)
	}
	data := raw[10+hl:]
	if len(data) != 8*e*n*n {
		t.Fatalf("%s: %d data bytes, want %d", path, len(data), 8*e*n*n)
	}
	out := make([]float64, e*n*n)
	for i := range out {
		out[i] = math.Float64frombits(le.LittleEndian.Uint64(data[8*i:]))
	}
	return out
}

// applyMesh writes a jittered 3×2×2-cell mesh of kind in gather form:
// nodes as float64 (nodes, 3), connectivity as int64 (E, nodes per
// element).
func applyMesh(t *testing.T, dir string, kind element.Kind, rng *rand.Rand) (*element.Mesh, string, string) {
	t.Helper()
	m, err := element.NewMesh(kind, 3, 2, 2, 0.2, rng.Uint64())
	if err != nil {
		t.Fatal(err)
	}
	nodes := filepath.Join(dir, kind.String()+"-x.npy")
	cells := filepath.Join(dir, kind.String()+"-c.npy")
	integrateNPY(t, nodes, len(m.Nodes)/3, 3, m.Nodes)
	conn := make([]int64, len(m.Conn))
	for i, c := range m.Conn {
		conn[i] = int64(c)
	}
	integrateInts(t, cells, m.Elements(), kind.Nodes(), conn)
	return m, nodes, cells
}

// integrate apply: the reference's matrices are the float64 element
// matrices of each element gathered in the file's local order (checked
// entry by entry against element's reference, and by properties that do
// not use it: Laplace rows sum to 0 and are symmetric, mass sums to the
// element's volume); the C kernel in f64 and f32 and PoCL agree with the
// reference to their precision.
func TestIntegrateApply(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("BESPOKE_CACHE_DIR", filepath.Join(dir, "cache"))
	rng := testenv.Rand(t)
	_, noHost := host.Open()
	for ki, kind := range element.Kinds {
		m, nodes, cells := applyMesh(t, dir, kind, rng)
		nb, ne := kind.Nodes(), m.Elements()
		b := m.Batch()
		for pi, prob := range []string{"laplace", "mass"} {
			ref := filepath.Join(dir, kind.String()+"-"+prob+"-ref.npy")
			common := []string{"integrate", "apply", "--element", kind.String(), "--problem", prob, "--nodes", nodes, "--cells", cells}
			if code, _, stderr := run(t, append(common, "--out", ref)...); code != ExitOK {
				t.Fatalf("%s %s reference: exit %d: %s", kind, prob, code, stderr)
			}
			want := readMatrices(t, ref, ne, nb)
			c := element.LaplaceCoef(1)
			if prob == "mass" {
				c = element.MassCoef()
			}
			a := make([]float64, nb*nb)
			for e := range ne {
				x := b.Coords(e)
				if err := kind.Matrix(x, &c, a); err != nil {
					t.Fatal(err)
				}
				got := want[e*nb*nb : (e+1)*nb*nb]
				scale, sum := 0.0, 0.0
				for i := range a {
					if got[i] != a[i] {
						t.Fatalf("%s %s element %d entry %d: %g, want %g", kind, prob, e, i, got[i], a[i])
					}
					scale = math.Max(scale, math.Abs(a[i]))
					sum += a[i]
				}
				for r := range nb {
					row := 0.0
					for s := range nb {
						row += got[r*nb+s]
						if math.Abs(got[r*nb+s]-got[s*nb+r]) > 1e-14*scale {
							t.Fatalf("%s %s element %d: not symmetric at (%d, %d)", kind, prob, e, r, s)
						}
					}
					if prob == "laplace" && math.Abs(row) > 1e-13*scale {
						t.Fatalf("%s laplace element %d: row %d sums to %g", kind, e, r, row)
					}
				}
				if v := kind.Volume(x); prob == "mass" && math.Abs(sum-v) > 1e-13*v {
					t.Fatalf("%s mass element %d: Σ M = %g, volume %g", kind, e, sum, v)
				}
			}
			if noHost != nil {
				testenv.Unavailable(t, "c", noHost)
				continue
			}
			for di, dt := range []struct {
				name string
				tol  float64
			}{{"f64", 1e-12}, {"f32", 1e-5}} {
				if testing.Short() && di != (ki+pi)%2 { // -short: one precision a kind and problem, in turn
					continue
				}
				out := filepath.Join(dir, kind.String()+"-"+prob+"-"+dt.name+".npy")
				code, stdout, stderr := run(t, append(common, "--backend", "c", "--dtype", dt.name, "--variant", "w16/e2", "--out", out)...)
				if code != ExitOK || !strings.Contains(stdout, "max error") {
					t.Fatalf("%s %s c %s: exit %d: %s%s", kind, prob, dt.name, code, stdout, stderr)
				}
				if worst := relMax(readMatrices(t, out, ne, nb), want); !(worst <= dt.tol) {
					t.Errorf("%s %s c %s: max error %.3g relative to the largest entry (tol %.0e)", kind, prob, dt.name, worst, dt.tol)
				}
			}
		}
	}
}

// relMax is max |got − want| / max |want|; NaN if got has a NaN.
func relMax(got, want []float64) float64 {
	scale, worst := 0.0, 0.0
	for i := range want {
		if math.IsNaN(got[i]) {
			return math.NaN()
		}
		scale = math.Max(scale, math.Abs(want[i]))
		worst = math.Max(worst, math.Abs(got[i]-want[i]))
	}
	return worst / scale
}

// Bad input to integrate apply and bench: one line on stderr naming what
// is wrong (and the limit, where there is one), the right exit code, no
// output file.
func TestIntegrateErrors(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("BESPOKE_CACHE_DIR", filepath.Join(dir, "cache"))
	rng := testenv.Rand(t)
	_, nodes, cells := applyMesh(t, dir, element.Tet, rng)
	m, _ := element.NewMesh(element.Tet, 1, 1, 1, 0, 1)
	nn := int64(len(m.Nodes) / 3)
	file := func(name string, write func(string)) string {
		p := filepath.Join(dir, name)
		write(p)
		return p
	}
	tetNodes := file("x.npy", func(p string) { integrateNPY(t, p, len(m.Nodes)/3, 3, m.Nodes) })
	conn := func(edit func([]int64)) []int64 {
		c := make([]int64, len(m.Conn))
		for i, v := range m.Conn {
			c[i] = int64(v)
		}
		edit(c)
		return c
	}
	ints := func(name string, c []int64, cols int) string {
		return file(name, func(p string) { integrateInts(t, p, len(c)/cols, cols, c) })
	}
	outOfRange := ints("range.npy", conn(func(c []int64) { c[5] = nn }), 4)
	negative := ints("neg.npy", conn(func(c []int64) { c[2] = -1 }), 4)
	inverted := ints("inv.npy", conn(func(c []int64) { c[0], c[1] = c[1], c[0] }), 4)
	fracCells := file("frac.npy", func(p string) {
		c := conn(func([]int64) {})
		f := make([]float64, len(c))
		for i, v := range c {
			f[i] = float64(v)
		}
		f[3] += 0.5
		integrateNPY(t, p, len(c)/4, 4, f)
	})
	wide := file("wide.npy", func(p string) { integrateNPY(t, p, len(m.Nodes)/6, 6, m.Nodes) })
	// A header claiming 2²⁴ hexes: over npy's 2²⁶-entry bound before any
	// data is read.
	huge := file("huge.npy", func(p string) {
		dict := "{'descr': '<i8', 'fortran_order': False, 'shape': (16777216, 8), }"
		dict += strings.Repeat(" ", 63-(10+len(dict))%64) + "\n"
		os.WriteFile(p, append([]byte(npy.Magic+"\x01\x00"+string([]byte{byte(len(dict)), 0})), dict...), 0o644)
	})
	out := filepath.Join(dir, "out.npy")
	apply := func(args ...string) []string {
		return append([]string{"integrate", "apply", "--out", out}, args...)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"no element", apply("--nodes", nodes, "--cells", cells), ExitUsage, "unknown element"},
		{"bad element", apply("--element", "pyramid", "--nodes", nodes, "--cells", cells), ExitUsage, `"pyramid" (want tet, prism or hex)`},
		{"bad problem", apply("--element", "tet", "--problem", "heat", "--nodes", nodes, "--cells", cells), ExitUsage, "want laplace, mass or cdr"},
		{"cdr", apply("--element", "tet", "--problem", "cdr", "--nodes", nodes, "--cells", cells), ExitUsage, "coefficient block"},
		{"no cells", apply("--element", "tet", "--nodes", nodes), ExitUsage, "needs --nodes, --cells and --out"},
		{"output is an input", []string{"integrate", "apply", "--element", "tet", "--nodes", nodes, "--cells", cells, "--out", cells}, ExitUsage, "would overwrite the input --cells"},
		{"reference in f32", apply("--element", "tet", "--nodes", nodes, "--cells", cells, "--dtype", "f32"), ExitUsage, "do not apply"},
		{"missing nodes", apply("--element", "tet", "--nodes", filepath.Join(dir, "none.npy"), "--cells", cells), ExitFailure, "none.npy"},
		{"nodes not 3 wide", apply("--element", "tet", "--nodes", wide, "--cells", cells), ExitFailure, "want (nodes, 3)"},
		{"cells of another kind", apply("--element", "hex", "--nodes", nodes, "--cells", cells), ExitFailure, "want (E, 8): hex elements have 8 nodes"},
		{"node out of range", apply("--element", "tet", "--nodes", tetNodes, "--cells", outOfRange), ExitFailure, fmt.Sprintf("want a node number 0..%d", nn-1)},
		{"negative node", apply("--element", "tet", "--nodes", tetNodes, "--cells", negative), ExitFailure, "= -1: want a node number"},
		{"fractional node", apply("--element", "tet", "--nodes", tetNodes, "--cells", fracCells), ExitFailure, "entry [0, 3]"},
		{"inverted element", apply("--element", "tet", "--nodes", tetNodes, "--cells", inverted), ExitFailure, "det J"},
		{"too many elements", apply("--element", "hex", "--nodes", nodes, "--cells", huge), ExitFailure, "more than 67108864 entries"},
		{"bad variant", apply("--element", "tet", "--nodes", nodes, "--cells", cells, "--backend", "c", "--variant", "w64"), ExitUsage, "want wN/eM"},
		{"variant too wide", apply("--element", "tet", "--nodes", nodes, "--cells", cells, "--backend", "c", "--variant", "w4096/e1"), ExitUsage, "want 1..1024"},
		{"bench bad element", []string{"integrate", "bench", "--element", "tet,cone"}, ExitUsage, `"cone"`},
		{"bench bad problem", []string{"integrate", "bench", "--problem", ""}, ExitUsage, "names no problem"},
		{"bench foreign flag", []string{"integrate", "bench", "--order", "3", "--kernel", "bk5"}, ExitUsage, "--order, --kernel: not a flag of integrate bench"},
		{"bench too many elements", []string{"integrate", "bench", "--n", "67108865"}, ExitUsage, "at most 67108864 elements"},
		{"bench bad dtype", []string{"integrate", "bench", "--dtype", "f16"}, ExitUsage, "f16"},
		{"bench two dtypes", []string{"integrate", "bench", "--dtype", "f32,f64"}, ExitUsage, "one precision per run"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(out)
			code, _, stderr := run(t, tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.msg) || strings.Count(stderr, "\n") != 1 {
				t.Errorf("exit %d, stderr %q; want exit %d and one line containing %q", code, stderr, tc.code, tc.msg)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s written", out)
			}
		})
	}
}

// integrate bench on C: the table has the integration columns and a
// winner; the JSON says the choice; a second run takes it from the tuning
// store without measuring (no candidate built or timed).
func TestIntegrateBench(t *testing.T) {
	if _, err := host.Open(); err != nil {
		testenv.Unavailable(t, "c", err)
	}
	dir := t.TempDir()
	t.Setenv("BESPOKE_CACHE_DIR", filepath.Join(dir, "cache"))
	args := []string{"integrate", "bench", "--element", "prism", "--problem", "cdr", "--dtype", "f32", "--backend", "c",
		"--n", "2048", "--reps", "3", "--warmup", "1", "--working-set", "8M", "-q"}
	var stored string
	for i := range 2 {
		js := filepath.Join(dir, fmt.Sprintf("run%d.json", i))
		md := filepath.Join(dir, fmt.Sprintf("run%d.md", i))
		code, stdout, stderr := run(t, append(args, "--json", js, "--markdown", md)...)
		if code != ExitOK {
			t.Fatalf("run %d: exit %d: %s", i, code, stderr)
		}
		for _, want := range []string{"prism/cdr", "ns/elem", "Gelem/s", "GFLOP/s", "% roof", "*w"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("run %d: table lacks %q:\n%s", i, want, stdout)
			}
		}
		if b, err := os.ReadFile(md); err != nil || !strings.Contains(string(b), "Gelem/s") {
			t.Errorf("run %d: markdown %v:\n%s", i, err, b)
		}
		raw, err := os.ReadFile(js)
		if err != nil {
			t.Fatal(err)
		}
		var rep struct {
			Problems []struct {
				Name   string             `json:"name"`
				Flops  int64              `json:"flops"`
				Facts  map[string]float64 `json:"facts"`
				Cached bool               `json:"cached"`
				Choice *struct {
					Winner string `json:"winner"`
				} `json:"choice"`
				Candidates []struct {
					Name     string `json:"name"`
					Verified bool   `json:"verified"`
				} `json:"candidates"`
			} `json:"problems"`
		}
		if err := json.Unmarshal(raw, &rep); err != nil || len(rep.Problems) != 1 {
			t.Fatalf("run %d: JSON %v: %s", i, err, raw)
		}
		p := rep.Problems[0]
		if p.Choice == nil || p.Choice.Winner == "" || p.Facts["integrated"] != 2048 || p.Flops != 2048*4806 {
			t.Fatalf("run %d: problem %+v", i, p)
		}
		if i == 0 {
			stored = p.Choice.Winner
			if p.Cached || len(p.Candidates) < 2 {
				t.Errorf("first run: cached %v, %d candidates", p.Cached, len(p.Candidates))
			}
		} else if !p.Cached || p.Choice.Winner != stored {
			t.Errorf("second run: cached %v, winner %s (stored %s)", p.Cached, p.Choice.Winner, stored)
		}
	}
	// With the store's files gone nothing is cached: the store, not
	// something else, made the second run free.
	os.RemoveAll(filepath.Join(dir, "cache", "tune"))
	js := filepath.Join(dir, "run2.json")
	if code, _, stderr := run(t, append(args, "--json", js)...); code != ExitOK {
		t.Fatalf("third run: exit %d: %s", code, stderr)
	}
	if raw, _ := os.ReadFile(js); bytes.Contains(raw, []byte(`"cached": true`)) {
		t.Error("third run: cached without a store")
	}
}
