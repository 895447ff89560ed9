package poly

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Tolerances. Each is a named multiple of eps (2.2e-16) justified by the
// rounding behaviour of the computation it bounds.
const (
	// quadTolPerN: a quadrature sum of N terms with Σ|w·f| ≤ 2 and each
	// f(x) computed to within ~N ulps accumulates O(N) ulps of error.
	quadTolPerN = 8 * eps
	// nodeTol: Newton converges to within a couple of ulps of the true
	// root; the closed-form nodes below are themselves rounded.
	nodeTol = 4 * eps
	// interpTolPerN: barycentric interpolation is backward stable with a
	// Lebesgue constant O(log N) for Gauss-type nodes; the Legendre value
	// being interpolated carries O(N) ulps of recurrence error.
	interpTolPerN = 8 * eps
	// diffTolPerN2: differentiation amplifies rounding by ‖D‖ = O(N²);
	// applied relative to max|f'|.
	diffTolPerN2 = 4 * eps
	// symTol: mirror-image entries are computed with the same operations
	// in a different order, so they agree to a few ulps of the row scale.
	symTolPerN = 4 * eps
)

type rule struct {
	name   string
	fn     func(int) ([]float64, []float64, error)
	minN   int
	degree func(n int) int // exact for polynomials of this degree
}

var rules = []rule{
	{"gauss-legendre", GaussLegendre, 1, func(n int) int { return 2*n - 1 }},
	{"gauss-legendre-lobatto", GaussLobatto, 2, func(n int) int { return 2*n - 3 }},
}

func TestQuadratureExactness(t *testing.T) {
	for _, r := range rules {
		for n := r.minN; n <= MaxPoints; n++ {
			x, w, err := r.fn(n)
			if err != nil {
				t.Fatalf("%s N=%d: %v", r.name, n, err)
			}
			tol := quadTolPerN * float64(n)
			// Weights sum to 2 and are positive.
			s := 0.0
			for i := range w {
				if w[i] <= 0 {
					t.Errorf("%s N=%d: weight %d = %v not positive", r.name, n, i, w[i])
				}
				s += w[i]
			}
			if d := math.Abs(s - 2); d > tol {
				t.Errorf("%s N=%d: Σw = %.17g (off by %.3g)", r.name, n, s, d)
			}
			// Legendre polynomials: ∫P_k = 2δ_k0, for k ≤ degree.
			for k := 0; k <= r.degree(n); k++ {
				q := 0.0
				for i := range x {
					q += w[i] * Legendre(k, x[i])
				}
				want := 0.0
				if k == 0 {
					want = 2
				}
				if d := math.Abs(q - want); d > tol {
					t.Errorf("%s N=%d: ∫P_%d = %.3g, want %v (tol %.3g)", r.name, n, k, q, want, tol)
				}
			}
			// Monomials: ∫x^k = 2/(k+1) for even k, 0 for odd k.
			for k := 0; k <= r.degree(n); k++ {
				q := 0.0
				for i := range x {
					q += w[i] * math.Pow(x[i], float64(k))
				}
				want := 0.0
				if k%2 == 0 {
					want = 2 / float64(k+1)
				}
				if d := math.Abs(q - want); d > tol {
					t.Errorf("%s N=%d: ∫x^%d = %.17g, want %.17g", r.name, n, k, q, want)
				}
			}
			// The next degree up is not integrated exactly (N ≥ 2), which
			// checks that the degree claimed is the real one.
			if k := r.degree(n) + 1; n >= 2 && k%2 == 0 {
				q := 0.0
				for i := range x {
					q += w[i] * Legendre(k, x[i])
				}
				if math.Abs(q) < 1e-3 {
					t.Errorf("%s N=%d: ∫P_%d unexpectedly exact (%.3g)", r.name, n, k, q)
				}
			}
		}
	}
}

