package fem

import (
	"fmt"
	"math"
)

// MaxElements bounds a mesh (and so every array sized by it).
const MaxElements = 1 << 24

// Mesh is a mesh of hexahedra, each the image of the reference cube
// [-1,1]³ under a map of its nodes: trilinear from its eight vertices, or,
// for a curved mesh, the tensor-product Lagrange map of its
// (g+1)³ equispaced geometry nodes.
//
// A box mesh (NewMesh) is [0,1]³ cut into NX×NY×NZ hexahedra, interior
// vertices optionally moved (Perturb) so that the elements are not
// parallelepipeds. A user's mesh (NewCellMesh, ReadGmsh) lists its cells
// by vertex numbers; NX, NY and NZ are then 0.
type Mesh struct {
	NX, NY, NZ int
	Perturb    float64
	// Vertices: for a box, (NX+1)(NY+1)(NZ+1) of them, x-fastest.
	Vertices [][3]float64
	// Cells are a user's mesh's hexahedra, eight vertex numbers each in
	// Gmsh/VTK order: the reference cube's corners (0,0,0) (1,0,0) (1,1,0)
	// (0,1,0) (0,0,1) (1,0,1) (1,1,1) (0,1,1). nil for a box.
	Cells [][8]int32
	// GeoOrder is the order g of a curved mesh's map (0 or 1: trilinear),
	// and GeoNodes its nodes, (g+1)³ a cell in turn, ξ-fastest, then η,
	// then ζ, at the equispaced points of [-1,1].
	GeoOrder int
	GeoNodes [][3]float64
}

// NewMesh makes the box mesh. perturb (0 ≤ perturb < 0.3) moves each
// interior vertex by perturb·h·sin(πx)sin(πy)sin(πz)·(1, 0.8, 0.6) (h
// the smallest element edge), a smooth map that keeps every Jacobian
// positive (checked when the factors are computed).
func NewMesh(nx, ny, nz int, perturb float64) (*Mesh, error) {
	switch {
	case nx < 1 || ny < 1 || nz < 1:
		return nil, fmt.Errorf("fem: mesh %dx%dx%d: want at least one element along each axis", nx, ny, nz)
	case int64(nx)*int64(ny)*int64(nz) > MaxElements:
		return nil, fmt.Errorf("fem: mesh %dx%dx%d has more than %d elements", nx, ny, nz, MaxElements)
	case !(perturb >= 0 && perturb < 0.3):
		return nil, fmt.Errorf("fem: perturbation %g: want 0 ≤ s < 0.3 (of the element size)", perturb)
	}
	m := &Mesh{NX: nx, NY: ny, NZ: nz, Perturb: perturb}
	h := 1 / float64(max(nx, ny, nz))
	m.Vertices = make([][3]float64, (nx+1)*(ny+1)*(nz+1))
	for k := 0; k <= nz; k++ {
		for j := 0; j <= ny; j++ {
			for i := 0; i <= nx; i++ {
				x, y, z := float64(i)/float64(nx), float64(j)/float64(ny), float64(k)/float64(nz)
				if i > 0 && i < nx && j > 0 && j < ny && k > 0 && k < nz {
					d := perturb * h * math.Sin(math.Pi*x) * math.Sin(math.Pi*y) * math.Sin(math.Pi*z)
					x, y, z = x+d, y+0.8*d, z+0.6*d
				}
				m.Vertices[(k*(ny+1)+j)*(nx+1)+i] = [3]float64{x, y, z}
			}
		}
	}
	return m, nil
}

// Elements is the number of hexahedra.
func (m *Mesh) Elements() int {
	if m.Cells != nil {
		return len(m.Cells)
	}
	return m.NX * m.NY * m.NZ
}

// Box reports whether the mesh is a box (NewMesh), whose structure the
// assembled problems use.
func (m *Mesh) Box() bool { return m.Cells == nil }

// vtkCorner maps corner c = cx + 2cy + 4cz to its place in Gmsh/VTK order.
var vtkCorner = [8]int{0, 1, 3, 2, 4, 5, 7, 6}

