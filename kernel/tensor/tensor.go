// Package tensor is the family of sum-factorised tensor-product operators
// of continuous high-order FEM on hexahedra (package fem sets them up and
// holds their float64 reference): CEED's BK1 (mass), BK3 (screened
// Poisson, Gauss over-integration) and BK5 (screened Poisson, GLL
// collocation), each an E-vector → E-vector kernel.
//
// BK1 and BK3 hold the whole element in shared memory (buildCube). The
// BK5 kernel is the 2-D thread slab of Świrydowicz et al.: a block holds
// (N+1)×(N+1) threads per element, thread (i, j) owning the pencil of
// nodes (i, j, ·) in registers; a loop over the layers k stages layer k in
// shared memory, forms the reference gradient (r and s through the slab,
// t from the pencil), applies the seven geometric factors, and adds the
// transposed derivatives back — r and s through two shared slabs, t
// straight into the pencil of results. Two barriers per layer; D is staged
// in shared memory (padded rows) once per block; λ is baked in.
package tensor

import (
	"fmt"
	"maps"
	"math"
	"math/bits"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/bespoke-hpc/bespoke/fem"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
)

// Elements is the launch size: elements in the batch.
const Elements = "elements"

// Problem is one operator at one order in one precision.
type Problem struct {
	Kernel fem.Kernel
	N      int
	Lambda float64
	Prec   kernel.DType
	basis  *fem.Basis
	b      []float64 // BK1, BK3: interpolation to the Gauss points, Q×(N+1) row-major
	d      []float64 // BK5: the GLL derivative (N+1)²; BK3: the point derivative Q²; row-major
	// meshGeo, when set (WithMesh), is the factors of a user's mesh, which
	// the checks cycle through in place of the built-in perturbed box.
	meshGeo  []float64
	meshName string
	// mesh is the checks' mesh (nil: the built-in perturbed box), geos
	// the computed geometry sources it allows.
	mesh *fem.Mesh
	geos []Geometry
}

// WithMesh checks the problem's kernels on the geometric factors of mesh m
// (named name in labels) instead of the built-in perturbed box. Timing
// does not change: stored factors cost the same whatever their values.
func (p *Problem) WithMesh(m *fem.Mesh, name string) (*Problem, error) {
	geo, err := m.Geometry(p.basis)
	if err != nil {
		return nil, err
	}
	q := *p
	q.meshGeo, q.meshName, q.mesh = geo, name, m
	q.geos = sources(m)
	return &q, nil
}

// sources are the computed geometry sources mesh m allows.
func sources(m *fem.Mesh) []Geometry {
	var out []Geometry
	if m.Trilinear() {
		out = append(out, Trilinear)
		if m.Affine() {
			out = append(out, Affine)
		}
		if m.AxisAligned() {
			out = append(out, Box)
		}
	}
	return out
}

// Geometries are the sources of the geometric factors the problem's mesh
// allows: Stored always, Trilinear where every element is trilinear,
// Affine where every one is a parallelepiped, Box where every one is a box
// along the axes.
func (p *Problem) Geometries() []Geometry { return append([]Geometry{Stored}, p.geos...) }

var _ family.Problem = (*Problem)(nil)

// New sets up the problem.
func New(k fem.Kernel, n int, lambda float64, dt kernel.DType) (*Problem, error) {
	if math.IsNaN(lambda) || math.IsInf(lambda, 0) {
		return nil, fmt.Errorf("tensor: λ = %g: want a finite number", lambda)
	}
	b, err := fem.NewBasis(k, n)
	if err != nil {
		return nil, err
	}
	// The built-in checks' mesh is a perturbed box: trilinear.
	p := &Problem{Kernel: k, N: n, Lambda: lambda, Prec: dt, basis: b, geos: []Geometry{Trilinear}}
	flat := func(m [][]float64) (out []float64) {
		for _, row := range m {
			out = append(out, row...)
		}
		return out
	}
	switch k {
	case fem.BK5:
		p.d = flat(b.G)
	case fem.BK3:
		dq, err := b.PointDerivative()
		if err != nil {
			return nil, err
		}
		p.b, p.d = flat(b.B), flat(dq)
	default:
		p.b = flat(b.B)
	}
	return p, nil
}

