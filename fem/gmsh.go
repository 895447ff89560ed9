package fem

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Gmsh element types of hexahedra that ReadGmsh takes, by their number of
// nodes: the trilinear hexahedron and the triquadratic one.
const (
	gmshHex8  = 5
	gmshHex27 = 12
)

// gmshHex27Nodes places the 27-node hexahedron's nodes on the 3×3×3
// lattice of the reference cube (i + 3j + 9k, ξ-fastest), in Gmsh's node
// order: the vertices, then one node per edge, one per face, the centre.
var gmshHex27Nodes = func() [27]int {
	vertex := [8][3]int{{0, 0, 0}, {2, 0, 0}, {2, 2, 0}, {0, 2, 0}, {0, 0, 2}, {2, 0, 2}, {2, 2, 2}, {0, 2, 2}}
	edges := [12][2]int{{0, 1}, {0, 3}, {0, 4}, {1, 2}, {1, 5}, {2, 3}, {2, 6}, {3, 7}, {4, 5}, {4, 7}, {5, 6}, {6, 7}}
	faces := [6][4]int{{0, 3, 2, 1}, {0, 1, 5, 4}, {0, 4, 7, 3}, {1, 2, 6, 5}, {2, 3, 7, 6}, {4, 5, 6, 7}}
	lattice := func(p [3]int) int { return p[0] + 3*p[1] + 9*p[2] }
	var at [27]int
	for v, p := range vertex {
		at[v] = lattice(p)
	}
	for e, ab := range edges {
		a, b := vertex[ab[0]], vertex[ab[1]]
		at[8+e] = lattice([3]int{(a[0] + b[0]) / 2, (a[1] + b[1]) / 2, (a[2] + b[2]) / 2})
	}
	for f, vs := range faces {
		var s [3]int
		for _, v := range vs {
			for d := range 3 {
				s[d] += vertex[v][d]
			}
		}
		at[20+f] = lattice([3]int{s[0] / 4, s[1] / 4, s[2] / 4})
	}
	at[26] = lattice([3]int{1, 1, 1})
	return at
}()

