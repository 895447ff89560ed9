package cli

import (
	"fmt"
	"io"
	"math"
	"regexp"
	"strings"

	"github.com/spf13/cobra"

	"github.com/bespoke-hpc/bespoke/fem"
	"github.com/bespoke-hpc/bespoke/fem/meshfile"
	"github.com/bespoke-hpc/bespoke/internal/paths"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/kernel/family/registry"
	"github.com/bespoke-hpc/bespoke/kernel/tensor"
	"github.com/bespoke-hpc/bespoke/operator/npy"
)

type femApplyOptions struct {
	kernel, mesh, backend, device, dtype, variant, in, out string
	meshFile                                               meshfile.Spec
	order                                                  int
	perturb, lambda                                        float64
}

// femCmd is `bespoke fem`: the tensor-product operators outside the bench
// (which serves them as --family fem).
func femCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "fem",
		Short: "Tensor-product FEM operators: apply one to an E-vector (bench, verify and gen take --family fem)",
	}
	c.AddCommand(femApplyCmd(), femBenchCmd(), femGenCmd())
	return c
}

// femGenCmd is gen with the tensor-product family preset: one operator's
// kernel source and launch metadata.
func femGenCmd() *cobra.Command {
	c := genCmd()
	c.Use = "gen"
	c.Short = "Write one tensor-product operator's kernel source and launch metadata"
	c.Example = `  bespoke fem gen --kernel bk5 --order 7 --variant slab-lit/e1 --backend cuda -o bk5.cu --meta bk5.json
  bespoke fem gen --kernel bk3 --order 4 --backend opencl --list`
	c.Args = cobra.NoArgs
	fl := c.Flags().Lookup("family")
	fl.DefValue, fl.Hidden = "fem", true
	if err := fl.Value.Set("fem"); err != nil {
		panic(err) // a known family name
	}
	for _, name := range registry.Foreign("fem", registry.Options{Gen: true}) {
		if f := c.Flags().Lookup(name); f != nil {
			f.Hidden = true
		}
	}
	c.Flags().Lookup("n").Usage = "with --best: the elements fem bench timed (its --n)"
	c.Flags().Lookup("variant").Usage = "kernel variant (see --list; default slab-lit/e1 for bk5, cube-lit/e1 for bk1 and bk3)"
	return c
}

