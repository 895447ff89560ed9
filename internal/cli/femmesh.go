package cli

import (
	"strconv"

	"github.com/bespoke-hpc/bespoke/fem"
	"github.com/bespoke-hpc/bespoke/fem/meshfile"
)

// femApplyMesh is the mesh fem apply works on: the box of --mesh, or the
// user's mesh of --nodes/--cells or --mesh-file; and a name for messages.
func femApplyMesh(o femApplyOptions) (*fem.Mesh, string, error) {
	spec := o.meshFile
	if err := spec.Check(); err != nil {
		return nil, "", usageError{err}
	}
	if spec.Given() {
		switch {
		case o.mesh != "":
			return nil, "", usagef("--mesh (a box) and a mesh file both give a mesh: give one")
		case o.perturb != 0:
			return nil, "", usagef("--perturb moves the box's vertices: a mesh file gives its own")
		}
		m, err := meshfile.Load(spec)
		if err != nil {
			return nil, "", err
		}
		name := spec.Gmsh
		if name == "" {
			name = spec.Cells
		}
		return m, name, nil
	}
	sm := meshRE.FindStringSubmatch(o.mesh)
	if sm == nil {
		return nil, "", usagef("--mesh %q: want NXxNYxNZ, e.g. 8x8x8 (or a mesh: --nodes with --cells, or --mesh-file)", o.mesh)
	}
	var n [3]int
	for i := range n {
		var err error
		if n[i], err = strconv.Atoi(sm[i+1]); err != nil {
			return nil, "", usagef("--mesh %q: %v", o.mesh, err)
		}
	}
	m, err := fem.NewMesh(n[0], n[1], n[2], o.perturb)
	if err != nil {
		return nil, "", usageError{err}
	}
	return m, o.mesh, nil
}
