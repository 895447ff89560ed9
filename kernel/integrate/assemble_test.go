package integrate_test

import (
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/build"
	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/device/opencl"
	"github.com/bespoke-hpc/bespoke/element"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/kernel/integrate"
	"github.com/bespoke-hpc/bespoke/kernel/interp"
	"github.com/bespoke-hpc/bespoke/kernel/pass"
	"github.com/bespoke-hpc/bespoke/verify"
)

// A colouring of every kind's jittered mesh holds each element once and no
// two elements of a colour share a node; hexes of a structured box take
// the 8 colours of their 2×2×2 parity classes.
func TestColour(t *testing.T) {
	rng := testenv.Rand(t)
	for _, kind := range element.Kinds {
		m, err := element.NewMesh(kind, 4, 3, 3, 0.2, rng.Uint64())
		if err != nil {
			t.Fatal(err)
		}
		nb, ne := kind.Nodes(), m.Elements()
		c, err := integrate.Colour(nb, len(m.Nodes)/3, m.Conn)
		if err != nil {
			t.Fatal(err)
		}
		seen := make([]bool, ne)
		for k := range c.Colours() {
			owner := map[int32]int32{}
			for _, el := range c.Order[c.Start[k]:c.Start[k+1]] {
				if seen[el] {
					t.Fatalf("%s: element %d coloured twice", kind, el)
				}
				seen[el] = true
				for _, n := range m.Conn[int(el)*nb : (int(el)+1)*nb] {
					if o, ok := owner[n]; ok {
						t.Fatalf("%s: elements %d and %d of colour %d share node %d", kind, o, el, k, n)
					}
					owner[n] = el
				}
			}
		}
		if slices.Contains(seen, false) || len(c.Order) != ne {
			t.Fatalf("%s: %d of %d elements coloured", kind, len(c.Order), ne)
		}
		if kind == element.Hex && c.Colours() != 8 {
			t.Errorf("hex: %d colours, want 8", c.Colours())
		}
		t.Logf("%s: %d elements, %d colours", kind, ne, c.Colours())
	}
}

// The pattern holds exactly the node pairs some element couples, rows
// sorted, and pos points each element entry (a, b) at (conn[a], conn[b]).
func TestPattern(t *testing.T) {
	rng := testenv.Rand(t)
	for _, kind := range element.Kinds {
		m, _ := element.NewMesh(kind, 3, 2, 2, 0.2, rng.Uint64())
		nb, ne, nn := kind.Nodes(), m.Elements(), len(m.Nodes)/3
		csr, pos, err := integrate.Pattern(nb, nn, m.Conn)
		if err != nil {
			t.Fatal(err)
		}
		pairs := map[[2]int32]bool{}
		for el := range ne {
			for a := range nb {
				for b := range nb {
					i, j := m.Conn[el*nb+a], m.Conn[el*nb+b]
					pairs[[2]int32{i, j}] = true
					p := pos[(a*nb+b)*ne+el]
					if p < csr.RowPtr[i] || p >= csr.RowPtr[i+1] || csr.Col[p] != j {
						t.Fatalf("%s: element %d (%d, %d): position %d is not (%d, %d)", kind, el, a, b, p, i, j)
					}
				}
			}
		}
		if len(csr.Col) != len(pairs) {
			t.Fatalf("%s: %d non-zeros, %d coupled pairs", kind, len(csr.Col), len(pairs))
		}
		for r := range nn {
			if !slices.IsSorted(csr.Col[csr.RowPtr[r]:csr.RowPtr[r+1]]) {
				t.Fatalf("%s: row %d not sorted", kind, r)
			}
		}
	}
}

