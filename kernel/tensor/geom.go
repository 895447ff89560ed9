package tensor

import (
	"fmt"
	"strings"

	"github.com/bespoke-hpc/bespoke/fem"
	"github.com/bespoke-hpc/bespoke/kernel"
)

// Geometry is where a kernel gets the geometric factors at a point. The
// stored factors are 7 of the 9 values BK5 moves per node; a trilinear
// element is fixed by its 8 vertices and a parallelepiped by one
// Jacobian, so computing the factors in the kernel leaves little more
// than u and v to stream.
//
//   - Stored (""): "geo", F factors per point (fem.Mesh.Geometry).
//   - Trilinear: "xv", each element's 8 corners (corner c = cx + 2cy +
//     4cz, then x, y, z: 24 values); the kernel forms the map's monomial
//     coefficients once per element and, at each point, J, adj J, det J
//     and G = w·det·J⁻¹J⁻ᵀ = (w/det)·adj·adjᵀ in registers.
//   - Affine: "ga", per element the constant K = det·J⁻¹J⁻ᵀ (6 values)
//     and det (BK1: det alone); the factor at a point is w·K.
//   - Box: Affine for boxes along the axes (a Cartesian mesh), whose K is
//     diagonal: the kernel reads rr, ss, tt and det of ga and drops the
//     other three terms of G·∇u at every point, as deal.II does for its
//     Cartesian cells (the screened Poisson operators only: the mass
//     operator's Affine is the same).
//
// Curved meshes (order ≥ 2) have only stored factors.
type Geometry string

// The geometry sources.
const (
	Stored    Geometry = ""
	Trilinear Geometry = "trilinear"
	Affine    Geometry = "affine"
	Box       Geometry = "box"
)

// geoSuffix is a source's part of a variant name ("slab-lit/e1/tri").
var geoSuffix = map[Geometry]string{Trilinear: "tri", Affine: "aff", Box: "box"}

// ParseGeometry reads "stored", "trilinear", "affine" or "box".
func ParseGeometry(s string) (Geometry, error) {
	switch strings.ToLower(s) {
	case "stored", "":
		return Stored, nil
	case "trilinear", "tri":
		return Trilinear, nil
	case "affine", "aff":
		return Affine, nil
	case "box":
		return Box, nil
	}
	return "", fmt.Errorf("tensor: geometry %q: want stored, trilinear, affine or box", s)
}

// String is the source's name.
func (g Geometry) String() string {
	if g == Stored {
		return "stored"
	}
	return string(g)
}

// geoWords is what a source reads per element besides u and v.
func (p *Problem) geoWords(g Geometry) int {
	switch g {
	case Trilinear:
		return 24
	case Affine, Box:
		return p.basis.Factors()
	}
	return p.factors()
}

// affineFactors are the per-element values of Affine for corners c:
// K = det·J⁻¹J⁻ᵀ = adj·adjᵀ/det (rr rs rt ss st tt) and det, or det alone
// for the mass operator.
func affineFactors(c [8][3]float64, stiff bool) []float64 {
	a := fem.TrilinearCoefficients(c)
	var J [3][3]float64
	for x := range 3 {
		J[x] = [3]float64{a[x][1], a[x][2], a[x][4]}
	}
	var adj [3][3]float64
	for r := range 3 {
		for x := range 3 {
			r1, r2, x1, x2 := (r+1)%3, (r+2)%3, (x+1)%3, (x+2)%3
			adj[r][x] = J[x1][r1]*J[x2][r2] - J[x1][r2]*J[x2][r1]
		}
	}
	det := J[0][0]*adj[0][0] + J[1][0]*adj[0][1] + J[2][0]*adj[0][2]
	if !stiff {
		return []float64{det}
	}
	k := func(r, s int) float64 { return (adj[r][0]*adj[s][0] + adj[r][1]*adj[s][1] + adj[r][2]*adj[s][2]) / det }
	return []float64{k(0, 0), k(0, 1), k(0, 2), k(1, 1), k(1, 2), k(2, 2), det}
}

