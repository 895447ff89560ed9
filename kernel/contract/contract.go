// Package contract is a kernel family for the building block of
// sum-factorised tensor-product operators: a small dense matrix D (Q×Q)
// applied along one axis of a batch of Q×Q×Q arrays,
//
//	for e < elements, for k, j, i < Q:        (i along x, fastest; k along z)
//	    axis x: y[e][k][j][i] = Σ_l D[i][l]·x[e][k][j][l]
//	    axis y: y[e][k][j][i] = Σ_l D[j][l]·x[e][k][l][i]
//	    axis z: y[e][k][j][i] = Σ_l D[k][l]·x[e][l][j][i]
//
// with x and y element after element, Q³ values each, and D by default the
// derivative matrix on the Q Gauss–Lobatto–Legendre points (degree Q−1).
//
// The variants, as in the tensor-product kernels of high-order FEM codes:
//
//   - slab/eE: a block is a Q×Q slab of threads for each of E elements; D is
//     staged in shared memory; a loop over the Q layers along z stages
//     each layer of x in shared memory between two barriers (axes x and
//     y), or, along z, each thread keeps its z-pencil of x in registers.
//   - pencil/eE (axis z only): the same slab of threads, each with its
//     z-pencil in registers and D's entries as literals, no shared memory.
//
// Apply runs the loop above in float64; every variant documents it.
//
// It must not import emit, device or any backend.
package contract

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"regexp"
	"strconv"

	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/poly"
)

var nan = math.NaN()

// Elements names the launch size (and scalar argument) of every kernel of
// the family: how many Q³ arrays the batch holds.
const Elements = "elements"

// MaxQ bounds the points per axis: a slab of Q² threads (and E of them)
// must fit a block.
const MaxQ = 16

// Axis is the axis D is applied along: 0 for x, 1 for y, 2 for z.
type Axis int

func (a Axis) String() string { return "xyz"[a : a+1] }

// ParseAxis reads "x", "y" or "z".
func ParseAxis(s string) (Axis, error) {
	switch s {
	case "x":
		return 0, nil
	case "y":
		return 1, nil
	case "z":
		return 2, nil
	}
	return 0, fmt.Errorf("contract: axis %q (want x, y or z)", s)
}

// Problem is one contraction: D (Q×Q, row-major) along Axis, in DType.
type Problem struct {
	Q     int
	Axis  Axis
	D     []float64
	Prec  kernel.DType
	Title string // name in reports; default "qQ/axis"
}

var _ family.Problem = (*Problem)(nil)

// Derivative is the problem with D the derivative matrix on the Q
// Gauss–Lobatto–Legendre points.
func Derivative(q int, axis Axis, dt kernel.DType) (*Problem, error) {
	if q < 2 || q > MaxQ {
		return nil, fmt.Errorf("contract: %d points per axis (want 2..%d)", q, MaxQ)
	}
	if axis < 0 || axis > 2 {
		return nil, fmt.Errorf("contract: axis %d (want 0, 1 or 2)", axis)
	}
	x, _, err := poly.GaussLobatto(q)
	if err != nil {
		return nil, err
	}
	dm, err := poly.DiffMatrix(x)
	if err != nil {
		return nil, err
	}
	d := make([]float64, 0, q*q)
	for _, row := range dm {
		d = append(d, row...)
	}
	return &Problem{Q: q, Axis: axis, D: d, Prec: dt}, nil
}

// Name is "qQ/axis" unless Title says otherwise.
func (p *Problem) Name() string {
	if p.Title != "" {
		return p.Title
	}
	return fmt.Sprintf("q%d/%s", p.Q, p.Axis)
}

// Label is the name and the precision.
func (p *Problem) Label() string { return p.Name() + " " + p.Prec.String() }

// DType is the precision.
func (p *Problem) DType() kernel.DType { return p.Prec }

// UnitBytes is the least traffic of one element: x read and y written.
func (p *Problem) UnitBytes() int64 { return 2 * int64(p.Q*p.Q*p.Q) * int64(p.Prec.Bytes()) }

// check validates the problem.
func (p *Problem) check() error {
	if p.Q < 2 || p.Q > MaxQ || len(p.D) != p.Q*p.Q || p.Axis < 0 || p.Axis > 2 {
		return fmt.Errorf("contract: Q=%d with a D of %d entries along axis %d (want Q in 2..%d, Q² entries, axis 0..2)", p.Q, len(p.D), p.Axis, MaxQ)
	}
	return nil
}

