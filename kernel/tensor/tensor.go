// Package tensor is the family of sum-factorised tensor-product operators
// of continuous high-order FEM on hexahedra (package fem sets them up and
// holds their float64 reference). It offers, so far, BK5 — the screened
// Poisson operator S + λM with GLL collocation — as an E-vector →
// E-vector kernel.
//
// The kernel is the 2-D thread slab of Świrydowicz et al.: a block holds
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
	"math"
	"math/bits"
	"math/rand/v2"
	"regexp"
	"strconv"

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
	d      []float64 // GLL derivative matrix, row-major
}

var _ family.Problem = (*Problem)(nil)

// New sets up the problem (so far only BK5 has kernels).
func New(k fem.Kernel, n int, lambda float64, dt kernel.DType) (*Problem, error) {
	if k != fem.BK5 {
		return nil, fmt.Errorf("tensor: %s has no kernels yet (bk5 has)", k)
	}
	if math.IsNaN(lambda) || math.IsInf(lambda, 0) {
		return nil, fmt.Errorf("tensor: λ = %g: want a finite number", lambda)
	}
	b, err := fem.NewBasis(k, n)
	if err != nil {
		return nil, err
	}
	p := &Problem{Kernel: k, N: n, Lambda: lambda, Prec: dt, basis: b}
	for _, row := range b.G {
		p.d = append(p.d, row...)
	}
	return p, nil
}

// Name is e.g. "bk5/n3".
func (p *Problem) Name() string { return fmt.Sprintf("%s/n%d", p.Kernel, p.N) }

// Label adds λ and the precision.
func (p *Problem) Label() string { return fmt.Sprintf("%s λ=%g %s", p.Name(), p.Lambda, p.Prec) }

// DType is the precision.
func (p *Problem) DType() kernel.DType { return p.Prec }

// nodes is (N+1)³.
func (p *Problem) nodes() int { n := p.N + 1; return n * n * n }

// UnitBytes is the least traffic of one element: u and the 7 factors
// read, v written (the 1-D matrix is negligible).
func (p *Problem) UnitBytes() int64 { return int64(9*p.nodes()) * int64(p.Prec.Bytes()) }