// corners are element e's eight vertices, x-fastest: corner c = cx + 2cy + 4cz.
func (m *Mesh) corners(e int) [8][3]float64 {
	var c [8][3]float64
	if m.Cells != nil {
		for v := range 8 {
			c[v] = m.Vertices[m.Cells[e][vtkCorner[v]]]
		}
		return c
	}
	ex, ey, ez := e%m.NX, (e/m.NX)%m.NY, e/(m.NX*m.NY)
	for v := range 8 {
		i, j, k := ex+v&1, ey+v>>1&1, ez+v>>2
		c[v] = m.Vertices[(k*(m.NY+1)+j)*(m.NX+1)+i]
	}
	return c
}

// jacobian is ∂x/∂(r,s,t) of element corners c at (r,s,t): column d the
// derivative along reference direction d.
func jacobian(c [8][3]float64, r, s, t float64) [3][3]float64 {
	var J [3][3]float64
	for v := range 8 {
		sr, ss, st := float64(2*(v&1)-1), float64(2*(v>>1&1)-1), float64(2*(v>>2)-1)
		dr := sr * (1 + ss*s) * (1 + st*t) / 8
		ds := (1 + sr*r) * ss * (1 + st*t) / 8
		dt := (1 + sr*r) * (1 + ss*s) * st / 8
		for x := range 3 {
			J[x][0] += c[v][x] * dr
			J[x][1] += c[v][x] * ds
			J[x][2] += c[v][x] * dt
		}
	}
	return J
}

// position is element corners c's trilinear map at (r,s,t).
func position(c [8][3]float64, r, s, t float64) [3]float64 {
	var p [3]float64
	for v := range 8 {
		sr, ss, st := float64(2*(v&1)-1), float64(2*(v>>1&1)-1), float64(2*(v>>2)-1)
		f := (1 + sr*r) * (1 + ss*s) * (1 + st*t) / 8
		for x := range 3 {
			p[x] += c[v][x] * f
		}
	}
	return p
}

// Geometry computes the geometric factors of every element at b's
// quadrature points, structure-of-arrays per element:
// geo[(e·F + f)·Q³ + q], F = b.Factors(), q = (c·Q + b)·Q + a (x-fastest).
// For the screened Poisson operators f = 0…5 are the entries rr, rs, rt,
// ss, st, tt of w|J|·J⁻¹J⁻ᵀ and f = 6 is w|J|; for the mass operator f = 0
// is w|J|. A non-positive Jacobian anywhere is an error.
func (m *Mesh) Geometry(b *Basis) ([]float64, error) {
	q, nf := b.Q(), b.Factors()
	q3 := q * q * q
	geo := make([]float64, m.Elements()*nf*q3)
	for e := range m.Elements() {
		emap := m.elementMap(e)
		base := e * nf * q3
		for kc := range q {
			for kb := range q {
				for ka := range q {
					_, J := emap(b.Points[ka], b.Points[kb], b.Points[kc])
					det := J[0][0]*(J[1][1]*J[2][2]-J[1][2]*J[2][1]) - J[0][1]*(J[1][0]*J[2][2]-J[1][2]*J[2][0]) + J[0][2]*(J[1][0]*J[2][1]-J[1][1]*J[2][0])
					if !(det > 0) || math.IsInf(det, 0) {
						return nil, m.badJacobian(e, det)
					}
					wdet := b.PointWeights[ka] * b.PointWeights[kb] * b.PointWeights[kc] * det
					node := (kc*q+kb)*q + ka
					if nf == 1 {
						geo[base+node] = wdet
						continue
					}
					// Rows of J⁻¹ are the gradients of r, s, t: J⁻¹ = adj(J)/det.
					var inv [3][3]float64
					for a := range 3 {
						for x := range 3 {
							a1, a2 := (a+1)%3, (a+2)%3
							x1, x2 := (x+1)%3, (x+2)%3
							inv[a][x] = (J[x1][a1]*J[x2][a2] - J[x1][a2]*J[x2][a1]) / det
						}
					}
					g := func(a, b int) float64 {
						return wdet * (inv[a][0]*inv[b][0] + inv[a][1]*inv[b][1] + inv[a][2]*inv[b][2])
					}
					for f, v := range []float64{g(0, 0), g(0, 1), g(0, 2), g(1, 1), g(1, 2), g(2, 2), wdet} {
						geo[base+f*q3+node] = v
					}
				}
			}
		}
	}
	return geo, nil
}