// Name is e.g. "bk5/n3".
func (p *Problem) Name() string { return fmt.Sprintf("%s/n%d", p.Kernel, p.N) }

// on names the checks' mesh, if it is a user's.
func (p *Problem) on() string {
	if p.meshName != "" {
		return " " + p.meshName
	}
	return ""
}

// Label adds λ (but for the mass operator) and the precision.
func (p *Problem) Label() string {
	on := ""
	if p.meshName != "" {
		on = " on " + p.meshName
	}
	if p.Kernel == fem.BK1 {
		return fmt.Sprintf("%s %s%s", p.Name(), p.Prec, on)
	}
	return fmt.Sprintf("%s λ=%g %s%s", p.Name(), p.Lambda, p.Prec, on)
}

// DType is the precision.
func (p *Problem) DType() kernel.DType { return p.Prec }

// nodes is (N+1)³.
func (p *Problem) nodes() int { n := p.N + 1; return n * n * n }

// factors is the number of geometric factors per element: F per point.
func (p *Problem) factors() int { q := p.basis.Q(); return p.basis.Factors() * q * q * q }

// UnitBytes is the least traffic of one element: u and the factors read,
// v written (the 1-D matrices are negligible): 9(N+1)³ values for BK5,
// 2(N+1)³ + Q³ for BK1, 2(N+1)³ + 7Q³ for BK3.
func (p *Problem) UnitBytes() int64 {
	return int64(2*p.nodes()+p.factors()) * int64(p.Prec.Bytes())
}

// ArrayBytes is what one copy of the bench's arrays takes at units
// elements: each array is read or written once, so the least traffic.
func (p *Problem) ArrayBytes(units int) int64 { return int64(units) * p.UnitBytes() }

// Flops per element by the fixed formulas of the CEED benchmark drivers
// (n = N+1, m = Q, a multiply-add counted as two): BK5 12n⁴ + 15n³; BK1
// 4(mn³ + m²n² + m³n) + m³; BK3 the same interpolation and projection
// plus 12m⁴ + 19m³ on the points.
func (p *Problem) Flops() int64 {
	n, m := int64(p.N+1), int64(p.basis.Q())
	interp := 4 * (m*n*n*n + m*m*n*n + m*m*m*n)
	switch p.Kernel {
	case fem.BK1:
		return interp + m*m*m
	case fem.BK3:
		return interp + 12*m*m*m*m + 19*m*m*m
	}
	return 12*n*n*n*n + 15*n*n*n
}

// Checks returns the one instance at the given number of elements.
func (p *Problem) Checks(elements int) ([]family.Instance, error) {
	in, err := p.Timed(elements)
	if err != nil {
		return nil, err
	}
	return []family.Instance{in}, nil
}

// MaxElements bounds a batch.
const MaxElements = fem.MaxElements

// Timed returns the instance at the given number of elements.
func (p *Problem) Timed(elements int) (family.Instance, error) {
	if elements < 1 || elements > MaxElements {
		return nil, fmt.Errorf("tensor: %d elements (want 1..%d)", elements, MaxElements)
	}
	return &Instance{Problem: p, E: elements}, nil
}

// Instance is a Problem over a batch of E elements.
type Instance struct {
	*Problem
	E int
}

var _ family.Instance = (*Instance)(nil)

// Name is the problem and the batch.
func (in *Instance) Name() string { return fmt.Sprintf("%s %s E=%d", in.Problem.Name(), in.Prec, in.E) }

// Variant is a layout: for BK5 Kind "slab" (a loop over layers, D from
// shared memory) or "slab-lit" (layers written out, D's entries along t
// as literals); for BK1 and BK3 "cube" (the element in shared memory, B
// from shared memory) or "cube-lit" (B's entries, and D̃'s along t, as
// literals); the layouts of pair.go ("pair" for BK5, "cube-fold" and
// "cube-pair" for BK1 and BK3); PerBlock elements per block.
//
// Geo is where the kernel gets the geometric factors (geom.go): stored,
// or computed from the element's vertices ("/tri") or affine map
// ("/aff").
type Variant struct {
	Kind     string
	PerBlock int
	Literal  bool // Kind ends in "-lit"
	Geo      Geometry
	// RowMajor ("/rm"), for the cube layouts: s row-major and the
	// threads' pencils as written, not padCube's choice by the bank
	// model (cubepad.go), which the tuner then measures against it.
	RowMajor bool
}