func TestNodesSymmetricSorted(t *testing.T) {
	for _, r := range rules {
		for n := r.minN; n <= MaxPoints; n++ {
			x, w, _ := r.fn(n)
			if len(x) != n || len(w) != n {
				t.Fatalf("%s N=%d: got %d nodes, %d weights", r.name, n, len(x), len(w))
			}
			for i := range n {
				if x[i] != -x[n-1-i] || w[i] != w[n-1-i] {
					t.Errorf("%s N=%d: node/weight %d not exactly symmetric", r.name, n, i)
				}
				if i > 0 && !(x[i] > x[i-1]) {
					t.Errorf("%s N=%d: nodes not strictly ascending at %d", r.name, n, i)
				}
				if x[i] < -1 || x[i] > 1 {
					t.Errorf("%s N=%d: node %v outside [-1,1]", r.name, n, x[i])
				}
			}
			// Nodes are roots: P_N (Gauss) or P_{N-1}' (Lobatto interior)
			// vanish to within rounding of their evaluation.
			for i := range n {
				var v, scale float64
				if r.minN == 1 {
					_, _, dp := legendre3(n, x[i])
					v, scale = Legendre(n, x[i]), math.Abs(dp)
				} else {
					if i == 0 || i == n-1 {
						continue
					}
					p, _, dp := legendre3(n-1, x[i])
					m := float64(n - 1)
					v = dp
					scale = math.Abs((2*x[i]*dp - m*(m+1)*p) / (1 - x[i]*x[i]))
				}
				// |f(x̂)| ≈ |f'|·|x̂ − x*|: a root error of a few ulps.
				if math.Abs(v) > scale*nodeTol+float64(n)*eps {
					t.Errorf("%s N=%d: residual %.3g at node %d", r.name, n, v, i)
				}
			}
		}
	}
}

func TestKnownRules(t *testing.T) {
	s3, s35 := 1/math.Sqrt(3), math.Sqrt(0.6)
	cases := []struct {
		name string
		fn   func(int) ([]float64, []float64, error)
		n    int
		x, w []float64
	}{
		{"GL1", GaussLegendre, 1, []float64{0}, []float64{2}},
		{"GL2", GaussLegendre, 2, []float64{-s3, s3}, []float64{1, 1}},
		{"GL3", GaussLegendre, 3, []float64{-s35, 0, s35}, []float64{5. / 9, 8. / 9, 5. / 9}},
		{"GLL2", GaussLobatto, 2, []float64{-1, 1}, []float64{1, 1}},
		{"GLL3", GaussLobatto, 3, []float64{-1, 0, 1}, []float64{1. / 3, 4. / 3, 1. / 3}},
		{"GLL4", GaussLobatto, 4, []float64{-1, -1 / math.Sqrt(5), 1 / math.Sqrt(5), 1},
			[]float64{1. / 6, 5. / 6, 5. / 6, 1. / 6}},
	}
	for _, c := range cases {
		x, w, err := c.fn(c.n)
		if err != nil {
			t.Fatal(err)
		}
		for i := range c.x {
			if math.Abs(x[i]-c.x[i]) > nodeTol || math.Abs(w[i]-c.w[i]) > nodeTol {
				t.Errorf("%s: point %d = (%.17g, %.17g), want (%.17g, %.17g)", c.name, i, x[i], w[i], c.x[i], c.w[i])
			}
		}
	}
}

func TestRuleErrors(t *testing.T) {
	bad := []struct {
		fn func(int) ([]float64, []float64, error)
		n  int
	}{{GaussLegendre, 0}, {GaussLegendre, MaxPoints + 1}, {GaussLobatto, 1}, {GaussLobatto, 0}, {GaussLobatto, MaxPoints + 1}}
	for _, b := range bad {
		if _, _, err := b.fn(b.n); err == nil {
			t.Errorf("N=%d: expected an error", b.n)
		}
	}
	if _, err := BaryWeights([]float64{0, 1, 0}); err == nil {
		t.Error("repeated nodes: expected an error")
	}
}

