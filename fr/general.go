package fr

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/bespoke-hpc/bespoke/poly"
)

// The simplex, prism and pyramid elements. Their operators are built as
// PyFR builds them, from an orthonormal basis (basis.go) and the
// Vandermonde matrix of the solution points:
//
//	m0[f][u]       = ℓ_u(x_f),       ℓ = V⁻ᵀφ the nodal basis
//	m1[u][d·nu+v]  = ∂_d ℓ_v(x_u)
//	m3[u][f]       = Σ_j φ_j(x_u) ∫_face(f) L_f φ_j
//
// L_f the nodal basis of the face's flux points; the face integrals use a
// rule exact for the integrand (Gauss–Legendre on lines and quadrilaterals
// as PyFR, a collapsed Gauss–Legendre rule on triangles). The intermediate
// matrices are cleaned where PyFR cleans them (cleanPyFR).
//
// Point sets. Those with a closed form or a computable definition are
// computed: Gauss–Legendre(–Lobatto) on lines and quadrilateral faces, the
// prism's line factor, and the pyramid's collapsed Gauss–Legendre(–Lobatto)
// layers. The triangle and tetrahedron sets PyFR offers (Williams–Shunn,
// Shunn–Ham, alpha-optimised) are tabulated, numerically optimised sets;
// bespoke does not carry them, so they come from a file (Options).

// Elements lists every element kind Element and Build accept, by PyFR's
// names; Aliases maps other accepted spellings to them.
var Elements = []string{"quad", "hex", "tri", "tet", "pri", "pyr"}

// Aliases are other names for element kinds.
var Aliases = map[string]string{"prism": "pri", "pyramid": "pyr", "tetrahedron": "tet", "triangle": "tri", "quadrilateral": "quad", "hexahedron": "hex"}

// MaxOtherOrder bounds the order of tri, tet, pri and pyr elements: the
// point sets PyFR tabulates stop at p = 6 (tet, pyr) to 8 (tri, pri), and
// the Vandermonde matrices of higher orders lose digits.
const MaxOtherOrder = 8

// solSets and fluxSets list, per element kind, PyFR's solution point sets
// and the flux point sets of its faces (the first is the default); a name
// marked tabulated needs a points file.
var solSets = map[string][]string{
	"tri": {"williams-shunn", "alpha-opt"},
	"tet": {"shunn-ham", "alpha-opt"},
	"pri": {"williams-shunn~gauss-legendre", "williams-shunn~gauss-legendre-lobatto", "alpha-opt~gauss-legendre-lobatto"},
	"pyr": {"gauss-legendre", "gauss-legendre-lobatto"},
}

// fluxSets name the flux points of line (tri) or quadrilateral (pri, pyr)
// faces, which are computed; triangular faces take theirs from a file
// (PyFR: williams-shunn or alpha-opt).
var fluxSets = map[string][]string{
	"tri": {"gauss-legendre", "gauss-legendre-lobatto"},
	"tet": {"williams-shunn", "alpha-opt"},
	"pri": {"gauss-legendre", "gauss-legendre-lobatto"},
	"pyr": {"gauss-legendre", "gauss-legendre-lobatto"},
}

// PointSetsFor returns the solution and flux point set names of an element
// kind (PyFR's; the first of each is the default).
func PointSetsFor(kind string) (sol, flux []string) {
	kind = canonical(kind)
	if kind == "quad" || kind == "hex" {
		return PointSets, PointSets
	}
	return solSets[kind], fluxSets[kind]
}

func canonical(kind string) string {
	k := strings.ToLower(kind)
	if a, ok := Aliases[k]; ok {
		return a
	}
	return k
}

// Options choose an element's point sets. Names are PyFR's ("" means the
// default); SolFile, when set, gives the solution points themselves
// (element coordinates, in PyFR's order), and TriFaceFile the flux points of
// a triangular face (face coordinates (s, t) on PyFR's reference triangle).
type Options struct {
	SolPts, FluxPts string
	SolFile         [][]float64
	TriFaceFile     [][]float64
}

// face of a non-tensor element: its kind, the map from face to element
// coordinates, and its outward (unnormalised, as in PyFR) normal.
type gface struct {
	kind   string
	proj   func(s []float64) []float64
	normal []float64
}

