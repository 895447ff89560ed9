package cli

import (
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/bespoke-hpc/bespoke/element"
	"github.com/bespoke-hpc/bespoke/fem"
	"github.com/bespoke-hpc/bespoke/fem/meshfile"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/contract"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/kernel/integrate"
	"github.com/bespoke-hpc/bespoke/kernel/sparse"
	"github.com/bespoke-hpc/bespoke/kernel/tensor"
	"github.com/bespoke-hpc/bespoke/operator"
	"github.com/bespoke-hpc/bespoke/operator/load"
)

// The kernel families the commands serve: each turns the command's
// arguments and its own flags into problems; verify, gen and bench do the
// rest through kernel/family.
const (
	familySparse    = "sparse"    // C ← α·A·B + β·C with a constant operator A
	familyContract  = "contract"  // y ← D·x along one axis of a batch of Q³ arrays
	familyFEM       = "fem"       // tensor-product FEM operators (BK5 so far), E-vector → E-vector
	familyIntegrate = "integrate" // element matrices of low-order elements (kernel/integrate)
)

var familyNames = []string{familySparse, familyContract, familyFEM, familyIntegrate}

// problemFlags are the flags that say which problems a command works on.
// Each family reads its own and rejects the others'.
type problemFlags struct {
	family string
	dtypes string
	set    *pflag.FlagSet
	owner  map[string]string // flag → the family that reads it
	// sparse
	suite, only, betas string
	alpha              float64
	maxNNZ             int
	sources            []string // the operator files read, which no output may overwrite
	// contract, fem
	orders, axes string
	// fem
	kernels string
	lambda  float64
	mesh    meshfile.Spec
	// integrate
	elements, ops            string
	symmetric, upper, em, ld bool
}

// register adds the flags; manyDTypes lets --dtype take a list.
func (f *problemFlags) register(fs *pflag.FlagSet, manyDTypes bool, suite bool) {
	f.set = fs
	f.owner = map[string]string{"beta": familySparse, "alpha": familySparse, "suite": familySparse, "only": familySparse,
		"max-nnz": familySparse, "order": familyContract + "," + familyFEM, "axis": familyContract,
		"kernel": familyFEM, "lambda": familyFEM, "nodes": familyFEM, "cells": familyFEM, "mesh-file": familyFEM,
		"element": familyIntegrate, "problem": familyIntegrate, "symmetric": familyIntegrate, "upper": familyIntegrate,
		"element-major": familyIntegrate, "load": familyIntegrate}
	fs.StringVar(&f.family, "family", familySparse, "kernel family: "+strings.Join(familyNames, ", "))
	if manyDTypes {
		fs.StringVar(&f.dtypes, "dtype", "f32,f64", "precisions, comma-separated")
		fs.StringVar(&f.betas, "beta", "pyfr", "sparse: β values, comma-separated, or pyfr (1 for m3/m6, else 0)")
	} else {
		fs.StringVar(&f.dtypes, "dtype", "f64", "precision: f32 or f64")
		fs.StringVar(&f.betas, "beta", "pyfr", "sparse: β, a number, or pyfr (1 for m3/m6, else 0)")
	}
	fs.Float64Var(&f.alpha, "alpha", 1, "sparse: α, folded into the literals")
	fs.IntVar(&f.maxNNZ, "max-nnz", sparse.DefaultMaxNNZ, "sparse: the most non-zeros a kernel unrolls")
	fs.StringVar(&f.orders, "order", "3", "contract, fem: polynomial orders N (Q = N+1 points per axis), e.g. 1-7 or 2,4")
	fs.StringVar(&f.kernels, "kernel", "bk5", "fem: operators, comma-separated: bk1 (mass), bk3 (screened Poisson, Gauss points), bk5 (screened Poisson, GLL collocation)")
	fs.Float64Var(&f.lambda, "lambda", 1, "fem: λ of the screened Poisson operator S + λM")
	fs.StringVar(&f.mesh.Nodes, "nodes", "", "fem: check the kernels on this mesh's geometry: vertices (.npy, float64 (nodes, 3)), with --cells")
	fs.StringVar(&f.mesh.Cells, "cells", "", "fem: the mesh's hexahedra (.npy, int (E, 8), Gmsh/VTK vertex order), with --nodes")
	fs.StringVar(&f.mesh.Gmsh, "mesh-file", "", "fem: check the kernels on this Gmsh 4.1 mesh's geometry (8- or 27-node hexahedra)")
	fs.StringVar(&f.axes, "axis", "x,y,z", "contract: axes to apply D along, comma-separated")
	fs.StringVar(&f.elements, "element", "prism", "integrate: element kinds, comma-separated: tet, prism, hex")
	fs.StringVar(&f.ops, "problem", "laplace", "integrate: coefficient patterns, comma-separated: laplace, mass, cdr")
	fs.BoolVar(&f.symmetric, "symmetric", false, "integrate: symmetric CDR coefficient blocks")
	fs.BoolVar(&f.upper, "upper", false, "integrate: store the upper triangle only (symmetric problems)")
	fs.BoolVar(&f.em, "element-major", false, "integrate: element-major output (e·n + i) instead of entry-major (i·E + e)")
	fs.BoolVar(&f.ld, "load", false, "integrate: the load vector too")
	if suite {
		fs.StringVar(&f.suite, "suite", "", "sparse: built-in operator sets, e.g. hex:p1-6,quad:p3 (default "+DefaultSuite+" when no files are given)")
		fs.StringVar(&f.only, "only", "", "sparse: keep operators whose names match one of these comma-separated globs, e.g. 'p*/quad/*,p*/hex/*'")
	}
}

