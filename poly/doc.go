// Package poly provides the one-dimensional numerics that bespoke's operator
// library is built on: Jacobi and Legendre polynomials (plain and
// orthonormal) with their derivatives, Gauss–Legendre and
// Gauss–Legendre–Lobatto quadrature rules, and barycentric Lagrange
// interpolation and differentiation matrices.
//
// Everything is pure Go in float64. Quadrature nodes are found by Newton
// iteration from Chebyshev-type initial guesses and are accurate to a few
// units in the last place for the supported sizes (1 ≤ N ≤ MaxPoints);
// symmetric node sets are returned exactly symmetric (x[N-1-i] == -x[i],
// and the middle node of an odd set is exactly 0).
//
// Matrices are returned as [][]float64 indexed [row][column].
package poly