// NodePositions are the physical coordinates of every element's GLL
// nodes of b, in E-vector order.
func (m *Mesh) NodePositions(b *Basis) [][3]float64 {
	p := b.P()
	out := make([][3]float64, 0, m.Elements()*p*p*p)
	for e := range m.Elements() {
		emap := m.elementMap(e)
		for k := range p {
			for j := range p {
				for i := range p {
					x, _ := emap(b.Nodes[i], b.Nodes[j], b.Nodes[k])
					out = append(out, x)
				}
			}
		}
	}
	return out
}

// GlobalIndex numbers the nodes of a box mesh's assembled problem of degree n: the
// (NX·n+1)(NY·n+1)(NZ·n+1) nodes of the box, x-fastest; entry (e, node)
// of the result, in E-vector order, is that node's global number, so that
// nodes shared by neighbouring elements share a number.
func (m *Mesh) GlobalIndex(n int) []int32 {
	p := n + 1
	gx, gy := m.NX*n+1, m.NY*n+1
	out := make([]int32, 0, m.Elements()*p*p*p)
	for e := range m.Elements() {
		ex, ey, ez := e%m.NX, (e/m.NX)%m.NY, e/(m.NX*m.NY)
		for k := range p {
			for j := range p {
				for i := range p {
					out = append(out, int32(((ez*n+k)*gy+ey*n+j)*gx+ex*n+i))
				}
			}
		}
	}
	return out
}

// Corners are element e's eight vertices, corner c = cx + 2cy + 4cz
// (x-fastest): what a kernel that forms a trilinear element's Jacobian
// itself reads in place of the factors.
func (m *Mesh) Corners(e int) [8][3]float64 { return m.corners(e) }

// Trilinear reports whether every element is the trilinear image of its
// corners (a box, a mesh of cells, a curved mesh of order 1), so that
// Corners determine its map.
func (m *Mesh) Trilinear() bool { return m.GeoOrder <= 1 }

// affineTol bounds, relative to an element's extent, the bilinear and
// trilinear terms of a map counted as affine (rounding of the vertices).
const affineTol = 1e-12

// AxisAligned reports whether every element is a box whose edges run
// along the axes: affine, with a diagonal Jacobian (to affineTol), so
// that its factors det·J⁻¹J⁻ᵀ are diagonal too.
func (m *Mesh) AxisAligned() bool {
	// J[x][d] = a[x][1], a[x][2], a[x][4] for d = r, s, t: its
	// off-diagonal entries, and the bilinear and trilinear terms.
	return m.smallTerms([2]int{0, 2}, [2]int{0, 4}, [2]int{1, 1}, [2]int{1, 4}, [2]int{2, 1}, [2]int{2, 2})
}

// Affine reports whether every element is a parallelepiped: its map
// affine, its Jacobian the same at every point (a Cartesian box, say).
func (m *Mesh) Affine() bool { return m.smallTerms() }

// smallTerms reports whether the mesh is trilinear and, in every
// element's map coefficients a (TrilinearCoefficients), the bilinear and
// trilinear terms and the terms listed (x, monomial) are within affineTol
// of the element's extent.
func (m *Mesh) smallTerms(terms ...[2]int) bool {
	if !m.Trilinear() {
		return false
	}
	for x := range 3 {
		for _, k := range []int{3, 5, 6, 7} {
			terms = append(terms, [2]int{x, k})
		}
	}
	for e := range m.Elements() {
		a := TrilinearCoefficients(m.corners(e))
		size := 0.0
		for x := range 3 {
			size = max(size, math.Abs(a[x][1]), math.Abs(a[x][2]), math.Abs(a[x][4]))
		}
		for _, t := range terms {
			if !(math.Abs(a[t[0]][t[1]]) <= affineTol*size) {
				return false
			}
		}
	}
	return true
}

// TrilinearCoefficients are the monomial coefficients of the trilinear
// map of corners c (corner v = cx + 2cy + 4cz at (±1, ±1, ±1)):
// coordinate x = Σ_m a[x][m]·r^(m&1)·s^(m>>1&1)·t^(m>>2).
func TrilinearCoefficients(c [8][3]float64) [3][8]float64 {
	var a [3][8]float64
	for x := range 3 {
		for mono := range 8 {
			s := 0.0
			for v := range 8 {
				sign := 1.0
				for bit := 1; bit < 8; bit <<= 1 {
					if mono&bit != 0 && v&bit == 0 {
						sign = -sign
					}
				}
				s += sign * c[v][x]
			}
			a[x][mono] = s / 8
		}
	}
	return a
}
