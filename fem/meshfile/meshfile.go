// Package meshfile reads a user's hexahedral mesh for the tensor-product
// operators: vertices and cells as .npy arrays, or a Gmsh 4.1 file.
//
// It may import fem and the array readers, nothing that runs kernels.
package meshfile

import (
	"fmt"
	"math"

	"github.com/bespoke-hpc/bespoke/fem"
	"github.com/bespoke-hpc/bespoke/operator/npy"
)

// Spec names where a mesh comes from: Nodes and Cells together, or Gmsh.
type Spec struct {
	Nodes, Cells string // .npy: float64 (nodes, 3), and int (E, 8) in Gmsh/VTK vertex order
	Gmsh         string // a Gmsh 4.1 ASCII .msh file of 8- or 27-node hexahedra
}

// Given reports whether the spec names a mesh at all.
func (s Spec) Given() bool { return s.Nodes != "" || s.Cells != "" || s.Gmsh != "" }

// Check reports a spec that names too little or too much, naming the
// flags as the commands spell them.
func (s Spec) Check() error {
	switch {
	case s.Gmsh != "" && (s.Nodes != "" || s.Cells != ""):
		return fmt.Errorf("--mesh-file and --nodes/--cells both give a mesh: give one")
	case (s.Nodes == "") != (s.Cells == ""):
		return fmt.Errorf("--nodes and --cells go together")
	}
	return nil
}

// Inputs lists the files the spec reads.
func (s Spec) Inputs() []string {
	var in []string
	for _, p := range []string{s.Nodes, s.Cells, s.Gmsh} {
		if p != "" {
			in = append(in, p)
		}
	}
	return in
}

// Load reads the mesh.
func Load(s Spec) (*fem.Mesh, error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	if s.Gmsh != "" {
		return fem.ReadGmshFile(s.Gmsh)
	}
	nn, cols, xs, err := npy.ReadMatrix(s.Nodes)
	if err != nil {
		return nil, err
	}
	if cols != 3 {
		return nil, fmt.Errorf("%s: shape (%d, %d), want (nodes, 3)", s.Nodes, nn, cols)
	}
	ne, nc, cs, err := npy.ReadMatrix(s.Cells)
	if err != nil {
		return nil, err
	}
	if nc != 8 {
		return nil, fmt.Errorf("%s: shape (%d, %d), want (E, 8): eight vertices a hexahedron", s.Cells, ne, nc)
	}
	if ne > fem.MaxElements {
		return nil, fmt.Errorf("%s: %d cells: more than %d elements", s.Cells, ne, fem.MaxElements)
	}
	vertices := make([][3]float64, nn)
	for i := range vertices {
		vertices[i] = [3]float64{xs[3*i], xs[3*i+1], xs[3*i+2]}
	}
	cells := make([][8]int32, ne)
	for i, v := range cs {
		if v != math.Trunc(v) || v < 0 || v >= float64(nn) {
			return nil, fmt.Errorf("%s: entry [%d, %d] = %g: want a vertex number 0..%d", s.Cells, i/8, i%8, v, nn-1)
		}
		cells[i/8][i%8] = int32(v)
	}
	m, err := fem.NewCellMesh(vertices, cells)
	if err != nil {
		return nil, fmt.Errorf("%s, %s: %w", s.Nodes, s.Cells, err)
	}
	return m, nil
}
