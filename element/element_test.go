package element

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func fact(n int) float64 {
	f := 1.0
	for i := 2; i <= n; i++ {
		f *= float64(i)
	}
	return f
}

// monomial is the exact ∫ ξ^i η^j ζ^k over the reference element.
func monomial(kind Kind, i, j, k int) float64 {
	line := func(n int) float64 { // ∫_{-1}^{1} t^n
		if n%2 == 1 {
			return 0
		}
		return 2 / float64(n+1)
	}
	switch kind {
	case Tet:
		return fact(i) * fact(j) * fact(k) / fact(i+j+k+3)
	case Prism:
		return fact(i) * fact(j) / fact(i+j+2) * line(k)
	}
	return line(i) * line(j) * line(k)
}

// Each rule integrates every monomial of its stated degree exactly, and
// misses one of the next degree (so the stated degree is not a lie by
// understatement nor the test vacuous); the fine rule, degree 8.
func TestRules(t *testing.T) {
	for _, kind := range Kinds {
		for _, fine := range []bool{false, true} {
			r := kind.Rule()
			deg := r.Degree
			if fine {
				r, deg = kind.fineRule(6), [2]int{8, 8}
			}
			missed := false
			for i := 0; i <= deg[1]+1; i++ {
				for j := 0; j <= deg[1]+1; j++ {
					for k := 0; k <= deg[1]+1; k++ {
						var exact bool
						switch kind {
						case Tet:
							exact = i+j+k <= deg[0]
						case Prism:
							exact = i+j <= deg[0] && k <= deg[1]
						case Hex:
							exact = i <= deg[0] && j <= deg[0] && k <= deg[0]
						}
						got := 0.0
						for q, p := range r.Points {
							got += r.Weights[q] * math.Pow(p[0], float64(i)) * math.Pow(p[1], float64(j)) * math.Pow(p[2], float64(k))
						}
						want := monomial(kind, i, j, k)
						ok := math.Abs(got-want) <= 1e-14*math.Max(1, math.Abs(want))
						if exact && !ok {
							t.Errorf("%s (fine %v): ∫ξ^%dη^%dζ^%d = %.17g, want %.17g", kind, fine, i, j, k, got, want)
						}
						if !exact && !ok {
							missed = true
						}
					}
				}
			}
			if !fine && !missed {
				t.Errorf("%s: the rule is exact beyond its stated degree %v", kind, deg)
			}
		}
	}
}

