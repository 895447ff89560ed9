package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/fem"
	"github.com/bespoke-hpc/bespoke/internal/paths"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/kernel/tensor"
	"github.com/bespoke-hpc/bespoke/solve"
)

// The CEED bake-off problems fem bench solves: BP3 on BK3's operator,
// BP5 on BK5's.
var bakeOffs = map[string]fem.Kernel{"bp3": fem.BK3, "bp5": fem.BK5}

// bpOptions are fem bench's settings for the CG solves.
type bpOptions struct {
	iterations int
	dofs       int64  // E-vector nodes to aim the mesh at (0: by device)
	variants   string // layouts to solve with: "all", or names (default: bpLayouts's few)
	scatters   string // scatter-add methods, comma-separated (solve.Scatters)
	maxMemory  int64  // host memory an assembly may take
}

// bpMaxMemory is the host memory an assembly may take without --max-memory.
const bpMaxMemory = 8 << 30

// checkBakeOffs checks the solves' settings before anything is built or
// a device opened: the counts, the layouts named (each must be one of
// the operator's on some device) and the assemblies' memory at the
// least size the run can have.
func checkBakeOffs(bps []string, orders []int, dts []kernel.DType, lambda float64, o bpOptions) error {
	if o.iterations < 1 || o.iterations > fem.MaxIterations {
		return usagef("--iterations %d: want 1..%d", o.iterations, fem.MaxIterations)
	}
	if lambda < 0 {
		return usagef("--lambda %g: the BP solves need λ ≥ 0", lambda)
	}
	if o.dofs < 0 || o.dofs > fem.MaxAssembled {
		return usagef("--bp-dofs %d: want 1..%d E-vector nodes", o.dofs, fem.MaxAssembled)
	}
	if _, err := bpScatters(o.scatters); err != nil {
		return err
	}
	for _, bp := range bps {
		for _, n := range orders {
			for _, dt := range dts {
				p, err := bpProblem(bp, n, lambda, dt)
				if err != nil {
					return err
				}
				if o.variants == "" || o.variants == "all" {
					continue
				}
				in, err := p.Timed(1)
				if err != nil {
					return err
				}
				for _, name := range strings.Split(o.variants, ",") {
					name = strings.TrimSpace(name)
					if !hasLayout(in, name) {
						return usagef("--bp-variant %q: %s has no layout %q (it has %s)", o.variants, p.Name(), name, candidateNames(in, true))
					}
				}
			}
		}
	}
	dofs := o.dofs
	if dofs == 0 {
		dofs = 1 << 20 // the least default (a CPU's)
	}
	return bpMemory(bps, orders, dofs, o.maxMemory)
}

// bpProblem is a BP's element operator, checked on a Cartesian box as
// the solves' meshes are, so that its layouts include those that compute
// the geometry from the vertices or from one affine map per element.
func bpProblem(bp string, n int, lambda float64, dt kernel.DType) (*tensor.Problem, error) {
	p, err := tensor.New(bakeOffs[bp], n, lambda, dt)
	if err != nil {
		return nil, usageError{err}
	}
	box, err := fem.NewMesh(2, 2, 2, 0)
	if err != nil {
		return nil, err
	}
	return p.WithMesh(box, "box")
}

// hasLayout reports whether name is one of in's layouts on a GPU or a CPU.
func hasLayout(in family.Instance, name string) bool {
	for _, gpu := range []bool{true, false} {
		for _, c := range in.Candidates(family.Target{GPU: gpu}) {
			if c.Name() == name {
				return true
			}
		}
	}
	return false
}