// dtypeList parses --dtype.
func (f *problemFlags) dtypeList() ([]kernel.DType, error) {
	dts, err := parseList(f.dtypes, kernel.ParseDType)
	if err != nil {
		return nil, err
	}
	if len(dts) == 0 {
		return nil, usagef("--dtype %q names no precision", f.dtypes)
	}
	return dts, nil
}

// foreign rejects flags of other families that were set.
func (f *problemFlags) foreign() error {
	var bad []string
	f.set.Visit(func(fl *pflag.Flag) {
		if fams, ok := f.owner[fl.Name]; ok && !contains(strings.Split(fams, ","), f.family) {
			bad = append(bad, "--"+fl.Name)
		}
	})
	if len(bad) > 0 {
		return usagef("%s: not a flag of the %s family", strings.Join(bad, ", "), f.family)
	}
	return nil
}

func isFamily(s string) bool { return contains(familyNames, s) }

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// problems turns the arguments into the family's problems, one per
// operator (or order …), precision and β.
func (f *problemFlags) problems(args []string) ([]family.Problem, error) {
	if !isFamily(f.family) {
		return nil, usagef("unknown family %q (want %s)", f.family, strings.Join(familyNames, ", "))
	}
	if err := f.foreign(); err != nil {
		return nil, err
	}
	dts, err := f.dtypeList()
	if err != nil {
		return nil, err
	}
	switch f.family {
	case familyContract:
		return f.contractProblems(args, dts)
	case familyFEM:
		return f.femProblems(args, dts)
	case familyIntegrate:
		return f.integrateProblems(args, dts)
	}
	ops, err := loadOperators(args, f.suite)
	if err != nil {
		return nil, err
	}
	f.sources = f.sources[:0]
	for _, op := range ops {
		if op.Source != "" {
			f.sources = append(f.sources, op.Source)
		}
	}
	if ops, err = filterOperators(ops, f.only); err != nil {
		return nil, err
	}
	if err := finite("--alpha", f.alpha); err != nil {
		return nil, err
	}
	if err := inRange("--alpha", f.alpha, dts); err != nil {
		return nil, err
	}
	if f.maxNNZ < 1 {
		return nil, usagef("--max-nnz %d: want at least 1", f.maxNNZ)
	}
	var ps []family.Problem
	for _, op := range ops {
		betas, err := f.betasFor(op)
		if err != nil {
			return nil, err
		}
		for _, b := range betas {
			if err := inRange("--beta", b, dts); err != nil {
				return nil, err
			}
		}
		for _, dt := range dts {
			for _, beta := range betas {
				ps = append(ps, sparse.NewOperator(op, dt, f.alpha, beta).WithMaxNNZ(f.maxNNZ))
			}
		}
	}
	return ps, nil
}

// betasFor parses --beta for one operator: pyfr, or a list of numbers.
func (f *problemFlags) betasFor(op *operator.Operator) ([]float64, error) {
	if f.betas == "pyfr" {
		return []float64{load.PyFRBeta(op.Name)}, nil
	}
	bs, err := parseList(f.betas, func(s string) (float64, error) {
		b, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return 0, fmt.Errorf("--beta %q: want numbers or pyfr", s)
		}
		return b, finite("--beta", b)
	})
	if err != nil {
		return nil, err
	}
	if len(bs) == 0 {
		return nil, usagef("--beta %q names no value", f.betas)
	}
	return bs, nil
}

