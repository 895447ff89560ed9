// Package solve runs the CEED bake-off problems BP3 and BP5 on a device:
// unpreconditioned conjugate gradients on the assembled screened Poisson
// problem of package fem (the box, u = 0 on its faces, the manufactured
// solution u = sin πx sin πy sin πz), with the element operator a kernel
// of kernel/tensor and every vector operation a kernel of kernel/vector.
// The iteration is fem.CG's recurrence; all its vectors stay on the
// device, and the host reads back only the scalars of
// each iteration (to test convergence) and the solution at the end.
//
// PCG solves a block-sparse (BSR) system already on the device, such as
// the PUM matrix the pum pipeline assembles there, by the same kind of
// recurrence preconditioned with block Jacobi (pum.Solve's, with the
// kernels of kernel/vector's bsr.go); it takes plain buffers and sizes.
//
// Its kernels run as one build.Program each (built in one go, bound by
// name). It may import build, device, fem, kernel, kernel/family,
// kernel/tensor and kernel/vector.
package solve

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/bespoke-hpc/bespoke/build"
	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/fem"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/kernel/tensor"
	"github.com/bespoke-hpc/bespoke/kernel/vector"
)

// Scatter-add methods.
const (
	Transpose = "transpose" // sums through the transposed index, fused with pᵀAp (deterministic)
	Atomic    = "atomic"    // atomic adds over the E-vector, then a dot product
	// Fused: the element operator reads p through the index and adds its
	// outputs into q atomically, with pᵀq per block (tensor.Fuse): no
	// gather, no scatter, no E-vectors; q is zeroed by the update that
	// reads it.
	Fused = "fused"
)

// Scatters are the scatter-add methods.
var Scatters = []string{Transpose, Atomic, Fused}

// Options is one solve.
type Options struct {
	// Problem is the element operator (kernel, order, λ, precision).
	Problem *tensor.Problem
	// Variant names the operator's kernel variant; "" takes the first
	// candidate for the device.
	Variant string
	Mesh    *fem.Mesh
	// Tol is the relative residual ‖r‖/‖b‖ to reach; MaxIter bounds
	// the operator applications.
	Tol     float64
	MaxIter int
	// Scatter is Transpose (the default when empty), Atomic or Fused.
	Scatter string
	// Shape spreads the vector kernels over threads; the zero Shape
	// takes vector.For the device.
	Shape vector.Shape
	// CheckEvery is how many iterations run between reads of the
	// scalars (the convergence test); 0 or 1 reads after every one. A
	// benchmark of a fixed number of iterations saves a host round trip
	// per iteration; a solve may overshoot convergence by CheckEvery−1
	// iterations (a breakdown shows at the next read).
	CheckEvery int
	// Assembly, when given, is Problem's assembled problem on Mesh, made
	// once for several solves (its set-up dominates a large one).
	Assembly *fem.Assembly
}

// Result is a finished solve.
type Result struct {
	Variant    string    // the element kernel's variant (tensor.FusedSuffix after it when fused)
	Iterations int       // operator applications
	Residual   float64   // ‖r‖/‖b‖ by the recurrence, from the device's rᵀr
	Converged  bool      // Residual ≤ Tol
	X          []float64 // the solution at the global nodes, widened to float64
	// Error is ‖X − u*‖/‖u*‖ over the global nodes (u* the manufactured
	// solution): discretisation and solver error together.
	Error float64
	// DOFs are the global unique nodes, boundary included
	// ((NX·N+1)(NY·N+1)(NZ·N+1), the CEED convention); Unknowns leaves
	// out the Dirichlet nodes.
	DOFs, Unknowns int
	// Time is the device time of the iterations (set-up, builds and
	// transfers of vectors excluded; the per-iteration reads of the
	// scalars included).
	Time time.Duration
	// Rate is DOFs × Iterations / Time.
	Rate float64
}

// scalar slots of the sc buffer: rᵀr alternates between two slots so
// that β = new/old reads both.
const (
	slotRR0, slotPQ, slotRR1 = 0, 1, 2
	scalars                  = 3
)