// Checks returns the one instance at the given number of elements.
func (p *Problem) Checks(elements int) ([]family.Instance, error) {
	in, err := p.Timed(elements)
	if err != nil {
		return nil, err
	}
	return []family.Instance{in}, nil
}

// Timed returns the instance at the given number of elements.
func (p *Problem) Timed(elements int) (family.Instance, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	if elements < 1 {
		return nil, fmt.Errorf("contract: %d elements (want at least 1)", elements)
	}
	return &Instance{Problem: p, E: elements}, nil
}

// Apply computes y for the first e elements in float64, the loop every
// variant documents.
func Apply(q int, axis Axis, d, x, y []float64, e int) {
	q3 := q * q * q
	for el := 0; el < e; el++ {
		xe, ye := x[el*q3:(el+1)*q3], y[el*q3:(el+1)*q3]
		for k := 0; k < q; k++ {
			for j := 0; j < q; j++ {
				for i := 0; i < q; i++ {
					sum := 0.0
					for l := 0; l < q; l++ {
						switch axis {
						case 0:
							sum += d[i*q+l] * xe[(k*q+j)*q+l]
						case 1:
							sum += d[j*q+l] * xe[(k*q+l)*q+i]
						default:
							sum += d[k*q+l] * xe[(l*q+j)*q+i]
						}
					}
					ye[(k*q+j)*q+i] = sum
				}
			}
		}
	}
}

// Instance is a Problem over a batch of E elements.
type Instance struct {
	*Problem
	E int
}

var _ family.Instance = (*Instance)(nil)

// Name is the problem and the batch.
func (in *Instance) Name() string { return fmt.Sprintf("%s %s E=%d", in.Problem.Name(), in.Prec, in.E) }

// Variant is a point of the family's space: Kind slab or pencil, PerBlock
// elements per block.
type Variant struct {
	Kind     string
	PerBlock int
}

// Name is e.g. "slab/e2".
func (v Variant) Name() string { return fmt.Sprintf("%s/e%d", v.Kind, v.PerBlock) }

var variantRE = regexp.MustCompile(`^(slab|pencil)(?:/e(\d+))?$`)

// ParseVariant reads a name as Name prints it; a bare kind is one element
// per block.
func ParseVariant(s string) (Variant, error) {
	m := variantRE.FindStringSubmatch(s)
	if m == nil {
		return Variant{}, fmt.Errorf("contract: unknown variant %q (want slab/eE or pencil/eE)", s)
	}
	v := Variant{Kind: m[1], PerBlock: 1}
	if m[2] != "" {
		var err error
		if v.PerBlock, err = strconv.Atoi(m[2]); err != nil {
			return Variant{}, fmt.Errorf("contract: variant %q: elements per block out of range", s)
		}
	}
	return v, nil
}

