package fem

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"
)

// boxAsCells lists a box mesh's vertices and its cells in Gmsh/VTK order.
func boxAsCells(m *Mesh) [][8]int32 {
	cells := make([][8]int32, m.Elements())
	for e := range cells {
		ex, ey, ez := e%m.NX, (e/m.NX)%m.NY, e/(m.NX*m.NY)
		// Gmsh/VTK corner order, written out as offsets of the cube.
		for v, d := range [8][3]int{{0, 0, 0}, {1, 0, 0}, {1, 1, 0}, {0, 1, 0}, {0, 0, 1}, {1, 0, 1}, {1, 1, 1}, {0, 1, 1}} {
			i, j, k := ex+d[0], ey+d[1], ez+d[2]
			cells[e][v] = int32((k*(m.NY+1)+j)*(m.NX+1) + i)
		}
	}
	return cells
}

// A box given as vertices and cells has the box's geometric factors and
// node positions, bit for bit.
func TestCellMeshMatchesBox(t *testing.T) {
	for _, k := range Kernels {
		box, err := NewMesh(3, 2, 2, 0.2)
		if err != nil {
			t.Fatal(err)
		}
		cm, err := NewCellMesh(box.Vertices, boxAsCells(box))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := NewBasis(k, 3)
		g1, err := box.Geometry(b)
		if err != nil {
			t.Fatal(err)
		}
		g2, err := cm.Geometry(b)
		if err != nil {
			t.Fatal(err)
		}
		for i := range g1 {
			if g1[i] != g2[i] {
				t.Fatalf("%s: factor %d: box %v, cells %v", k, i, g1[i], g2[i])
			}
		}
		p1, p2 := box.NodePositions(b), cm.NodePositions(b)
		for i := range p1 {
			if p1[i] != p2[i] {
				t.Fatalf("%s: node %d: box %v, cells %v", k, i, p1[i], p2[i])
			}
		}
	}
}

// curvedMap is a smooth map of the reference cube, quadratic in each
// variable, so that a 27-node hexahedron represents it exactly. Its
// Jacobian determinant is (1 + aη²)·1·1 + terms that vanish: see volume.
func curvedMap(a, shift float64) func(r, s, t float64) [3]float64 {
	return func(r, s, t float64) [3]float64 {
		return [3]float64{shift + r*(1+a*s*s), s, t + 0.1*r*r}
	}
}