// finite rejects NaN and infinities.
func finite(flag string, x float64) error {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return usagef("%s %v: want a finite number", flag, x)
	}
	return nil
}

// inRange refuses a value some precision of the run cannot hold: its
// kernels would compute with an infinity.
func inRange(flag string, x float64, dts []kernel.DType) error {
	for _, dt := range dts {
		if math.IsInf(dt.Rounded(x), 0) {
			return usagef("%s %g is beyond the %s range (%.2g)", flag, x, dt, dt.Max())
		}
	}
	return nil
}

// genInstance is the instance gen writes a kernel for: for the sparse
// family, n, ldb and ldc baked in where given (0: kernel arguments); the
// contraction family's kernels take the batch size at run time.
func (f *problemFlags) genInstance(p family.Problem, n, ldb, ldc int) (family.Instance, error) {
	if c, ok := p.(*contract.Problem); ok {
		return c.Timed(1)
	}
	if t, ok := p.(*tensor.Problem); ok {
		return t.Timed(1)
	}
	if ip, ok := p.(*integrate.Problem); ok {
		// The batch is a kernel argument; only 64-bit indexing depends
		// on it (it keeps 32-bit indices up to 2²⁵ elements), and
		// streaming variants ask for one work-group's worth at least.
		in, err := ip.Instance(1 << 20)
		if err != nil {
			return nil, err
		}
		if f.set != nil && f.set.Lookup("variant") != nil && !f.set.Changed("variant") {
			return integrateGen{in}, nil
		}
		return in, nil
	}
	op, ok := p.(sparse.Operator)
	if !ok {
		return nil, fmt.Errorf("gen: no instance for %T", p)
	}
	if n < 0 || ldb < 0 || ldc < 0 {
		return nil, usagef("--n, --ldb and --ldc must not be negative")
	}
	if n > 0 && ((ldb > 0 && ldb < n) || (ldc > 0 && ldc < n)) {
		return nil, usagef("--ldb=%d and --ldc=%d must be at least --n=%d", ldb, ldc, n)
	}
	// The panels' shape: what is baked, else the least that fits it.
	shape := max(n, 1)
	wide := func(ld int) int {
		if ld > 0 {
			return ld
		}
		return shape
	}
	pb := op.Spec()
	pb.N, pb.LDB, pb.LDC = n, ldb, ldc
	return &sparse.Instance{Problem: pb, N: shape, LDB: wide(ldb), LDC: wide(ldc)}, nil
}

// integrateGen is an integrate instance for gen without --variant: gen's
// default (a sparse variant's name) stands for w64/e1, which every device
// runs.
type integrateGen struct{ *integrate.Instance }

func (g integrateGen) Variant(string) (family.Candidate, error) {
	return integrate.Variant{WG: 64, EPT: 1}, nil
}

// contractProblems are the derivative contractions of each order, axis and
// precision; the family takes no files.
func (f *problemFlags) contractProblems(args []string, dts []kernel.DType) ([]family.Problem, error) {
	if len(args) > 0 {
		return nil, usagef("the contract family takes no files (got %s); choose it with --order and --axis", strings.Join(args, " "))
	}
	orders, err := f.orderList(contract.MaxQ - 1)
	if err != nil {
		return nil, err
	}
	axes, err := parseList(f.axes, contract.ParseAxis)
	if err != nil {
		return nil, err
	}
	if len(axes) == 0 {
		return nil, usagef("--axis %q names no axis", f.axes)
	}
	var ps []family.Problem
	for _, n := range orders {
		for _, a := range axes {
			for _, dt := range dts {
				p, err := contract.Derivative(n+1, a, dt)
				if err != nil {
					return nil, err
				}
				ps = append(ps, p)
			}
		}
	}
	return ps, nil
}

// orderList parses --order, each order at most maxOrder.
func (f *problemFlags) orderList(maxOrder int) ([]int, error) {
	var orders []int
	for _, part := range strings.Split(f.orders, ",") {
		lo, hi, err := orderRange(strings.TrimSpace(part), maxOrder)
		if err != nil {
			return nil, usagef("--order %q: %v", f.orders, err)
		}
		if hi > maxOrder {
			return nil, usagef("--order %q: at most %d", f.orders, maxOrder)
		}
		for n := lo; n <= hi; n++ {
			orders = append(orders, n)
		}
	}
	return orders, nil
}