// femBenchCmd is bench with the tensor-product family preset and the
// throughput columns of the CEED benchmarks.
func femBenchCmd() *cobra.Command {
	c := benchCmd()
	c.Use = "bench"
	c.Short = "Verify and time the BK operators per order and layout: GDOF/s, GB/s, GFLOP/s and % of the copy roof"
	c.Long = `fem bench times every layout of the chosen operators at each order, as bench
does for any family: each candidate verified first against the float64
reference at sampled elements, arrays rotated so that a launch touches the
working set (1 GiB on GPUs), the median of --reps launches, the copy roof
measured in the same run. Columns: GDOF/s counts E-vector nodes (elements ×
(N+1)³, shared nodes counted once per element) per second; GB/s and % roof
use the least traffic (BK5 9(N+1)³ values per element, BK1 2(N+1)³ + Q³, BK3
2(N+1)³ + 7Q³, Q = N+2), or, for the layouts that compute the geometry
(/tri from each element's 8 vertices, /aff from one affine map per element,
offered when the mesh allows them: --nodes/--cells of a Cartesian mesh for
/aff), u, v and those per-element values; GFLOP/s the fixed counts of the
CEED drivers.`
	c.Example = `  bespoke fem bench --kernel bk5 --order 1-15 --backend cuda --dtype f64 --json bk5.json --plot plots/
  bespoke fem bench --kernel bk1,bk3 --order 2-8 --backend c --reps 10`
	c.Args = cobra.NoArgs
	fl := c.Flags().Lookup("family")
	fl.DefValue, fl.Hidden = "fem", true
	if err := fl.Value.Set("fem"); err != nil {
		panic(err) // a known family name
	}
	for _, name := range registry.Foreign("fem", registry.Options{Suites: true}) {
		if f := c.Flags().Lookup(name); f != nil {
			f.Hidden = true
		}
	}
	// A full search by default: the cost model counts the layouts' shared
	// loads but not their registers, and ranked the pair layouts (up to
	// 244 registers) above slab-lit where they lose (a pruned search kept
	// the winner in 4 of 10 orders); with at most ~16
	// layouts per order the full search is cheap.
	pr := c.Flags().Lookup("prune")
	pr.DefValue = "0"
	if err := pr.Value.Set("0"); err != nil {
		panic(err) // a valid factor
	}
	var bp bpOptions
	var bpJSON string
	c.Flags().IntVar(&bp.iterations, "iterations", 100, "bp3, bp5: CG iterations timed per solve")
	c.Flags().Int64Var(&bp.dofs, "bp-dofs", 0, "bp3, bp5: E-vector nodes the cube mesh aims at (default 2^23 on GPUs, 2^20 on CPUs; the assembly must fit --max-memory, by default 8G)")
	c.Flags().StringVar(&bpJSON, "bp-json", "", "bp3, bp5: write the solves as JSON to this file")
	c.Flags().StringVar(&bp.variants, "bp-variant", "", "bp3, bp5: operator layouts to solve with, comma-separated, or all (default: those of 64–512 threads per block)")
	c.Flags().StringVar(&bp.scatters, "bp-scatter", "", "bp3, bp5: scatter-add methods to solve with, comma-separated: transpose (the default), atomic, fused (the operator reads p and adds into q through the index; its rows' variant ends in +fused)")
	c.Flags().Lookup("kernel").Usage = "operators, comma-separated: bk1, bk3, bk5 (one application per launch) and bp3, bp5 (CG solves on BK3's and BK5's operator)"
	timeOps := c.RunE
	c.RunE = func(cmd *cobra.Command, args []string) error {
		fs := cmd.Flags()
		kernels, _ := fs.GetString("kernel")
		ops, bps := splitBakeOffs(kernels)
		for _, name := range strings.Split(ops, ",") {
			if _, err := fem.ParseKernel(name); name != "" && err != nil {
				return usagef("--kernel %q: unknown operator %q (want bk1, bk3, bk5, bp3 or bp5)", kernels, name)
			}
		}
		if ops == "" && len(bps) == 0 {
			return usagef("--kernel %q names no operator", kernels)
		}
		// Both parts' outputs, and the solves' settings, are checked
		// before the operators are timed.
		var bo benchOptions
		bo.jsonOut, _ = fs.GetString("json")
		bo.csvOut, _ = fs.GetString("csv")
		bo.goOut, _ = fs.GetString("gobench")
		bo.mdOut, _ = fs.GetString("markdown")
		bo.plotDir, _ = fs.GetString("plot")
		if err := checkFiles(nil, append(bo.outputs(), outFile("--bp-json", bpJSON))); err != nil {
			return err
		}
		var pf problemFlags
		pf.dtypes, _ = fs.GetString("dtype")
		orderFlag, _ := fs.GetString("order")
		lambda, _ := fs.GetFloat64("lambda")
		bp.maxMemory = bpMaxMemory
		if mm, _ := fs.GetString("max-memory"); mm != "" && len(bps) > 0 {
			var err error
			if bp.maxMemory, err = parseBytes("--max-memory", mm); err != nil {
				return err
			}
			if bp.maxMemory < minMaxMemory {
				return usagef("--max-memory %q: want at least 1M", mm)
			}
		}
		// The solves' settings, checked before the operators are timed.
		var orders []int
		var dts []kernel.DType
		if len(bps) > 0 {
			var err error
			if orders, err = orderList(orderFlag, fem.MaxOrder); err != nil {
				return err
			}
			if dts, err = pf.dtypeList(); err != nil {
				return err
			}
			if err := checkBakeOffs(bps, orders, dts, lambda, bp); err != nil {
				return err
			}
		}
		if ops != "" {
			if err := fs.Set("kernel", ops); err != nil {
				return err
			}
			if err := timeOps(cmd, args); err != nil {
				return err
			}
		}
		if len(bps) == 0 {
			return nil
		}
		backend, _ := fs.GetString("backend")
		sel, _ := fs.GetString("device")
		in := interruptible(cmd, "stopping after this solve")
		defer in.release()
		dev, err := openDevice(backend, sel)
		if err != nil {
			return err
		}
		defer dev.Close()
		return runBakeOffs(cmd.OutOrStdout(), cmd.ErrOrStderr(), dev, bps, orders, dts, lambda, bp, bpJSON, in.stop)
	}
	return c
}