// meshInputs are the per-element arrays of the computed sources for the
// elements of m: xv (24 per element) when m is trilinear, ga when it is
// affine; nil where the mesh does not allow the source.
func meshInputs(m *fem.Mesh, stiff bool) (xv, ga []float64) {
	if !m.Trilinear() {
		return nil, nil
	}
	affine := m.Affine()
	for e := range m.Elements() {
		c := m.Corners(e)
		for v := range 8 {
			xv = append(xv, c[v][:]...)
		}
		if affine {
			ga = append(ga, affineFactors(c, stiff)...)
		}
	}
	return xv, ga
}

// The IR of the computed sources, shared by every layout (GPU pencils,
// CPU point loops).

// geoFactors declares, from the Jacobian J[x][d] = ∂x/∂(r,s,t)_d at a
// point and its quadrature weight w, adj J, det J and the factors, named
// with prefix pre; it returns the factors in the order of geo: rr rs rt
// ss st tt w|J| for the screened Poisson operators (stiff), w|J| alone
// for the mass operator.
func geoFactors(J func(x, d int) kernel.Expr, w kernel.Expr, stiff bool, pre string) ([]kernel.Stmt, []kernel.Expr) {
	nm := func(s string, a ...any) string { return pre + fmt.Sprintf(s, a...) }
	var ss []kernel.Stmt
	for x := range 3 {
		for d := range 3 {
			ss = append(ss, kernel.Decl{Type: kernel.Real, Name: nm("j%d%d", x, d), Init: J(x, d)})
		}
	}
	j := func(x, d int) kernel.Expr { return kernel.Ref(nm("j%d%d", x, d)) }
	// adj[r][x] = J[x1][r1]·J[x2][r2] − J[x1][r2]·J[x2][r1]: row r of
	// det·J⁻¹, the gradient of reference coordinate r.
	rows := 3
	if !stiff {
		rows = 1 // det needs only the first row
	}
	for r := range rows {
		for x := range 3 {
			r1, r2, x1, x2 := (r+1)%3, (r+2)%3, (x+1)%3, (x+2)%3
			ss = append(ss, kernel.Decl{Type: kernel.Real, Name: nm("a%d%d", r, x),
				Init: kernel.Sub(kernel.Mul(j(x1, r1), j(x2, r2)), kernel.Mul(j(x1, r2), j(x2, r1)))})
		}
	}
	a := func(r, x int) kernel.Expr { return kernel.Ref(nm("a%d%d", r, x)) }
	ss = append(ss, kernel.Decl{Type: kernel.Real, Name: nm("det"),
		Init: kernel.Add(kernel.Add(kernel.Mul(j(0, 0), a(0, 0)), kernel.Mul(j(1, 0), a(0, 1))), kernel.Mul(j(2, 0), a(0, 2)))})
	ss = append(ss, kernel.DeclReal(nm("wdet"), kernel.Mul(w, kernel.Ref(nm("det")))))
	if !stiff {
		return ss, []kernel.Expr{kernel.Ref(nm("wdet"))}
	}
	ss = append(ss, kernel.DeclReal(nm("wod"), kernel.Div(w, kernel.Ref(nm("det")))))
	var out []kernel.Expr
	for _, rs := range [][2]int{{0, 0}, {0, 1}, {0, 2}, {1, 1}, {1, 2}, {2, 2}} {
		r, s := rs[0], rs[1]
		name := nm("g%d%d", r, s)
		ss = append(ss, kernel.Decl{Type: kernel.Real, Name: name,
			Init: kernel.Mul(kernel.Ref(nm("wod")), kernel.Add(kernel.Add(kernel.Mul(a(r, 0), a(s, 0)), kernel.Mul(a(r, 1), a(s, 1))), kernel.Mul(a(r, 2), a(s, 2))))})
		out = append(out, kernel.Ref(name))
	}
	return ss, append(out, kernel.Ref(nm("wdet")))
}