// Shape functions: a partition of unity, 1 at their own vertex and 0 at
// the others, gradients matching central differences.
func TestShape(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, kind := range Kinds {
		for a, v := range vertices(kind) {
			n, _ := kind.Shape(v)
			for b, x := range n {
				if want := float64(b2i(a == b)); math.Abs(x-want) > 1e-15 {
					t.Errorf("%s: N_%d at vertex %d = %g", kind, b, a, x)
				}
			}
		}
		for range 10 {
			p := [3]float64{0.3 * rng.Float64(), 0.3 * rng.Float64(), 0.3 * rng.Float64()}
			n, d := kind.Shape(p)
			sum := 0.0
			for a := range n {
				sum += n[a]
				for c := range 3 {
					pp, pm := p, p
					const h = 1e-6
					pp[c] += h
					pm[c] -= h
					np, _ := kind.Shape(pp)
					nm, _ := kind.Shape(pm)
					if fd := (np[a] - nm[a]) / (2 * h); math.Abs(fd-d[a][c]) > 1e-8 {
						t.Errorf("%s: ∂N_%d/∂ξ_%d = %g, difference %g", kind, a, c, d[a][c], fd)
					}
				}
			}
			if math.Abs(sum-1) > 1e-15 {
				t.Errorf("%s: Σ N = %g", kind, sum)
			}
		}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// The box mesh: counts, conformity of volume (unjittered cells add up to the
// box), determinism of the seed.
func TestMesh(t *testing.T) {
	for _, kind := range Kinds {
		m, err := NewMesh(kind, 3, 2, 2, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := m.Elements(), 12*kind.PerCell(); got != want {
			t.Errorf("%s: %d elements, want %d", kind, got, want)
		}
		b := m.Batch()
		vol := 0.0
		for e := range b.E {
			vol += kind.Volume(b.Coords(e))
		}
		if want := 12.0 / 27; math.Abs(vol-want) > 1e-14 {
			t.Errorf("%s: volume %g, want %g", kind, vol, want)
		}
		m1, _ := NewMesh(kind, 2, 2, 2, 0.2, 7)
		m2, _ := NewMesh(kind, 2, 2, 2, 0.2, 7)
		m3, _ := NewMesh(kind, 2, 2, 2, 0.2, 8)
		if !equal(m1.Nodes, m2.Nodes) || equal(m1.Nodes, m3.Nodes) {
			t.Errorf("%s: the seed does not decide the mesh", kind)
		}
		// Gather gives back the mesh's batch, element by element.
		g, err := Gather(kind, m1.Nodes, m1.Conn)
		if err != nil {
			t.Fatal(err)
		}
		for e := range g.E {
			for a := range kind.Nodes() {
				n := m1.Conn[e*kind.Nodes()+a]
				for c := range 3 {
					if g.X[g.At(e, a, c)] != m1.Nodes[3*int(n)+c] {
						t.Fatalf("%s: gather of element %d node %d", kind, e, a)
					}
				}
			}
		}
	}
}

func equal(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// elements draws n elements of a jittered mesh (20 % of h, a fresh seed).
func elements(t *testing.T, kind Kind, rng *rand.Rand) *Batch {
	t.Helper()
	m, err := NewMesh(kind, 3, 3, 2, 0.2, rng.Uint64())
	if err != nil {
		t.Fatal(err)
	}
	return m.Batch()
}

func matrix(t *testing.T, kind Kind, x [][3]float64, c Coef) []float64 {
	t.Helper()
	a := make([]float64, kind.Nodes()*kind.Nodes())
	if err := kind.Matrix(x, &c, a); err != nil {
		t.Fatal(err)
	}
	return a
}

func maxAbs(a []float64) float64 {
	m := 0.0
	for _, x := range a {
		m = math.Max(m, math.Abs(x))
	}
	return m
}

// The checks of the issue, per kind, on every element of a jittered mesh.
func TestChecks(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	const tol = 1e-13
	checks := []struct {
		name  string
		check func(kind Kind, x [][3]float64) (got, want, scale float64)
	}{
		{"diffusion rows sum to zero", func(kind Kind, x [][3]float64) (float64, float64, float64) {
			c := RandomCDR(rng, false)
			for k := range 4 {
				c[0][k], c[k][0] = 0, 0 // pure diffusion
			}
			a := matrix(t, kind, x, c)
			nb, worst := kind.Nodes(), 0.0
			for i := range nb {
				s := 0.0
				for j := range nb {
					s += a[i*nb+j]
				}
				worst = math.Max(worst, math.Abs(s))
			}
			return worst, 0, maxAbs(a)
		}},
		{"symmetric coefficients give a symmetric matrix", func(kind Kind, x [][3]float64) (float64, float64, float64) {
			a := matrix(t, kind, x, RandomCDR(rng, true))
			nb, worst := kind.Nodes(), 0.0
			for i := range nb {
				for j := range i {
					worst = math.Max(worst, math.Abs(a[i*nb+j]-a[j*nb+i]))
				}
			}
			return worst, 0, maxAbs(a)
		}},
		{"linear patch test uᵀAu = |a|²|K|", func(kind Kind, x [][3]float64) (float64, float64, float64) {
			a := matrix(t, kind, x, LaplaceCoef(1))
			g := [3]float64{rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()}
			nb := kind.Nodes()
			u, c0 := make([]float64, nb), rng.NormFloat64()
			for i := range nb {
				u[i] = g[0]*x[i][0] + g[1]*x[i][1] + g[2]*x[i][2] + c0 // plus a constant
			}
			q, scale := 0.0, 0.0 // scale: the sum's magnitude before cancellation
			for i := range nb {
				for j := range nb {
					q += u[i] * a[i*nb+j] * u[j]
					scale += math.Abs(u[i] * a[i*nb+j] * u[j])
				}
			}
			want := (g[0]*g[0] + g[1]*g[1] + g[2]*g[2]) * kind.Volume(x)
			return q, want, scale
		}},
		{"mass sums to |K|", func(kind Kind, x [][3]float64) (float64, float64, float64) {
			a := matrix(t, kind, x, MassCoef())
			s := 0.0
			for _, v := range a {
				s += v
			}
			return s, kind.Volume(x), kind.Volume(x)
		}},
		{"load sums to f|K|", func(kind Kind, x [][3]float64) (float64, float64, float64) {
			b := make([]float64, kind.Nodes())
			f := rng.Float64() + 0.5
			if err := kind.Load(x, f, b); err != nil {
				t.Fatal(err)
			}
			s := 0.0
			for _, v := range b {
				s += v
			}
			return s, f * kind.Volume(x), f * kind.Volume(x)
		}},
		{"rigid motion leaves A unchanged (coefficients rotated with it)", func(kind Kind, x [][3]float64) (float64, float64, float64) {
			c := RandomCDR(rng, false)
			r := rotation(rng)
			shift := [3]float64{rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()}
			y := make([][3]float64, len(x))
			for i := range x {
				for k := range 3 {
					y[i][k] = shift[k]
					for l := range 3 {
						y[i][k] += r[k][l] * x[i][l]
					}
				}
			}
			// ψ_{1..3} turn with R: c' = R̂ c R̂ᵀ, R̂ = diag(1, R).
			var rc, cr Coef
			for i := range 4 {
				for j := range 4 {
					for k := range 4 {
						rc[i][j] += rhat(r, i, k) * c[k][j]
					}
				}
			}
			for i := range 4 {
				for j := range 4 {
					for k := range 4 {
						cr[i][j] += rc[i][k] * rhat(r, j, k)
					}
				}
			}
			a, b := matrix(t, kind, x, c), matrix(t, kind, y, cr)
			worst := 0.0
			for i := range a {
				worst = math.Max(worst, math.Abs(a[i]-b[i]))
			}
			return worst, 0, maxAbs(a)
		}},
		{"scaling by s scales the Laplace matrix by s", func(kind Kind, x [][3]float64) (float64, float64, float64) {
			s := 0.5 + 2*rng.Float64()
			y := make([][3]float64, len(x))
			for i := range x {
				for k := range 3 {
					y[i][k] = s * x[i][k]
				}
			}
			a, b := matrix(t, kind, x, LaplaceCoef(1)), matrix(t, kind, y, LaplaceCoef(1))
			worst := 0.0
			for i := range a {
				worst = math.Max(worst, math.Abs(s*a[i]-b[i]))
			}
			return worst, 0, maxAbs(b)
		}},
	}
	for _, c := range checks {
		for _, kind := range Kinds {
			b := elements(t, kind, rng)
			worst := 0.0
			for e := range b.E {
				got, want, scale := c.check(kind, b.Coords(e))
				worst = math.Max(worst, math.Abs(got-want)/scale)
			}
			if worst > tol || math.IsNaN(worst) {
				t.Errorf("%s, %s: relative error %.3g (tolerance %g)", c.name, kind, worst, tol)
			}
		}
	}
	// The symmetry check can fail: a non-symmetric block gives a
	// non-symmetric matrix.
	x := elements(t, Prism, rng).Coords(0)
	a := matrix(t, Prism, x, RandomCDR(rng, false))
	if math.Abs(a[1]-a[6]) < 1e-6*maxAbs(a) {
		t.Error("a non-symmetric block gave a symmetric matrix")
	}
}

func rhat(r [3][3]float64, i, j int) float64 {
	switch {
	case i == 0 && j == 0:
		return 1
	case i == 0 || j == 0:
		return 0
	}
	return r[i-1][j-1]
}

// rotation is a random proper rotation (Gram–Schmidt of a Gaussian matrix).
func rotation(rng *rand.Rand) [3][3]float64 {
	var r [3][3]float64
	for i := range 3 {
		for {
			for k := range 3 {
				r[i][k] = rng.NormFloat64()
			}
			for j := range i {
				d := r[i][0]*r[j][0] + r[i][1]*r[j][1] + r[i][2]*r[j][2]
				for k := range 3 {
					r[i][k] -= d * r[j][k]
				}
			}
			n := math.Sqrt(r[i][0]*r[i][0] + r[i][1]*r[i][1] + r[i][2]*r[i][2])
			if n > 0.1 {
				for k := range 3 {
					r[i][k] /= n
				}
				break
			}
		}
	}
	if det3(r) < 0 {
		for k := range 3 {
			r[2][k] = -r[2][k]
		}
	}
	return r
}

// The rules are exact for the mass matrix of an affine element: compare
// with the closed forms on undistorted cells.
func TestAffineMass(t *testing.T) {
	for _, kind := range Kinds {
		m, err := NewMesh(kind, 1, 1, 1, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		b := m.Batch()
		nb := kind.Nodes()
		for e := range b.E {
			x := b.Coords(e)
			a := matrix(t, kind, x, MassCoef())
			vol := kind.Volume(x)
			for i := range nb {
				for j := range nb {
					var want float64
					switch kind {
					case Tet: // |K|/20 (1 + δ)
						want = vol / 20 * float64(1+b2i(i == j))
					case Prism: // triangle (T/12)(1+δ) ⊗ line (H/6)(1+δ), T·H = |K|
						want = vol / 72 * float64(1+b2i(i%3 == j%3)) * float64(1+b2i(i/3 == j/3))
					case Hex: // ⊗ of three line masses (h/6)(1+δ)
						want = vol / 216
						for d := range 3 {
							want *= float64(1 + b2i(hexSigns[i][d] == hexSigns[j][d]))
						}
					}
					if math.Abs(a[i*nb+j]-want) > 1e-15 {
						t.Errorf("%s element %d: M[%d][%d] = %.17g, want %.17g", kind, e, i, j, a[i*nb+j], want)
					}
				}
			}
		}
	}
}

// Bad input gives one clear error naming the limit.
func TestErrors(t *testing.T) {
	inverted := func() *Batch {
		m, _ := NewMesh(Prism, 1, 1, 1, 0, 1)
		b := m.Batch()
		for c := range 3 { // swap nodes 1 and 2 of element 0
			i, j := b.At(0, 1, c), b.At(0, 2, c)
			b.X[i], b.X[j] = b.X[j], b.X[i]
		}
		return b
	}
	nodes := []float64{0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1}
	cases := []struct {
		name, want string
		err        func() error
	}{
		{"no cells", "at least 1", func() error { _, err := NewMesh(Hex, 0, 1, 1, 0, 1); return err }},
		{"too many", "at most 67108864", func() error { _, err := NewMesh(Tet, 1024, 1024, 64, 0, 1); return err }},
		{"jitter", "want 0..0.2 ", func() error { _, err := NewMesh(Hex, 1, 1, 1, 0.25, 1); return err }},
		{"NaN jitter", "want 0..0.2 ", func() error { _, err := NewMesh(Hex, 1, 1, 1, math.NaN(), 1); return err }},
		{"kind", "unknown kind", func() error { _, err := NewMesh(Kind(7), 1, 1, 1, 0, 1); return err }},
		{"node out of range", "node 4 is outside 0..3", func() error { _, err := Gather(Tet, nodes, []int64{0, 1, 2, 4}); return err }},
		{"negative node", "node -1 is outside", func() error { _, err := Gather(Tet, nodes, []int32{0, 1, -1, 3}); return err }},
		{"ragged connectivity", "multiple of 4", func() error { _, err := Gather(Tet, nodes, []int{0, 1, 2}); return err }},
		{"ragged nodes", "multiple of 3", func() error { _, err := Gather(Tet, nodes[:4], []int{0, 0, 0, 0}); return err }},
		{"short SoA", "want 36", func() error { _, err := NewBatch(Prism, 2, make([]float64, 35)); return err }},
		{"NaN coordinate", "NaN", func() error { _, err := NewBatch(Tet, 1, append(make([]float64, 11), math.NaN())); return err }},
		{"inverted element", "element 0 (prism) at quadrature point 0: det J", func() error { return inverted().CheckJacobians() }},
		{"inverted element's matrix", "det J", func() error {
			c := LaplaceCoef(1)
			return Prism.Matrix(inverted().Coords(0), &c, make([]float64, 36))
		}},
		{"matrix size", "want 8 nodes, 64 entries", func() error { c := MassCoef(); return Hex.Matrix(make([][3]float64, 8), &c, make([]float64, 36)) }},
		{"parse kind", "want tet, prism or hex", func() error { _, err := ParseKind("pyramid"); return err }},
		{"parse problem", "want laplace, mass or cdr", func() error { _, err := ParseProblem("elasticity"); return err }},
	}
	for _, c := range cases {
		err := c.err()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	// A degenerate (flat) gather element is refused by the check.
	b, err := Gather(Tet, []float64{0, 0, 0, 1, 0, 0, 0, 1, 0, 1, 1, 0}, []int{0, 1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.CheckJacobians(); err == nil {
		t.Error("a flat tetrahedron passed the Jacobian check")
	}
}

func TestParse(t *testing.T) {
	for _, k := range Kinds {
		if got, err := ParseKind(k.String()); err != nil || got != k {
			t.Errorf("ParseKind(%q) = %v, %v", k, got, err)
		}
	}
	for _, p := range Problems {
		if got, err := ParseProblem(p.String()); err != nil || got != p {
			t.Errorf("ParseProblem(%q) = %v, %v", p, got, err)
		}
	}
}
