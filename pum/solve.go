package pum

import (
	"fmt"
	"math"
)

// SolveResult reports a CG solve.
type SolveResult struct {
	Iterations int
	RelRes     float64 // ‖f − A u‖ / ‖f‖ at the end
}

// Solve solves A u = f by conjugate gradients preconditioned with the
// inverses of A's diagonal B×B blocks (block Jacobi), stopping when the
// relative residual falls below tol or after maxIter iterations (an error).
//
// PUM matrices are ill-conditioned in the scalar sense (Legendre products
// scaled to overlapping patches); the flat-top cover (α < 2 leaves each
// patch a region where φ_i ≡ 1) keeps the block-diagonally scaled matrix
// well conditioned, so block Jacobi suffices and no stabilisation is
// applied. A must be symmetric positive definite (r > 0, or f in the range
// for r ≡ 0 on a singular matrix, where CG still converges).
func Solve(a *BSR, f []float64, tol float64, maxIter int) ([]float64, SolveResult, error) {
	B, n := a.B, a.N*a.B
	if len(f) != n {
		return nil, SolveResult{}, fmt.Errorf("pum: right-hand side has %d entries, want %d", len(f), n)
	}
	// Cholesky factors of the diagonal blocks.
	L := make([]float64, a.N*B*B)
	for i := range a.N {
		k := a.Block(i, i)
		if k < 0 || !cholesky(a.Val[k*B*B:(k+1)*B*B], L[i*B*B:(i+1)*B*B], B) {
			return nil, SolveResult{}, fmt.Errorf("pum: diagonal block %d is not positive definite", i)
		}
	}
	prec := func(z, r []float64) {
		for i := range a.N {
			cholSolve(L[i*B*B:(i+1)*B*B], B, z[i*B:i*B+B], r[i*B:i*B+B])
		}
	}
	u := make([]float64, n)
	r := append([]float64(nil), f...)
	z := make([]float64, n)
	q := make([]float64, n)
	nf := math.Sqrt(dot(f, f))
	if nf == 0 {
		return u, SolveResult{}, nil
	}
	prec(z, r)
	p := append([]float64(nil), z...)
	rz := dot(r, z)
	for it := 1; it <= maxIter; it++ {
		a.MulVec(q, p)
		al := rz / dot(p, q)
		for i := range u {
			u[i] += al * p[i]
			r[i] -= al * q[i]
		}
		rr := math.Sqrt(dot(r, r)) / nf
		if rr < tol {
			return u, SolveResult{it, rr}, nil
		}
		prec(z, r)
		rzn := dot(r, z)
		be := rzn / rz
		rz = rzn
		for i := range p {
			p[i] = z[i] + be*p[i]
		}
	}
	return u, SolveResult{maxIter, math.Sqrt(dot(r, r)) / nf}, fmt.Errorf("pum: CG did not reach relative residual %g in %d iterations", tol, maxIter)
}

// cholesky writes the lower factor of the n×n SPD matrix a into l.
func cholesky(a, l []float64, n int) bool {
	for i := range n {
		for j := 0; j <= i; j++ {
			s := a[i*n+j]
			for k := range j {
				s -= l[i*n+k] * l[j*n+k]
			}
			if i == j {
				if s <= 0 {
					return false
				}
				l[i*n+i] = math.Sqrt(s)
			} else {
				l[i*n+j] = s / l[j*n+j]
			}
		}
	}
	return true
}

func cholSolve(l []float64, n int, x, b []float64) {
	for i := range n {
		s := b[i]
		for k := range i {
			s -= l[i*n+k] * x[k]
		}
		x[i] = s / l[i*n+i]
	}
	for i := n - 1; i >= 0; i-- {
		s := x[i]
		for k := i + 1; k < n; k++ {
			s -= l[k*n+i] * x[k]
		}
		x[i] = s / l[i*n+i]
	}
}