// trilinearCoeffs declares the 24 monomial coefficients of an element's
// trilinear map, pre+"c{x}{m}" (fem.TrilinearCoefficients), from its
// corners corner(v, x).
func trilinearCoeffs(corner func(v, x int) kernel.Expr, pre string) []kernel.Stmt {
	var ss []kernel.Stmt
	for x := range 3 {
		for c := range 8 {
			ss = append(ss, kernel.Decl{Type: kernel.Real, Name: fmt.Sprintf("%sv%d%d", pre, x, c), Init: corner(c, x)})
		}
	}
	for x := range 3 {
		for m := range 8 {
			var s kernel.Expr
			for c := range 8 {
				neg := false
				for bit := 1; bit < 8; bit <<= 1 {
					if m&bit != 0 && c&bit == 0 {
						neg = !neg
					}
				}
				t := kernel.Ref(fmt.Sprintf("%sv%d%d", pre, x, c))
				switch {
				case s == nil && neg:
					s = kernel.Sub(kernel.Float(0), t)
				case s == nil:
					s = t
				case neg:
					s = kernel.Sub(s, t)
				default:
					s = kernel.Add(s, t)
				}
			}
			ss = append(ss, kernel.Decl{Type: kernel.Real, Name: fmt.Sprintf("%sc%d%d", pre, x, m), Init: kernel.Mul(kernel.Float(0.125), s)})
		}
	}
	return ss
}

// coeff is coefficient m of coordinate x (trilinearCoeffs' names).
func coeff(pre string, x, m int) kernel.Expr { return kernel.Ref(fmt.Sprintf("%sc%d%d", pre, x, m)) }

// trilinearJ is the Jacobian of the map of coefficients pre at (r, s, t):
// ∂x/∂r = c1 + c3 s + c5 t + c7 st, ∂x/∂s = c2 + c3 r + c6 t + c7 rt,
// ∂x/∂t = c4 + c5 r + c6 s + c7 rs.
func trilinearJ(pre string, r, s, t kernel.Expr) func(x, d int) kernel.Expr {
	return trilinearJWith(func(x, m int) kernel.Expr { return coeff(pre, x, m) }, r, s, t)
}

// trilinearJWith is trilinearJ with coefficient m of coordinate x given
// by coef (the vectorised layout keeps each lane's in a private block).
func trilinearJWith(coef func(x, m int) kernel.Expr, r, s, t kernel.Expr) func(x, d int) kernel.Expr {
	return func(x, d int) kernel.Expr {
		c := func(m int) kernel.Expr { return coef(x, m) }
		switch d {
		case 0:
			return kernel.Add(kernel.Add(c(1), kernel.Mul(c(3), s)), kernel.Mul(kernel.Add(c(5), kernel.Mul(c(7), s)), t))
		case 1:
			return kernel.Add(kernel.Add(c(2), kernel.Mul(c(3), r)), kernel.Mul(kernel.Add(c(6), kernel.Mul(c(7), r)), t))
		}
		return kernel.Add(kernel.Add(c(4), kernel.Mul(c(5), r)), kernel.Mul(kernel.Add(c(6), kernel.Mul(c(7), r)), s))
	}
}

// PointGeometry builds the IR of the geometric factors of a problem at
// the points of an element, for any layout (p.pointGeometry, or
// p.geometryOf(variant)): Setup once per element; then, where a thread
// owns pencils along t, Pencil once per pencil and PencilFactors at each
// of its points (the GPU layouts), or FactorsAt at any point whose
// coordinates and weight the layout has (the CPU layouts, from the table
// "gq"). A layout declares Params (and pointTableParam for FactorsAt).
// Stored factors are loads; PencilFactors of a stored source reads geo
// from "gbase".
type PointGeometry struct {
	p   *Problem
	src Geometry
	// El is the element, Live whether it exists (dead elements read
	// nothing: their corners are the reference cube's, their factors
	// finite).
	El, Live kernel.Expr
	pre      string
}