// Run solves on dev.
func Run(dev device.Device, o Options) (*Result, error) {
	if o.Problem == nil || o.Mesh == nil {
		return nil, fmt.Errorf("solve: options need a problem and a mesh")
	}
	if err := fem.CheckCG(o.Tol, o.MaxIter); err != nil {
		return nil, err
	}
	if o.Scatter == "" {
		o.Scatter = Transpose
	}
	if !slices.Contains(Scatters, o.Scatter) {
		return nil, fmt.Errorf("solve: scatter %q: want %s, %s or %s", o.Scatter, Transpose, Atomic, Fused)
	}
	p, dt := o.Problem, o.Problem.Prec
	if dt == kernel.F64 && !dev.Info().FP64 {
		return nil, fmt.Errorf("solve: %s has no fp64", dev.Info().Name)
	}
	asm := o.Assembly
	if asm != nil && (asm.Basis.Kernel != p.Kernel || asm.Basis.N != p.N || asm.Mesh != o.Mesh || asm.Lambda != p.Lambda) {
		return nil, fmt.Errorf("solve: the assembly given is %s N=%d λ=%g on another mesh or operator than the solve's %s N=%d λ=%g",
			asm.Basis.Kernel, asm.Basis.N, asm.Lambda, p.Kernel, p.N, p.Lambda)
	}
	if asm == nil {
		basis, err := fem.NewBasis(p.Kernel, p.N)
		if err != nil {
			return nil, err
		}
		if asm, err = fem.NewAssembly(basis, o.Mesh, p.Lambda); err != nil {
			return nil, err
		}
	}
	if err := CheckScale(asm, dt); err != nil {
		return nil, err
	}
	s, err := newSolver(dev, o, asm)
	if err != nil {
		return nil, err
	}
	defer s.close()
	return s.run(o)
}

// CheckScale reports a problem whose right-hand side dt cannot hold: an
// entry or ‖b‖² (the first scalar CG computes) past dt's largest value.
// The load grows with λ, so a huge λ gave an infinite ‖b‖, and CG then
// stopped before its first iteration with x = 0.
func CheckScale(asm *fem.Assembly, dt kernel.DType) error {
	b := asm.RHS()
	if err := dt.CheckRange("the right-hand side", b); err != nil {
		return fmt.Errorf("solve: λ = %g: %w", asm.Lambda, err)
	}
	bb := 0.0
	for _, x := range b {
		bb += x * x
	}
	if math.IsInf(dt.Rounded(bb), 0) {
		return fmt.Errorf("solve: λ = %g: the right-hand side's ‖b‖² = %.3g is beyond the %s range (%.2g): λ is too large for this precision", asm.Lambda, bb, dt, dt.Max())
	}
	return nil
}

// MaxError is the most a solve's Result.Error may be: 1 is the error of
// x = 0, where CG starts; each CG iteration minimises the error's energy
// norm over a space that holds every earlier iterate, so a solve that ran
// and ends no closer to u* than x = 0 computed nothing usable.
const MaxError = 1

// Check reports a solve that produced nothing usable: no iteration, a
// residual, solution or error that is not finite, or an error of
// MaxError or more.
func (r *Result) Check() error {
	switch {
	case r.Unknowns == 0:
		return fmt.Errorf("solve: the mesh has no interior node: nothing to solve")
	case r.Iterations < 1:
		return fmt.Errorf("solve: no CG iteration ran (residual %.3g)", r.Residual)
	case math.IsNaN(r.Residual) || math.IsInf(r.Residual, 0):
		return fmt.Errorf("solve: the residual after %d iterations is %g", r.Iterations, r.Residual)
	case math.IsNaN(r.Error) || math.IsInf(r.Error, 0) || slices.ContainsFunc(r.X, func(x float64) bool { return math.IsNaN(x) || math.IsInf(x, 0) }):
		return fmt.Errorf("solve: the solution after %d iterations is not finite (error %g)", r.Iterations, r.Error)
	case !(r.Error < MaxError):
		return fmt.Errorf("solve: relative error %.3g after %d iterations: no better than x = 0, where CG starts (%d)", r.Error, r.Iterations, MaxError)
	}
	return nil
}

// solver holds the program (its kernels and buffers) and its bound steps.
type solver struct {
	dt      kernel.DType
	asm     *fem.Assembly
	variant string
	prog    *build.Program
	// launches of each step, bound once (slot-dependent ones by slot).
	op, gather, scatter, zero, dotPQ, dirFrom0, dirFrom1 *build.Step
	sumFused                                             *build.Step    // the fused operator's pᵀq partials into slot PQ
	update                                               [2]*build.Step // α's numerator in slot 0 or 2
	sumTo                                                [scalars]*build.Step
	dotRR                                                *build.Step
	sc, x                                                device.Buffer
}

func (s *solver) close() {
	if s.prog != nil {
		s.prog.Close()
	}
}

func (s *solver) reals(name string, x []float64) error {
	_, err := s.prog.Upload(name, s.dt.Encode(x))
	return err
}

