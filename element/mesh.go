package element

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Limits of the generator.
const (
	// MaxElements bounds a mesh or batch (2²⁶: 67 M elements, the top of
	// the paper-style timing range; a tet mesh that large holds 1 GB of
	// connectivity).
	MaxElements = 1 << 26
	// MaxJitter bounds the node displacement, as a fraction of the cell
	// size per coordinate: at 0.25 Kuhn tetrahedra invert now and then
	// (about one mesh of 10³ cells in 20), at 0.2 none did in 200 such
	// meshes. NewMesh checks every Jacobian anyway.
	MaxJitter = 0.2
)

// Mesh is a box of Nx×Ny×Nz cells of side 1/max(Nx, Ny, Nz), each cut into
// Kind.PerCell() elements, with jittered nodes.
type Mesh struct {
	Kind       Kind
	Nx, Ny, Nz int
	// Nodes holds x, y, z of node n at 3n, 3n+1, 3n+2; grid point
	// (i, j, k) is node i + (Nx+1)(j + (Ny+1)k).
	Nodes []float64
	// Conn holds the nodes of element e at Kind.Nodes()·e + a, in the
	// local order of the reference element.
	Conn []int32
}

// NewMesh builds the box mesh, every node moved by up to jitter·h in each
// coordinate (uniform, from seed: the same seed gives the same mesh), and
// checks det J > 0 at every quadrature point.
//
// Cells are cut so that the mesh is conforming: prisms by the (0,0)–(1,1)
// diagonal of the xy face, tetrahedra by Kuhn's split along the cell's
// main diagonal (one tetrahedron per ordering of the axes).
func NewMesh(kind Kind, nx, ny, nz int, jitter float64, seed uint64) (*Mesh, error) {
	if !kind.valid() {
		return nil, fmt.Errorf("element: unknown kind %d", int(kind))
	}
	if nx < 1 || ny < 1 || nz < 1 {
		return nil, fmt.Errorf("element: box of %d×%d×%d cells: want at least 1 along each axis", nx, ny, nz)
	}
	if cells := int64(nx) * int64(ny) * int64(nz); cells > MaxElements/int64(kind.PerCell()) {
		return nil, fmt.Errorf("element: %d×%d×%d cells make %d %s elements (at most %d)", nx, ny, nz, cells*int64(kind.PerCell()), kind, MaxElements)
	}
	if !(jitter >= 0 && jitter <= MaxJitter) {
		return nil, fmt.Errorf("element: jitter %g: want 0..%g of the cell size", jitter, MaxJitter)
	}
	h := 1 / float64(max(nx, ny, nz))
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	m := &Mesh{Kind: kind, Nx: nx, Ny: ny, Nz: nz}
	m.Nodes = make([]float64, 0, 3*(nx+1)*(ny+1)*(nz+1))
	for k := 0; k <= nz; k++ {
		for j := 0; j <= ny; j++ {
			for i := 0; i <= nx; i++ {
				for _, g := range [3]int{i, j, k} {
					m.Nodes = append(m.Nodes, (float64(g)+jitter*(2*rng.Float64()-1))*h)
				}
			}
		}
	}
	id := func(i, j, k int) int32 { return int32(i + (nx+1)*(j+(ny+1)*k)) }
	m.Conn = make([]int32, 0, nx*ny*nz*kind.PerCell()*kind.Nodes())
	for k := range nz {
		for j := range ny {
			for i := range nx {
				// c[b] is corner b of the cell, bit 0 along x, 1 along y, 2 along z.
				var c [8]int32
				for b := range 8 {
					c[b] = id(i+b&1, j+b>>1&1, k+b>>2)
				}
				switch kind {
				case Hex:
					m.Conn = append(m.Conn, c[0], c[1], c[3], c[2], c[4], c[5], c[7], c[6])
				case Prism:
					m.Conn = append(m.Conn, c[0], c[1], c[3], c[4], c[5], c[7])
					m.Conn = append(m.Conn, c[0], c[3], c[2], c[4], c[7], c[6])
				case Tet:
					for _, p := range kuhn {
						b1 := 1 << p[0]
						b2 := b1 | 1<<p[1]
						if p[2] < 0 { // odd permutation: swap two nodes for det J > 0
							m.Conn = append(m.Conn, c[0], c[b2], c[b1], c[7])
						} else {
							m.Conn = append(m.Conn, c[0], c[b1], c[b2], c[7])
						}
					}
				}
			}
		}
	}
	if err := m.Batch().CheckJacobians(); err != nil {
		return nil, fmt.Errorf("%w (jitter %g)", err, jitter)
	}
	return m, nil
}

// kuhn lists the orderings of the axes, the third entry the sign of the
// permutation (its last axis follows from the first two).
var kuhn = [6][3]int{{0, 1, 1}, {1, 2, 1}, {2, 0, 1}, {1, 0, -1}, {2, 1, -1}, {0, 2, -1}}

// Elements is the number of elements.
func (m *Mesh) Elements() int { return len(m.Conn) / m.Kind.Nodes() }