// Name is e.g. "slab/e2", or "slab/e2/tri" with the factors computed.
func (v Variant) Name() string {
	s := fmt.Sprintf("%s/e%d", v.Kind, v.PerBlock)
	if v.RowMajor {
		s += "/rm"
	}
	if v.Geo != Stored {
		s += "/" + geoSuffix[v.Geo]
	}
	return s
}

var variantRE = regexp.MustCompile(`^((?:slab|cube)(?:-lit)?|cpu|cpu-vec|pair|cube-fold|cube-pair|slab2|cube-fold2|pair-cap)(?:/e(\d+))?(/rm)?(?:/(tri|aff|box))?$`)

// ParseVariant reads a name as Name prints it.
func ParseVariant(s string) (Variant, error) {
	m := variantRE.FindStringSubmatch(s)
	if m == nil {
		return Variant{}, fmt.Errorf("tensor: unknown variant %q (want slab/eE, slab-lit/eE, slab2/eE, pair/eE or pair-cap/eE for bk5, cube/eE, cube-lit/eE, cube-fold/eE or cube-pair/eE for bk1 and bk3, cube-fold2/eE for bk3, cpu/e1, cpu-vec/e4 or cpu-vec/e8 for any; /rm after a cube layout keeps its shared memory row-major; /tri, /aff or /box after it computes the geometry)", s)
	}
	v := Variant{Kind: m[1], PerBlock: 1, Literal: strings.HasSuffix(m[1], "-lit"), RowMajor: m[3] != ""}
	if m[4] != "" {
		v.Geo, _ = ParseGeometry(m[4])
	}
	if m[2] != "" {
		var err error
		if v.PerBlock, err = strconv.Atoi(m[2]); err != nil {
			return Variant{}, fmt.Errorf("tensor: variant %q: elements per block out of range", s)
		}
	}
	return v, nil
}

// kinds are the layouts of an operator: its GPU layouts, then the CPU
// ones (cpu.go).
func (p *Problem) kinds() []string {
	if p.Kernel == fem.BK5 {
		return append([]string{"slab", "slab-lit", pairKind, slab2Kind, pairCapKind}, cpuKinds...)
	}
	if p.Kernel == fem.BK3 {
		return append([]string{"cube", "cube-lit", cubeFoldKind, cubePairKind, cubeFold2Kind}, cpuKinds...)
	}
	return append([]string{"cube", "cube-lit", cubeFoldKind, cubePairKind}, cpuKinds...)
}

// side is the threads per block along x and y: the points per direction.
func (p *Problem) side() int { return p.basis.Q() }

// Candidates are, on GPUs, both GPU layouts with 1, 2, 4 … 32 elements
// per block, as many as fit a block (1024 threads, 48 KiB of shared
// memory) and are needed to reach 256 threads; elsewhere the CPU
// layouts (one element per work-item).
func (in *Instance) Candidates(t family.Target) []family.Candidate {
	var out []family.Candidate
	if !t.GPU {
		for _, kind := range cpuKinds {
			for _, e := range cpuPerBlock(kind) {
				out = append(out, in.withGeometries(Variant{Kind: kind, PerBlock: e})...)
			}
		}
		return out
	}
	for _, kind := range in.kinds() {
		if isCPU(kind) || !offered2(in.Kernel, kind, in.N) || !offered3(in.Kernel, kind, in.N, t) {
			continue
		}
		for _, e := range []int{1, 2, 4, 8, 16, 32} {
			v := Variant{Kind: kind, PerBlock: e, Literal: strings.HasSuffix(kind, "-lit")}
			if in.check(v) != nil {
				continue
			}
			if n := in.side(); e > 1 && n*in.threadsY(v)*(e/2) >= 256 {
				continue // the block is full enough with fewer
			}
			out = append(out, in.withGeometries(v)...)
			if t.CUDAArch > 0 && isCubeKind(kind) {
				// Where the tuner measures on a GPU: the row-major
				// twin of padCube's layout, whose bank model counts
				// shared memory only (docs/rationale.md#cube-banks).
				w := v
				w.RowMajor = true
				out = append(out, w)
			}
		}
	}
	return out
}