// pointGeometry is src's geometry of p for element el (live) with names
// prefixed by pre.
func (p *Problem) pointGeometry(src Geometry, el, live kernel.Expr, pre string) PointGeometry {
	return PointGeometry{p: p, src: src, El: el, Live: live, pre: pre}
}

// Params are the buffers the source reads besides the problem's constants.
func (g PointGeometry) Params() []kernel.Param {
	F := g.p.basis.Factors()
	switch g.src {
	case Trilinear:
		return []kernel.Param{
			{Name: "xv", Kind: kernel.BufferParam, Type: kernel.Real, Const: true, Doc: "each element's 8 corners, corner c = cx + 2cy + 4cz, then x, y, z"},
			{Name: "gp", Kind: kernel.BufferParam, Type: kernel.Real, Const: true, Doc: "1-D quadrature points on [-1, 1]"},
			{Name: "gw", Kind: kernel.BufferParam, Type: kernel.Real, Const: true, Doc: "1-D quadrature weights"},
		}
	case Affine, Box:
		doc := "per element det·J⁻¹J⁻ᵀ (rr rs rt ss st tt) and det J"
		if F == 1 {
			doc = "per element det J"
		}
		return []kernel.Param{
			{Name: "ga", Kind: kernel.BufferParam, Type: kernel.Real, Const: true, Doc: doc},
			{Name: "gw", Kind: kernel.BufferParam, Type: kernel.Real, Const: true, Doc: "1-D quadrature weights"},
		}
	}
	return []kernel.Param{{Name: "geo", Kind: kernel.BufferParam, Type: kernel.Real, Const: true, Doc: fmt.Sprintf("geometric factors, %d per point, SoA per element", F)}}
}

// point is the reference coordinate of point index i (a literal where i
// is a constant).
func (g PointGeometry) point(i kernel.Expr) kernel.Expr {
	if c, ok := i.(kernel.Int); ok {
		return kernel.Float(g.p.Prec.Rounded(g.p.basis.Points[c.V]))
	}
	return kernel.At("gp", i)
}

// weight is the 1-D quadrature weight of point index i.
func (g PointGeometry) weight(i kernel.Expr) kernel.Expr {
	if c, ok := i.(kernel.Int); ok {
		return kernel.Float(g.p.Prec.Rounded(g.p.basis.PointWeights[c.V]))
	}
	return kernel.At("gw", i)
}

// Setup declares what every point of the element needs: the
// coefficients of its trilinear map, or its affine values.
func (g PointGeometry) Setup() []kernel.Stmt {
	switch g.src {
	case Trilinear:
		return trilinearCoeffs(func(c, x int) kernel.Expr {
			ref := float64(2*(c>>x&1) - 1) // the reference cube's corner
			return kernel.Select{Cond: g.Live, Then: kernel.At("xv", kernel.Add(kernel.Mul(g.El, kernel.Const(24)), kernel.Const(3*c+x))), Else: kernel.Float(ref)}
		}, g.pre)
	case Affine, Box:
		F := g.p.basis.Factors()
		var ss []kernel.Stmt
		for f := range F {
			if g.dropped(f) {
				continue
			}
			dead := 0.0
			if f == F-1 {
				dead = 1 // det
			}
			ss = append(ss, kernel.Decl{Type: kernel.Real, Name: fmt.Sprintf("%sk%d", g.pre, f),
				Init: kernel.Select{Cond: g.Live, Then: kernel.At("ga", kernel.Add(kernel.Mul(g.El, kernel.Const(F)), kernel.Const(f))), Else: kernel.Float(dead)}})
		}
		return ss
	}
	return nil
}