// bpScatters is the list of --bp-scatter (transpose when empty).
func bpScatters(list string) ([]string, error) {
	if strings.TrimSpace(list) == "" {
		return []string{solve.Transpose}, nil
	}
	var out []string
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if !slices.Contains(solve.Scatters, s) {
			return nil, usagef("--bp-scatter %q: unknown method %q (want %s)", list, s, strings.Join(solve.Scatters, ", "))
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out, nil
}

// bpRun is one solve of a layout with a scatter method.
type bpRun struct {
	c       family.Candidate
	scatter string
}

// bpRuns are the layouts each with each scatter method, side by side,
// but for the fused method the layouts whose fused form does not fit a
// block (said on errw).
func bpRuns(errw io.Writer, in *tensor.Instance, layouts []family.Candidate, scatters []string) []bpRun {
	var out []bpRun
	for _, c := range layouts {
		for _, sc := range scatters {
			if sc == solve.Fused {
				if _, err := in.BuildFused(c); errors.Is(err, tensor.ErrFusedShared) {
					fmt.Fprintf(errw, "bench: %s %s: no fused form (%v)\n", in.Problem.Name(), c.Name(), err)
					continue
				}
			}
			out = append(out, bpRun{c, sc})
		}
	}
	return out
}

// bpMemory refuses assemblies that would take more host memory than max.
func bpMemory(bps []string, orders []int, dofs, max int64) error {
	for _, bp := range bps {
		for _, n := range orders {
			b, err := fem.NewBasis(bakeOffs[bp], n)
			if err != nil {
				return usageError{err}
			}
			side := bpMesh(n, dofs)
			if need := fem.AssemblyBytes(b, side, side, side); need > max {
				return fmt.Errorf("%s/n%d: assembling %d³ elements for --bp-dofs %d needs at least %.1f GB, more than the %.1f GB allowed (--max-memory raises it)",
					bp, n, side, dofs, float64(need)/1e9, float64(max)/1e9)
			}
		}
	}
	return nil
}

// bpLayouts are the operator layouts a BP is solved with: the named ones,
// every candidate ("all"), or by default on GPUs those whose blocks hold
// 64–512 threads, on CPUs every layout (each solve sets up its own device buffers: seconds on a large
// mesh, so a dozen layouts per order would take minutes).
func bpLayouts(in *tensor.Instance, names string, t family.Target) []family.Candidate {
	all := in.Candidates(t)
	switch names {
	case "all":
		return all
	case "":
		if !t.GPU {
			return all // a few layouts, none sized by threads per block
		}
		var out []family.Candidate
		side := in.N + 2
		if in.Kernel == fem.BK5 {
			side = in.N + 1
		}
		for _, c := range all {
			if th := side * side * c.(tensor.Variant).PerBlock; th >= 64 && th <= 512 {
				out = append(out, c)
			}
		}
		if len(out) == 0 {
			return all
		}
		return out
	}
	var out []family.Candidate
	for _, name := range strings.Split(names, ",") {
		for _, c := range all {
			if c.Name() == strings.TrimSpace(name) {
				out = append(out, c)
			}
		}
	}
	return out
}

// bpRow is one timed solve: an operator layout at an order.
type bpRow struct {
	Problem    string  `json:"problem"` // e.g. bp5/n6
	Variant    string  `json:"variant"` // the layout, +scatter unless transpose
	Scatter    string  `json:"scatter"`
	Mesh       string  `json:"mesh"`
	DOFs       int     `json:"dofs"` // global nodes, boundary included
	Iterations int     `json:"iterations"`
	Seconds    float64 `json:"seconds"`
	GDOFs      float64 `json:"gdofs"` // DOFs × iterations / s, in billions
	Error      float64 `json:"error"` // ‖x − u*‖/‖u*‖ after the iterations
	Err        string  `json:"err,omitempty"`
}

// splitBakeOffs separates bp3/bp5 from the operators of --kernel.
func splitBakeOffs(list string) (ops string, bps []string) {
	var keep []string
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if _, ok := bakeOffs[s]; ok {
			bps = append(bps, s)
		} else if s != "" {
			keep = append(keep, s)
		}
	}
	return strings.Join(keep, ","), bps
}

// bpMesh is the cube of s³ elements whose E-vector has about dofs nodes.
func bpMesh(n int, dofs int64) int {
	return max(1, int(math.Round(math.Cbrt(float64(dofs))/float64(n+1))))
}

