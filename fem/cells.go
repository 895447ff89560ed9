package fem

import (
	"fmt"
	"math"
)

// NewCellMesh makes a mesh of hexahedra from a user's vertices and cells
// (eight vertex numbers each, in Gmsh/VTK order; see Mesh.Cells). Every
// vertex must be finite and every cell name vertices that exist; the
// orientation of each cell is checked when the geometric factors are
// computed.
func NewCellMesh(vertices [][3]float64, cells [][8]int32) (*Mesh, error) {
	if err := checkCells(vertices, cells); err != nil {
		return nil, err
	}
	return &Mesh{Vertices: vertices, Cells: cells}, nil
}

// NewCurvedMesh makes a mesh of hexahedra mapped by the tensor-product
// Lagrange map of order g ≥ 1 through geometry nodes at the equispaced
// points of [-1,1]: (g+1)³ of them a cell, ξ-fastest, then η, then ζ. The
// cells' corner nodes give Cells (for tools that only need vertices).
func NewCurvedMesh(order int, nodes [][3]float64) (*Mesh, error) {
	if order < 1 || order > MaxGeoOrder {
		return nil, fmt.Errorf("fem: geometry order %d: want 1..%d", order, MaxGeoOrder)
	}
	g1 := order + 1
	per := g1 * g1 * g1
	if len(nodes) == 0 || len(nodes)%per != 0 {
		return nil, fmt.Errorf("fem: %d geometry nodes are not a whole number of cells of %d", len(nodes), per)
	}
	ne := len(nodes) / per
	if ne > MaxElements {
		return nil, fmt.Errorf("fem: %d cells: more than %d elements", ne, MaxElements)
	}
	for i, x := range nodes {
		if !finite3(x) {
			return nil, fmt.Errorf("fem: geometry node %d of cell %d is not finite: %v", i%per, i/per, x)
		}
	}
	m := &Mesh{GeoOrder: order, GeoNodes: nodes, Cells: make([][8]int32, ne)}
	// The corners, as vertices of their own (shared corners not merged):
	// Cells must name vertices, and a curved mesh needs no more of them.
	m.Vertices = make([][3]float64, 0, 8*ne)
	for e := range ne {
		for v := range 8 {
			i, j, k := (v&1)*order, (v>>1&1)*order, (v>>2)*order
			m.Cells[e][vtkCorner[v]] = int32(len(m.Vertices))
			m.Vertices = append(m.Vertices, nodes[e*per+(k*g1+j)*g1+i])
		}
	}
	return m, nil
}

// MaxGeoOrder bounds a curved mesh's map.
const MaxGeoOrder = 8

func checkCells(vertices [][3]float64, cells [][8]int32) error {
	switch {
	case len(cells) == 0:
		return fmt.Errorf("fem: a mesh needs at least one cell")
	case len(cells) > MaxElements:
		return fmt.Errorf("fem: %d cells: more than %d elements", len(cells), MaxElements)
	}
	for i, x := range vertices {
		if !finite3(x) {
			return fmt.Errorf("fem: vertex %d is not finite: %v", i, x)
		}
	}
	for e, c := range cells {
		seen := map[int32]bool{}
		for v, n := range c {
			if n < 0 || int(n) >= len(vertices) {
				return fmt.Errorf("fem: cell %d names vertex %d at corner %d, out of range 0..%d", e, n, v, len(vertices)-1)
			}
			if seen[n] {
				return fmt.Errorf("fem: cell %d names vertex %d twice", e, n)
			}
			seen[n] = true
		}
	}
	return nil
}

func finite3(x [3]float64) bool {
	for _, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}

// elementMap is element e's map from the reference cube: the position and
// Jacobian ∂x/∂(r,s,t) (column d the derivative along direction d) at a
// reference point.
func (m *Mesh) elementMap(e int) func(r, s, t float64) ([3]float64, [3][3]float64) {
	if m.GeoOrder > 1 {
		g1 := m.GeoOrder + 1
		per := g1 * g1 * g1
		nodes := m.GeoNodes[e*per : (e+1)*per]
		order := m.GeoOrder
		return func(r, s, t float64) ([3]float64, [3][3]float64) {
			return lagrangeMap(order, nodes, r, s, t)
		}
	}
	c := m.corners(e)
	return func(r, s, t float64) ([3]float64, [3][3]float64) {
		return position(c, r, s, t), jacobian(c, r, s, t)
	}
}

// lagrangeMap evaluates the tensor-product Lagrange map of order g through
// nodes at the equispaced points of [-1,1] (ξ-fastest), and its Jacobian.
func lagrangeMap(g int, nodes [][3]float64, r, s, t float64) ([3]float64, [3][3]float64) {
	lr, dr := lagrange1D(g, r)
	ls, ds := lagrange1D(g, s)
	lt, dt := lagrange1D(g, t)
	var x [3]float64
	var J [3][3]float64
	g1 := g + 1
	for k := range g1 {
		for j := range g1 {
			for i := range g1 {
				n := nodes[(k*g1+j)*g1+i]
				f := lr[i] * ls[j] * lt[k]
				fr, fs, ft := dr[i]*ls[j]*lt[k], lr[i]*ds[j]*lt[k], lr[i]*ls[j]*dt[k]
				for d := range 3 {
					x[d] += f * n[d]
					J[d][0] += fr * n[d]
					J[d][1] += fs * n[d]
					J[d][2] += ft * n[d]
				}
			}
		}
	}
	return x, J
}

// lagrange1D is the Lagrange basis of order g on the equispaced points of
// [-1,1], and its derivative, at x.
func lagrange1D(g int, x float64) (l, dl []float64) {
	pts := make([]float64, g+1)
	for i := range pts {
		pts[i] = -1 + 2*float64(i)/float64(g)
	}
	l, dl = make([]float64, g+1), make([]float64, g+1)
	for i := range pts {
		p := 1.0
		for j := range pts {
			if j != i {
				p *= (x - pts[j]) / (pts[i] - pts[j])
			}
		}
		l[i] = p
		// d/dx Π_j (x−x_j)/(x_i−x_j) = Σ_k 1/(x_i−x_k) Π_{j≠k} (x−x_j)/(x_i−x_j).
		d := 0.0
		for k := range pts {
			if k == i {
				continue
			}
			q := 1 / (pts[i] - pts[k])
			for j := range pts {
				if j != i && j != k {
					q *= (x - pts[j]) / (pts[i] - pts[j])
				}
			}
			d += q
		}
		dl[i] = d
	}
	return l, dl
}

// badJacobian describes an element whose map is not orientation-preserving
// (or degenerates to zero volume) at a quadrature point.
func (m *Mesh) badJacobian(e int, det float64) error {
	switch {
	case m.Box():
		return fmt.Errorf("fem: element %d has Jacobian determinant %g ≤ 0 at a quadrature point (perturbation %g too large for this mesh)", e, det, m.Perturb)
	case math.IsNaN(det) || math.IsInf(det, 0):
		return fmt.Errorf("fem: cell %d: its Jacobian determinant is not finite at a quadrature point (vertex coordinates too large)", e)
	case det == 0:
		return fmt.Errorf("fem: cell %d is degenerate: its Jacobian determinant is 0 at a quadrature point (zero volume, or vertices too close)", e)
	}
	return fmt.Errorf("fem: cell %d is inverted: its Jacobian determinant is %g < 0 at a quadrature point (vertices not in Gmsh/VTK order, or a tangled cell)", e, det)
}
