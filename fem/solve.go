package fem

import (
	"fmt"
	"math"
)

// The assembled problem of the CEED bake-off problems BP3 and BP5: the
// screened Poisson equation −∇²u + λu = f on the box with u = 0 on its
// faces, discretised by the operators above and solved by conjugate
// gradients on the vector of global (unique) nodes, the L-vector. An
// operator application is gather (L → E, Mesh.GlobalIndex), the element
// operator (Apply, E → E), scatter-add (E → L) and the Dirichlet mask
// (boundary rows and columns zeroed, which keeps the operator symmetric
// and the boundary values of every CG vector at zero).

// MaxAssembled bounds the E-vector of an assembled problem, so that every
// index list fits int32 and a solve's vectors stay within a few GB.
const MaxAssembled = 1 << 27

// MaxIterations bounds a CG solve.
const MaxIterations = 100000

// Assembly is an operator of package fem assembled on a mesh, with the
// manufactured solution u = sin(πx)·sin(πy)·sin(πz), which vanishes on the
// box's faces, and f = (3π² + λ)·u.
type Assembly struct {
	Basis  *Basis
	Mesh   *Mesh
	Lambda float64
	Geo    []float64 // Mesh.Geometry(Basis)
	// Index maps each E-vector entry to its global node (Mesh.GlobalIndex).
	Index []int32
	// Offsets and Entries are Index transposed: the E-vector entries of
	// global node g are Entries[Offsets[g]:Offsets[g+1]], increasing.
	Offsets, Entries []int32
	// Boundary marks the global nodes on the box's faces.
	Boundary []bool
	// Positions are the global nodes' coordinates.
	Positions [][3]float64
	// rhs is RHS's result, computed once: several solves of one
	// assembly (one per kernel layout in a bench) share it.
	rhs []float64
}

// NewAssembly assembles b's operator (a screened Poisson one: BK3 or BK5)
// on m with screening λ ≥ 0.
func NewAssembly(b *Basis, m *Mesh, lambda float64) (*Assembly, error) {
	switch {
	case b == nil || m == nil:
		return nil, fmt.Errorf("fem: an assembly needs a basis and a mesh")
	case !b.Kernel.Stiffness():
		return nil, fmt.Errorf("fem: %s has no Laplacian: the solve needs bk3 or bk5", b.Kernel)
	case !(lambda >= 0) || math.IsInf(lambda, 0):
		return nil, fmt.Errorf("fem: λ = %g: want a finite λ ≥ 0", lambda)
	case !m.Box():
		return nil, fmt.Errorf("fem: the assembled solve numbers the nodes of a box mesh; a mesh of cells has no global numbering yet")
	}
	p := b.P()
	if size := int64(m.Elements()) * int64(p*p*p); size > MaxAssembled {
		return nil, fmt.Errorf("fem: mesh %dx%dx%d at N = %d has %d E-vector entries (at most %d)", m.NX, m.NY, m.NZ, b.N, size, MaxAssembled)
	}
	geo, err := m.Geometry(b)
	if err != nil {
		return nil, err
	}
	a := &Assembly{Basis: b, Mesh: m, Lambda: lambda, Geo: geo, Index: m.GlobalIndex(b.N)}
	n := b.N
	gx, gy, gz := m.NX*n+1, m.NY*n+1, m.NZ*n+1
	nodes := gx * gy * gz
	a.Boundary = make([]bool, nodes)
	for g := range nodes {
		i, j, k := g%gx, g/gx%gy, g/(gx*gy)
		a.Boundary[g] = i == 0 || j == 0 || k == 0 || i == gx-1 || j == gy-1 || k == gz-1
	}
	// Counting sort of the E-vector entries by global node.
	a.Offsets = make([]int32, nodes+1)
	for _, g := range a.Index {
		a.Offsets[g+1]++
	}
	for g := range nodes {
		a.Offsets[g+1] += a.Offsets[g]
	}
	a.Entries = make([]int32, len(a.Index))
	next := append([]int32(nil), a.Offsets[:nodes]...)
	a.Positions = make([][3]float64, nodes)
	pos := m.NodePositions(b)
	for j, g := range a.Index {
		a.Entries[next[g]] = int32(j)
		next[g]++
		a.Positions[g] = pos[j]
	}
	return a, nil
}

// Nodes is the length of the L-vector.
func (a *Assembly) Nodes() int { return len(a.Boundary) }

// Gather sets the E-vector uE from the L-vector uL.
func (a *Assembly) Gather(uL, uE []float64) {
	for j, g := range a.Index {
		uE[j] = uL[g]
	}
}

// Scatter sets the L-vector vL to the sums of the E-vector vE's entries
// of each node (zero on the boundary when masked).
func (a *Assembly) Scatter(vE, vL []float64, masked bool) {
	for g := range vL {
		s := 0.0
		if !masked || !a.Boundary[g] {
			for _, j := range a.Entries[a.Offsets[g]:a.Offsets[g+1]] {
				s += vE[j]
			}
		}
		vL[g] = s
	}
}

// Apply is the assembled operator with the Dirichlet mask on both sides,
// of the L-vector u.
func (a *Assembly) Apply(u []float64) ([]float64, error) {
	if len(u) != a.Nodes() {
		return nil, fmt.Errorf("fem: an L-vector of %d nodes, want %d", len(u), a.Nodes())
	}
	um := make([]float64, len(u))
	for g, x := range u {
		if !a.Boundary[g] {
			um[g] = x
		}
	}
	uE := make([]float64, len(a.Index))
	a.Gather(um, uE)
	vE, err := Apply(a.Basis, a.Geo, a.Lambda, uE)
	if err != nil {
		return nil, err
	}
	v := make([]float64, len(u))
	a.Scatter(vE, v, true)
	return v, nil
}