func femApplyCmd() *cobra.Command {
	var o femApplyOptions
	c := &cobra.Command{
		Use:   "apply",
		Short: "Apply an operator to an E-vector read from .npy and write the result as .npy",
		Long: `apply reads an E-vector — a float64 .npy of shape (E, (N+1)³), element e's GLL
nodes of degree N numbered ξ-fastest, then η, then ζ in its reference axes —
applies the operator with no boundary conditions, and writes the result in the
same layout. The mesh is the box [0,1]³ cut into NX×NY×NZ hexahedra (--mesh;
numbered x-fastest, then y, then z; interior vertices moved by --perturb), or
the user's hexahedra: --nodes X.npy (float64, (nodes, 3)) with --cells C.npy
(int, (E, 8), vertex order (0,0,0) (1,0,0) (1,1,0) (0,1,0) (0,0,1) (1,0,1)
(1,1,1) (0,1,1) of the reference cube, as Gmsh and VTK number them), or
--mesh-file M.msh (Gmsh 4.1 ASCII; 8-node hexahedra, or 27-node curved ones
mapped by their quadratic Lagrange map). The geometric factors are computed
from the mesh at the operator's quadrature points. --backend reference evaluates the
float64 formulas in Go; a device backend runs bespoke's kernel (--variant, in
--dtype, the result widened back to float64).`,
		Example: `  bespoke fem apply --kernel bk5 --order 3 --mesh 8x8x8 --lambda 1 --backend cuda --in u.npy --out v.npy
  bespoke fem apply --kernel bk1 --order 2 --mesh 4x4x4 --perturb 0.1 --backend reference --in u.npy --out v.npy
  bespoke fem apply --kernel bk5 --order 4 --mesh-file curved.msh --backend c --in u.npy --out v.npy
  bespoke fem apply --kernel bk3 --order 3 --nodes x.npy --cells c.npy --backend opencl --in u.npy --out v.npy`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runFEMApply(cmd.OutOrStdout(), o) },
	}
	f := c.Flags()
	f.StringVar(&o.kernel, "kernel", "bk5", "operator: bk1 (mass), bk3 (screened Poisson, Gauss points), bk5 (screened Poisson, GLL collocation)")
	f.IntVar(&o.order, "order", 3, fmt.Sprintf("polynomial degree N (1..%d)", fem.MaxOrder))
	f.StringVar(&o.mesh, "mesh", "", "the box's elements along x, y and z, e.g. 8x8x8")
	f.StringVar(&o.meshFile.Nodes, "nodes", "", "a mesh's vertices (.npy, float64, shape (nodes, 3)), with --cells")
	f.StringVar(&o.meshFile.Cells, "cells", "", "a mesh's hexahedra (.npy, int, shape (E, 8), Gmsh/VTK vertex order), with --nodes")
	f.StringVar(&o.meshFile.Gmsh, "mesh-file", "", "a Gmsh 4.1 ASCII mesh of 8- or 27-node hexahedra")
	f.Float64Var(&o.perturb, "perturb", 0, "interior vertices moved by this fraction of the element size (0 ≤ s < 0.3)")
	f.Float64Var(&o.lambda, "lambda", 1, "λ of the screened Poisson operators S + λM (bk1 ignores it; as fem bench)")
	f.StringVar(&o.backend, "backend", "reference", "reference (float64 in Go), or a device backend: auto, cuda, opencl, c")
	f.StringVar(&o.device, "device", "", "device within the backend (CUDA ordinal; OpenCL P:D or name)")
	f.StringVar(&o.dtype, "dtype", "f64", "precision of a device run: f32 or f64")
	f.StringVar(&o.variant, "variant", "", "kernel variant of a device run (default slab-lit/e1 for bk5, cube-lit/e1 for bk1 and bk3)")
	f.StringVar(&o.in, "in", "", "input E-vector (.npy)")
	f.StringVar(&o.out, "out", "", "output E-vector (.npy)")
	return c
}

var meshRE = regexp.MustCompile(`^(\d{1,6})x(\d{1,6})x(\d{1,6})$`)

// maxGeometry bounds the geometric factors apply computes (float64s: 1 GiB).
const maxGeometry = 1 << 27