func TestJacobi(t *testing.T) {
	params := [][2]float64{{0, 0}, {1, 1}, {0.5, -0.5}, {2, 0}, {1, 3}}
	for _, ab := range params {
		a, b := ab[0], ab[1]
		for n := 0; n <= 12; n++ {
			// P_n^{(a,b)}(1) = Γ(n+a+1)/(Γ(n+1)Γ(a+1)).
			lg1, _ := math.Lgamma(float64(n) + a + 1)
			lg2, _ := math.Lgamma(float64(n) + 1)
			lg3, _ := math.Lgamma(a + 1)
			want := math.Exp(lg1 - lg2 - lg3)
			if got := Jacobi(n, a, b, 1); math.Abs(got-want) > 1e-12*want {
				t.Errorf("P_%d^(%v,%v)(1) = %v, want %v", n, a, b, got, want)
			}
			for _, x := range []float64{-0.9, -0.3, 0.1, 0.7} {
				// Reflection: P_n^{(a,b)}(−x) = (−1)^n P_n^{(b,a)}(x).
				l, r := Jacobi(n, a, b, -x), math.Pow(-1, float64(n))*Jacobi(n, b, a, x)
				if math.Abs(l-r) > 1e-12*(1+math.Abs(l)) {
					t.Errorf("reflection n=%d a=%v b=%v x=%v: %v vs %v", n, a, b, x, l, r)
				}
				// Derivative against a central difference.
				h := 1e-6
				fd := (Jacobi(n, a, b, x+h) - Jacobi(n, a, b, x-h)) / (2 * h)
				if d := JacobiDeriv(n, a, b, x); math.Abs(d-fd) > 1e-6*(1+math.Abs(d)) {
					t.Errorf("P'_%d^(%v,%v)(%v) = %v, finite difference %v", n, a, b, x, d, fd)
				}
			}
		}
	}
	// Legendre closed forms.
	for _, x := range []float64{-1, -0.4, 0, 0.25, 1} {
		if d := math.Abs(Legendre(2, x) - (3*x*x-1)/2); d > 2*eps {
			t.Errorf("P_2(%v) off by %v", x, d)
		}
		if d := math.Abs(Legendre(3, x) - (5*x*x*x-3*x)/2); d > 4*eps {
			t.Errorf("P_3(%v) off by %v", x, d)
		}
		if d := math.Abs(LegendreDeriv(3, x) - (15*x*x-3)/2); d > 8*eps {
			t.Errorf("P_3'(%v) off by %v", x, d)
		}
	}
}

func TestOrthonormalBasis(t *testing.T) {
	const n = 20
	x, w, _ := GaussLegendre(n + 1) // exact to degree 2n+1
	for i := range n {
		for j := range n {
			s := 0.0
			for q := range x {
				s += w[q] * OrthoLegendre(i, x[q]) * OrthoLegendre(j, x[q])
			}
			want := 0.0
			if i == j {
				want = 1
			}
			if math.Abs(s-want) > quadTolPerN*n {
				t.Errorf("∫φ_%d φ_%d = %v, want %v", i, j, s, want)
			}
		}
	}
	v, d := OrthoBasis(4, 0.3)
	for i := range 4 {
		if v[i] != OrthoLegendre(i, 0.3) || d[i] != OrthoLegendreDeriv(i, 0.3) {
			t.Errorf("OrthoBasis entry %d inconsistent", i)
		}
	}
}

// nodeSets yields every rule's nodes for N up to MaxPoints.
func nodeSets(t *testing.T, f func(name string, n int, x []float64)) {
	t.Helper()
	for _, r := range rules {
		for n := r.minN; n <= MaxPoints; n++ {
			x, _, err := r.fn(n)
			if err != nil {
				t.Fatal(err)
			}
			f(r.name, n, x)
		}
	}
}

// evalPts returns m points symmetric about 0 in [-1,1], including ±1 and
// points that are not nodes.
func evalPts(m int) []float64 {
	rng := rand.New(rand.NewPCG(1, 2))
	half := make([]float64, 0, m/2)
	half = append(half, 1)
	for len(half) < m/2 {
		half = append(half, rng.Float64())
	}
	pts := make([]float64, 0, 2*len(half)+1)
	for i := len(half) - 1; i >= 0; i-- {
		pts = append(pts, -half[i])
	}
	pts = append(pts, 0)
	for i := range half {
		pts = append(pts, half[i])
	}
	return pts
}