// Exact is the manufactured solution.
func Exact(x, y, z float64) float64 {
	return math.Sin(math.Pi*x) * math.Sin(math.Pi*y) * math.Sin(math.Pi*z)
}

// ExactNodes is the manufactured solution at the global nodes.
func (a *Assembly) ExactNodes() []float64 {
	u := make([]float64, a.Nodes())
	for g, p := range a.Positions {
		u[g] = Exact(p[0], p[1], p[2])
	}
	return u
}

// RHS is the load vector, masked: ∫ f φ_g over the mesh with the
// operator's own quadrature (f evaluated at the quadrature points, so
// that BK5's is the collocated mass of f's nodal values); computed
// once and shared: callers must not modify it.
func (a *Assembly) RHS() []float64 {
	if a.rhs == nil {
		a.rhs = a.load()
	}
	return a.rhs
}

// load is the right-hand side, evaluated.
func (a *Assembly) load() []float64 {
	b, m := a.Basis, a.Mesh
	p, q := b.P(), b.Q()
	p3, q3 := p*p*p, q*q*q
	nf := b.Factors()
	wdet := nf - 1 // the last factor is w|J|
	bt := transpose(b.B)
	val := make([]float64, q3)
	fE := make([]float64, len(a.Index))
	c2 := 3*math.Pi*math.Pi + a.Lambda
	for e := range m.Elements() {
		emap := m.elementMap(e)
		g := a.Geo[(e*nf+wdet)*q3 : (e*nf+wdet+1)*q3]
		for kc := range q {
			for kb := range q {
				for ka := range q {
					x, _ := emap(b.Points[ka], b.Points[kb], b.Points[kc])
					n := (kc*q+kb)*q + ka
					val[n] = g[n] * c2 * Exact(x[0], x[1], x[2])
				}
			}
		}
		contract3(bt, bt, bt, q, p, val, fE[e*p3:(e+1)*p3])
	}
	rhs := make([]float64, a.Nodes())
	a.Scatter(fE, rhs, true)
	return rhs
}

// NodalError is ‖u − u*‖/‖u*‖ over the global nodes (a discrete L² norm;
// u* the manufactured solution).
func (a *Assembly) NodalError(u []float64) (float64, error) {
	if len(u) != a.Nodes() {
		return 0, fmt.Errorf("fem: an L-vector of %d nodes, want %d", len(u), a.Nodes())
	}
	var d2, e2 float64
	for g, x := range a.ExactNodes() {
		d2 += (u[g] - x) * (u[g] - x)
		e2 += x * x
	}
	if e2 == 0 {
		return math.Sqrt(d2), nil // a mesh with no interior node
	}
	return math.Sqrt(d2 / e2), nil
}

// CGResult is the outcome of a conjugate-gradient solve.
type CGResult struct {
	X          []float64
	Iterations int     // operator applications
	Residual   float64 // ‖b − Ax‖/‖b‖ as the recurrence has it
	Converged  bool    // Residual ≤ tol
}

// CheckCG reports whether a tolerance and an iteration bound are usable.
func CheckCG(tol float64, maxIter int) error {
	if !(tol > 0 && tol < 1) {
		return fmt.Errorf("fem: CG tolerance %g: want 0 < tol < 1 (relative residual)", tol)
	}
	if maxIter < 1 || maxIter > MaxIterations {
		return fmt.Errorf("fem: CG with at most %d iterations: want 1..%d", maxIter, MaxIterations)
	}
	return nil
}

// CG solves Ax = b for a symmetric positive (semi-)definite A from x = 0,
// unpreconditioned, until ‖r‖ ≤ tol·‖b‖ or maxIter applications of A.
// Every device solve runs this recurrence (same order of updates), so
// that their iteration counts can be compared.
func CG(apply func([]float64) ([]float64, error), b []float64, tol float64, maxIter int) (*CGResult, error) {
	if err := CheckCG(tol, maxIter); err != nil {
		return nil, err
	}
	x := make([]float64, len(b))
	r := append([]float64(nil), b...)
	p := append([]float64(nil), b...)
	rr := dotL(r, r)
	bnorm := math.Sqrt(rr)
	res := &CGResult{X: x}
	if math.IsNaN(bnorm) || math.IsInf(bnorm, 0) {
		return nil, fmt.Errorf("fem: CG: the right-hand side's norm is %g (it overflows float64)", bnorm)
	}
	if bnorm == 0 {
		res.Converged = true
		return res, nil
	}
	for res.Iterations < maxIter && math.Sqrt(rr) > tol*bnorm {
		q, err := apply(p)
		if err != nil {
			return nil, err
		}
		res.Iterations++
		pq := dotL(p, q)
		if !(pq > 0) {
			return nil, fmt.Errorf("fem: CG breakdown at iteration %d: pᵀAp = %g (operator not positive definite)", res.Iterations, pq)
		}
		alpha := rr / pq
		for i := range x {
			x[i] += alpha * p[i]
			r[i] -= alpha * q[i]
		}
		rn := dotL(r, r)
		beta := rn / rr
		for i := range p {
			p[i] = r[i] + beta*p[i]
		}
		rr = rn
	}
	res.Residual = math.Sqrt(rr) / bnorm
	res.Converged = res.Residual <= tol
	return res, nil
}

// Solve runs CG on the masked assembled operator with the manufactured
// right-hand side.
func (a *Assembly) Solve(tol float64, maxIter int) (*CGResult, error) {
	return CG(a.Apply, a.RHS(), tol, maxIter)
}

func dotL(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}