// isCubeKind reports whether kind is a cube layout (s laid out by padCube).
func isCubeKind(kind string) bool {
	switch kind {
	case "cube", "cube-lit", cubeFoldKind, cubePairKind, cubeFold2Kind:
		return true
	}
	return false
}

// takesGeometry says whether layout kind computes geometry g: the
// balance layouts (balance.go) load a layer's stored factors a layer
// early, and the vectorised CPU layout, which stages stored factors in
// lane order, computes affine ones (each lane's per-element values times
// the point's weight) and trilinear ones (from each lane's coefficients
// of its element's map). Box drops terms in the CPU layouts' point stage
// (applyFactors) alone.
func takesGeometry(kind string, g Geometry) bool {
	switch {
	case g == Stored:
		return true
	case g == Box: // its savings are in the CPU layouts' point stage
		return isCPU(kind)
	case kind == cpuVecKind:
		return g == Affine || g == Trilinear
	}
	return !(kind == slab2Kind || kind == cubeFold2Kind || kind == pairCapKind)
}

// withGeometries is v with stored factors, then with each source the
// mesh allows.
func (in *Instance) withGeometries(v Variant) []family.Candidate {
	out := []family.Candidate{v}
	for _, g := range in.geos {
		if !takesGeometry(v.Kind, g) || (g == Box && in.basis.Factors() == 1) {
			continue
		}
		w := v
		w.Geo = g
		out = append(out, w)
	}
	return out
}

// Variant parses a variant name.
func (in *Instance) Variant(name string) (family.Candidate, error) { return ParseVariant(name) }

// Check reports why a variant does not apply.
func (in *Instance) Check(c family.Candidate) error {
	v, ok := c.(Variant)
	if !ok {
		return fmt.Errorf("tensor: %T is not a tensor variant", c)
	}
	return in.check(v)
}

// MaxShared is the static shared memory a block may declare (CUDA's
// limit without opting in to more).
const MaxShared = 48 << 10

func (in *Instance) check(v Variant) error {
	n := in.side()
	switch {
	case !slices.Contains(in.kinds(), v.Kind) || v.Literal != strings.HasSuffix(v.Kind, "-lit"):
		return fmt.Errorf("tensor: %s has no layout %q (it has %s)", in.Kernel, v.Kind, strings.Join(in.kinds(), ", "))
	case v.Geo != Stored && !slices.Contains(in.geos, v.Geo):
		return fmt.Errorf("tensor: %s: the mesh%s is not %s (curved, or not made of parallelepipeds): its geometric factors are stored", v.Name(), in.on(), v.Geo)
	case v.RowMajor && !isCubeKind(v.Kind):
		return fmt.Errorf("tensor: %s: /rm is for the cube layouts", v.Name())
	case !takesGeometry(v.Kind, v.Geo):
		return fmt.Errorf("tensor: %s: the %s layout does not compute %s geometry", v.Name(), v.Kind, v.Geo)
	case v.Geo == Box && in.basis.Factors() == 1:
		return fmt.Errorf("tensor: %s: the mass operator's box geometry is its affine one (/aff)", v.Name())
	case isCPU(v.Kind) && !slices.Contains(cpuPerBlock(v.Kind), v.PerBlock):
		return fmt.Errorf("tensor: %s: the %s layout runs %v elements per work-item", v.Name(), v.Kind, cpuPerBlock(v.Kind))
	case isCPU(v.Kind):
		return nil
	case v.PerBlock < 1 || v.PerBlock > kernel.MaxThreads || n*in.threadsY(v)*v.PerBlock > kernel.MaxThreads: // bounded before the product overflows
		return fmt.Errorf("tensor: %s: %d elements of %d×%d threads do not fit a block of %d", v.Name(), v.PerBlock, n, in.threadsY(v), kernel.MaxThreads)
	}
	if err := in.check2(v); err != nil {
		return err
	}
	if err := in.check3(v); err != nil {
		return err
	}
	if b := in.sharedBytes(v); b > MaxShared {
		return fmt.Errorf("tensor: %s: %d elements need %d bytes of shared memory (at most %d)", v.Name(), v.PerBlock, b, MaxShared)
	}
	return nil
}

