package pum

import (
	"fmt"
	"math"

	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/pum"
)

// Case is one kernel with the data that checks it against pum's float64
// reference (what conformance and the interpreter tests run).
type Case struct {
	Kernel *kernel.Kernel
	Data   *family.Data
	Label  string
}

// Tol is the relative tolerance of a device result in dt against the
// float64 reference.
func Tol(dt kernel.DType) float64 {
	if dt == kernel.F32 {
		return 2e-4
	}
	return 1e-12
}

// Problem is a small uniform-cover problem with its float64 reference.
type Problem struct {
	Spec  Spec // Active is set per bin
	Sys   *pum.System
	Plan  *Plan
	Elems *pum.Elements // every cell's reference block and load
}

// NewProblem builds the reference of a uniform cover (α = pum.DefaultAlpha)
// and its plan. spec's Active is ignored.
func NewProblem(level int, spec Spec) (*Problem, error) {
	spec.Active = 1
	if err := spec.Check(); err != nil {
		return nil, err
	}
	c, err := pum.UniformCover(spec.Dim, level, pum.DefaultAlpha, spec.Periodic)
	if err != nil {
		return nil, err
	}
	s, err := pum.NewSpace(c, spec.Degree)
	if err != nil {
		return nil, err
	}
	rule, err := pum.NewRule(spec.Dim, spec.points())
	if err != nil {
		return nil, err
	}
	dec, err := pum.Decompose(c, 0)
	if err != nil {
		return nil, err
	}
	el, err := pum.Integrate(s, dec, rule, spec.Coeff.Reference(), 0, dec.NCells, 0, nil)
	if err != nil {
		return nil, err
	}
	pl, err := NewPlan(dec, true)
	if err != nil {
		return nil, err
	}
	return &Problem{Spec: spec, Sys: &pum.System{Cover: c, Space: s, Dec: dec, Rule: rule}, Plan: pl, Elems: el}, nil
}