var gfaces = map[string][]gface{
	"tri": {
		{"line", func(s []float64) []float64 { return []float64{s[0], -1} }, []float64{0, -1}},
		{"line", func(s []float64) []float64 { return []float64{-s[0], s[0]} }, []float64{1, 1}},
		{"line", func(s []float64) []float64 { return []float64{-1, s[0]} }, []float64{-1, 0}},
	},
	"tet": {
		{"tri", func(s []float64) []float64 { return []float64{s[0], s[1], -1} }, []float64{0, 0, -1}},
		{"tri", func(s []float64) []float64 { return []float64{s[0], -1, s[1]} }, []float64{0, -1, 0}},
		{"tri", func(s []float64) []float64 { return []float64{-1, s[1], s[0]} }, []float64{-1, 0, 0}},
		{"tri", func(s []float64) []float64 { return []float64{s[0], s[1], -s[0] - s[1] - 1} }, []float64{1, 1, 1}},
	},
	"pri": {
		{"tri", func(s []float64) []float64 { return []float64{s[0], s[1], -1} }, []float64{0, 0, -1}},
		{"tri", func(s []float64) []float64 { return []float64{s[0], s[1], 1} }, []float64{0, 0, 1}},
		{"quad", func(s []float64) []float64 { return []float64{s[0], -1, s[1]} }, []float64{0, -1, 0}},
		{"quad", func(s []float64) []float64 { return []float64{-s[0], s[0], s[1]} }, []float64{1, 1, 0}},
		{"quad", func(s []float64) []float64 { return []float64{-1, s[0], s[1]} }, []float64{-1, 0, 0}},
	},
	"pyr": {
		{"quad", func(s []float64) []float64 { return []float64{s[0], s[1], -1} }, []float64{0, 0, -1}},
		{"tri", func(s []float64) []float64 { return []float64{s[0] + (s[1]+1)/2, (s[1] - 1) / 2, s[1]} }, []float64{0, -1, 0.5}},
		{"tri", func(s []float64) []float64 { return []float64{(1 - s[1]) / 2, -s[0] - (s[1]+1)/2, s[1]} }, []float64{1, 0, 0.5}},
		{"tri", func(s []float64) []float64 { return []float64{-s[0] - (s[1]+1)/2, (1 - s[1]) / 2, s[1]} }, []float64{0, 1, 0.5}},
		{"tri", func(s []float64) []float64 { return []float64{(s[1] - 1) / 2, s[0] + (s[1]+1)/2, s[1]} }, []float64{-1, 0, 0.5}},
	},
}

var ndimsOf = map[string]int{"line": 1, "tri": 2, "quad": 2, "tet": 3, "pri": 3, "pyr": 3}