// gmshHex27Ref is the reference position of each of Gmsh's 27 nodes of
// the second-order hexahedron, written out: vertices, edge midpoints,
// face centres, the centre.
var gmshHex27Ref = [27][3]float64{
	{-1, -1, -1}, {1, -1, -1}, {1, 1, -1}, {-1, 1, -1}, {-1, -1, 1}, {1, -1, 1}, {1, 1, 1}, {-1, 1, 1},
	{0, -1, -1}, {-1, 0, -1}, {-1, -1, 0}, {1, 0, -1}, {1, -1, 0}, {0, 1, -1},
	{1, 1, 0}, {-1, 1, 0}, {0, -1, 1}, {-1, 0, 1}, {1, 0, 1}, {0, 1, 1},
	{0, 0, -1}, {0, -1, 0}, {-1, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {0, 0, 0},
}

// writeGmsh27 writes cells of 27 nodes, each the image of the reference
// cube under its map, as a Gmsh 4.1 ASCII file, nodes numbered from 1
// (shared nodes not merged: the reader must not rely on sharing).
func writeGmsh27(maps []func(r, s, t float64) [3]float64) string {
	var b strings.Builder
	b.WriteString("$MeshFormat\n4.1 0 8\n$EndMeshFormat\n$Entities\n0 0 0 1\n1 0 0 0 1 1 1 0 0\n$EndEntities\n")
	n := 27 * len(maps)
	fmt.Fprintf(&b, "$Nodes\n1 %d 1 %d\n3 1 0 %d\n", n, n, n)
	for i := range n {
		fmt.Fprintf(&b, "%d\n", i+1)
	}
	for _, f := range maps {
		for _, r := range gmshHex27Ref {
			x := f(r[0], r[1], r[2])
			fmt.Fprintf(&b, "%.17g %.17g %.17g\n", x[0], x[1], x[2])
		}
	}
	b.WriteString("$EndNodes\n")
	fmt.Fprintf(&b, "$Elements\n2 %d 1 %d\n2 1 3 1\n%d 1 2 3\n3 1 12 %d\n", len(maps)+1, len(maps)+1, len(maps)+1, len(maps))
	for e := range maps {
		fmt.Fprintf(&b, "%d", e+1)
		for v := range 27 {
			fmt.Fprintf(&b, " %d", 27*e+v+1)
		}
		b.WriteString("\n")
	}
	b.WriteString("$EndElements\n")
	return b.String()
}

// A curved Gmsh mesh: its nodes land where the map puts them, and its
// w|J| sums to the map's exact volume.
func TestGmshCurved(t *testing.T) {
	const a = 0.3
	maps := []func(r, s, t float64) [3]float64{curvedMap(a, 0), curvedMap(a, 2.5)}
	m, err := ReadGmsh(strings.NewReader(writeGmsh27(maps)))
	if err != nil {
		t.Fatal(err)
	}
	if m.Elements() != 2 || m.GeoOrder != 2 {
		t.Fatalf("%d elements of geometry order %d, want 2 of 2", m.Elements(), m.GeoOrder)
	}
	for _, k := range Kernels {
		b, _ := NewBasis(k, 4)
		pos := m.NodePositions(b)
		p := b.P()
		for e, f := range maps {
			for kk := range p {
				for j := range p {
					for i := range p {
						want := f(b.Nodes[i], b.Nodes[j], b.Nodes[kk])
						got := pos[e*p*p*p+(kk*p+j)*p+i]
						for d := range 3 {
							if math.Abs(got[d]-want[d]) > 1e-14 {
								t.Fatalf("%s: cell %d node (%d,%d,%d): %v, want %v", k, e, i, j, kk, got, want)
							}
						}
					}
				}
			}
		}
		geo, err := m.Geometry(b)
		if err != nil {
			t.Fatal(err)
		}
		// det J = 1 + aη² for this map; its integral over the cube.
		want := 8 + a*8.0/3
		q3 := b.Q() * b.Q() * b.Q()
		nf := b.Factors()
		for e := range 2 {
			vol := 0.0
			for _, w := range geo[(e*nf+nf-1)*q3 : (e*nf+nf)*q3] {
				vol += w
			}
			if math.Abs(vol-want) > 1e-12*want {
				t.Errorf("%s: cell %d has volume %.15g, want %.15g", k, e, vol, want)
			}
		}
	}
}

// A second-order mesh whose nodes are a trilinear image has the trilinear
// mesh's factors.
func TestCurvedMatchesTrilinear(t *testing.T) {
	box, _ := NewMesh(2, 2, 1, 0.25)
	var nodes [][3]float64
	for e := range box.Elements() {
		c := box.corners(e)
		for k := range 3 {
			for j := range 3 {
				for i := range 3 {
					nodes = append(nodes, position(c, float64(i-1), float64(j-1), float64(k-1)))
				}
			}
		}
	}
	cm, err := NewCurvedMesh(2, nodes)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewBasis(BK5, 5)
	g1, _ := box.Geometry(b)
	g2, err := cm.Geometry(b)
	if err != nil {
		t.Fatal(err)
	}
	for i := range g1 {
		if math.Abs(g1[i]-g2[i]) > 1e-13*math.Max(1, math.Abs(g1[i])) {
			t.Fatalf("factor %d: trilinear %v, curved %v", i, g1[i], g2[i])
		}
	}
}

func TestMeshErrors(t *testing.T) {
	unit := [][3]float64{{0, 0, 0}, {1, 0, 0}, {1, 1, 0}, {0, 1, 0}, {0, 0, 1}, {1, 0, 1}, {1, 1, 1}, {0, 1, 1}}
	hex8 := "$MeshFormat\n4.1 0 8\n$EndMeshFormat\n$Nodes\n1 8 1 8\n3 1 0 8\n1\n2\n3\n4\n5\n6\n7\n8\n" +
		"0 0 0\n1 0 0\n1 1 0\n0 1 0\n0 0 1\n1 0 1\n1 1 1\n0 1 1\n$EndNodes\n$Elements\n1 1 1 1\n3 1 %d 1\n1 %s\n$EndElements\n"
	b, _ := NewBasis(BK5, 2)
	cases := []struct {
		name string
		mesh func() (*Mesh, error)
		want string
	}{
		{"no cells", func() (*Mesh, error) { return NewCellMesh(unit, nil) }, "at least one cell"},
		{"vertex out of range", func() (*Mesh, error) { return NewCellMesh(unit, [][8]int32{{0, 1, 2, 3, 4, 5, 6, 8}}) }, "out of range"},
		{"vertex twice", func() (*Mesh, error) { return NewCellMesh(unit, [][8]int32{{0, 1, 2, 3, 4, 5, 6, 6}}) }, "twice"},
		{"not finite", func() (*Mesh, error) {
			v := append([][3]float64{}, unit...)
			v[3][1] = math.NaN()
			return NewCellMesh(v, [][8]int32{{0, 1, 2, 3, 4, 5, 6, 7}})
		}, "not finite"},
		{"inverted", func() (*Mesh, error) { return NewCellMesh(unit, [][8]int32{{4, 5, 6, 7, 0, 1, 2, 3}}) }, "inverted"},
		{"degenerate", func() (*Mesh, error) {
			v := append([][3]float64{}, unit...)
			for i := 4; i < 8; i++ {
				v[i][2] = 0
			}
			return NewCellMesh(v, [][8]int32{{0, 1, 2, 3, 4, 5, 6, 7}})
		}, "degenerate"},
		{"gmsh 2.2", func() (*Mesh, error) { return ReadGmsh(strings.NewReader("$MeshFormat\n2.2 0 8\n$EndMeshFormat\n")) }, "want 4.1"},
		{"gmsh binary", func() (*Mesh, error) { return ReadGmsh(strings.NewReader("$MeshFormat\n4.1 1 8\n$EndMeshFormat\n")) }, "binary"},
		{"not gmsh", func() (*Mesh, error) { return ReadGmsh(strings.NewReader("hello\n")) }, "not a Gmsh mesh"},
		{"tetrahedra", func() (*Mesh, error) { return ReadGmsh(strings.NewReader(fmt.Sprintf(hex8, 4, "1 2 3 4"))) }, "type 4"},
		{"serendipity", func() (*Mesh, error) { return ReadGmsh(strings.NewReader(fmt.Sprintf(hex8, 17, "1 2 3 4"))) }, "serendipity"},
		{"missing node", func() (*Mesh, error) { return ReadGmsh(strings.NewReader(fmt.Sprintf(hex8, 5, "1 2 3 4 5 6 7 9"))) }, "node 9"},
		{"short cell", func() (*Mesh, error) { return ReadGmsh(strings.NewReader(fmt.Sprintf(hex8, 5, "1 2 3 4 5 6 7"))) }, "lists 7"},
		{"huge count", func() (*Mesh, error) {
			return ReadGmsh(strings.NewReader("$MeshFormat\n4.1 0 8\n$EndMeshFormat\n$Nodes\n1 99999999999 1 8\n"))
		}, "nodes: want"},
		{"truncated", func() (*Mesh, error) {
			return ReadGmsh(strings.NewReader("$MeshFormat\n4.1 0 8\n$EndMeshFormat\n$Nodes\n1 8 1 8\n3 1 0 8\n1\n"))
		}, "ends inside"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := c.mesh()
			if err == nil {
				_, err = m.Geometry(b)
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
	// A well-formed first-order file reads as one unit cube.
	m, err := ReadGmsh(bytes.NewReader([]byte(fmt.Sprintf(hex8, 5, "1 2 3 4 5 6 7 8"))))
	if err != nil {
		t.Fatal(err)
	}
	geo, err := m.Geometry(b)
	if err != nil {
		t.Fatal(err)
	}
	q3 := b.Q() * b.Q() * b.Q()
	vol := 0.0
	for _, w := range geo[6*q3 : 7*q3] {
		vol += w
	}
	if math.Abs(vol-1) > 1e-14 {
		t.Fatalf("unit cube volume %v", vol)
	}
}

// Affine holds for a Cartesian box and for a sheared one, not for a
// perturbed box or a curved mesh; TrilinearCoefficients reproduce the
// corners.
func TestAffine(t *testing.T) {
	box, _ := NewMesh(3, 2, 2, 0)
	bent, _ := NewMesh(3, 3, 3, 0.2)
	sheared, _ := NewMesh(2, 2, 2, 0)
	for i, v := range sheared.Vertices {
		sheared.Vertices[i] = [3]float64{v[0] + 0.3*v[1] - 0.2*v[2], 2 * v[1], v[2] + 0.1*v[0]}
	}
	curved, err := NewCurvedMesh(2, bent.NodePositions(mustBasis(t, BK5, 2))[:27])
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name           string
		m              *Mesh
		affine, trilin bool
	}{
		{"cartesian", box, true, true},
		{"sheared", sheared, true, true},
		{"perturbed", bent, false, true},
		{"curved", curved, false, false},
	} {
		if got := tc.m.Affine(); got != tc.affine {
			t.Errorf("%s: Affine() = %v, want %v", tc.name, got, tc.affine)
		}
		if got := tc.m.Trilinear(); got != tc.trilin {
			t.Errorf("%s: Trilinear() = %v, want %v", tc.name, got, tc.trilin)
		}
	}
	c := bent.Corners(13)
	a := TrilinearCoefficients(c)
	for v := range 8 {
		r, s, tt := float64(2*(v&1)-1), float64(2*(v>>1&1)-1), float64(2*(v>>2)-1)
		for x := range 3 {
			got := 0.0
			for m := range 8 {
				term := a[x][m]
				if m&1 != 0 {
					term *= r
				}
				if m&2 != 0 {
					term *= s
				}
				if m&4 != 0 {
					term *= tt
				}
				got += term
			}
			if math.Abs(got-c[v][x]) > 1e-15 {
				t.Errorf("corner %d coordinate %d: %g, want %g", v, x, got, c[v][x])
			}
		}
	}
}

func mustBasis(t *testing.T, k Kernel, n int) *Basis {
	t.Helper()
	b, err := NewBasis(k, n)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
