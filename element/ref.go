package element

import (
	"fmt"
	"math/rand/v2"
)

// Coef is the 4×4 coefficient block c[i][j] of the bilinear form: index 0
// the shape function's value, 1–3 its x, y, z derivative; row i acts on the
// test function, column j on the trial function.
type Coef [4][4]float64

// LaplaceCoef is k·(∇u·∇v).
func LaplaceCoef(k float64) Coef {
	var c Coef
	c[1][1], c[2][2], c[3][3] = k, k, k
	return c
}

// MassCoef is u·v.
func MassCoef() Coef {
	var c Coef
	c[0][0] = 1
	return c
}

// Symmetric reports whether c = cᵀ (then every element matrix is
// symmetric).
func (c *Coef) Symmetric() bool {
	for i := range 4 {
		for j := range i {
			if c[i][j] != c[j][i] {
				return false
			}
		}
	}
	return true
}

// RandomCDR draws a convection–diffusion–reaction block: diffusion
// D = GGᵀ/3 + I/2 (symmetric positive definite, eigenvalues ≥ 1/2) with G
// uniform in [−1, 1)³ˣ³, convection c[0][1..3] (b·∇u v) and c[1..3][0]
// (u β·∇v, the conservative form) uniform in [−1, 1), reaction c[0][0] in
// [0, 1). symmetric makes β = b, so the block and the element matrices are
// symmetric.
func RandomCDR(rng *rand.Rand, symmetric bool) Coef {
	var c Coef
	var g [3][3]float64
	for i := range 3 {
		for j := range 3 {
			g[i][j] = 2*rng.Float64() - 1
		}
	}
	for i := range 3 {
		for j := range 3 {
			s := 0.0
			for k := range 3 {
				s += g[i][k] * g[j][k]
			}
			c[i+1][j+1] = s / 3
		}
		c[i+1][i+1] += 0.5
	}
	for k := 1; k < 4; k++ {
		c[0][k] = 2*rng.Float64() - 1
		c[k][0] = 2*rng.Float64() - 1
		if symmetric {
			c[k][0] = c[0][k]
		}
	}
	c[0][0] = rng.Float64()
	return c
}

// Psi returns, at every point of the element's rule, ψ[q][i][a]: the
// value (i = 0) and x, y, z derivatives (i = 1..3) of shape function a,
// and w_q det J_q; an error names the first point with det J ≤ 0.
func (k Kind) Psi(x [][3]float64) (psi [][4][]float64, wdet []float64, err error) {
	r := k.Rule()
	nb := k.Nodes()
	psi = make([][4][]float64, len(r.Points))
	wdet = make([]float64, len(r.Points))
	for q, p := range r.Points {
		n, d := k.Shape(p)
		j, det := k.Jacobian(x, p)
		if why := JacobianCause(j, det); why != "" {
			return nil, nil, fmt.Errorf("element: %s at quadrature point %d: %s", k, q, why)
		}
		inv := inverse3(j, det)
		psi[q][0] = n
		for c := range 3 {
			psi[q][c+1] = make([]float64, nb)
		}
		// ∇N_a = J⁻ᵀ ∇̂N_a: ∂N/∂x_c = Σ_d (J⁻¹)[d][c] ∂N/∂ξ_d.
		for a := range nb {
			for c := range 3 {
				s := 0.0
				for dd := range 3 {
					s += inv[dd][c] * d[a][dd]
				}
				psi[q][c+1][a] = s
			}
		}
		wdet[q] = r.Weights[q] * det
	}
	return psi, wdet, nil
}

// Matrix integrates the element matrix of the element with nodes x and
// block c with the element's rule, in float64, row-major into a
// (Nodes()² long): the reference every kernel is checked against.
func (k Kind) Matrix(x [][3]float64, c *Coef, a []float64) error {
	nb := k.Nodes()
	if len(x) != nb || len(a) != nb*nb {
		return fmt.Errorf("element: %s matrix of %d nodes into %d entries (want %d nodes, %d entries)", k, len(x), len(a), nb, nb*nb)
	}
	psi, wdet, err := k.Psi(x)
	if err != nil {
		return err
	}
	clear(a)
	for q := range psi {
		for i := range nb {
			for j := range nb {
				s := 0.0
				for di := range 4 {
					for dj := range 4 {
						s += c[di][dj] * psi[q][di][i] * psi[q][dj][j]
					}
				}
				a[i*nb+j] += wdet[q] * s
			}
		}
	}
	return nil
}

// Load integrates the load vector b_a = ∫ f N_a of a source f constant over
// the element, into b (Nodes() long).
func (k Kind) Load(x [][3]float64, f float64, b []float64) error {
	if len(x) != k.Nodes() || len(b) != k.Nodes() {
		return fmt.Errorf("element: %s load vector of %d nodes into %d entries (want %d)", k, len(x), len(b), k.Nodes())
	}
	psi, wdet, err := k.Psi(x)
	if err != nil {
		return err
	}
	clear(b)
	for q := range psi {
		for a := range b {
			b[a] += wdet[q] * f * psi[q][0][a]
		}
	}
	return nil
}

// Volume is |K| = ∫ det J by a high-order collapsed Gauss–Legendre rule
// (6 points per direction), independent of the element's own rule.
func (k Kind) Volume(x [][3]float64) float64 {
	r := k.fineRule(6)
	v := 0.0
	for q, p := range r.Points {
		_, det := k.Jacobian(x, p)
		v += r.Weights[q] * det
	}
	return v
}
