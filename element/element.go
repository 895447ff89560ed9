// Package element sets up low-order element-matrix integration problems and
// holds their float64 reference: linear tetrahedra, linear prisms (wedges)
// and trilinear hexahedra, their shape functions and quadrature rules, a
// jittered box mesh of them (per-element coordinates in SoA layout, or
// connectivity plus a shared node array), random coefficient blocks, and
// the plain loop that integrates an element matrix and load vector.
//
// The bilinear form is the one of Banaś & Kružel: with ψ₀ = N (the shape
// function's value) and ψ₁,₂,₃ = ∂N/∂x, ∂N/∂y, ∂N/∂z,
//
//	A[a][b] = Σ_q w_q det J_q Σ_{i,j=0..3} c[i][j] ψ_i(N_a)(q) ψ_j(N_b)(q)
//
// a the test function (row), b the trial function (column), c a 4×4 block
// constant over the element: Laplace is c = diag(0, k, k, k), the mass
// matrix c = e₀e₀ᵀ, convection–diffusion–reaction a full block with a
// symmetric positive-definite diffusion part c[1..3][1..3].
//
// It may import only poly (internal/layers enforces it).
package element

import (
	"fmt"
	"math"
	"strings"

	"github.com/bespoke-hpc/bespoke/poly"
)

// Kind is an element type.
type Kind int

// Element kinds.
const (
	Tet   Kind = iota // 4-node linear tetrahedron
	Prism             // 6-node linear prism (wedge), the paper's element
	Hex               // 8-node trilinear hexahedron
)

// Kinds lists every kind.
var Kinds = []Kind{Tet, Prism, Hex}

