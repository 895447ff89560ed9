package families

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/bespoke-hpc/bespoke/fem"
	"github.com/bespoke-hpc/bespoke/fem/meshfile"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/kernel/family/registry"
	"github.com/bespoke-hpc/bespoke/kernel/tensor"
)

// femFamily is the tensor-product FEM operators (BK1, BK3, BK5), E-vector
// → E-vector, one problem per operator, order and precision.
var femFamily = registry.Family{
	Name:    "fem",
	Doc:     "tensor-product FEM operators (BK1, BK3, BK5), E-vector → E-vector",
	Unit:    "elements",
	Package: "kernel/tensor",
	Flags: func(fs *pflag.FlagSet, _ registry.Options) registry.Flags {
		f := &femFlags{}
		fs.StringVar(&f.orders, "order", "3", orderUsage)
		fs.StringVar(&f.kernels, "kernel", "bk5", "operators, comma-separated: bk1 (mass), bk3 (screened Poisson, Gauss points), bk5 (screened Poisson, GLL collocation)")
		fs.Float64Var(&f.lambda, "lambda", 1, "λ of the screened Poisson operator S + λM")
		fs.StringVar(&f.mesh.Nodes, "nodes", "", "check the kernels on this mesh's geometry: vertices (.npy, float64 (nodes, 3)), with --cells")
		fs.StringVar(&f.mesh.Cells, "cells", "", "the mesh's hexahedra (.npy, int (E, 8), Gmsh/VTK vertex order), with --nodes")
		fs.StringVar(&f.mesh.Gmsh, "mesh-file", "", "check the kernels on this Gmsh 4.1 mesh's geometry (8- or 27-node hexahedra)")
		return f
	},
	// The layouts with the matrices as literals and one element per
	// block, which every dialect runs: slabs for BK5's one-dimensional
	// sweeps, whole cubes for BK1's and BK3's interpolations. A CPU gets
	// its own layout, whose work-group loop is the loop over elements.
	Variant: func(p family.Problem, tg family.Target) string {
		if !tg.GPU {
			return "cpu/e1"
		}
		if t, ok := p.(*tensor.Problem); ok && (t.Kernel == fem.BK1 || t.Kernel == fem.BK3) {
			return "cube-lit/e1"
		}
		return "slab-lit/e1"
	},
	Check: 37, // elements: a few blocks of every variant, none full at the end
	Bench: tensorSizes,
	Report: registry.Columns{
		Marker: "dofs",
		Rates:  []registry.Rate{{Title: "GDOF/s", Work: "dofs"}},
	},
}

type femFlags struct {
	orders, kernels string
	lambda          float64
	mesh            meshfile.Spec
}

func (*femFlags) Sources() []string { return nil }

// Problems are the operators of each kind, order and precision, on a
// mesh's geometry when one is given.
func (f *femFlags) Problems(args []string, dts []kernel.DType) ([]family.Problem, error) {
	if err := noFiles("fem", "--kernel and --order", args); err != nil {
		return nil, err
	}
	orders, err := Orders(f.orders, fem.MaxOrder)
	if err != nil {
		return nil, err
	}
	kernels, err := parseList(f.kernels, fem.ParseKernel)
	if err != nil {
		return nil, err
	}
	if len(kernels) == 0 {
		return nil, registry.Usagef("--kernel %q names no operator", f.kernels)
	}
	if err := finite("--lambda", f.lambda); err != nil {
		return nil, err
	}
	if err := inRange("--lambda", f.lambda, dts); err != nil {
		return nil, err
	}
	if err := f.mesh.Check(); err != nil {
		return nil, registry.UsageError{Err: err}
	}
	var mesh *fem.Mesh
	if f.mesh.Given() {
		if mesh, err = meshfile.Load(f.mesh); err != nil {
			return nil, err
		}
	}
	var ps []family.Problem
	for _, k := range kernels {
		for _, n := range orders {
			for _, dt := range dts {
				p, err := tensor.New(k, n, f.lambda, dt)
				if err != nil {
					return nil, registry.UsageError{Err: err}
				}
				if mesh != nil {
					name := f.mesh.Gmsh
					if name == "" {
						name = f.mesh.Cells
					}
					if p, err = p.WithMesh(mesh, filepath.Base(name)); err != nil {
						return nil, err
					}
				}
				ps = append(ps, p)
			}
		}
	}
	return ps, nil
}

// GenInstance is the kernel for any batch: its size is an argument.
func (f *femFlags) GenInstance(p family.Problem, n int) (family.Instance, error) {
	if err := sizeAtRunTime("fem", n); err != nil {
		return nil, err
	}
	t, ok := p.(*tensor.Problem)
	if !ok {
		return nil, fmt.Errorf("fem: no instance for %T", p)
	}
	return t.Timed(1)
}