// Pencil declares what a pencil along t at point indices (i, j) needs
// for each of its points (tag names it): r, s and the parts of J that do
// not change along t, or the weight w_i·w_j.
func (g PointGeometry) Pencil(i, j kernel.Expr, tag string) []kernel.Stmt {
	pre := g.pre + tag
	switch g.src {
	case Trilinear:
		r, s := g.point(i), g.point(j)
		ss := []kernel.Stmt{
			kernel.DeclReal(pre+"r", r),
			kernel.DeclReal(pre+"s", s),
			kernel.DeclReal(pre+"w", kernel.Mul(g.weight(i), g.weight(j))),
		}
		r, s = kernel.Ref(pre+"r"), kernel.Ref(pre+"s")
		for x := range 3 {
			c := func(m int) kernel.Expr { return coeff(g.pre, x, m) }
			ss = append(ss,
				kernel.Decl{Type: kernel.Real, Name: fmt.Sprintf("%sjr0%d", pre, x), Init: kernel.Add(c(1), kernel.Mul(c(3), s))},
				kernel.Decl{Type: kernel.Real, Name: fmt.Sprintf("%sjr1%d", pre, x), Init: kernel.Add(c(5), kernel.Mul(c(7), s))},
				kernel.Decl{Type: kernel.Real, Name: fmt.Sprintf("%sjs0%d", pre, x), Init: kernel.Add(c(2), kernel.Mul(c(3), r))},
				kernel.Decl{Type: kernel.Real, Name: fmt.Sprintf("%sjs1%d", pre, x), Init: kernel.Add(c(6), kernel.Mul(c(7), r))},
				kernel.Decl{Type: kernel.Real, Name: fmt.Sprintf("%sjt%d", pre, x), Init: kernel.Add(kernel.Add(kernel.Add(c(4), kernel.Mul(c(5), r)), kernel.Mul(c(6), s)), kernel.Mul(kernel.Mul(c(7), r), s))},
			)
		}
		return ss
	case Affine, Box:
		return []kernel.Stmt{kernel.DeclReal(pre+"w", kernel.Mul(g.weight(i), g.weight(j)))}
	}
	return nil
}

// PencilFactors are the factors at point k of the pencil tag (declared
// by Pencil at (i, j)), their names suffixed by sfx. Stored factors are
// loads from geo (the element's first factor at gbase).
func (g PointGeometry) PencilFactors(i, j, k kernel.Expr, tag, sfx string) ([]kernel.Stmt, []kernel.Expr) {
	pre := g.pre + tag
	q := g.p.basis.Q()
	F := g.p.basis.Factors()
	switch g.src {
	case Trilinear:
		t := g.point(k)
		J := func(x, d int) kernel.Expr {
			switch d {
			case 0:
				return kernel.Add(kernel.Ref(fmt.Sprintf("%sjr0%d", pre, x)), kernel.Mul(kernel.Ref(fmt.Sprintf("%sjr1%d", pre, x)), t))
			case 1:
				return kernel.Add(kernel.Ref(fmt.Sprintf("%sjs0%d", pre, x)), kernel.Mul(kernel.Ref(fmt.Sprintf("%sjs1%d", pre, x)), t))
			}
			return kernel.Ref(fmt.Sprintf("%sjt%d", pre, x))
		}
		return geoFactors(J, kernel.Mul(kernel.Ref(pre+"w"), g.weight(k)), F > 1, pre+"p"+sfx)
	case Affine, Box:
		w := kernel.DeclReal(pre+"wk"+sfx, kernel.Mul(kernel.Ref(pre+"w"), g.weight(k)))
		return []kernel.Stmt{w}, g.affineAt(kernel.Ref(pre + "wk" + sfx))
	}
	q3 := q * q * q
	node := kernel.Add(kernel.Mul(kernel.Add(kernel.Mul(k, kernel.Const(q)), j), kernel.Const(q)), i)
	var out []kernel.Expr
	for f := range F {
		out = append(out, kernel.At("geo", kernel.Add(kernel.Ref("gbase"), kernel.Add(kernel.Const(f*q3), node))))
	}
	return nil, out
}