// Candidates are the slab, and along z the pencil, with 1, 2 and 4
// elements per block where they fit a block.
func (in *Instance) Candidates(family.Target) []family.Candidate {
	var out []family.Candidate
	for _, kind := range []string{"slab", "pencil"} {
		for _, e := range []int{1, 2, 4} {
			if v := (Variant{Kind: kind, PerBlock: e}); in.check(v) == nil {
				out = append(out, v)
			}
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
		return fmt.Errorf("contract: %T is not a contraction variant", c)
	}
	return in.check(v)
}

func (in *Instance) check(v Variant) error {
	switch {
	case v.Kind != "slab" && v.Kind != "pencil":
		return fmt.Errorf("contract: unknown kind %q", v.Kind)
	case v.PerBlock < 1 || v.PerBlock > kernel.MaxThreads || in.Q*in.Q*v.PerBlock > kernel.MaxThreads: // bounded before the product overflows
		return fmt.Errorf("contract: %s: %d elements of %d×%d threads do not fit a block of %d", v.Name(), v.PerBlock, in.Q, in.Q, kernel.MaxThreads)
	case v.Kind == "pencil" && in.Axis != 2:
		return fmt.Errorf("contract: %s applies along z only", v.Name())
	}
	return nil
}

// Build returns the kernel of a Variant.
func (in *Instance) Build(c family.Candidate) (*kernel.Kernel, error) {
	v, ok := c.(Variant)
	if !ok {
		return nil, fmt.Errorf("contract: %T is not a contraction variant", c)
	}
	if err := in.check(v); err != nil {
		return nil, err
	}
	return build(in.Problem, v), nil
}

// Tolerances relative to the largest output: Q ≤ 16 products of values
// of similar size, a few ulps each, with head-room (as the GEMM family's).
const (
	TolF64 = 1e-12
	TolF32 = 1e-5
)

func (in *Instance) tol() float64 {
	if in.Prec == kernel.F32 {
		return TolF32
	}
	return TolF64
}

// Data draws x from ±[0.5, 1.5) for E elements and one more, whose y the
// kernels must leave alone (poisoned with NaN otherwise); y starts NaN.
func (in *Instance) Data(rng *rand.Rand) (*family.Data, error) {
	q3 := in.Q * in.Q * in.Q
	n := (in.E + 1) * q3
	x, y0 := make([]float64, n), make([]float64, n)
	for i := range x {
		x[i] = in.Prec.Rounded((0.5 + rng.Float64()) * float64(1-2*rng.IntN(2)))
		y0[i] = nan
	}
	d := make([]float64, len(in.D))
	for i, v := range in.D {
		d[i] = in.Prec.Rounded(v)
	}
	want := make([]float64, n)
	for i := range want {
		want[i] = nan
	}
	Apply(in.Q, in.Axis, d, x, want, in.E)
	last := in.E * q3
	return &family.Data{
		Arrays: map[string]*family.Array{
			"x": {Type: kernel.Real, Init: x},
			"d": {Type: kernel.Real, Init: d},
			"y": {Type: kernel.Real, Init: y0, Want: want, Kept: func(i int) bool { return i >= last }},
		},
		Values: map[string]int64{Elements: int64(in.E)},
		Tol:    in.tol(),
	}, nil
}

// TuneKey is Q, the axis, D's content, the precision and the power of two
// the batch falls below.
func (in *Instance) TuneKey() string {
	return fmt.Sprintf("contract|q=%d|%s|D=%s|%s|E<2^%d", in.Q, in.Axis, digest(in.D), in.Prec, bits.Len(uint(in.E)))
}

// DataBytes is x, y and y's reference for E+1 elements, and D, in float64.
func (in *Instance) DataBytes() int64 {
	return 8 * (3*int64(in.E+1)*int64(in.Q*in.Q*in.Q) + int64(len(in.D)))
}

// sampleElements is how many elements a timed launch is checked at.
const sampleElements = 64

// Workload is x read and y written over E elements, D given; checked at
// every value of sampleElements elements spread over the batch.
func (in *Instance) Workload() (*family.Workload, error) {
	q3 := int64(in.Q * in.Q * in.Q)
	e := int64(in.E)
	w := &family.Workload{
		Shape: fmt.Sprintf("%d³ along %s", in.Q, in.Axis),
		Facts: map[string]float64{"q": float64(in.Q), "axis": float64(in.Axis), "elements": float64(in.E)},
		Arrays: []family.WorkArray{
			{Name: "x", Type: kernel.Real, Len: e * q3, Role: family.Input},
			{Name: "d", Type: kernel.Real, Len: int64(len(in.D)), Role: family.Input, Reals: in.D},
			{Name: "y", Type: kernel.Real, Len: e * q3, Role: family.Output},
		},
		Values:     map[string]int64{Elements: e},
		IdealBytes: 2 * e * q3 * int64(in.Prec.Bytes()),
		Flops:      2 * e * q3 * int64(in.Q),
		Tol:        in.tol(),
	}
	samples := min(sampleElements, e)
	for s := int64(0); s < samples; s++ {
		el := s * (e - 1) / max(samples-1, 1)
		for i := int64(0); i < q3; i++ {
			w.Samples = append(w.Samples, family.Sample{Array: "y", Index: el*q3 + i})
		}
	}
	q := in.Q
	w.Reference = func(at func(string, int64) float64) []float64 {
		d := make([]float64, q*q)
		for i := range d {
			d[i] = at("d", int64(i))
		}
		ref := make([]float64, len(w.Samples))
		x := make([]float64, q3)
		y := make([]float64, q3)
		el := int64(-1)
		for k, s := range w.Samples {
			if e := s.Index / q3; e != el {
				el = e
				for i := range x {
					x[i] = at("x", el*q3+int64(i))
				}
				Apply(q, in.Axis, d, x, y, 1)
			}
			ref[k] = y[s.Index%q3]
		}
		return ref
	}
	return w, nil
}