func ints(x []int32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

// bin returns bin bi's spec, and its reference blocks and loads in the
// spec's layout (batch = the whole bin).
func (pr *Problem) bin(bi int) (Spec, []float64, []float64) {
	b := pr.Plan.Bins[bi]
	s := pr.Spec
	s.Active = b.Active
	nf := s.NF()
	n := len(b.Cells)
	e := make([]float64, n*nf*nf)
	f := make([]float64, n*nf)
	for t, cell := range b.Cells {
		E := pr.Elems.E[pr.Elems.EPtr[cell]:pr.Elems.EPtr[cell+1]]
		copy(f[t*nf:], pr.Elems.F[pr.Elems.FPtr[cell]:pr.Elems.FPtr[cell+1]])
		for ij, x := range E {
			if s.Layout == Interleaved {
				e[ij*n+t] = x
			} else {
				e[t*nf*nf+ij] = x
			}
		}
	}
	return s, e, f
}

// Cases returns, per bin, the integration kernel and the assembly kernel
// (atomic over the whole bin; colour over its largest colour group) with
// their data.
func (pr *Problem) Cases() ([]Case, error) {
	var out []Case
	c := pr.Sys.Cover
	B := pr.Sys.Space.B
	x, w := pr.Sys.Rule.X, pr.Sys.Rule.W
	label := fmt.Sprintf("pum %dd l%d p%d %s", c.Dim, c.Level, pr.Spec.Degree, pr.Spec.Coeff.Name)
	nan := func(n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = math.NaN()
		}
		return v
	}
	// Inputs as the precision holds them: the device must hand them back
	// unchanged, and the assembly reference sums what it is given.
	rd := func(x []float64) []float64 {
		out := make([]float64, len(x))
		for i, v := range x {
			out[i] = pr.Spec.DType.Rounded(v)
		}
		return out
	}
	centre, sup := rd(c.Centre), rd(Support(c))
	x, w = rd(x), rd(w)
	for bi, b := range pr.Plan.Bins {
		s, e, f := pr.bin(bi)
		eIn, fIn := rd(e), rd(f)
		n := len(b.Cells)
		nf := s.NF()
		k, err := Integrate(s)
		if err != nil {
			return nil, err
		}
		out = append(out, Case{Kernel: k, Label: label, Data: &family.Data{
			Arrays: map[string]*family.Array{
				"lo":     {Type: kernel.Real, Init: rd(b.Lo)},
				"hi":     {Type: kernel.Real, Init: rd(b.Hi)},
				"act":    {Type: kernel.Int32, Init: ints(b.Act)},
				"centre": {Type: kernel.Real, Init: centre},
				"sup":    {Type: kernel.Real, Init: sup},
				"qx":     {Type: kernel.Real, Init: x},
				"qw":     {Type: kernel.Real, Init: w},
				"e":      {Type: kernel.Real, Init: nan(n * nf * nf), Want: e},
				"fl":     {Type: kernel.Real, Init: nan(n * nf), Want: f},
			},
			Values: map[string]int64{Cells: int64(n), C0: 0, Batch: int64(n)},
			Tol:    Tol(s.DType),
		}})
		// scatter adds bin cells g0…g1−1's blocks (entry ij of cell t from
		// ev) and loads into a zero matrix and load vector.
		scatter := func(g0, g1 int, ev func(t, ij int) float64, fv []float64) ([]float64, []float64, error) {
			val := make([]float64, len(c.Nbr)*B*B)
			load := make([]float64, c.N*B)
			a := pum.BSR{N: c.N, B: B, RowPtr: c.NbrPtr, Col: c.Nbr, Val: val}
			for t := g0; t < g1; t++ {
				act := b.Act[t*b.Active : (t+1)*b.Active]
				for sa, I := range act {
					for m := range B {
						load[int(I)*B+m] += fv[t*nf+sa*B+m]
					}
					for sb, J := range act {
						blk := a.Block(int(I), int(J))
						if blk < 0 {
							return nil, nil, fmt.Errorf("kernel/pum: cell couples %d and %d outside the neighbour graph", I, J)
						}
						for m := range B {
							for nn := range B {
								val[blk*B*B+m*B+nn] += ev(t, (sa*B+m)*nf+sb*B+nn)
							}
						}
					}
				}
			}
			return val, load, nil
		}
		inArrays := func() map[string]*family.Array {
			return map[string]*family.Array{
				"lo":     {Type: kernel.Real, Init: rd(b.Lo)},
				"hi":     {Type: kernel.Real, Init: rd(b.Hi)},
				"act":    {Type: kernel.Int32, Init: ints(b.Act)},
				"centre": {Type: kernel.Real, Init: centre},
				"sup":    {Type: kernel.Real, Init: sup},
				"qx":     {Type: kernel.Real, Init: x},
				"qw":     {Type: kernel.Real, Init: w},
			}
		}
		// The group kernels: blocks in the spec's layout, and fused into
		// the matrix (reference: the float64 blocks scattered).
		gk, err := IntegrateGroup(s, false)
		if err != nil {
			return nil, err
		}
		ga := inArrays()
		ga["e"] = &family.Array{Type: kernel.Real, Init: nan(n * nf * nf), Want: e}
		ga["fl"] = &family.Array{Type: kernel.Real, Init: nan(n * nf), Want: f}
		out = append(out, Case{Kernel: gk, Label: label, Data: &family.Data{Arrays: ga,
			Values: map[string]int64{Cells: int64(n), C0: 0, Batch: int64(n)}, Tol: Tol(s.DType)}})
		fk, err := IntegrateGroup(s, true)
		if err != nil {
			return nil, err
		}
		fval, fload, err := scatter(0, n, func(t, ij int) float64 {
			return pr.Elems.E[pr.Elems.EPtr[b.Cells[t]]+int64(ij)]
		}, f)
		if err != nil {
			return nil, err
		}
		fa := inArrays()
		fa["rowptr"] = &family.Array{Type: kernel.Int32, Init: ints(c.NbrPtr)}
		fa["col"] = &family.Array{Type: kernel.Int32, Init: ints(c.Nbr)}
		fa["val"] = &family.Array{Type: kernel.Real, Init: make([]float64, len(fval)), Want: fval}
		fa["f"] = &family.Array{Type: kernel.Real, Init: make([]float64, len(fload)), Want: fload}
		out = append(out, Case{Kernel: fk, Label: label, Data: &family.Data{Arrays: fa,
			Values: map[string]int64{Cells: int64(n), C0: 0}, Tol: Tol(s.DType)}})
		for _, atomic := range []bool{true, false} {
			g0, g1 := 0, n
			if !atomic {
				if b.Groups == nil {
					continue
				}
				best := 0
				for g := range len(b.Groups) - 1 {
					if b.Groups[g+1]-b.Groups[g] > b.Groups[best+1]-b.Groups[best] {
						best = g
					}
				}
				g0, g1 = int(b.Groups[best]), int(b.Groups[best+1])
			}
			val, load, err := scatter(g0, g1, func(t, ij int) float64 {
				if s.Layout == Interleaved {
					return eIn[ij*n+t]
				}
				return eIn[t*nf*nf+ij]
			}, fIn)
			if err != nil {
				return nil, err
			}
			k, err := Assemble(s, atomic)
			if err != nil {
				return nil, err
			}
			out = append(out, Case{Kernel: k, Label: label, Data: &family.Data{
				Arrays: map[string]*family.Array{
					"act":    {Type: kernel.Int32, Init: ints(b.Act)},
					"rowptr": {Type: kernel.Int32, Init: ints(c.NbrPtr)},
					"col":    {Type: kernel.Int32, Init: ints(c.Nbr)},
					"e":      {Type: kernel.Real, Init: eIn},
					"fl":     {Type: kernel.Real, Init: fIn},
					"val":    {Type: kernel.Real, Init: make([]float64, len(val)), Want: val},
					"f":      {Type: kernel.Real, Init: make([]float64, len(load)), Want: load},
				},
				Values: map[string]int64{Pairs: int64((g1 - g0) * b.Active * b.Active), C0: int64(g0), E0: int64(g0), Batch: int64(n)},
				Tol:    Tol(s.DType),
			}})
		}
	}
	return out, nil
}