func (s *solver) ints(name string, x []int32) error {
	wide := make([]int64, len(x))
	for i, v := range x {
		wide[i] = int64(v)
	}
	_, err := s.prog.Upload(name, kernel.EncodeInts(4, wide))
	return err
}

// newSolver builds the kernels as one program, uploads the problem and
// binds every step.
func newSolver(dev device.Device, o Options, asm *fem.Assembly) (_ *solver, err error) {
	p := o.Problem
	s := &solver{dt: p.Prec, asm: asm}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	ne := asm.Mesh.Elements()
	nodes, entries := asm.Nodes(), len(asm.Index)
	in, err := p.Timed(ne)
	if err != nil {
		return nil, err
	}
	target := family.Target{GPU: dev.Info().GPU}
	fused := o.Scatter == Fused
	var c family.Candidate
	var op *kernel.Kernel
	if o.Variant == "" {
		cs := in.Candidates(target)
		if len(cs) == 0 {
			return nil, fmt.Errorf("solve: %s has no kernel variant for %s", p.Name(), dev.Info().Name)
		}
		c = cs[0]
		if fused {
			// The first whose fused form fits a block.
			for _, cc := range cs {
				if op, err = in.(*tensor.Instance).BuildFused(cc); err == nil {
					c = cc
					break
				}
			}
			if op == nil {
				return nil, err
			}
		}
	} else if c, err = in.Variant(o.Variant); err != nil {
		return nil, err
	}
	if err := in.Check(c); err != nil {
		return nil, err
	}
	s.variant = c.Name()
	switch {
	case fused:
		s.variant += tensor.FusedSuffix
		if op == nil {
			op, err = in.(*tensor.Instance).BuildFused(c)
		}
	default:
		op, err = in.Build(c)
	}
	if err != nil {
		return nil, err
	}
	geo, err := geometryArrays(p, c, asm)
	if err != nil {
		return nil, err
	}
	shape := o.Shape
	if shape == (vector.Shape{}) {
		shape = vector.For(target)
	}
	ks := []*kernel.Kernel{op}
	vk := map[string]*kernel.Kernel{}
	type builder struct {
		name  string
		build func(kernel.DType, vector.Shape) (*kernel.Kernel, error)
	}
	// In a fixed order: the source text is the build cache's key.
	builders := []builder{
		{"gather", vector.Gather}, {"scatter", vector.ScatterDot}, {"update", vector.Update}, {"direction", vector.Direction},
		{"sum", vector.Sum}, {"dot", vector.Dot}, {"zero", vector.Zero}, {"atomic", vector.ScatterAtomic},
	}
	if fused {
		// The update zeroes q for the next operator's atomic adds.
		builders = []builder{{"update", vector.UpdateZero}, {"direction", vector.Direction}, {"sum", vector.Sum}, {"dot", vector.Dot}}
	}
	fparts := tensor.FusedPartials(op, ne)
	for _, b := range builders {
		k, err := b.build(p.Prec, shape)
		if err != nil {
			return nil, err
		}
		vk[b.name] = k
		ks = append(ks, k)
	}
	if need := s.deviceBytes(p, shape, geo, fused, fparts); dev.Info().MemoryBytes > 0 && need > dev.Info().MemoryBytes {
		return nil, fmt.Errorf("solve: %s needs %d MB of device memory, %s has %d MB", p.Name(), need>>20, dev.Info().Name, dev.Info().MemoryBytes>>20)
	}
	if s.prog, err = build.NewProgram(dev, ks...); err != nil {
		return nil, err
	}

	// Buffers.
	free := make([]int32, nodes)
	for g, b := range asm.Boundary {
		if !b {
			free[g] = 1
		}
	}
	rhs := asm.RHS()
	reals := map[string][]float64{"x": make([]float64, nodes), "r": rhs, "p": rhs, "q": make([]float64, nodes),
		"partial": make([]float64, shape.Blocks(nodes)), "sc": make([]float64, scalars)}
	ints := map[string][]int32{"node": asm.Index, "offsets": asm.Offsets, "list": asm.Entries, "mask": free}
	if fused {
		// p's extra entry (0) is what the fused operator reads at a
		// Dirichlet node; the index sends those entries there. The
		// right-hand side, hence r and p, is 0 at the Dirichlet nodes.
		reals["p"] = append(slices.Clone(rhs), 0)
		reals[tensor.FusedPartial] = make([]float64, fparts)
		ints = map[string][]int32{tensor.FusedIndex: tensor.FusedIndexOf(asm.Index, asm.Boundary)}
	} else {
		reals["pe"], reals["qe"] = make([]float64, entries), make([]float64, entries)
	}
	for name, x := range geo {
		if _, clash := reals[name]; clash {
			return nil, fmt.Errorf("solve: the operator's geometry array %q has the name of a solver vector", name)
		}
		reals[name] = x
	}
	for name, x := range p.Constants() {
		if _, clash := reals[name]; clash {
			return nil, fmt.Errorf("solve: the operator's constant %q has the name of a solver vector", name)
		}
		reals[name] = x
	}
	for name, x := range reals {
		if err := s.reals(name, x); err != nil {
			return nil, err
		}
	}
	for name, x := range ints {
		if err := s.ints(name, x); err != nil {
			return nil, err
		}
	}
	s.sc, s.x = s.prog.Buffer("sc"), s.prog.Buffer("x")

	// Steps: buffers by parameter name, or by the renames (parameter →
	// solver buffer).
	s.prog.Set(vector.Nodes, int64(nodes))
	s.prog.Set(vector.Entries, int64(entries))
	s.prog.Set(vector.Partials, int64(shape.Blocks(nodes)))
	type job struct {
		dst    **build.Step
		k      *kernel.Kernel
		values map[string]int64
		rename map[string]string
	}
	jobs := []job{
		{&s.dotRR, vk["dot"], nil, map[string]string{"a": "r", "b": "r"}},
		{&s.update[0], vk["update"], map[string]int64{vector.Num: slotRR0, vector.Den: slotPQ}, nil},
		{&s.update[1], vk["update"], map[string]int64{vector.Num: slotRR1, vector.Den: slotPQ}, nil},
		{&s.dirFrom0, vk["direction"], map[string]int64{vector.Num: slotRR1, vector.Den: slotRR0}, nil},
		{&s.dirFrom1, vk["direction"], map[string]int64{vector.Num: slotRR0, vector.Den: slotRR1}, nil},
	}
	for slot := range scalars {
		jobs = append(jobs, job{&s.sumTo[slot], vk["sum"], map[string]int64{vector.Slot: int64(slot)}, nil})
	}
	var atomic *build.Step
	if fused {
		jobs = append(jobs,
			job{&s.op, op, map[string]int64{tensor.Elements: int64(ne)}, map[string]string{"u": "p", "v": "q"}},
			job{&s.sumFused, vk["sum"], map[string]int64{vector.Slot: slotPQ, vector.Partials: int64(fparts)}, map[string]string{"partial": tensor.FusedPartial}})
	} else {
		jobs = append(jobs,
			job{&s.op, op, map[string]int64{tensor.Elements: int64(ne)}, map[string]string{"u": "pe", "v": "qe"}},
			job{&s.gather, vk["gather"], nil, map[string]string{"l": "p", "e": "pe"}},
			job{&s.scatter, vk["scatter"], nil, map[string]string{"e": "qe"}},
			job{&s.zero, vk["zero"], nil, map[string]string{"l": "q"}},
			job{&s.dotPQ, vk["dot"], nil, map[string]string{"a": "p", "b": "q"}},
			job{&atomic, vk["atomic"], nil, map[string]string{"e": "qe", "l": "q"}})
	}
	for _, j := range jobs {
		if *j.dst, err = s.prog.Bind(j.k.Name, build.With{Values: j.values, Buffers: j.rename}); err != nil {
			return nil, err
		}
	}
	if o.Scatter == Atomic {
		s.scatter = atomic
	}
	return s, nil
}

