// Package fem sets up the tensor-product operators of continuous high-order
// finite elements on hexahedra — CEED's bake-off kernels — in float64: the
// 1-D bases and quadratures, a box mesh under a trilinear map, the
// geometric factors, and a plain reference application of each operator
// from its formulas, against which generated kernels are checked.
//
// Conventions (those of `bespoke fem apply`): the box [0,1]³ cut into
// NX×NY×NZ hexahedra, numbered x-fastest, then y, then z; within an element
// the (N+1)³ GLL nodes of degree N numbered x-fastest (index i), then y (j),
// then z (k); an E-vector holds each element's nodal values in turn, with
// no boundary conditions (E-vector → E-vector).
//
// The operators, for one element (r, s, t the reference coordinates along
// x, y, z; B the basis at the quadrature points, G its derivative):
//
//   - BK1, mass: v = Bᵀ (w|J|) B u, Gauss–Legendre quadrature on N+2
//     points per direction;
//   - BK3, screened Poisson: v = Gᵀ (w|J| J⁻¹J⁻ᵀ) G u + λ Bᵀ (w|J|) B u on
//     the same N+2 Gauss points;
//   - BK5, the same operator with GLL collocation (the N+1 nodes are the
//     quadrature points, so B = 1 and G is the GLL derivative matrix).
package fem

import (
	"fmt"

	"github.com/bespoke-hpc/bespoke/poly"
)

// Kernel names an operator.
type Kernel string

// The operators.
const (
	BK1 Kernel = "bk1" // mass, Gauss–Legendre on N+2 points
	BK3 Kernel = "bk3" // screened Poisson, Gauss–Legendre on N+2 points
	BK5 Kernel = "bk5" // screened Poisson, GLL collocation on N+1 points
)

// Kernels lists the operators.
var Kernels = []Kernel{BK1, BK3, BK5}

// ParseKernel reads an operator's name.
func ParseKernel(s string) (Kernel, error) {
	for _, k := range Kernels {
		if string(k) == s {
			return k, nil
		}
	}
	return "", fmt.Errorf("fem: unknown kernel %q (want bk1, bk3 or bk5)", s)
}

// Stiffness reports whether the operator has the Laplacian term (and so
// needs the six metric factors besides w|J|).
func (k Kernel) Stiffness() bool { return k != BK1 }

// MaxOrder is the highest polynomial degree supported.
const MaxOrder = 15

// Basis is the 1-D basis of degree N and the quadrature of an operator.
type Basis struct {
	Kernel Kernel
	N      int
	// Nodes and Weights: the N+1 Gauss–Lobatto–Legendre nodes on [-1, 1]
	// (the basis's interpolation points) and their weights.
	Nodes, Weights []float64
	// Points and PointWeights: the quadrature (N+2 Gauss–Legendre points
	// for BK1 and BK3, the GLL nodes for BK5).
	Points, PointWeights []float64
	// B[a][i] = ℓ_i(Points[a]) and G[a][i] = ℓ_i'(Points[a]), the basis and
	// its derivative at the quadrature points (Q×(N+1)).
	B, G [][]float64
}

// NewBasis sets up kernel k's basis and quadrature at degree n.
func NewBasis(k Kernel, n int) (*Basis, error) {
	if _, err := ParseKernel(string(k)); err != nil {
		return nil, err
	}
	if n < 1 || n > MaxOrder {
		return nil, fmt.Errorf("fem: order %d: want 1 ≤ N ≤ %d", n, MaxOrder)
	}
	b := &Basis{Kernel: k, N: n}
	var err error
	if b.Nodes, b.Weights, err = poly.GaussLobatto(n + 1); err != nil {
		return nil, err
	}
	if k == BK5 {
		b.Points, b.PointWeights = b.Nodes, b.Weights
	} else if b.Points, b.PointWeights, err = poly.GaussLegendre(n + 2); err != nil {
		return nil, err
	}
	if b.B, err = poly.InterpMatrix(b.Nodes, b.Points); err != nil {
		return nil, err
	}
	if b.G, err = poly.LagrangeDerivMatrix(b.Nodes, b.Points); err != nil {
		return nil, err
	}
	return b, nil
}

// P is the number of nodes per direction (N+1), Q the number of
// quadrature points per direction.
func (b *Basis) P() int { return b.N + 1 }

// Q is the number of quadrature points per direction.
func (b *Basis) Q() int { return len(b.Points) }

// Factors is the number of geometric factors per quadrature point: w|J|
// for the mass operator; the six entries of w|J|·J⁻¹J⁻ᵀ and w|J| for the
// screened Poisson operators.
func (b *Basis) Factors() int {
	if b.Kernel.Stiffness() {
		return 7
	}
	return 1
}

// PointDerivative is the derivative matrix of the Lagrange basis on the
// quadrature points themselves (Q×Q, [a][b] = ℓ̃_b'(Points[a])): applied
// after interpolation it gives G = PointDerivative·B, the route of the
// over-integrated kernels (3 interpolations, then 3 derivatives on the
// points, instead of 9 mixed contractions).
func (b *Basis) PointDerivative() ([][]float64, error) {
	return poly.LagrangeDerivMatrix(b.Points, b.Points)
}