// Build returns the reference element of any kind in Elements (or an
// alias) with the point sets of o. Quadrilaterals and hexahedra take only
// names (Element).
func Build(kind string, order int, o Options) (*RefElement, error) {
	kind = canonical(kind)
	if kind == "quad" || kind == "hex" {
		if o.SolFile != nil || o.TriFaceFile != nil {
			return nil, fmt.Errorf("fr: %s points are computed; points files are for %s", kind, strings.Join(Elements[2:], ", "))
		}
		return Element(kind, order, o.SolPts, o.FluxPts)
	}
	fs, ok := gfaces[kind]
	if !ok {
		return nil, fmt.Errorf("fr: unknown element kind %q (want one of %s)", kind, strings.Join(Elements, ", "))
	}
	if order < 1 || order > MaxOtherOrder {
		return nil, fmt.Errorf("fr: %s order %d out of range (1 ≤ p ≤ %d)", kind, order, MaxOtherOrder)
	}
	solNames, fluxNames := solSets[kind], fluxSets[kind]
	if o.SolPts == "" {
		o.SolPts = solNames[0]
	}
	if o.FluxPts == "" {
		o.FluxPts = fluxNames[0]
	}
	if !slices.Contains(solNames, o.SolPts) {
		return nil, fmt.Errorf("fr: unknown %s solution point set %q (want one of %s)", kind, o.SolPts, strings.Join(solNames, ", "))
	}
	if !slices.Contains(fluxNames, o.FluxPts) {
		return nil, fmt.Errorf("fr: unknown %s flux point set %q (want one of %s)", kind, o.FluxPts, strings.Join(fluxNames, ", "))
	}
	nd := ndimsOf[kind]
	nu := basisSize(kind, order)
	// Triangular faces' flux points.
	var triPts [][]float64
	hasTri := slices.ContainsFunc(fs, func(f gface) bool { return f.kind == "tri" })
	if hasTri {
		triName := "williams-shunn"
		if kind == "tet" {
			triName = o.FluxPts
		}
		if o.TriFaceFile == nil {
			return nil, fmt.Errorf("fr: %s flux points on triangular faces (%s) are a tabulated set: give them with a face points file", kind, triName)
		}
		if err := checkPoints(o.TriFaceFile, basisSize("tri", order), 2, "triangular-face flux"); err != nil {
			return nil, err
		}
		triPts = o.TriFaceFile
	}
	// Solution points.
	upts := o.SolFile
	if upts == nil {
		var err error
		if upts, err = solPoints(kind, order, o.SolPts, triPts); err != nil {
			return nil, err
		}
	}
	if err := checkPoints(upts, nu, nd, "solution"); err != nil {
		return nil, err
	}
	// Flux points of line and quadrilateral faces.
	n := order + 1
	line, err := rule1d(o.FluxPts, n, "flux")
	if kind == "tet" {
		line, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	facePts := map[string][][]float64{"tri": triPts}
	for _, x := range line {
		facePts["line"] = append(facePts["line"], []float64{x})
	}
	for _, y := range line {
		for _, x := range line {
			facePts["quad"] = append(facePts["quad"], []float64{x, y})
		}
	}
	e := &RefElement{
		Kind: kind, Order: order, SolPts: o.SolPts, FluxPts: o.FluxPts,
		NDims: nd, NUpts: nu, Upts: upts, pyClean: true,
		defaultPts: o.SolPts == solNames[0] && o.FluxPts == fluxNames[0],
		cache:      map[string][]float64{},
	}
	for fi, f := range fs {
		for _, s := range facePts[f.kind] {
			e.Fpts = append(e.Fpts, f.proj(s))
			e.FpFace = append(e.FpFace, fi)
			e.Norm = append(e.Norm, f.normal)
		}
	}
	e.NFpts = len(e.Fpts)
	if err := e.buildGeneral(fs, facePts); err != nil {
		return nil, err
	}
	return e, nil
}

func checkPoints(pts [][]float64, n, nd int, what string) error {
	if len(pts) != n {
		return fmt.Errorf("fr: %d %s points given, the order needs %d", len(pts), what, n)
	}
	for i, p := range pts {
		if len(p) != nd {
			return fmt.Errorf("fr: %s point %d has %d coordinates, want %d", what, i+1, len(p), nd)
		}
		for _, v := range p {
			if math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) > 1+1e-9 {
				return fmt.Errorf("fr: %s point %d %v lies outside the reference element", what, i+1, p)
			}
		}
	}
	return nil
}

// solPoints computes the solution points of the computable sets, in
// PyFR's order.
func solPoints(kind string, p int, name string, tri [][]float64) ([][]float64, error) {
	n := p + 1
	switch kind {
	case "tri", "tet":
		return nil, fmt.Errorf("fr: %s solution points %s are a tabulated, numerically optimised set: give them with a points file", kind, name)
	case "pri":
		// A triangle set times a line set, the line coordinate slowest.
		tname, lname, _ := strings.Cut(name, "~")
		if tname != "williams-shunn" || tri == nil {
			return nil, fmt.Errorf("fr: pri solution points %s: the triangle set %s is tabulated: give the solution points with a points file", name, tname)
		}
		line, err := rule1d(lname, n, "solution")
		if err != nil {
			return nil, err
		}
		var pts [][]float64
		for _, z := range line {
			for _, t := range tri {
				pts = append(pts, []float64{t[0], t[1], z})
			}
		}
		return pts, nil
	case "pyr":
		return pyrPoints(p, name)
	}
	return nil, fmt.Errorf("fr: no solution points for %s", kind)
}