// FactorsAt are the factors of a computed source at the point of
// reference coordinates (r, s, t) and quadrature weight w (the product
// of the three 1-D weights), names suffixed by sfx: the CPU layouts'
// point loops read r, s, t and w from the table "gq" (pointTable), so
// that the loop vectorises.
func (g PointGeometry) FactorsAt(r, s, t, w kernel.Expr, sfx string) ([]kernel.Stmt, []kernel.Expr) {
	if g.src == Affine || g.src == Box {
		return nil, g.affineAt(w)
	}
	return geoFactors(trilinearJ(g.pre, r, s, t), w, g.p.basis.Factors() > 1, g.pre+"q"+sfx)
}

// dropped says whether factor f is a zero that Box leaves out: rs, rt
// and st of the screened Poisson operators' seven.
func (g PointGeometry) dropped(f int) bool { return g.src == Box && boxZero(g.p.basis.Factors(), f) }

// boxZero says whether factor f of factors is one a box along the axes
// has zero: rs, rt and st of the screened Poisson operators' seven.
func boxZero(factors, f int) bool { return factors == 7 && (f == 1 || f == 2 || f == 4) }

// affineAt are the factors of an affine source at a point of weight w:
// each per-element value times w, and with Box literal zeros for the
// dropped ones (which applyFactors leaves out).
func (g PointGeometry) affineAt(w kernel.Expr) []kernel.Expr {
	var out []kernel.Expr
	for f := range g.p.basis.Factors() {
		if g.dropped(f) {
			out = append(out, kernel.Float(0))
			continue
		}
		out = append(out, kernel.Mul(kernel.Ref(fmt.Sprintf("%sk%d", g.pre, f)), w))
	}
	return out
}

// pointTable is "gq": the reference coordinates r, s, t of every point
// of an element (x-fastest over Q³) and its weight w_r·w_s·w_t, four
// rows of Q³.
func (p *Problem) pointTable() []float64 {
	q := p.basis.Q()
	q3 := q * q * q
	out := make([]float64, 4*q3)
	x, w := p.basis.Points, p.basis.PointWeights
	for pt := range q3 {
		i, j, k := pt%q, pt/q%q, pt/(q*q)
		out[pt], out[q3+pt], out[2*q3+pt], out[3*q3+pt] = x[i], x[j], x[k], w[i]*w[j]*w[k]
	}
	return out
}

// pointTableParam is the parameter of pointTable.
var pointTableParam = kernel.Param{Name: "gq", Kind: kernel.BufferParam, Type: kernel.Real, Const: true, Doc: "r, s, t and the weight of every point of an element, four rows of Q³"}

// geometryOf is the geometry of variant vr's kernels: element el, live,
// names prefixed gm_.
func (p *Problem) geometryOf(vr Variant) PointGeometry {
	return p.pointGeometry(vr.Geo, kernel.Ref("el"), kernel.Ref("live"), "gm_")
}

// geoTag ends the kernel names of a computed source.
func geoTag(g Geometry) string {
	if g == Stored {
		return ""
	}
	return "_" + geoSuffix[g]
}

// geoDoc is what a kernel's doc says of a computed source.
func geoDoc(g Geometry) string {
	switch g {
	case Trilinear:
		return ";\nthe factors computed at each point from the element's trilinear map: xv holds its 8 corners (corner c = cx + 2cy + 4cz, then x, y, z)"
	case Affine:
		return ";\nthe factors of an affine element, the same at every point but for the quadrature weight: ga holds det·J⁻¹J⁻ᵀ (rr rs rt ss st tt) and det J per element"
	case Box:
		return ";\nthe factors of a box along the axes, the same at every point but for the quadrature weight: ga holds det·J⁻¹J⁻ᵀ (rr rs rt ss st tt, of which rs rt st are zero and not read) and det J per element"
	}
	return ""
}