func (k Kind) String() string {
	switch k {
	case Tet:
		return "tet"
	case Prism:
		return "prism"
	case Hex:
		return "hex"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// ParseKind reads "tet", "prism" (or "wedge") or "hex".
func ParseKind(s string) (Kind, error) {
	switch strings.ToLower(s) {
	case "tet", "tetra", "tetrahedron":
		return Tet, nil
	case "prism", "wedge":
		return Prism, nil
	case "hex", "hexahedron":
		return Hex, nil
	}
	return 0, fmt.Errorf("element: unknown element %q (want tet, prism or hex)", s)
}

func (k Kind) valid() bool { return k == Tet || k == Prism || k == Hex }

// Nodes is the number of nodes, and of shape functions.
func (k Kind) Nodes() int { return [...]int{4, 6, 8}[k] }

// PerCell is how many elements the box mesh cuts one hexahedral cell into.
func (k Kind) PerCell() int { return [...]int{6, 2, 1}[k] }

// Affine reports whether the geometry map is affine for any node
// positions (J constant over the element).
func (k Kind) Affine() bool { return k == Tet }

// Reference elements and local node order:
//
//	tet:   {ξ, η, ζ ≥ 0, ξ+η+ζ ≤ 1}; nodes (0,0,0) (1,0,0) (0,1,0) (0,0,1).
//	prism: triangle {ξ, η ≥ 0, ξ+η ≤ 1} × ζ ∈ [−1, 1]; nodes 0–2 at
//	       (0,0) (1,0) (0,1) on ζ = −1, nodes 3–5 above them on ζ = +1.
//	hex:   [−1, 1]³; nodes 0–3 (−,−) (+,−) (+,+) (−,+) in (ξ, η) on
//	       ζ = −1, nodes 4–7 above them (the VTK order).
//
// A node order gives det J > 0 when it maps these right-handed.
var hexSigns = [8][3]float64{{-1, -1, -1}, {1, -1, -1}, {1, 1, -1}, {-1, 1, -1}, {-1, -1, 1}, {1, -1, 1}, {1, 1, 1}, {-1, 1, 1}}

// Shape returns the shape functions' values n[a] and reference gradients
// d[a] = (∂/∂ξ, ∂/∂η, ∂/∂ζ) N_a at the reference point p.
func (k Kind) Shape(p [3]float64) (n []float64, d [][3]float64) {
	xi, eta, zeta := p[0], p[1], p[2]
	switch k {
	case Tet:
		n = []float64{1 - xi - eta - zeta, xi, eta, zeta}
		d = [][3]float64{{-1, -1, -1}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}}
	case Prism:
		l := [3]float64{1 - xi - eta, xi, eta}
		dl := [3][2]float64{{-1, -1}, {1, 0}, {0, 1}}
		for s, z := range [2]float64{(1 - zeta) / 2, (1 + zeta) / 2} {
			dz := float64(2*s-1) / 2
			for t := range 3 {
				n = append(n, l[t]*z)
				d = append(d, [3]float64{dl[t][0] * z, dl[t][1] * z, l[t] * dz})
			}
		}
	case Hex:
		for _, s := range hexSigns {
			a, b, c := 1+s[0]*xi, 1+s[1]*eta, 1+s[2]*zeta
			n = append(n, a*b*c/8)
			d = append(d, [3]float64{s[0] * b * c / 8, s[1] * a * c / 8, s[2] * a * b / 8})
		}
	}
	return n, d
}

// Rule is a quadrature rule on a reference element.
type Rule struct {
	Points  [][3]float64
	Weights []float64
	// Degree is the total degree (tet), degree in (ξ, η) and in ζ
	// (prism), or degree per variable (hex) integrated exactly.
	Degree [2]int
}

// Rule returns the element's quadrature rule. Each is exact for the mass
// matrix of an affine element and for det J of any element of its kind, so
// that Σ M = |K| and the linear patch test hold to rounding:
//
//	tet:   the 4-point symmetric rule (Keast/Stroud T3:2-1), degree 2,
//	       weights 1/24 at (b,b,b), (a,b,b), (b,a,b), (b,b,a),
//	       a = (5+3√5)/20, b = (5−√5)/20;
//	prism: Strang–Fix 3-point triangle rule at (1/6,1/6) (2/3,1/6)
//	       (1/6,2/3), weights 1/6 (degree 2), × 2-point Gauss–Legendre in
//	       ζ (degree 3): 6 points, the count the paper's flops imply;
//	hex:   2×2×2 Gauss–Legendre (degree 3 per variable).
//
// Points are ordered with ζ slowest.
func (k Kind) Rule() Rule {
	switch k {
	case Tet:
		a, b := (5+3*math.Sqrt(5))/20, (5-math.Sqrt(5))/20
		return Rule{
			Points:  [][3]float64{{b, b, b}, {a, b, b}, {b, a, b}, {b, b, a}},
			Weights: []float64{1.0 / 24, 1.0 / 24, 1.0 / 24, 1.0 / 24},
			Degree:  [2]int{2, 2},
		}
	case Prism:
		z, wz, _ := poly.GaussLegendre(2)
		tri := [3][2]float64{{1.0 / 6, 1.0 / 6}, {2.0 / 3, 1.0 / 6}, {1.0 / 6, 2.0 / 3}}
		var r Rule
		for i := range z {
			for _, t := range tri {
				r.Points = append(r.Points, [3]float64{t[0], t[1], z[i]})
				r.Weights = append(r.Weights, wz[i]/6)
			}
		}
		r.Degree = [2]int{2, 3}
		return r
	case Hex:
		x, w, _ := poly.GaussLegendre(2)
		var r Rule
		for k := range x {
			for j := range x {
				for i := range x {
					r.Points = append(r.Points, [3]float64{x[i], x[j], x[k]})
					r.Weights = append(r.Weights, w[i]*w[j]*w[k])
				}
			}
		}
		r.Degree = [2]int{3, 3}
		return r
	}
	return Rule{}
}

// fineRule is a high-order rule used only to measure |K| independently of
// the element's own rule: n-point Gauss–Legendre products collapsed onto
// the simplex parts (Duffy/Stroud conical product), exact well beyond the
// degree of det J.
func (k Kind) fineRule(n int) Rule {
	x, w, _ := poly.GaussLegendre(n)
	// On [0, 1].
	u, wu := make([]float64, n), make([]float64, n)
	for i := range x {
		u[i], wu[i] = (x[i]+1)/2, w[i]/2
	}
	var r Rule
	for i := range n {
		for j := range n {
			for l := range n {
				switch k {
				case Tet:
					// ξ = u, η = (1−u)v, ζ = (1−u)(1−v)t; dV = (1−u)²(1−v).
					a, b, c := u[i], u[j], u[l]
					r.Points = append(r.Points, [3]float64{a, (1 - a) * b, (1 - a) * (1 - b) * c})
					r.Weights = append(r.Weights, wu[i]*wu[j]*wu[l]*(1-a)*(1-a)*(1-b))
				case Prism:
					a, b := u[i], u[j]
					r.Points = append(r.Points, [3]float64{a, (1 - a) * b, x[l]})
					r.Weights = append(r.Weights, wu[i]*wu[j]*w[l]*(1-a))
				case Hex:
					r.Points = append(r.Points, [3]float64{x[i], x[j], x[l]})
					r.Weights = append(r.Weights, w[i]*w[j]*w[l])
				}
			}
		}
	}
	return r
}

// Jacobian returns J[c][d] = ∂x_c/∂ξ_d at the reference point p of the
// element with nodes x, and its determinant.
func (k Kind) Jacobian(x [][3]float64, p [3]float64) (j [3][3]float64, det float64) {
	_, d := k.Shape(p)
	for a := range d {
		for c := range 3 {
			for dd := range 3 {
				j[c][dd] += x[a][c] * d[a][dd]
			}
		}
	}
	return j, det3(j)
}

// degenerateDet is the least det J, relative to the product of the
// lengths of J's columns (the element's edge vectors at the point: 1 for a
// right angle, 0 for a flat element), that is not zero to rounding: det J
// is a sum of products of those columns' entries, each carrying a
// relative rounding error of a few ε, so below a few tens of ε it holds
// no significant digit and J⁻¹ (the gradients) is noise or overflows.
const degenerateDet = 64 * 0x1p-52

// JacobianCause says why det J (of J) at a point cannot be integrated
// over, or "" when it can: not finite (the coordinates too large), not
// positive (inverted, or out of the reference node order), below the
// smallest normal float64 (underflows), or zero to rounding relative to
// the element's edge vectors (a degenerate, flat element).
func JacobianCause(j [3][3]float64, det float64) string {
	switch {
	case math.IsNaN(det) || math.IsInf(det, 0):
		return fmt.Sprintf("its Jacobian determinant overflows (det J = %g): the coordinates are too large", det)
	case det < 0:
		return fmt.Sprintf("det J = %.3g: inverted or out of the reference node order", det)
	case det < 0x1p-1022:
		return fmt.Sprintf("its Jacobian determinant is zero or underflows (det J = %.3g): a degenerate or vanishingly small element", det)
	}
	scale := 1.0
	for d := range 3 {
		scale *= math.Sqrt(j[0][d]*j[0][d] + j[1][d]*j[1][d] + j[2][d]*j[2][d])
	}
	if det <= degenerateDet*scale {
		return fmt.Sprintf("its Jacobian determinant is zero to rounding (det J = %.3g, %.2g of its edge vectors' lengths' product): a degenerate (flat) element", det, det/scale)
	}
	return ""
}

func det3(j [3][3]float64) float64 {
	return j[0][0]*(j[1][1]*j[2][2]-j[1][2]*j[2][1]) -
		j[0][1]*(j[1][0]*j[2][2]-j[1][2]*j[2][0]) +
		j[0][2]*(j[1][0]*j[2][1]-j[1][1]*j[2][0])
}

// inverse3 is J⁻¹ by cofactors.
func inverse3(j [3][3]float64, det float64) (inv [3][3]float64) {
	inv[0][0] = (j[1][1]*j[2][2] - j[1][2]*j[2][1]) / det
	inv[0][1] = (j[0][2]*j[2][1] - j[0][1]*j[2][2]) / det
	inv[0][2] = (j[0][1]*j[1][2] - j[0][2]*j[1][1]) / det
	inv[1][0] = (j[1][2]*j[2][0] - j[1][0]*j[2][2]) / det
	inv[1][1] = (j[0][0]*j[2][2] - j[0][2]*j[2][0]) / det
	inv[1][2] = (j[0][2]*j[1][0] - j[0][0]*j[1][2]) / det
	inv[2][0] = (j[1][0]*j[2][1] - j[1][1]*j[2][0]) / det
	inv[2][1] = (j[0][1]*j[2][0] - j[0][0]*j[2][1]) / det
	inv[2][2] = (j[0][0]*j[1][1] - j[0][1]*j[1][0]) / det
	return inv
}

// Problem is a coefficient pattern.
type Problem int

// Problems.
const (
	Laplace Problem = iota // c = diag(0, k, k, k), k compiled into kernels
	Mass                   // c = e₀e₀ᵀ
	CDR                    // a full 4×4 block per element
)

// Problems lists every problem.
var Problems = []Problem{Laplace, Mass, CDR}

func (p Problem) String() string {
	switch p {
	case Laplace:
		return "laplace"
	case Mass:
		return "mass"
	case CDR:
		return "cdr"
	}
	return fmt.Sprintf("problem(%d)", int(p))
}

// ParseProblem reads "laplace", "mass" or "cdr".
func ParseProblem(s string) (Problem, error) {
	switch strings.ToLower(s) {
	case "laplace", "poisson", "stiffness":
		return Laplace, nil
	case "mass":
		return Mass, nil
	case "cdr", "convdiff", "conv-diff", "convection-diffusion":
		return CDR, nil
	}
	return 0, fmt.Errorf("element: unknown problem %q (want laplace, mass or cdr)", s)
}