// pyrPoints are the pyramid's collapsed layers: at the k-th node z_k of the
// (p+1)-point line rule, the tensor rule of p+1−k points per direction
// scaled by (1−z_k)/2 (x fastest). With Lobatto points the top layer is the
// apex alone, listed first (PyFR's order).
func pyrPoints(p int, name string) ([][]float64, error) {
	n := p + 1
	z, err := rule1d(name, n, "solution")
	if err != nil {
		return nil, err
	}
	var pts [][]float64
	lobatto := name == "gauss-legendre-lobatto"
	if lobatto {
		pts = append(pts, []float64{0, 0, 1})
	}
	for k := range n {
		m := n - k
		if lobatto && m == 1 {
			break
		}
		var r []float64
		if m == 1 {
			r = []float64{0}
		} else if r, err = rule1d(name, m, "solution"); err != nil {
			return nil, err
		}
		s := (1 - z[k]) / 2
		for _, y := range r {
			for _, x := range r {
				pts = append(pts, []float64{s * x, s * y, z[k]})
			}
		}
	}
	return pts, nil
}

// triRule is a quadrature rule on the reference triangle exact for total
// degree 2m−2: Gauss–Legendre in collapsed coordinates (a, b) with the
// Jacobian (1−b)/2 in the weights.
func triRule(m int) (pts [][]float64, wts []float64) {
	x, w, _ := poly.GaussLegendre(m)
	for j := range m {
		for i := range m {
			a, b := x[i], x[j]
			pts = append(pts, []float64{(1+a)*(1-b)/2 - 1, b})
			wts = append(wts, w[i]*w[j]*(1-b)/2)
		}
	}
	return pts, wts
}

// faceRule returns a quadrature rule on a face kind exact for the
// integrands of the correction at order p.
func faceRule(kind string, p int) (pts [][]float64, wts []float64) {
	switch kind {
	case "tri":
		// Up to degree 3p (a pyramid's functions restricted to a
		// triangular face reach degree 2p).
		return triRule((3*p+3)/2 + 1)
	default:
		x, w, _ := poly.GaussLegendre(p + 1)
		if kind == "line" {
			for i := range x {
				pts = append(pts, []float64{x[i]})
				wts = append(wts, w[i])
			}
			return pts, wts
		}
		for j := range x {
			for i := range x {
				pts = append(pts, []float64{x[i], x[j]})
				wts = append(wts, w[i]*w[j])
			}
		}
		return pts, wts
	}
}

// orthoMat returns [function][point] of the orthonormal basis (PyFR's
// ortho_basis_at), and with grad [dimension][function][point].
func orthoMat(kind string, p int, pts [][]float64, grad bool) (v [][]float64, g [][][]float64) {
	nb := basisSize(kind, p)
	nd := ndimsOf[kind]
	v = newMat(nb, len(pts))
	if grad {
		g = make([][][]float64, nd)
		for d := range nd {
			g[d] = newMat(nb, len(pts))
		}
	}
	for q, x := range pts {
		vals, grads := orthoAt(kind, p, x, grad)
		for j := range nb {
			v[j][q] = vals[j]
			if grad {
				for d := range nd {
					g[d][j][q] = grads[j][d]
				}
			}
		}
	}
	return v, g
}

func newMat(r, c int) [][]float64 {
	m := make([][]float64, r)
	buf := make([]float64, r*c)
	for i := range m {
		m[i] = buf[i*c : (i+1)*c]
	}
	return m
}

// nodalBasis is PyFR's polynomial basis with nodes: the cleaned inverse of
// the cleaned Vandermonde matrix.
type nodalBasis struct {
	kind   string
	p      int
	invvdm [][]float64 // [node][function]
}

func newNodalBasis(kind string, p int, nodes [][]float64) (*nodalBasis, error) {
	vdm, _ := orthoMat(kind, p, nodes, false)
	cleanMat(vdm)
	inv, err := invert(vdm)
	if err != nil {
		return nil, fmt.Errorf("fr: %s points of order %d do not determine a polynomial (%v)", kind, p, err)
	}
	cleanMat(inv)
	return &nodalBasis{kind, p, inv}, nil
}