// runBakeOffs times a fixed number of CG iterations of each BP at each
// order, once per layout of its operator, and prints a table (and JSON).
func runBakeOffs(w, errw io.Writer, dev device.Device, bps []string, orders []int, dts []kernel.DType, lambda float64, o bpOptions, jsonOut string, stop <-chan struct{}) error {
	if o.iterations < 1 || o.iterations > fem.MaxIterations {
		return usagef("--iterations %d: want 1..%d", o.iterations, fem.MaxIterations)
	}
	if lambda < 0 {
		return usagef("--lambda %g: the BP solves need λ ≥ 0", lambda)
	}
	info := dev.Info()
	target := o.dofs
	if target == 0 {
		target = 1 << 20
		if info.GPU {
			target = 1 << 23 // 7 factors per node: 470 MB in fp64, far beyond the L2
		}
	}
	if target < 1 || target > fem.MaxAssembled {
		return usagef("--bp-dofs %d: want 1..%d E-vector nodes", target, fem.MaxAssembled)
	}
	if o.maxMemory == 0 {
		o.maxMemory = bpMaxMemory
	}
	scatters, err := bpScatters(o.scatters)
	if err != nil {
		return err
	}
	if err := bpMemory(bps, orders, target, o.maxMemory); err != nil {
		return err
	}
	start := time.Now()
	progress := func(s string) { fmt.Fprintf(errw, "bench: %7.1fs %s\n", time.Since(start).Seconds(), s) }
	var rows []bpRow
	// Rows are printed as they finish (a long run shows its progress),
	// in fixed-width columns.
	const rowFormat = "%10s %5s %11s %9s %18s %10s %9s %8s %9s\n"
	fmt.Fprintf(w, "device: %s (%s)  CG: %d iterations from x = 0, unpreconditioned, the residual read once at the end; GDOF/s = global nodes × iterations / s\n\n", info.Name, info.Backend, o.iterations)
	fmt.Fprintf(w, rowFormat, "problem", "dtype", "mesh", "DOFs", "variant", "iterations", "ms", "GDOF/s", "rel error")
	failed, firstFailure := 0, ""
	for _, bp := range bps {
		for _, n := range orders {
			side := bpMesh(n, target)
			m, err := fem.NewMesh(side, side, side, 0)
			if err != nil {
				return err
			}
			basis, err := fem.NewBasis(bakeOffs[bp], n)
			if err != nil {
				return usageError{err}
			}
			progress(fmt.Sprintf("%s/n%d: assembling %d³ elements", bp, n, side))
			asm, err := fem.NewAssembly(basis, m, lambda)
			if err != nil {
				return err
			}
			for _, dt := range dts {
				if err := solve.CheckScale(asm, dt); err != nil {
					return usageError{err}
				}
			}
			for _, dt := range dts {
				select {
				case <-stop:
					return fmt.Errorf("interrupted")
				default:
				}
				p, err := bpProblem(bp, n, lambda, dt)
				if err != nil {
					return err
				}
				in, err := p.Timed(m.Elements())
				if err != nil {
					return err
				}
				layouts := bpLayouts(in.(*tensor.Instance), o.variants, family.Target{GPU: info.GPU})
				if len(layouts) == 0 {
					return usagef("--bp-variant %q names no layout of %s (it has %s)", o.variants, p.Name(), candidateNames(in, info.GPU))
				}
				for _, r := range bpRuns(errw, in.(*tensor.Instance), layouts, scatters) {
					c, sc := r.c, r.scatter
					row := bpRow{Problem: fmt.Sprintf("%s/n%d", bp, n), Variant: c.Name(), Scatter: sc, Mesh: fmt.Sprintf("%dx%dx%d", side, side, side)}
					if sc != solve.Transpose {
						row.Variant += "+" + sc
					}
					progress(fmt.Sprintf("%s %s %s", row.Problem, dt, row.Variant))
					res, err := solve.Run(dev, solve.Options{Problem: p, Variant: c.Name(), Mesh: m, Assembly: asm, Tol: 1e-300, MaxIter: o.iterations, CheckEvery: o.iterations, Scatter: sc})
					if err == nil {
						err = res.Check() // a solve is judged, not only timed
					}
					if err != nil {
						row.Err, _, _ = strings.Cut(err.Error(), "\n")
						if failed == 0 {
							firstFailure = fmt.Sprintf("%s %s %s: %s", row.Problem, dt, row.Variant, row.Err)
						}
						failed++
						fmt.Fprintf(w, "%10s %5s %11s %9s %18s failed: %s\n", row.Problem, dt, row.Mesh, "", row.Variant, row.Err)
					} else {
						row.DOFs, row.Iterations, row.Seconds, row.Error = res.DOFs, res.Iterations, res.Time.Seconds(), res.Error
						row.GDOFs = res.Rate / 1e9
						fmt.Fprintf(w, rowFormat, row.Problem, dt, row.Mesh, strconv.Itoa(row.DOFs), row.Variant, strconv.Itoa(row.Iterations),
							strconv.FormatFloat(float64(res.Time)/float64(time.Millisecond), 'f', 1, 64),
							strconv.FormatFloat(row.GDOFs, 'g', 3, 64), strconv.FormatFloat(row.Error, 'e', 2, 64))
					}
					rows = append(rows, row)
				}
			}
		}
	}
	if jsonOut != "" {
		buf, err := json.MarshalIndent(map[string]any{"device": info, "iterations": o.iterations, "lambda": lambda, "solves": rows}, "", "  ")
		if err != nil {
			return err
		}
		if err := paths.WriteFile(jsonOut, append(buf, '\n')); err != nil {
			return err
		}
	}
	if len(rows) == 0 {
		return fmt.Errorf("no BP solve ran")
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d BP solves failed (the first: %s)", failed, len(rows), firstFailure)
	}
	return nil
}

// candidateNames lists an instance's layouts.
func candidateNames(in family.Instance, gpu bool) string {
	var names []string
	for _, c := range in.Candidates(family.Target{GPU: gpu}) {
		names = append(names, c.Name())
	}
	return strings.Join(names, ", ")
}