// femProblems are the operators of each order and precision; the family
// takes no files.
func (f *problemFlags) femProblems(args []string, dts []kernel.DType) ([]family.Problem, error) {
	if len(args) > 0 {
		return nil, usagef("the fem family takes no files (got %s); choose it with --kernel and --order", strings.Join(args, " "))
	}
	orders, err := f.orderList(fem.MaxOrder)
	if err != nil {
		return nil, err
	}
	kernels, err := parseList(f.kernels, fem.ParseKernel)
	if err != nil {
		return nil, usageError{err}
	}
	if len(kernels) == 0 {
		return nil, usagef("--kernel %q names no operator", f.kernels)
	}
	if err := finite("--lambda", f.lambda); err != nil {
		return nil, err
	}
	if err := inRange("--lambda", f.lambda, dts); err != nil {
		return nil, err
	}
	if err := f.mesh.Check(); err != nil {
		return nil, usageError{err}
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
					return nil, usageError{err}
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

// integrateProblems are the element matrices of each element kind,
// coefficient pattern and precision, in the format the flags ask for; the
// family takes no files.
func (f *problemFlags) integrateProblems(args []string, dts []kernel.DType) ([]family.Problem, error) {
	if len(args) > 0 {
		return nil, usagef("the integrate family takes no files (got %s); choose it with --element and --problem", strings.Join(args, " "))
	}
	kinds, err := parseList(f.elements, element.ParseKind)
	if err != nil {
		return nil, usageError{err}
	}
	ops, err := parseList(f.ops, element.ParseProblem)
	if err != nil {
		return nil, usageError{err}
	}
	switch {
	case len(kinds) == 0:
		return nil, usagef("--element %q names no element (want tet, prism, hex)", f.elements)
	case len(ops) == 0:
		return nil, usagef("--problem %q names no problem (want laplace, mass, cdr)", f.ops)
	}
	o := integrate.Options{Symmetric: f.symmetric, Upper: f.upper, ElemMajor: f.em, Load: f.ld}
	var ps []family.Problem
	for _, k := range kinds {
		for _, op := range ops {
			for _, dt := range dts {
				p, err := integrate.New(k, op, dt, o)
				if err != nil {
					return nil, usageError{err}
				}
				ps = append(ps, p)
			}
		}
	}
	return ps, nil
}

// checkSize is the size verify checks at when --n is not given.
func (f *problemFlags) checkSize() int {
	if f.family == familyIntegrate {
		return 301 // elements: past a block of every variant, the last one partly full
	}
	if f.family == familyContract || f.family == familyFEM {
		return 37 // elements: a few blocks of every variant, none full at the end
	}
	return 1001 // columns: one past a multiple of every block
}

// benchSizes are the sizes bench times at unless --n says otherwise: the
// least, the launch bytes it is raised to reach, and the most.
func (f *problemFlags) benchSizes(gpu bool) (units int, minBytes int64, maxUnits int) {
	switch {
	case (f.family == familyContract || f.family == familyFEM) && gpu:
		return 1024, 1 << 30, 1 << 24
	case f.family == familyContract || f.family == familyFEM:
		return 1024, 256 << 20, 1 << 24
	case f.family == familyIntegrate && gpu:
		return integrateGPUElements, 0, 0
	case f.family == familyIntegrate:
		return integrateCPUElements, 0, 0
	case gpu:
		// Small operators get more columns, until a launch moves 1 GiB
		// as the roof's does, up to 2²⁵: PyFR runs 10⁵–10⁷ columns, and
		// a GPU of 80 GB filled with a p1 mesh about 3·10⁷. At 2²³ the
		// smallest fp32 operators moved 0.3–0.5 GiB a launch and lost up
		// to 9 points of the roof to the launch's ramp and tail
		// (docs/rationale.md#launch-size).
		return 1 << 20, 1 << 30, 1 << 25
	}
	return 262144, 0, 0
}

// parseBytes reads a memory size: bytes, or a number with K, M, G or T
// (powers of 1024; "GiB" and "GB" read alike).
func parseBytes(flag, s string) (int64, error) {
	t := strings.TrimSuffix(strings.TrimSuffix(strings.ToUpper(strings.TrimSpace(s)), "B"), "I")
	mult := int64(1)
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'K':
			mult, t = 1<<10, t[:n-1]
		case 'M':
			mult, t = 1<<20, t[:n-1]
		case 'G':
			mult, t = 1<<30, t[:n-1]
		case 'T':
			mult, t = 1<<40, t[:n-1]
		}
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
	if err != nil || math.IsNaN(v) || v <= 0 || v*float64(mult) > math.MaxInt64/2 {
		return 0, usagef("%s %q: want a positive size such as 512M or 4G", flag, s)
	}
	return int64(v * float64(mult)), nil
}