// at returns ℓ_u(x_e) as [e][u] (PyFR's nodal_basis_at, cleaned).
func (b *nodalBasis) at(pts [][]float64) [][]float64 {
	ob, _ := orthoMat(b.kind, b.p, pts, false)
	nu := len(b.invvdm)
	out := newMat(len(pts), nu)
	for u := range nu {
		for e := range pts {
			s := 0.0
			for j, c := range b.invvdm[u] {
				s += c * ob[j][e]
			}
			out[e][u] = s
		}
	}
	cleanMat(out)
	return out
}

// buildGeneral fills the cache with m0, m1 and m3.
func (e *RefElement) buildGeneral(fs []gface, facePts map[string][][]float64) error {
	p, nu, nf, nd := e.Order, e.NUpts, e.NFpts, e.NDims
	nb, err := newNodalBasis(e.Kind, p, e.Upts)
	if err != nil {
		return err
	}
	// m0 = ℓ(fpts), [f][u].
	m0 := flat(nb.at(e.Fpts))
	// m1[u][d·nu+v] = ∂_d ℓ_v(x_u): invvdm applied to the raw gradients,
	// cleaned as one [d][v][u] array.
	_, g := orthoMat(e.Kind, p, e.Upts, true)
	jn := make([]float64, nd*nu*nu) // [d][v][u]
	for d := range nd {
		for v := range nu {
			for u := range nu {
				s := 0.0
				for j, c := range nb.invvdm[v] {
					s += c * g[d][j][u]
				}
				jn[(d*nu+v)*nu+u] = s
			}
		}
	}
	cleanPyFR(jn, CleanTol)
	m1 := make([]float64, nu*nd*nu)
	for u := range nu {
		for d := range nd {
			for v := range nu {
				m1[u*nd*nu+d*nu+v] = jn[(d*nu+v)*nu+u]
			}
		}
	}
	// m3: coefficients S[f][j] = Σ_q w_q L_f(s_q) φ_j(proj(s_q)) face by
	// face, then m3[u][f] = Σ_j S[f][j] φ_j(x_u), cleaned.
	fbases := map[string]*nodalBasis{}
	for k, pts := range facePts {
		if pts == nil {
			continue
		}
		if fbases[k], err = newNodalBasis(k, p, pts); err != nil {
			return err
		}
	}
	nbasis := basisSize(e.Kind, p)
	coeffs := newMat(0, 0)
	for _, f := range fs {
		qp, qw := faceRule(f.kind, p)
		L := fbases[f.kind].at(qp) // [q][k]
		proj := make([][]float64, len(qp))
		for q, s := range qp {
			proj[q] = f.proj(s)
		}
		M, _ := orthoMat(e.Kind, p, proj, false) // [j][q]
		cleanMat(M)
		for k := range len(facePts[f.kind]) {
			row := make([]float64, nbasis)
			for j := range nbasis {
				s := 0.0
				for q := range qp {
					s += qw[q] * L[q][k] * M[j][q]
				}
				row[j] = s
			}
			coeffs = append(coeffs, row)
		}
	}
	ou, _ := orthoMat(e.Kind, p, e.Upts, false)
	cleanMat(ou)
	m3 := make([]float64, nu*nf)
	for u := range nu {
		for f := range nf {
			s := 0.0
			for j := range nbasis {
				s += coeffs[f][j] * ou[j][u]
			}
			m3[u*nf+f] = s
		}
	}
	cleanPyFR(m3, CleanTol)
	e.cache["m0"], e.cache["m1"], e.cache["m3"] = m0, m1, m3
	return nil
}

func flat(m [][]float64) []float64 {
	var out []float64
	for _, r := range m {
		out = append(out, r...)
	}
	return out
}

// cleanMat cleans a matrix as one array (its rows share one buffer when
// made by newMat, but rows may be separate).
func cleanMat(m [][]float64) {
	a := flat(m)
	cleanPyFR(a, CleanTol)
	c := len(m[0])
	for i := range m {
		copy(m[i], a[i*c:(i+1)*c])
	}
}