// sharedBytes is what a variant's block declares, the cube layouts' s
// before padCube (cubepad.go) pads it, which keeps the block within
// MaxShared.
func (in *Instance) sharedBytes(v Variant) int {
	if w, ok := in.sharedWords3(v); ok {
		return w * in.Prec.Bytes()
	}
	if w, ok := in.sharedWords2(v); ok {
		return w * in.Prec.Bytes()
	}
	n, q, e := in.N+1, in.basis.Q(), v.PerBlock
	words := 0
	if in.Kernel == fem.BK5 {
		words = n*(n|1) + 3*e*n*(n|1)
	} else {
		words = e * q * q * (q | 1)
		if !v.Literal {
			words += q * (n | 1)
		}
		if in.Kernel == fem.BK3 {
			words += q * (q | 1)
		}
	}
	return words * in.Prec.Bytes()
}

// Build returns the kernel of a Variant.
func (in *Instance) Build(c family.Candidate) (*kernel.Kernel, error) {
	v, ok := c.(Variant)
	if !ok {
		return nil, fmt.Errorf("tensor: %T is not a tensor variant", c)
	}
	if err := in.check(v); err != nil {
		return nil, err
	}
	switch {
	case v.Kind == cpuVecKind:
		return buildCPUVec(in.Problem, v, false), nil
	case isCPU(v.Kind):
		return buildCPU(in.Problem, v), nil
	case v.Kind == pairKind:
		return buildPair(in.Problem, v), nil
	case v.Kind == pairCapKind:
		return buildPairCap(in.Problem, v), nil
	case v.Kind == slab2Kind:
		return buildSlab2(in.Problem, v), nil
	case v.Kind == cubeFoldKind || v.Kind == cubePairKind || v.Kind == cubeFold2Kind:
		return buildCube2(in.Problem, v), nil
	}
	if in.Kernel == fem.BK5 {
		return buildBK5(in.Problem, v), nil
	}
	return buildCube(in.Problem, v), nil
}

// Tolerances relative to the largest output: sums of 3(N+1) products per
// stage, two stages, a few ulps each, with head-room growing with N.
func (in *Instance) tol() float64 {
	if in.Prec == kernel.F32 {
		return 2e-5 * float64(in.N)
	}
	return 1e-12 * float64(in.N)
}

// meshSide is the mesh whose geometric factors a batch cycles
// through: 4×4×4 perturbed hexahedra, real factors with no two elements
// alike along an axis, at any batch size.
const meshSide = 4

// geometry is the factors of the meshSide³ perturbed mesh, per element.
func (p *Problem) geometry() ([]float64, error) {
	if p.meshGeo != nil {
		return p.meshGeo, nil
	}
	m, err := p.checkMesh()
	if err != nil {
		return nil, err
	}
	return m.Geometry(p.basis)
}

// checkMesh is the mesh the checks take their geometry from.
func (p *Problem) checkMesh() (*fem.Mesh, error) {
	if p.mesh != nil {
		return p.mesh, nil
	}
	return fem.NewMesh(meshSide, meshSide, meshSide, 0.2)
}

// inputs are the checks' mesh's arrays of the computed sources the
// problem allows, per element (nil for a source it does not).
func (p *Problem) inputs() (xv, ga []float64, err error) {
	m, err := p.checkMesh()
	if err != nil {
		return nil, nil, err
	}
	xv, ga = MeshInputs(m, p.Kernel)
	if !slices.Contains(p.geos, Trilinear) {
		xv = nil
	}
	if !slices.Contains(p.geos, Affine) {
		ga = nil
	}
	return xv, ga, nil
}

// MeshInputs are the arrays the computed geometry sources read for the
// elements of m, in element order: xv (the 8 corners of each, 24
// values) where m is trilinear, ga (det·J⁻¹J⁻ᵀ and det, or det alone for
// BK1) where it is affine; nil where m does not allow the source.
func MeshInputs(m *fem.Mesh, k fem.Kernel) (xv, ga []float64) {
	return meshInputs(m, k.Stiffness())
}