func runFEMApply(w io.Writer, o femApplyOptions) error {
	k, err := fem.ParseKernel(o.kernel)
	if err != nil {
		return usageError{err}
	}
	if err := finite("--lambda", o.lambda); err != nil {
		return err
	}
	if o.in == "" || o.out == "" {
		return usagef("apply needs --in and --out")
	}
	ins := inputFiles("--in", o.in)
	for _, in := range [][2]string{{"--nodes", o.meshFile.Nodes}, {"--cells", o.meshFile.Cells}, {"--mesh-file", o.meshFile.Gmsh}} {
		if in[1] != "" {
			ins = append(ins, inputFiles(in[0], in[1])...)
		}
	}
	if err := checkFiles(ins, []paths.File{outFile("--out", o.out)}); err != nil {
		return err
	}
	mesh, meshName, err := femApplyMesh(o)
	if err != nil {
		return err
	}
	b, err := fem.NewBasis(k, o.order)
	if err != nil {
		return usageError{err}
	}
	rows, cols, u, err := npy.ReadMatrix(o.in)
	if err != nil {
		return err
	}
	p3 := b.P() * b.P() * b.P()
	if rows != mesh.Elements() || cols != p3 {
		return fmt.Errorf("%s: shape (%d, %d), want (%d, %d): %d elements of (N+1)³ = %d nodes", o.in, rows, cols, mesh.Elements(), p3, mesh.Elements(), p3)
	}
	if q := int64(b.Q()); int64(mesh.Elements())*int64(b.Factors())*q*q*q > maxGeometry {
		return fmt.Errorf("the mesh %s at N = %d needs %d MB of geometric factors (at most %d MB)", meshName, o.order,
			int64(mesh.Elements())*int64(b.Factors())*q*q*q*8>>20, maxGeometry*8>>20)
	}
	geo, err := mesh.Geometry(b)
	if err != nil {
		return err
	}
	var v []float64
	if o.backend == "reference" {
		if o.variant != "" || o.dtype != "f64" || o.device != "" {
			// Defaults are fine; anything set is meant for a device.
			return usagef("--backend reference runs the float64 formulas: --variant, --dtype and --device do not apply")
		}
		v, err = fem.Apply(b, geo, o.lambda, u)
	} else {
		v, err = applyOnDevice(o, k, b, geo, u, mesh)
	}
	if err != nil {
		return err
	}
	if err := fem.CheckFinite(v, p3); err != nil {
		return fmt.Errorf("%s not written: the result at %v: it overflows %s (the input or --lambda is too large)", o.out, err, o.dtype)
	}
	if err := paths.Write(o.out, func(w io.Writer) error { return npy.WriteMatrix(w, rows, cols, v) }); err != nil {
		return err
	}
	where := "float64 reference"
	if o.backend != "reference" {
		where = o.backend + " " + o.dtype
	}
	fmt.Fprintf(w, "%s: %s N=%d λ=%g on %d hexahedra (%s), %s\n", o.out, k, o.order, o.lambda, mesh.Elements(), meshName, where)
	return nil
}

// applyOnDevice runs the family's kernel once over the whole E-vector.
func applyOnDevice(o femApplyOptions, k fem.Kernel, b *fem.Basis, geo, u []float64, mesh *fem.Mesh) ([]float64, error) {
	dt, err := kernel.ParseDType(o.dtype)
	if err != nil {
		return nil, usageError{err}
	}
	if math.IsInf(dt.Rounded(o.lambda), 0) {
		return nil, usagef("--lambda %g is beyond the %s range (%.2g)", o.lambda, dt, dt.Max())
	}
	if err := dt.CheckRange(o.in, u); err != nil {
		return nil, err
	}
	p, err := tensor.New(k, o.order, o.lambda, dt)
	if err != nil {
		return nil, usageError{fmt.Errorf("%w (--backend reference evaluates every operator)", err)}
	}
	p3 := b.P() * b.P() * b.P()
	ne := len(u) / p3
	in, err := p.Timed(ne)
	if err != nil {
		return nil, usageError{err}
	}
	name := o.variant
	if name == "" {
		name = "cube-lit/e1"
		if k == fem.BK5 {
			name = "slab-lit/e1"
		}
	}
	c, err := in.Variant(name)
	if err != nil {
		return nil, usageError{err}
	}
	// A variant that computes the geometry reads the mesh's vertices or
	// affine maps, where the mesh allows them.
	var xv, ga []float64
	if g := c.(tensor.Variant).Geo; g != tensor.Stored {
		xv, ga = tensor.MeshInputs(mesh, k)
		if p, err = p.WithMesh(mesh, ""); err != nil {
			return nil, err
		}
		if in, err = p.Timed(ne); err != nil {
			return nil, usageError{err}
		}
	}
	if err := in.Check(c); err != nil {
		return nil, usageError{err}
	}
	kern, err := in.Build(c)
	if err != nil {
		return nil, err
	}
	out := make([]float64, len(u))
	for i := range out {
		out[i] = math.NaN()
	}
	data := &family.Data{
		Arrays: map[string]*family.Array{
			"u":   {Type: kernel.Real, Init: u},
			"geo": {Type: kernel.Real, Init: geo},
			"v":   {Type: kernel.Real, Init: out, Want: out},
		},
		Values: map[string]int64{tensor.Elements: int64(ne)},
	}
	for name, c := range p.Constants() {
		data.Arrays[name] = &family.Array{Type: kernel.Real, Init: c}
	}
	for name, x := range map[string][]float64{"xv": xv, "ga": ga} {
		if x != nil {
			data.Arrays[name] = &family.Array{Type: kernel.Real, Init: x}
		}
	}
	got, _, err := launchOnce(o.backend, o.device, kern, data)
	if err != nil {
		return nil, err
	}
	return got["v"], nil
}