// checkScalars reports a breakdown (pᵀAp ≤ 0, or NaN) or a rᵀr that is
// not finite, read after iteration it of method (CG or PCG).
func checkScalars(method string, it int, pq, rr float64) error {
	if !(pq > 0) {
		return fmt.Errorf("solve: %s breakdown at iteration %d: pᵀAp = %g", method, it, pq)
	}
	if math.IsNaN(rr) || math.IsInf(rr, 0) {
		return fmt.Errorf("solve: %s rᵀr = %g at iteration %d", method, rr, it)
	}
	return nil
}

// deviceBytes is what the buffers take: the fused method's E-vector
// index and partial sums in place of the E-vectors, index, transposed
// index and mask.
func (s *solver) deviceBytes(p *tensor.Problem, shape vector.Shape, geo map[string][]float64, fused bool, fparts int) int64 {
	nodes, entries := int64(s.asm.Nodes()), int64(len(s.asm.Index))
	r := int64(p.Prec.Bytes())
	words := 4*nodes + int64(shape.Blocks(int(nodes)))
	for _, x := range geo {
		words += int64(len(x))
	}
	if fused {
		return r*(words+1+int64(fparts)) + 4*entries
	}
	return r*(words+2*entries) + 4*(2*entries+2*nodes)
}

// geometryArrays are the geometry buffers candidate c's kernel reads,
// by parameter name: the stored factors, or the arrays of the source
// that computes them (tensor.MeshInputs), which the solve's mesh must
// allow.
func geometryArrays(p *tensor.Problem, c family.Candidate, asm *fem.Assembly) (map[string][]float64, error) {
	v, ok := c.(tensor.Variant)
	if !ok || v.Geo == tensor.Stored {
		return map[string][]float64{"geo": asm.Geo}, nil
	}
	xv, ga := tensor.MeshInputs(asm.Mesh, p.Kernel)
	switch {
	case v.Geo == tensor.Trilinear && xv != nil:
		return map[string][]float64{"xv": xv}, nil
	case v.Geo == tensor.Affine && ga != nil:
		return map[string][]float64{"ga": ga}, nil
	case v.Geo == tensor.Box && ga != nil && asm.Mesh.AxisAligned():
		return map[string][]float64{"ga": ga}, nil // Box reads Affine's array
	}
	return nil, fmt.Errorf("solve: %s computes the geometry of a %s mesh; the solve's mesh is not one (its factors are stored)", v.Name(), v.Geo)
}