// Data draws u from ±[0.5, 1.5) for E elements and one more, whose v the
// kernels must leave alone; element e takes the geometric factors of mesh
// element e mod 64. v starts NaN.
func (in *Instance) Data(rng *rand.Rand) (*family.Data, error) {
	if in.DataBytes() > 1<<30 {
		return nil, fmt.Errorf("tensor: a check of %d elements needs %d MB (at most 1024)", in.E, in.DataBytes()>>20)
	}
	geo1, err := in.geometry()
	if err != nil {
		return nil, err
	}
	np := in.nodes()
	ne := in.E + 1
	u := make([]float64, ne*np)
	for i := range u {
		u[i] = in.Prec.Rounded((0.5 + rng.Float64()) * float64(1-2*rng.IntN(2)))
	}
	geo := tile(geo1, in.factors(), ne, in.Prec)
	want, err := in.reference(geo, u[:in.E*np])
	if err != nil {
		return nil, err
	}
	v0 := make([]float64, ne*np)
	for i := range v0 {
		v0[i] = math.NaN()
	}
	want = append(want, v0[in.E*np:]...)
	last := in.E * np
	arrays := map[string]*family.Array{
		"u":   {Type: kernel.Real, Init: u},
		"geo": {Type: kernel.Real, Init: geo},
		"v":   {Type: kernel.Real, Init: v0, Want: want, Kept: func(i int) bool { return i >= last }},
	}
	xv, ga, err := in.inputs()
	if err != nil {
		return nil, err
	}
	if xv != nil {
		arrays["xv"] = &family.Array{Type: kernel.Real, Init: tile(xv, 24, ne, in.Prec)}
	}
	if ga != nil {
		arrays["ga"] = &family.Array{Type: kernel.Real, Init: tile(ga, in.basis.Factors(), ne, in.Prec)}
	}
	for name, c := range in.Constants() {
		arrays[name] = &family.Array{Type: kernel.Real, Init: c}
	}
	return &family.Data{Arrays: arrays, Values: map[string]int64{Elements: int64(in.E)}, Tol: in.tol()}, nil
}

// reference applies the operator in float64 with the 1-D matrices and λ
// rounded to the precision (as the kernel has them).
func (in *Instance) reference(geo, u []float64) ([]float64, error) {
	b := *in.basis
	round := func(m [][]float64) [][]float64 {
		out := make([][]float64, len(m))
		for a, row := range m {
			out[a] = make([]float64, len(row))
			for i, x := range row {
				out[a][i] = in.Prec.Rounded(x)
			}
		}
		return out
	}
	b.B, b.G = round(in.basis.B), round(in.basis.G)
	return fem.Apply(&b, geo[:len(u)/in.nodes()*in.factors()], in.Prec.Rounded(in.Lambda), u)
}

// tile repeats per-element blocks of size per from src until ne elements,
// rounded to dt.
func tile(src []float64, per, ne int, dt kernel.DType) []float64 {
	out := make([]float64, ne*per)
	k := len(src) / per
	for e := range ne {
		s := src[(e%k)*per : (e%k+1)*per]
		for i, x := range s {
			out[e*per+i] = dt.Rounded(x)
		}
	}
	return out
}

// TuneKey is the operator, order, λ, precision and the power of two the
// batch falls below.
func (in *Instance) TuneKey() string {
	geos := ""
	for _, g := range in.geos {
		geos += "|" + g.String()
	}
	return fmt.Sprintf("tensor|%s|n=%d|lambda=%x|%s|E<2^%d%s", in.Kernel, in.N, math.Float64bits(in.Lambda), in.Prec, bits.Len(uint(in.E)), geos)
}

// CandidateBytes is the least traffic of one launch of c: u read, v
// written and what its geometry source reads (UnitBytes counts the
// stored factors).
func (in *Instance) CandidateBytes(c family.Candidate) int64 {
	v, ok := c.(Variant)
	if !ok {
		return int64(in.E) * in.UnitBytes()
	}
	return int64(in.E) * int64(2*in.nodes()+in.geoWords(v.Geo)) * int64(in.Prec.Bytes())
}

// DataBytes is u, the factors, v and its reference for E+1 elements, in
// float64.
func (in *Instance) DataBytes() int64 {
	return 8 * int64(in.E+1) * int64(3*in.nodes()+in.factors())
}

// sampleElements is how many elements a timed launch is checked at.
const sampleElements = 16