func TestInterpolationExact(t *testing.T) {
	pts := evalPts(15)
	nodeSets(t, func(name string, n int, x []float64) {
		im, err := InterpMatrix(x, pts)
		if err != nil {
			t.Fatal(err)
		}
		tol := interpTolPerN * float64(n)
		for k := 0; k < n; k++ { // degree ≤ N−1
			for i, p := range pts {
				s := 0.0
				for j := range x {
					s += im[i][j] * Legendre(k, x[j])
				}
				if d := math.Abs(s - Legendre(k, p)); d > tol {
					t.Errorf("%s N=%d: interpolating P_%d at %v off by %.3g (tol %.3g)", name, n, k, p, d, tol)
				}
			}
		}
		// Centro-symmetry: I[i][j] = I[m−1−i][N−1−j].
		m := len(pts)
		for i := range m {
			for j := range n {
				if d := math.Abs(im[i][j] - im[m-1-i][n-1-j]); d > symTolPerN*float64(n) {
					t.Errorf("%s N=%d: interpolation matrix not centro-symmetric at (%d,%d): %.3g", name, n, i, j, d)
				}
			}
		}
		// Interpolating onto the nodes themselves is the identity.
		id, _ := InterpMatrix(x, x)
		for i := range n {
			for j := range n {
				want := 0.0
				if i == j {
					want = 1
				}
				if id[i][j] != want {
					t.Fatalf("%s N=%d: InterpMatrix(x, x) not the identity", name, n)
				}
			}
		}
	})
}

func TestDifferentiationExact(t *testing.T) {
	pts := evalPts(15)
	nodeSets(t, func(name string, n int, x []float64) {
		dm, err := DiffMatrix(x)
		if err != nil {
			t.Fatal(err)
		}
		dp, err := LagrangeDerivMatrix(x, pts)
		if err != nil {
			t.Fatal(err)
		}
		dn, _ := LagrangeDerivMatrix(x, x)
		for k := 0; k < n; k++ {
			// max |P_k'| = k(k+1)/2 on [-1,1].
			scale := math.Max(1, float64(k*(k+1))/2)
			tol := diffTolPerN2 * float64(n*n) * scale
			for i := range x {
				s := 0.0
				for j := range x {
					s += dm[i][j] * Legendre(k, x[j])
				}
				if d := math.Abs(s - LegendreDeriv(k, x[i])); d > tol {
					t.Errorf("%s N=%d: D·P_%d at node %d off by %.3g (tol %.3g)", name, n, k, i, d, tol)
				}
			}
			for i, p := range pts {
				s := 0.0
				for j := range x {
					s += dp[i][j] * Legendre(k, x[j])
				}
				if d := math.Abs(s - LegendreDeriv(k, p)); d > tol {
					t.Errorf("%s N=%d: ℓ'·P_%d at %v off by %.3g (tol %.3g)", name, n, k, p, d, tol)
				}
			}
		}
		// Rows sum to zero; the node rows of LagrangeDerivMatrix are D.
		for i := range n {
			s := 0.0
			for j := range n {
				s += dm[i][j]
				if dn[i][j] != dm[i][j] {
					t.Fatalf("%s N=%d: LagrangeDerivMatrix at the nodes differs from DiffMatrix", name, n)
				}
			}
			if s != 0 && math.Abs(s) > eps*float64(n*n) {
				t.Errorf("%s N=%d: row %d of D sums to %.3g", name, n, i, s)
			}
		}
		// Centro-antisymmetry: D[i][j] = −D[N−1−i][N−1−j].
		for i := range n {
			rs := 0.0
			for j := range n {
				rs = math.Max(rs, math.Abs(dm[i][j]))
			}
			for j := range n {
				if d := math.Abs(dm[i][j] + dm[n-1-i][n-1-j]); d > symTolPerN*float64(n)*rs {
					t.Errorf("%s N=%d: D not centro-antisymmetric at (%d,%d): %.3g", name, n, i, j, d)
				}
			}
		}
	})
}