// invert returns the inverse of a square matrix (Gauss–Jordan with
// partial pivoting); a pivot below 1e-13 of the largest entry means the
// points do not determine a polynomial (repeated or degenerate points).
func invert(a [][]float64) ([][]float64, error) {
	n := len(a)
	big := 0.0
	for _, r := range a {
		for _, v := range r {
			big = math.Max(big, math.Abs(v))
		}
	}
	m := newMat(n, 2*n)
	for i := range n {
		copy(m[i], a[i])
		m[i][n+i] = 1
	}
	for c := range n {
		piv := c
		for r := c + 1; r < n; r++ {
			if math.Abs(m[r][c]) > math.Abs(m[piv][c]) {
				piv = r
			}
		}
		if math.Abs(m[piv][c]) <= 1e-13*big {
			return nil, fmt.Errorf("singular Vandermonde matrix")
		}
		m[c], m[piv] = m[piv], m[c]
		inv := 1 / m[c][c]
		for k := range 2 * n {
			m[c][k] *= inv
		}
		for r := range n {
			if r == c || m[r][c] == 0 {
				continue
			}
			f := m[r][c]
			for k := range 2 * n {
				m[r][k] -= f * m[c][k]
			}
		}
	}
	out := newMat(n, n)
	for i := range n {
		copy(out[i], m[i][n:])
	}
	return out, nil
}

// cleanPyFR is PyFR's clean() as PyFR 3.1 has it: entries with |x| < tol
// become 0; magnitudes are sorted and split into runs whose members are
// numpy-isclose (rtol tol, atol tol/10) to the run's first; every run of two
// or more gets its median magnitude, keeping signs. The quadrilateral and
// hexahedral operators keep their own variant (clean) for stable output.
func cleanPyFR(a []float64, tol float64) {
	if len(a) < 2 {
		for i, v := range a {
			if math.Abs(v) < tol {
				a[i] = 0
			}
		}
		return
	}
	mag := make([]float64, len(a))
	for i, v := range a {
		if math.Abs(v) < tol {
			a[i] = 0
		}
		mag[i] = math.Abs(a[i])
	}
	idx := make([]int, len(a))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(x, y int) int { return cmp.Compare(mag[x], mag[y]) })
	set := func(lo, hi int) {
		if hi-lo < 2 {
			return
		}
		s := make([]float64, hi-lo)
		for k := lo; k < hi; k++ {
			s[k-lo] = mag[idx[k]]
		}
		med := median(s)
		for k := lo; k < hi; k++ {
			a[idx[k]] = math.Copysign(med, a[idx[k]])
		}
	}
	lo := 0
	for j := 1; j < len(idx); j++ {
		x, y := mag[idx[j]], mag[idx[lo]]
		if math.Abs(x-y) > tol/10+tol*math.Abs(y) {
			set(lo, j)
			lo = j
		}
	}
	set(lo, len(idx))
}

// ReadPoints reads a point set: one point a line, its ndims coordinates
// separated by spaces or commas, optionally followed by a weight (ignored);
// blank lines and lines starting with # are skipped.
func ReadPoints(r io.Reader, ndims int) ([][]float64, error) {
	var pts [][]float64
	sc := bufio.NewScanner(r)
	for ln := 1; sc.Scan(); ln++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == '\t' || r == ',' })
		if len(fields) != ndims && len(fields) != ndims+1 {
			return nil, fmt.Errorf("line %d: %d numbers, want %d coordinates (and optionally a weight)", ln, len(fields), ndims)
		}
		p := make([]float64, ndims)
		for i := range ndims {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: %q is no number", ln, fields[i])
			}
			p[i] = v
		}
		pts = append(pts, p)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(pts) == 0 {
		return nil, fmt.Errorf("no points")
	}
	return pts, nil
}

// ReadPointsFile reads a point set file (ReadPoints).
func ReadPointsFile(path string, ndims int) ([][]float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	pts, err := ReadPoints(f, ndims)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return pts, nil
}

// NDims returns the dimension of an element kind (0 if unknown).
func NDims(kind string) int {
	switch k := canonical(kind); k {
	case "hex":
		return 3
	default:
		return ndimsOf[k]
	}
}
