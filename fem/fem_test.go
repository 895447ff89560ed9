package fem

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func setup(t *testing.T, k Kernel, n int, perturb float64) (*Basis, *Mesh, []float64) {
	t.Helper()
	b, err := NewBasis(k, n)
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewMesh(3, 3, 2, perturb)
	if err != nil {
		t.Fatal(err)
	}
	geo, err := m.Geometry(b)
	if err != nil {
		t.Fatal(err)
	}
	return b, m, geo
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// nodal evaluates f at every E-vector node.
func nodal(m *Mesh, b *Basis, f func(x, y, z float64) float64) []float64 {
	pos := m.NodePositions(b)
	u := make([]float64, len(pos))
	for i, p := range pos {
		u[i] = f(p[0], p[1], p[2])
	}
	return u
}

// The 1-D operators: partition of unity, derivative of a constant zero,
// weights summing to 2, and the centro-(anti)symmetry the kernels use.
func TestBasis(t *testing.T) {
	for _, k := range Kernels {
		for n := 1; n <= MaxOrder; n++ {
			b, err := NewBasis(k, n)
			if err != nil {
				t.Fatal(err)
			}
			p, q := b.P(), b.Q()
			if want := n + 2; k != BK5 && q != want || k == BK5 && q != n+1 {
				t.Fatalf("%s N=%d: %d points", k, n, q)
			}
			sw := 0.0
			for a := range q {
				sw += b.PointWeights[a]
				sb, sg := 0.0, 0.0
				for i := range p {
					sb += b.B[a][i]
					sg += b.G[a][i]
					if d := b.B[a][i] - b.B[q-1-a][p-1-i]; math.Abs(d) > 1e-13 {
						t.Errorf("%s N=%d: B not centro-symmetric at %d,%d (%g)", k, n, a, i, d)
					}
					if d := b.G[a][i] + b.G[q-1-a][p-1-i]; math.Abs(d) > 1e-11*float64(n*n) {
						t.Errorf("%s N=%d: G not centro-antisymmetric at %d,%d (%g)", k, n, a, i, d)
					}
				}
				if math.Abs(sb-1) > 1e-13 || math.Abs(sg) > 1e-11*float64(n*n) {
					t.Errorf("%s N=%d point %d: Σ B = %g, Σ G = %g", k, n, a, sb, sg)
				}
			}
			if math.Abs(sw-2) > 1e-13 {
				t.Errorf("%s N=%d: weights sum to %.17g", k, n, sw)
			}
		}
	}
}

// 1ᵀA1 is the volume of the box (times λ for the screened Poisson
// operators, whose Laplacian part vanishes on constants), also on a
// perturbed mesh: GL on N+2 points integrates |J| of a trilinear map
// exactly, and GLL on N+1 points does from N = 2.
func TestVolume(t *testing.T) {
	for _, k := range Kernels {
		for _, n := range []int{1, 2, 3, 5, 8} {
			for _, perturb := range []float64{0, 0.2} {
				if k == BK5 && n == 1 && perturb > 0 {
					continue
				}
				b, m, geo := setup(t, k, n, perturb)
				one := nodal(m, b, func(x, y, z float64) float64 { return 1 })
				const lambda = 0.75
				v, err := Apply(b, geo, lambda, one)
				if err != nil {
					t.Fatal(err)
				}
				want := 1.0
				if k.Stiffness() {
					want = lambda
				}
				if got := dot(one, v); math.Abs(got-want) > 1e-12 {
					t.Errorf("%s N=%d perturb %g: 1ᵀA1 = %.16g, want %g", k, n, perturb, got, want)
				}
			}
		}
	}
}

// On the unperturbed box the mass operator integrates products of
// polynomials of degree ≤ N exactly: Σ (M q) = ∫ p for q the nodal
// values of p = x^a y^b z^c.
func TestMassExact(t *testing.T) {
	for _, n := range []int{1, 2, 4, 6} {
		b, m, geo := setup(t, BK1, n, 0)
		one := nodal(m, b, func(x, y, z float64) float64 { return 1 })
		for _, e := range [][3]int{{0, 0, 0}, {n, 0, 0}, {1, n, 0}, {n, n, n}, {0, 1, n - 1}} {
			u := nodal(m, b, func(x, y, z float64) float64 {
				return math.Pow(x, float64(e[0])) * math.Pow(y, float64(e[1])) * math.Pow(z, float64(e[2]))
			})
			v, err := Apply(b, geo, 0, u)
			if err != nil {
				t.Fatal(err)
			}
			want := 1 / float64((e[0]+1)*(e[1]+1)*(e[2]+1))
			if got := dot(one, v); math.Abs(got-want) > 1e-13 {
				t.Errorf("N=%d x^%d y^%d z^%d: ∫ = %.16g, want %.16g", n, e[0], e[1], e[2], got, want)
			}
		}
	}
}

// On affine elements vᵀSu = ∫∇v·∇u: exactly for BK3's Gauss points, and
// for BK5's GLL nodes when the integrand stays within their degree (u
// linear).
func TestStiffnessExact(t *testing.T) {
	type field func(x, y, z float64) float64
	lin := field(func(x, y, z float64) float64 { return x + 2*y + 3*z })
	x2y := field(func(x, y, z float64) float64 { return x * x * y })
	quad := field(func(x, y, z float64) float64 { return x*x + y*z })
	xy2 := field(func(x, y, z float64) float64 { return x + y*y })
	for _, tc := range []struct {
		name string
		k    Kernel
		u, v field
		want float64 // ∫ ∇u·∇v over [0,1]³
	}{
		{"bk3 linear·x²y", BK3, lin, x2y, 7.0 / 6},
		{"bk5 linear·x²y", BK5, lin, x2y, 7.0 / 6},
		{"bk3 quadratic", BK3, quad, xy2, 1.5},
	} {
		for _, n := range []int{2, 3, 5} {
			b, m, geo := setup(t, tc.k, n, 0)
			u, v := nodal(m, b, tc.u), nodal(m, b, tc.v)
			au, err := Apply(b, geo, 0, u)
			if err != nil {
				t.Fatal(err)
			}
			// Element-local: the sum over elements of v_eᵀ S_e u_e is the
			// assembled form, since E-vectors of a continuous field agree
			// on shared nodes.
			if got := dot(v, au); math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("%s N=%d: vᵀSu = %.16g, want %.16g", tc.name, n, got, tc.want)
			}
		}
	}
}