// ReadGmshFile reads a Gmsh mesh file; see ReadGmsh.
func ReadGmshFile(path string) (*Mesh, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m, err := ReadGmsh(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// ReadGmsh reads the hexahedra of a Gmsh 4.1 ASCII mesh: first-order
// (8-node) hexahedra as a mesh of cells, second-order (27-node) ones as a
// curved mesh of geometry order 2. Elements of lower dimension (boundary
// faces, edges, points) are skipped; any other 3-D element is an error.
// Errors name the line.
func ReadGmsh(r io.Reader) (*Mesh, error) {
	p := &gmshParser{sc: bufio.NewScanner(r)}
	p.sc.Buffer(make([]byte, 1<<16), 1<<26)
	var (
		version          string
		nodes            = map[int64][3]float64{}
		cells            [][]int64
		cellType         int
		sawNodes, sawEls bool
	)
	for {
		line, ok := p.next()
		if !ok {
			break
		}
		switch line {
		case "$MeshFormat":
			f, err := p.fields(3)
			if err != nil {
				return nil, err
			}
			version = f[0]
			if !strings.HasPrefix(version, "4.1") {
				return nil, p.errf("Gmsh format %s: want 4.1 (save the mesh with Mesh.MshFileVersion = 4.1)", version)
			}
			if f[1] != "0" {
				return nil, p.errf("a binary Gmsh file: want ASCII (Mesh.Binary = 0)")
			}
		case "$Nodes":
			if version == "" {
				return nil, p.errf("$Nodes before $MeshFormat")
			}
			if err := p.readNodes(nodes); err != nil {
				return nil, err
			}
			sawNodes = true
		case "$Elements":
			if !sawNodes {
				return nil, p.errf("$Elements before $Nodes")
			}
			var err error
			if cells, cellType, err = p.readElements(); err != nil {
				return nil, err
			}
			sawEls = true
		default:
			if strings.HasPrefix(line, "$") && !strings.HasPrefix(line, "$End") {
				if err := p.skipSection(line); err != nil {
					return nil, err
				}
			}
		}
	}
	if err := p.sc.Err(); err != nil {
		return nil, err
	}
	switch {
	case version == "":
		return nil, fmt.Errorf("no $MeshFormat: not a Gmsh mesh")
	case !sawEls || len(cells) == 0:
		return nil, fmt.Errorf("no hexahedra in the mesh")
	}
	lookup := func(e int, tag int64) ([3]float64, error) {
		x, ok := nodes[tag]
		if !ok {
			return x, fmt.Errorf("hexahedron %d names node %d, which $Nodes does not define", e, tag)
		}
		return x, nil
	}
	if cellType == gmshHex8 {
		// Renumber the nodes the hexahedra use, in order of first use.
		index := map[int64]int32{}
		var vertices [][3]float64
		cs := make([][8]int32, len(cells))
		for e, c := range cells {
			for v, tag := range c {
				i, ok := index[tag]
				if !ok {
					x, err := lookup(e, tag)
					if err != nil {
						return nil, err
					}
					i = int32(len(vertices))
					index[tag] = i
					vertices = append(vertices, x)
				}
				cs[e][v] = i
			}
		}
		return NewCellMesh(vertices, cs)
	}
	geo := make([][3]float64, 27*len(cells))
	for e, c := range cells {
		for v, tag := range c {
			x, err := lookup(e, tag)
			if err != nil {
				return nil, err
			}
			geo[27*e+gmshHex27Nodes[v]] = x
		}
	}
	return NewCurvedMesh(2, geo)
}

type gmshParser struct {
	sc   *bufio.Scanner
	line int
}

func (p *gmshParser) next() (string, bool) {
	for p.sc.Scan() {
		p.line++
		if s := strings.TrimSpace(p.sc.Text()); s != "" {
			return s, true
		}
	}
	return "", false
}

func (p *gmshParser) errf(format string, args ...any) error {
	return fmt.Errorf("line %d: %s", p.line, fmt.Sprintf(format, args...))
}

// fields reads the next line as at least n fields.
func (p *gmshParser) fields(n int) ([]string, error) {
	s, ok := p.next()
	if !ok {
		return nil, fmt.Errorf("line %d: the file ends inside a section", p.line)
	}
	f := strings.Fields(s)
	if len(f) < n {
		return nil, p.errf("want %d fields, found %d", n, len(f))
	}
	return f, nil
}

func (p *gmshParser) ints(f []string) ([]int64, error) {
	out := make([]int64, len(f))
	for i, s := range f {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, p.errf("%q is not an integer", s)
		}
		out[i] = v
	}
	return out, nil
}

// count checks a count read from the file against what memory allows.
func (p *gmshParser) count(v int64, what string, limit int64) (int, error) {
	if v < 0 || v > limit {
		return 0, p.errf("%d %s: want 0..%d", v, what, limit)
	}
	return int(v), nil
}

// maxGmshNodes bounds the nodes a mesh file may declare (27 a cell).
const maxGmshNodes = 27 * MaxElements

func (p *gmshParser) readNodes(nodes map[int64][3]float64) error {
	f, err := p.fields(4)
	if err != nil {
		return err
	}
	h, err := p.ints(f[:4])
	if err != nil {
		return err
	}
	blocks, err := p.count(h[0], "node blocks", maxGmshNodes)
	if err != nil {
		return err
	}
	if _, err := p.count(h[1], "nodes", maxGmshNodes); err != nil {
		return err
	}
	for range blocks {
		f, err := p.fields(4)
		if err != nil {
			return err
		}
		b, err := p.ints(f[:4])
		if err != nil {
			return err
		}
		parametric := b[2] != 0
		n, err := p.count(b[3], "nodes in a block", maxGmshNodes)
		if err != nil {
			return err
		}
		tags := make([]int64, n)
		for i := range tags {
			f, err := p.fields(1)
			if err != nil {
				return err
			}
			t, err := p.ints(f[:1])
			if err != nil {
				return err
			}
			tags[i] = t[0]
		}
		for _, tag := range tags {
			f, err := p.fields(3)
			if err != nil {
				return err
			}
			if parametric && len(f) < 4 {
				return p.errf("a parametric node wants its parametric coordinates after x y z")
			}
			var x [3]float64
			for d := range 3 {
				if x[d], err = strconv.ParseFloat(f[d], 64); err != nil {
					return p.errf("%q is not a coordinate", f[d])
				}
			}
			if _, dup := nodes[tag]; dup {
				return p.errf("node %d defined twice", tag)
			}
			nodes[tag] = x
		}
	}
	return p.end("$EndNodes")
}

func (p *gmshParser) readElements() ([][]int64, int, error) {
	f, err := p.fields(4)
	if err != nil {
		return nil, 0, err
	}
	h, err := p.ints(f[:4])
	if err != nil {
		return nil, 0, err
	}
	blocks, err := p.count(h[0], "element blocks", maxGmshNodes)
	if err != nil {
		return nil, 0, err
	}
	var cells [][]int64
	cellType := 0
	for range blocks {
		f, err := p.fields(4)
		if err != nil {
			return nil, 0, err
		}
		b, err := p.ints(f[:4])
		if err != nil {
			return nil, 0, err
		}
		dim, typ := b[0], int(b[2])
		n, err := p.count(b[3], "elements in a block", maxGmshNodes)
		if err != nil {
			return nil, 0, err
		}
		var want int
		if dim == 3 {
			switch typ {
			case gmshHex8:
				want = 8
			case gmshHex27:
				want = 27
			case 17:
				return nil, 0, p.errf("20-node (serendipity) hexahedra: want 8- or 27-node ones (Mesh.SecondOrderIncomplete = 0)")
			default:
				return nil, 0, p.errf("3-D elements of Gmsh type %d: only hexahedra of 8 (type 5) or 27 (type 12) nodes are read", typ)
			}
			if cellType != 0 && cellType != typ {
				return nil, 0, p.errf("hexahedra of 8 and of 27 nodes mixed in one mesh")
			}
			cellType = typ
			if int64(len(cells))+int64(n) > MaxElements {
				return nil, 0, p.errf("more than %d hexahedra", MaxElements)
			}
		}
		for range n {
			f, err := p.fields(1)
			if err != nil {
				return nil, 0, err
			}
			if dim != 3 {
				continue
			}
			if len(f) != want+1 {
				return nil, 0, p.errf("a hexahedron of %d nodes lists %d", want, len(f)-1)
			}
			tags, err := p.ints(f[1:])
			if err != nil {
				return nil, 0, err
			}
			cells = append(cells, tags)
		}
	}
	return cells, cellType, p.end("$EndElements")
}

func (p *gmshParser) end(marker string) error {
	s, ok := p.next()
	if !ok || s != marker {
		return p.errf("want %s", marker)
	}
	return nil
}

// skipSection passes over a section bespoke does not read.
func (p *gmshParser) skipSection(start string) error {
	end := "$End" + strings.TrimPrefix(start, "$")
	for {
		s, ok := p.next()
		if !ok {
			return p.errf("%s has no %s", start, end)
		}
		if s == end {
			return nil
		}
	}
}