// Flops per element by the fixed formula 12n⁴ + 15n³ (n = N+1), the
// convention of the CEED benchmarks.
func (p *Problem) Flops() int64 {
	n := int64(p.N + 1)
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

// Variant is a layout: Kind "slab" (a loop over layers, D from shared
// memory) or "slab-lit" (layers written out, D's entries along t as
// literals), PerBlock elements per block.
type Variant struct {
	Kind     string
	PerBlock int
	Literal  bool // Kind == "slab-lit"
}

// Name is e.g. "slab/e2".
func (v Variant) Name() string { return fmt.Sprintf("%s/e%d", v.Kind, v.PerBlock) }

var variantRE = regexp.MustCompile(`^(slab|slab-lit)(?:/e(\d+))?$`)

// ParseVariant reads a name as Name prints it.
func ParseVariant(s string) (Variant, error) {
	m := variantRE.FindStringSubmatch(s)
	if m == nil {
		return Variant{}, fmt.Errorf("tensor: unknown variant %q (want slab/eE or slab-lit/eE)", s)
	}
	v := Variant{Kind: m[1], PerBlock: 1, Literal: m[1] == "slab-lit"}
	if m[2] != "" {
		v.PerBlock, _ = strconv.Atoi(m[2])
	}
	return v, nil
}

// Candidates are both slabs with 1, 2, 4 and 8 elements per block, as
// many as fit a block of 1024 threads and are needed to reach 256 threads.
func (in *Instance) Candidates(family.Target) []family.Candidate {
	var out []family.Candidate
	for _, kind := range []string{"slab", "slab-lit"} {
		for _, e := range []int{1, 2, 4, 8} {
			v := Variant{Kind: kind, PerBlock: e, Literal: kind == "slab-lit"}
			if in.check(v) != nil {
				continue
			}
			if n := in.N + 1; e > 1 && n*n*(e/2) >= 256 {
				continue // the block is full enough with fewer
			}
			out = append(out, v)
		}
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

func (in *Instance) check(v Variant) error {
	n := in.N + 1
	switch {
	case v.Kind != "slab" && v.Kind != "slab-lit" || v.Literal != (v.Kind == "slab-lit"):
		return fmt.Errorf("tensor: unknown kind %q", v.Kind)
	case v.PerBlock < 1 || n*n*v.PerBlock > kernel.MaxThreads:
		return fmt.Errorf("tensor: %s: %d elements of %d×%d threads do not fit a block of %d", v.Name(), v.PerBlock, n, n, kernel.MaxThreads)
	}
	return nil
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
	return buildBK5(in.Problem, v), nil
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
	m, err := fem.NewMesh(meshSide, meshSide, meshSide, 0.2)
	if err != nil {
		return nil, err
	}
	return m.Geometry(p.basis)
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
	geo := tile(geo1, 7*np, ne, in.Prec)
	d := make([]float64, len(in.d))
	for i, x := range in.d {
		d[i] = in.Prec.Rounded(x)
	}
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
	return &family.Data{
		Arrays: map[string]*family.Array{
			"u":   {Type: kernel.Real, Init: u},
			"geo": {Type: kernel.Real, Init: geo},
			"d":   {Type: kernel.Real, Init: d},
			"v":   {Type: kernel.Real, Init: v0, Want: want, Kept: func(i int) bool { return i >= last }},
		},
		Values: map[string]int64{Elements: int64(in.E)},
		Tol:    in.tol(),
	}, nil
}

// reference applies the operator in float64 with D and λ as the kernel
// has them (rounded to the precision).
func (in *Instance) reference(geo, u []float64) ([]float64, error) {
	b := *in.basis
	b.G = make([][]float64, len(in.basis.G))
	for a, row := range in.basis.G {
		b.G[a] = make([]float64, len(row))
		for i, x := range row {
			b.G[a][i] = in.Prec.Rounded(x)
		}
	}
	np := in.nodes()
	return fem.Apply(&b, geo[:len(u)/np*7*np], in.Prec.Rounded(in.Lambda), u)
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
	return fmt.Sprintf("tensor|%s|n=%d|lambda=%x|%s|E<2^%d", in.Kernel, in.N, math.Float64bits(in.Lambda), in.Prec, bits.Len(uint(in.E)))
}

// DataBytes is u, the factors, v and its reference for E+1 elements, in
// float64.
func (in *Instance) DataBytes() int64 {
	return 8 * int64(in.E+1) * int64(in.nodes()) * (1 + 7 + 2)
}

// sampleElements is how many elements a timed launch is checked at.
const sampleElements = 16

// Workload is u and the factors read and v written over E elements, D
// given; checked at every node of sampleElements elements spread over the
// batch.
func (in *Instance) Workload() (*family.Workload, error) {
	np := int64(in.nodes())
	e := int64(in.E)
	d := make([]float64, len(in.d))
	for i, x := range in.d {
		d[i] = in.Prec.Rounded(x)
	}
	w := &family.Workload{
		Shape: fmt.Sprintf("N=%d, %d³ nodes", in.N, in.N+1),
		Facts: map[string]float64{"order": float64(in.N), "elements": float64(in.E), "lambda": in.Lambda},
		Arrays: []family.WorkArray{
			{Name: "u", Type: kernel.Real, Len: e * np, Role: family.Input},
			// Filled like u for timing (the checks of Data use a real
			// mesh's factors); the sampled checks read what was filled.
			{Name: "geo", Type: kernel.Real, Len: e * 7 * np, Role: family.Input},
			{Name: "d", Type: kernel.Real, Len: int64(len(d)), Role: family.Input, Reals: d},
			{Name: "v", Type: kernel.Real, Len: e * np, Role: family.Output},
		},
		Values:     map[string]int64{Elements: e},
		IdealBytes: 9 * e * np * int64(in.Prec.Bytes()),
		Flops:      e * in.Flops(),
		Tol:        in.tol(),
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
			geo := make([]float64, 7*np)
			for i := range u {
				u[i] = at("u", el*np+int64(i))
			}
			for i := range geo {
				geo[i] = at("geo", el*7*np+int64(i))
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
// besides u, geo and v, by parameter name, rounded to the precision: "d",
// the 1-D derivative matrix at the quadrature points, row-major.
func (p *Problem) Constants() map[string][]float64 {
	d := make([]float64, len(p.d))
	for i, x := range p.d {
		d[i] = p.Prec.Rounded(x)
	}
	return map[string][]float64{"d": d}
}