// S·1 = 0 for λ = 0; A is symmetric; uᵀAu > 0 for λ > 0 — on a perturbed
// mesh with random vectors.
func TestStiffnessProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for _, k := range []Kernel{BK1, BK3, BK5} {
		for _, n := range []int{1, 3, 6} {
			b, m, geo := setup(t, k, n, 0.2)
			size := m.Elements() * b.P() * b.P() * b.P()
			u, w := make([]float64, size), make([]float64, size)
			for i := range u {
				u[i], w[i] = rng.Float64()-0.5, rng.Float64()-0.5
			}
			if k.Stiffness() {
				one := nodal(m, b, func(x, y, z float64) float64 { return 1 })
				s1, _ := Apply(b, geo, 0, one)
				su, _ := Apply(b, geo, 0, u)
				scale := math.Sqrt(dot(su, su) / float64(size))
				for i, x := range s1 {
					if math.Abs(x) > 1e-12*scale {
						t.Fatalf("%s N=%d: (S·1)[%d] = %g (scale %g)", k, n, i, x, scale)
					}
				}
			}
			au, _ := Apply(b, geo, 0.3, u)
			aw, _ := Apply(b, geo, 0.3, w)
			wau, uaw := dot(w, au), dot(u, aw)
			if math.Abs(wau-uaw) > 1e-12*math.Sqrt(dot(au, au)*dot(w, w)) {
				t.Errorf("%s N=%d: wᵀAu = %.16g, uᵀAw = %.16g", k, n, wau, uaw)
			}
			if uau := dot(u, au); !(uau > 0) {
				t.Errorf("%s N=%d: uᵀAu = %g, want > 0", k, n, uau)
			}
		}
	}
}

// Global numbering: nodes that share a number share a position, and the
// number of distinct nodes is that of the box's grid.
func TestGlobalIndex(t *testing.T) {
	for _, n := range []int{1, 3} {
		b, m, _ := setup(t, BK5, n, 0.2)
		idx, pos := m.GlobalIndex(n), m.NodePositions(b)
		at := map[int32][3]float64{}
		for i, g := range idx {
			if p, ok := at[g]; ok {
				for d := range 3 {
					if math.Abs(p[d]-pos[i][d]) > 1e-14 {
						t.Fatalf("N=%d: global node %d at %v and %v", n, g, p, pos[i])
					}
				}
			}
			at[g] = pos[i]
		}
		if want := (m.NX*n + 1) * (m.NY*n + 1) * (m.NZ*n + 1); len(at) != want {
			t.Errorf("N=%d: %d distinct global nodes, want %d", n, len(at), want)
		}
	}
}

func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  func() error
		msg  string
	}{
		{"order 0", func() error { _, err := NewBasis(BK5, 0); return err }, "1 ≤ N ≤ 15"},
		{"order 16", func() error { _, err := NewBasis(BK1, 16); return err }, "1 ≤ N ≤ 15"},
		{"kernel", func() error { _, err := NewBasis("bk2", 3); return err }, "unknown kernel"},
		{"empty mesh", func() error { _, err := NewMesh(0, 1, 1, 0); return err }, "at least one element"},
		{"huge mesh", func() error { _, err := NewMesh(1<<9, 1<<9, 1<<9, 0); return err }, "more than"},
		{"perturbation", func() error { _, err := NewMesh(2, 2, 2, 0.5); return err }, "0 ≤ s < 0.3"},
		{"length", func() error {
			b, _ := NewBasis(BK1, 2)
			_, err := Apply(b, make([]float64, 64), 0, make([]float64, 28))
			return err
		}, "not a whole number"},
	} {
		if err := tc.err(); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.msg)
		}
	}
}