func TestAssemblyErrors(t *testing.T) {
	cases := []struct {
		name, want string
		err        func() error
	}{
		{"ragged connectivity", "positive multiple of 4", func() error {
			_, err := integrate.Colour(4, 10, []int32{0, 1, 2})
			return err
		}},
		{"node out of range", "node 10 is outside 0..9", func() error {
			_, _, err := integrate.Pattern(4, 10, []int32{0, 1, 2, 10})
			return err
		}},
		{"negative node", "node -1 is outside", func() error {
			_, err := integrate.Colour(4, 10, []int32{0, -1, 2, 3})
			return err
		}},
		{"too many colours", "more than 256 colours", func() error {
			conn := make([]int32, 2*300) // 300 segments all through node 0
			for e := range 300 {
				conn[2*e+1] = int32(e + 1)
			}
			_, err := integrate.Colour(2, 301, conn)
			return err
		}},
		{"wide work-group", "want 1..1024", func() error {
			_, err := integrate.AssembleKernel(element.Tet, kernel.F64, 2048)
			return err
		}},
		{"matrix-free of upper storage", "full storage and no load", func() error {
			p, _ := integrate.New(element.Tet, element.Laplace, kernel.F64, integrate.Options{Upper: true})
			in, _ := p.Instance(4)
			_, err := in.MatFreeKernel(64)
			return err
		}},
	}
	for _, c := range cases {
		if err := c.err(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

// launcher runs k once with the given sizes and arrays and returns every
// array as left.
type launcher func(t *testing.T, k *kernel.Kernel, vals map[string]int64, arrs map[string]*family.Array) map[string][]float64

// interpret runs a kernel in the interpreter.
func interpret(t *testing.T, k *kernel.Kernel, vals map[string]int64, arrs map[string]*family.Array) map[string][]float64 {
	t.Helper()
	grid, err := k.Launch.Blocks(vals)
	if err != nil {
		t.Fatal(err)
	}
	args := map[string]any{}
	out := map[string][]float64{}
	for _, p := range k.Params {
		if p.Kind == kernel.ScalarParam {
			args[p.Name] = vals[p.Name]
			continue
		}
		a := arrs[p.Name]
		if a.Type == kernel.Real {
			x := slices.Clone(a.Init)
			args[p.Name], out[p.Name] = x, x
			continue
		}
		x := make([]int64, len(a.Init))
		for i, f := range a.Init {
			x[i] = int64(f)
		}
		args[p.Name] = x
	}
	if err := interp.Run(k, grid, args); err != nil {
		t.Fatal(err)
	}
	return out
}

// onDevice runs kernels on dev, each built once.
func onDevice(dev device.Device) launcher {
	built := map[*kernel.Kernel]device.Kernel{}
	return func(t *testing.T, k *kernel.Kernel, vals map[string]int64, arrs map[string]*family.Array) map[string][]float64 {
		t.Helper()
		dk, ok := built[k]
		if !ok {
			prog, d, err := build.One(dev, k)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { prog.Close() })
			built[k], dk = d, d
		}
		got, err := verify.Launch(dev, dk, k, &family.Data{Arrays: arrs, Values: vals})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
}

// colours launches k once per colour, carrying out from launch to launch.
func colours(t *testing.T, run launcher, k *kernel.Kernel, c *integrate.Colouring, ne int, arrs map[string]*family.Array, out string) []float64 {
	t.Helper()
	order := make([]float64, len(c.Order))
	for i, e := range c.Order {
		order[i] = float64(e)
	}
	arrs["order"] = &family.Array{Type: kernel.Int32, Init: order}
	for col := range c.Colours() {
		vals := map[string]int64{integrate.Count: int64(c.Start[col+1] - c.Start[col]), integrate.First: int64(c.Start[col]), integrate.Elements: int64(ne)}
		got := run(t, k, vals, arrs)
		arrs[out].Init = got[out]
	}
	return arrs[out].Init
}

// assemblyMesh is a jittered mesh, its coordinates and CDR blocks
// (non-symmetric, so that a transposed entry is caught) rounded to dt,
// and each element's float64 matrix of those inputs, row-major.
type assemblyMesh struct {
	kind   element.Kind
	m      *element.Mesh
	x      []float64 // SoA coordinates
	coef   []float64 // SoA blocks
	mats   []float64 // e·nb² + a·nb + b
	nb, ne int
}

func newAssemblyMesh(t *testing.T, rng *rand.Rand, kind element.Kind, dt kernel.DType) *assemblyMesh {
	t.Helper()
	m, err := element.NewMesh(kind, 3, 2, 2, 0.2, rng.Uint64())
	if err != nil {
		t.Fatal(err)
	}
	s := &assemblyMesh{kind: kind, m: m, nb: kind.Nodes(), ne: m.Elements()}
	b := m.Batch()
	s.x = make([]float64, len(b.X))
	for i, v := range b.X {
		s.x[i] = dt.Rounded(v)
	}
	rb, _ := element.NewBatch(kind, s.ne, s.x)
	s.coef = make([]float64, 16*s.ne)
	s.mats = make([]float64, s.ne*s.nb*s.nb)
	for e := range s.ne {
		c := element.RandomCDR(rng, false)
		for i := range 4 {
			for j := range 4 {
				c[i][j] = dt.Rounded(c[i][j])
				s.coef[(4*i+j)*s.ne+e] = c[i][j]
			}
		}
		if err := kind.Matrix(rb.Coords(e), &c, s.mats[e*s.nb*s.nb:(e+1)*s.nb*s.nb]); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// global is the CPU assembly in float64, by node pair (independent of
// Pattern's positions and of the colouring).
func (s *assemblyMesh) global() map[[2]int32]float64 {
	g := map[[2]int32]float64{}
	for e := range s.ne {
		for a := range s.nb {
			for b := range s.nb {
				g[[2]int32{s.m.Conn[e*s.nb+a], s.m.Conn[e*s.nb+b]}] += s.mats[(e*s.nb+a)*s.nb+b]
			}
		}
	}
	return g
}

func checkAssembly(t *testing.T, run launcher) {
	rng := testenv.Rand(t)
	for ki, kind := range element.Kinds {
		for di, dt := range []kernel.DType{kernel.F64, kernel.F32} {
			if testing.Short() && ki%2 != di { // -short: one precision a kind, in turn
				continue
			}
			tol := map[kernel.DType]float64{kernel.F64: 1e-13, kernel.F32: 1e-5}[dt]
			s := newAssemblyMesh(t, rng, kind, dt)
			nn, nb, ne := len(s.m.Nodes)/3, s.nb, s.ne
			col, err := integrate.Colour(nb, nn, s.m.Conn)
			if err != nil {
				t.Fatal(err)
			}
			csr, pos, err := integrate.Pattern(nb, nn, s.m.Conn)
			if err != nil {
				t.Fatal(err)
			}
			// CSR: the element matrices (rounded to dt) entry-major in;
			// values from 0, with a NaN pad that must stay NaN.
			k, err := integrate.AssembleKernel(kind, dt, 32)
			if err != nil {
				t.Fatal(err)
			}
			a := make([]float64, nb*nb*ne)
			for e := range ne {
				for i := range nb * nb {
					a[i*ne+e] = dt.Rounded(s.mats[e*nb*nb+i])
				}
			}
			posF := make([]float64, len(pos))
			for i, p := range pos {
				posF[i] = float64(p)
			}
			vals := append(make([]float64, len(csr.Col)), math.NaN())
			got := colours(t, run, k, col, ne, map[string]*family.Array{
				"a": {Type: kernel.Real, Init: a}, "pos": {Type: kernel.Int32, Init: posF}, "vals": {Type: kernel.Real, Init: vals}}, "vals")
			g := s.global()
			scale, worst := 0.0, 0.0
			for r := range nn {
				for p := csr.RowPtr[r]; p < csr.RowPtr[r+1]; p++ {
					want := g[[2]int32{int32(r), csr.Col[p]}]
					scale = math.Max(scale, math.Abs(want))
					worst = math.Max(worst, math.Abs(got[p]-want))
				}
			}
			if !math.IsNaN(got[len(csr.Col)]) || !(worst <= tol*scale) {
				t.Errorf("%s %s CSR: max error %.3g of %.3g (tol %.0e), pad %v", kind, dt, worst, scale, tol, got[len(csr.Col)])
			}
			// Matrix-free: y = y0 + Σ_e A_e u_e, the matrices integrated
			// in the kernel (CDR, the blocks above), y0 random, a NaN pad.
			p, _ := integrate.New(kind, element.CDR, dt, integrate.Options{})
			in, _ := p.Instance(ne)
			mk, err := in.MatFreeKernel(32)
			if err != nil {
				t.Fatal(err)
			}
			conn := make([]float64, nb*ne)
			for e := range ne {
				for i := range nb {
					conn[i*ne+e] = float64(s.m.Conn[e*nb+i])
				}
			}
			u, y0 := make([]float64, nn), make([]float64, nn+1)
			for i := range u {
				u[i], y0[i] = dt.Rounded(rng.Float64()-0.5), dt.Rounded(rng.Float64()-0.5)
			}
			y0[nn] = math.NaN()
			want := slices.Clone(y0[:nn])
			mag := make([]float64, nn) // Σ |terms| per row: the scale of its rounding
			for ij, v := range g {
				want[ij[0]] += v * u[ij[1]]
				mag[ij[0]] += math.Abs(v * u[ij[1]])
			}
			gy := colours(t, run, mk, col, ne, map[string]*family.Array{
				"x": {Type: kernel.Real, Init: s.x}, "coef": {Type: kernel.Real, Init: s.coef}, "conn": {Type: kernel.Int32, Init: conn},
				"u": {Type: kernel.Real, Init: u}, "y": {Type: kernel.Real, Init: y0}}, "y")
			ftol := map[kernel.DType]float64{kernel.F64: 1e-12, kernel.F32: 1e-4}[dt]
			worst, scale = 0, slices.Max(mag)
			for i := range nn {
				worst = math.Max(worst, math.Abs(gy[i]-want[i]))
			}
			if !math.IsNaN(gy[nn]) || !(worst <= ftol*scale) {
				t.Errorf("%s %s matrix-free: max error %.3g of %.3g (tol %.0e), pad %v", kind, dt, worst, scale, ftol, gy[nn])
			}
			t.Logf("%s %s: %d elements, %d colours, %d non-zeros", kind, dt, ne, col.Colours(), len(csr.Col))
		}
	}
}

// CSR assembly and the matrix-free product against the CPU assembly, in
// the interpreter (as written, and lowered for the host: the C backend's
// loops), with C and with the OpenCL device (PoCL here).
func TestAssemblyInterpret(t *testing.T) {
	checkAssembly(t, interpret)
	lowered := map[*kernel.Kernel]*kernel.Kernel{}
	checkAssembly(t, func(t *testing.T, k *kernel.Kernel, vals map[string]int64, arrs map[string]*family.Array) map[string][]float64 {
		h, ok := lowered[k]
		if !ok {
			var err error
			if h, err = pass.HostLoops(k); err != nil {
				t.Fatal(err)
			}
			lowered[k] = h
		}
		return interpret(t, h, vals, arrs)
	})
}

func TestAssemblyHost(t *testing.T) {
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	checkAssembly(t, onDevice(dev))
}

func TestAssemblyOpenCL(t *testing.T) {
	if os.Getenv("POCL_WORK_GROUP_METHOD") == "" {
		os.Setenv("POCL_WORK_GROUP_METHOD", "auto")
	}
	dev, err := opencl.Open(os.Getenv("BESPOKE_OPENCL_DEVICE"))
	if err != nil {
		testenv.Unavailable(t, "opencl", err)
	}
	defer dev.Close()
	checkAssembly(t, onDevice(dev))
}