// Batch returns the elements' coordinates in SoA layout.
func (m *Mesh) Batch() *Batch {
	b, err := Gather(m.Kind, m.Nodes, m.Conn)
	if err != nil {
		panic(err) // the mesh's own connectivity
	}
	return b
}

// Batch is E elements of one kind with their node coordinates in SoA
// layout, coordinate-major: coordinate c (x, y, z) of local node a of
// element e at X[(3a+c)·E + e]. Consecutive elements are consecutive
// words, so one thread per element reads coalesced.
type Batch struct {
	Kind Kind
	E    int
	X    []float64
}

// At is the index of coordinate c of node a of element e in X.
func (b *Batch) At(e, a, c int) int { return (3*a+c)*b.E + e }

// Element copies element e's node coordinates into x (Kind.Nodes() long).
func (b *Batch) Element(e int, x [][3]float64) {
	for a := range b.Kind.Nodes() {
		for c := range 3 {
			x[a][c] = b.X[b.At(e, a, c)]
		}
	}
}

// Coords returns element e's node coordinates.
func (b *Batch) Coords(e int) [][3]float64 {
	x := make([][3]float64, b.Kind.Nodes())
	b.Element(e, x)
	return x
}

// NewBatch checks a SoA coordinate array of E elements.
func NewBatch(kind Kind, e int, x []float64) (*Batch, error) {
	if !kind.valid() {
		return nil, fmt.Errorf("element: unknown kind %d", int(kind))
	}
	if e < 1 || e > MaxElements {
		return nil, fmt.Errorf("element: %d elements (want 1..%d)", e, MaxElements)
	}
	if want := 3 * kind.Nodes() * e; len(x) != want {
		return nil, fmt.Errorf("element: %d coordinates for %d %s elements (want %d)", len(x), e, kind, want)
	}
	for i, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("element: coordinate %d is %v", i, v)
		}
	}
	return &Batch{Kind: kind, E: e, X: x}, nil
}

// Gather builds the SoA batch of a gather-form mesh: nodes as x, y, z
// triples, conn as Kind.Nodes() node numbers per element in the local
// order of the reference element. Integer types of any width are
// accepted, so that int64 connectivity read from a file needs no copy.
func Gather[I int32 | int64 | int](kind Kind, nodes []float64, conn []I) (*Batch, error) {
	if !kind.valid() {
		return nil, fmt.Errorf("element: unknown kind %d", int(kind))
	}
	nb := kind.Nodes()
	if len(nodes)%3 != 0 {
		return nil, fmt.Errorf("element: %d node coordinates is not a multiple of 3", len(nodes))
	}
	if len(conn)%nb != 0 || len(conn) == 0 {
		return nil, fmt.Errorf("element: %d connectivity entries: want a positive multiple of %d (%s)", len(conn), nb, kind)
	}
	e := len(conn) / nb
	if e > MaxElements {
		return nil, fmt.Errorf("element: %d elements (at most %d)", e, MaxElements)
	}
	nn := len(nodes) / 3
	x := make([]float64, 3*nb*e)
	for el := range e {
		for a := range nb {
			n := int64(conn[el*nb+a])
			if n < 0 || n >= int64(nn) {
				return nil, fmt.Errorf("element: element %d, local node %d: node %d is outside 0..%d", el, a, n, nn-1)
			}
			for c := range 3 {
				x[(3*a+c)*e+el] = nodes[3*n+int64(c)]
			}
		}
	}
	return NewBatch(kind, e, x)
}

// CheckJacobians reports the first element whose det J is not positive (or
// not finite) at a quadrature point of its rule or at a vertex.
func (b *Batch) CheckJacobians() error {
	r := b.Kind.Rule()
	// The vertices too: a prism or hex can fold between the points.
	pts := append(append([][3]float64{}, r.Points...), vertices(b.Kind)...)
	x := make([][3]float64, b.Kind.Nodes())
	for e := range b.E {
		b.Element(e, x)
		for q, p := range pts {
			if why := JacobianCause(b.Kind.Jacobian(x, p)); why != "" {
				where := fmt.Sprintf("quadrature point %d", q)
				if q >= len(r.Points) {
					where = fmt.Sprintf("vertex %d", q-len(r.Points))
				}
				return fmt.Errorf("element: element %d (%s) at %s: %s", e, b.Kind, where, why)
			}
		}
	}
	return nil
}

// vertices are the reference element's nodes.
func vertices(k Kind) [][3]float64 {
	switch k {
	case Tet:
		return [][3]float64{{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}}
	case Prism:
		return [][3]float64{{0, 0, -1}, {1, 0, -1}, {0, 1, -1}, {0, 0, 1}, {1, 0, 1}, {0, 1, 1}}
	}
	v := make([][3]float64, 8)
	for a, s := range hexSigns {
		v[a] = s
	}
	return v
}

// CheckFinite reports the first entry of E element matrices (nb×nb each,
// row-major) that is NaN or an infinity, by element and entry: where an
// integration overflowed.
func CheckFinite(a []float64, nb int) error {
	for i, x := range a {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			m := i % (nb * nb)
			return fmt.Errorf("element %d's matrix entry [%d, %d] is %g", i/(nb*nb), m/nb, m%nb, x)
		}
	}
	return nil
}