// Workload is u and the factors read and v written over E elements, D
// given; checked at every node of sampleElements elements spread over the
// batch.
func (in *Instance) Workload() (*family.Workload, error) {
	np, nf := int64(in.nodes()), int64(in.factors())
	e := int64(in.E)
	w := &family.Workload{
		Shape: fmt.Sprintf("N=%d, %d³ nodes", in.N, in.N+1),
		Facts: map[string]float64{"order": float64(in.N), "elements": float64(in.E), "lambda": in.Lambda, "dofs": float64(in.E * in.nodes())},
		Arrays: []family.WorkArray{
			{Name: "u", Type: kernel.Real, Len: e * np, Role: family.Input},
			// Filled like u for timing where only stored factors are
			// read, else the checks' mesh (below); the sampled checks
			// read what was filled.
			{Name: "geo", Type: kernel.Real, Len: e * nf, Role: family.Input},
			{Name: "v", Type: kernel.Real, Len: e * np, Role: family.Output},
		},
		Values:     map[string]int64{Elements: e},
		IdealBytes: e * in.UnitBytes(),
		Flops:      e * in.Flops(),
		Tol:        in.tol(),
	}
	if len(in.geos) > 0 {
		// The candidates that compute the factors must agree with those
		// that read them: every geometry array is the checks' mesh,
		// tiled over the batch.
		geo1, err := in.geometry()
		if err != nil {
			return nil, err
		}
		xv, ga, err := in.inputs()
		if err != nil {
			return nil, err
		}
		w.Arrays[1].Reals = tile(geo1, in.factors(), in.E, kernel.F64)
		if xv != nil {
			w.Arrays = append(w.Arrays, family.WorkArray{Name: "xv", Type: kernel.Real, Len: 24 * e, Role: family.Input, Reals: tile(xv, 24, in.E, kernel.F64)})
		}
		if ga != nil {
			f := int64(in.basis.Factors())
			w.Arrays = append(w.Arrays, family.WorkArray{Name: "ga", Type: kernel.Real, Len: f * e, Role: family.Input, Reals: tile(ga, int(f), in.E, kernel.F64)})
		}
	}
	consts := in.Constants()
	for _, name := range slices.Sorted(maps.Keys(consts)) {
		w.Arrays = append(w.Arrays, family.WorkArray{Name: name, Type: kernel.Real, Len: int64(len(consts[name])), Role: family.Input, Reals: consts[name]})
	}
	samples := min(sampleElements, e)
	for s := int64(0); s < samples; s++ {
		el := s * (e - 1) / max(samples-1, 1)
		for i := int64(0); i < np; i++ {
			w.Samples = append(w.Samples, family.Sample{Array: "v", Index: el*np + i})
		}
	}
	w.Reference = func(at func(string, int64) float64) []float64 {
		ref := make([]float64, 0, len(w.Samples))
		for s := 0; s < len(w.Samples); s += int(np) {
			el := w.Samples[s].Index / np
			u := make([]float64, np)
			geo := make([]float64, nf)
			for i := range u {
				u[i] = at("u", el*np+int64(i))
			}
			for i := range geo {
				geo[i] = at("geo", el*nf+int64(i))
			}
			v, err := in.reference(geo, u)
			if err != nil {
				panic(err) // sizes are the instance's own
			}
			ref = append(ref, v...)
		}
		return ref
	}
	return w, nil
}

// Constants are the small read-only arrays every variant's kernel takes
// besides u, geo and v, by parameter name, rounded to the precision: "b",
// the 1-D interpolation to the Gauss points (BK1, BK3), "d", the 1-D
// derivative on the points (BK3, BK5), row-major, "gp" and "gw", the
// 1-D quadrature points and weights, and "gq", the points' coordinates
// and weights per point (the computed geometry's).
func (p *Problem) Constants() map[string][]float64 {
	out := map[string][]float64{}
	for name, m := range map[string][]float64{"b": p.b, "d": p.d, "gp": p.basis.Points, "gw": p.basis.PointWeights, "gq": p.pointTable()} {
		if m == nil {
			continue
		}
		r := make([]float64, len(m))
		for i, x := range m {
			r[i] = p.Prec.Rounded(x)
		}
		out[name] = r
	}
	return out
}