// readScalars downloads the first n slots of sc (waiting for the work
// before it).
func (s *solver) readScalars(n int) ([]float64, error) { return s.read(s.sc, n) }

// read downloads the first n reals of b (waiting for the work before
// it), widened to float64.
func (s *solver) read(b device.Buffer, n int) ([]float64, error) {
	raw := make([]byte, n*s.dt.Bytes())
	if err := b.Download(raw); err != nil {
		return nil, err
	}
	return s.dt.Decode(raw), nil
}

// run is fem.CG's recurrence on the device.
func (s *solver) run(o Options) (*Result, error) {
	res := &Result{Variant: s.variant, DOFs: s.asm.Nodes()}
	for _, b := range s.asm.Boundary {
		if !b {
			res.Unknowns++
		}
	}
	// rᵀr of the right-hand side into slot 0.
	if err := s.prog.Run(s.dotRR, s.sumTo[slotRR0]); err != nil {
		return nil, err
	}
	sc, err := s.readScalars(scalars)
	if err != nil {
		return nil, err
	}
	rr := sc[slotRR0]
	if math.IsNaN(rr) || math.IsInf(rr, 0) {
		return nil, fmt.Errorf("solve: the right-hand side's ‖b‖² is %g on the device (%s)", rr, s.dt)
	}
	bnorm := math.Sqrt(rr)
	cur := 0 // rᵀr in slot 0 (cur 0) or 2 (cur 1)
	iterate := func() error {
		for res.Iterations < o.MaxIter && bnorm > 0 && math.Sqrt(rr) > o.Tol*bnorm {
			next := [2]int{slotRR1, slotRR0}[cur]
			var steps []*build.Step
			switch o.Scatter {
			case Fused:
				steps = []*build.Step{s.op, s.sumFused}
			case Atomic:
				steps = []*build.Step{s.zero, s.gather, s.op, s.scatter, s.dotPQ, s.sumTo[slotPQ]}
			default:
				steps = []*build.Step{s.gather, s.op, s.scatter, s.sumTo[slotPQ]}
			}
			steps = append(steps, s.update[cur], s.sumTo[next], [2]*build.Step{s.dirFrom0, s.dirFrom1}[cur])
			if err := s.prog.Run(steps...); err != nil {
				return err
			}
			res.Iterations++
			cur = 1 - cur
			if every := max(o.CheckEvery, 1); res.Iterations%every != 0 && res.Iterations < o.MaxIter {
				continue
			}
			sc, err := s.readScalars(scalars)
			if err != nil {
				return err
			}
			rr = sc[next]
			if err := checkScalars("CG", res.Iterations, sc[slotPQ], rr); err != nil {
				return err
			}
		}
		return nil
	}
	if res.Time, err = s.prog.Elapsed(iterate); err != nil {
		return nil, err
	}
	if bnorm > 0 {
		res.Residual = math.Sqrt(rr) / bnorm
	}
	res.Converged = res.Residual <= o.Tol
	if res.X, err = s.read(s.x, s.asm.Nodes()); err != nil {
		return nil, err
	}
	if res.Error, err = s.asm.NodalError(res.X); err != nil {
		return nil, err
	}
	if res.Time > 0 {
		res.Rate = float64(res.DOFs) * float64(res.Iterations) / res.Time.Seconds()
	}
	return res, nil
}
