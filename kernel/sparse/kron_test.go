package sparse

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/device/opencl"
	"github.com/bespoke-hpc/bespoke/emit"
	"github.com/bespoke-hpc/bespoke/fr"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/operator"
	"github.com/bespoke-hpc/bespoke/tune"
	"github.com/bespoke-hpc/bespoke/verify"
)

// signed draws ±[0.5, 1.5): never zero.
func signed(rng *rand.Rand) float64 {
	return (0.5 + rng.Float64()) * float64(1-2*rng.IntN(2))
}

// partialKron is a random operator of a prism gradient's structure on
// t·l points (point lvl·t + a): the rows [I_l ⊗ D1; I_l ⊗ D2; E ⊗ I_t],
// D1 and D2 random dense t×t, E random dense l×l; with transposed its
// transpose (a divergence), and with permute its rows and columns in a
// random order.
func partialKron(t *testing.T, rng *rand.Rand, tri, line int, transposed, permute bool) *operator.Operator {
	t.Helper()
	n := tri * line
	dense := func(s int) []float64 {
		d := make([]float64, s*s)
		for i := range d {
			d[i] = signed(rng)
		}
		return d
	}
	d1, d2, e := dense(tri), dense(tri), dense(line)
	m, k := 3*n, n
	a := make([]float64, m*k)
	for lvl := 0; lvl < line; lvl++ {
		for i := 0; i < tri; i++ {
			for j := 0; j < tri; j++ {
				a[(lvl*tri+i)*k+lvl*tri+j] = d1[i*tri+j]
				a[(n+lvl*tri+i)*k+lvl*tri+j] = d2[i*tri+j]
			}
		}
	}
	for p := 0; p < tri; p++ {
		for i := 0; i < line; i++ {
			for j := 0; j < line; j++ {
				a[(2*n+i*tri+p)*k+j*tri+p] = e[i*line+j]
			}
		}
	}
	rows, cols := identity(m), identity(k)
	if permute {
		rng.Shuffle(m, func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
		rng.Shuffle(k, func(i, j int) { cols[i], cols[j] = cols[j], cols[i] })
	}
	om, ok := m, k
	if transposed {
		om, ok = k, m
	}
	data := make([]float64, om*ok)
	for i := 0; i < m; i++ {
		for r := 0; r < k; r++ {
			if transposed {
				data[cols[r]*ok+rows[i]] = a[i*k+r]
			} else {
				data[rows[i]*ok+cols[r]] = a[i*k+r]
			}
		}
	}
	op := mustOp(t, om, ok, data)
	op.Name = fmt.Sprintf("kron-t%d-l%d-t%v-p%v", tri, line, transposed, permute)
	return op
}

func identity(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	return p
}

// randomSparse has each entry non-zero with probability density, in no
// pattern.
func randomSparse(t *testing.T, rng *rand.Rand, m, k int, density float64) *operator.Operator {
	t.Helper()
	data := make([]float64, m*k)
	for i := range data {
		if rng.Float64() < density {
			data[i] = signed(rng)
		}
	}
	op := mustOp(t, m, k, data)
	op.Name = fmt.Sprintf("sparse-%dx%d", m, k)
	return op
}

// pyfrElementOp builds a prism's or pyramid's operator at order p with
// PyFR's default points. Their triangular faces carry the triangle's
// default solution points of the same order (Williams–Shunn), which
// testdata holds up to p6 (PyFR's own prism export stops at p4, where the
// two are checked equal).
func pyfrElementOp(t *testing.T, kind string, p int, name string) *operator.Operator {
	t.Helper()
	dir := testenv.PyFROps(t)
	face, err := fr.ReadPointsFile(filepath.Join(dir, "tri-default", fmt.Sprintf("p%d", p), "upts.txt"), 2)
	if err != nil {
		t.Fatal(err)
	}
	if p <= 4 {
		exported, err := fr.ReadPointsFile(filepath.Join(dir, kind+"-default", fmt.Sprintf("p%d", p), "tri-fpts.txt"), 2)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(face, exported, slices.Equal) {
			t.Fatalf("%s p%d: the triangle's solution points are not the faces' flux points", kind, p)
		}
	}
	e, err := fr.Build(kind, p, fr.Options{TriFaceFile: face})
	if err != nil {
		t.Fatal(err)
	}
	op, err := e.Operator(name)
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// h200 is the cost model's machine for an H200 (132 multiprocessors, the
// copy roof measured there), with the default search's pruning.
var h200 = tune.MachineOf(device.Info{GPU: true, ComputeUnits: 132}, 4280)

// kept lists the families of the candidates the default search times for
// in on an sm_90 GPU: those the cost model prices within its pruning
// factor of the best, and the tensor-core ones, which it does not price.
// Every priced candidate is checked to be no faster than the copy roof
// allows.
func kept(t *testing.T, in *Instance) map[Family]bool {
	t.Helper()
	w, err := in.Workload()
	if err != nil {
		t.Fatal(err)
	}
	floor := float64(w.IdealBytes) / (h200.RoofGBs * 1e9)
	cands := in.Candidates(family.Target{GPU: true, CUDAArch: 90})
	ps := make([]tune.Prediction, len(cands))
	for i, c := range cands {
		k, err := in.Build(c)
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		p, err := tune.Estimate(h200, emit.CUDA, k, w.Values, w.IdealBytes)
		if err != nil {
			continue // tensor cores: unpriced, never pruned
		}
		if !(p.Seconds >= floor*(1-1e-9)) || math.IsInf(p.Seconds, 0) {
			t.Errorf("%s: predicted %s, under the roof's %.3g s", c, p.Describe(), floor)
		}
		ps[i] = p
	}
	out := map[Family]bool{}
	for i, keep := range tune.Prune(ps, h200.Prune) {
		if keep {
			out[cands[i].(Variant).Family()] = true
		}
	}
	return out
}

// Operators the tuner has never seen — random partial Kronecker products
// (a triangle's factor on every level of a line, the line's on every
// point of the triangle) in their natural order and in a random order of
// rows and columns, their transposes, random dense and random sparse
// operators, and PyFR's prisms and pyramids — get the families their
// measured structure calls for: the blocks family where a factor repeats,
// the tensor-core families where the operator is dense or where its dense
// product stays near the roof (mmaPays), neither for scattered non-zeros.
// The cost model's pick among the SIMT candidates is the blocks family
// where it is offered, and no candidate is priced under the copy roof.
func TestStructureFamilies(t *testing.T) {
	rng := testenv.Rand(t)
	for _, tc := range []struct {
		op          *operator.Operator
		repeats     bool // Structure.Repeats
		blocks, mma bool // offered
		classes     int  // the measured classes (0: not checked)
		// timed: 1 when the default search times a blocks candidate (the
		// cost model keeps one within its pruning factor), -1 when it
		// prunes them all, 0 not checked.
		timed int
	}{
		{partialKron(t, rng, 15, 6, false, false), true, true, true, 2, 1},
		{partialKron(t, rng, 15, 6, false, true), true, true, true, 2, 1},
		{partialKron(t, rng, 15, 6, true, true), true, true, true, 2, 1},
		{partialKron(t, rng, 10, 8, true, false), true, true, false, 2, 1},
		{randomDense(t, rng, 90, 70, nil), false, false, true, 0, 0},
		{randomSparse(t, rng, 200, 150, 0.05), false, false, false, 0, 0},
		{pyfrElementOp(t, "pri", 5, "m460"), true, true, true, 2, 1},
		{pyfrElementOp(t, "pri", 5, "m132"), true, true, true, 2, 1},
		{pyfrElementOp(t, "pri", 6, "m460"), true, true, false, 0, 1},
		// The model prices its blocks kernels (three phases through the
		// accumulator, issue-bound) 1.07× over the pruning factor of the
		// unrolled ones, which it wrongly thinks reach the roof
		// (docs/rationale.md#near-classes).
		{pyfrElementOp(t, "pri", 6, "m132"), true, true, false, 0, -1},
		{pyfrElementOp(t, "pri", 5, "m0"), true, true, true, 0, 0},
		{pyfrElementOp(t, "pyr", 5, "m460"), false, false, true, 0, 0},
		{pyfrElementOp(t, "pyr", 4, "m0"), false, false, true, 0, 0},
		{pyfrOp(t, "p4/hex/m460"), true, true, false, 1, 1},
	} {
		t.Run(tc.op.Name, func(t *testing.T) {
			s := MeasureStructure(tc.op)
			t.Log(s)
			if s.Repeats() != tc.repeats || (tc.classes > 0 && s.Classes != tc.classes) {
				t.Errorf("repeats %v in %d classes, want %v (%d)", s.Repeats(), s.Classes, tc.repeats, tc.classes)
			}
			pb := Problem{Op: tc.op, DType: kernel.F64, Alpha: 1, LDB: 1088, LDC: 1088}
			if got := len(BlocksCandidates(pb)) > 0; got != tc.blocks {
				t.Errorf("blocks offered %v, want %v", got, tc.blocks)
			}
			f32 := pb
			f32.DType = kernel.F32
			if got := [2]bool{len(DMMACandidates(pb, 90, Fill{})) > 0, len(WGMMACandidates(f32, 90, Fill{})) > 0}; got != [2]bool{tc.mma, tc.mma} {
				t.Errorf("dmma, wgmma offered %v, want %v", got, tc.mma)
			}
			if tc.timed == 0 || (testing.Short() && tc.op.Rows*tc.op.Cols > 1e5) {
				return // -short: the p6 prisms' candidates are not built
			}
			in, err := NewOperator(tc.op, kernel.F64, 1, 0).Timed(1 << 16)
			if err != nil {
				t.Fatal(err)
			}
			fams := kept(t, in.(*Instance))
			t.Log(fams)
			if fams[Blocks] != (tc.timed > 0) {
				t.Errorf("the default search times %v: blocks %v, want %v", fams, fams[Blocks], tc.timed > 0)
			}
		})
	}
}

// The pieces of a block over a tile's bounds are equal, within the
// bounds, and cover its non-zeros once; the prisms' gradients and
// divergences have a plan from them only.
func TestPieces(t *testing.T) {
	rng := testenv.Rand(t)
	for _, tc := range []struct {
		op    *operator.Operator
		tasks int // pieces of the plan
	}{
		{pyfrElementOp(t, "pri", 5, "m460"), 2*6 + 21}, // ξ and η at each of 6 levels, ζ at 21 points
		{pyfrElementOp(t, "pri", 5, "m132"), 2*6 + 21},
		{pyfrElementOp(t, "pri", 6, "m460"), 4*7 + 28},      // 56×28 cut into four 14×28
		{partialKron(t, rng, 20, 3, false, true), 2*3 + 20}, // 40×20 cut into two 20×20
	} {
		pb := Problem{Op: tc.op, DType: kernel.F64, Alpha: 1}
		g := newGen(pb, Defaults(Blocks))
		if _, err := g.planTasks("rows", g.supportTasks("rows")); err == nil {
			t.Errorf("%s: a plan of whole blocks by rows, want none (the test's premise)", tc.op.Name)
		}
		p, err := g.plan()
		if err != nil {
			t.Fatalf("%s: %v", tc.op.Name, err)
		}
		if p.tasks != tc.tasks {
			t.Errorf("%s: %d blocks by %s, want %d", tc.op.Name, p.tasks, p.by, tc.tasks)
		}
		seen := make([]int, tc.op.Rows*tc.op.Cols)
		for _, pc := range g.pieces(g.supportTasks(p.by), p.by == "cols") {
			if len(pc.rows) > blocksMaxRows || len(pc.cols) > blocksMaxCols || len(pc.rows)*len(pc.cols) > blocksMaxTile {
				t.Errorf("%s: a piece of %d×%d", tc.op.Name, len(pc.rows), len(pc.cols))
			}
			for _, i := range pc.rows {
				for _, r := range pc.cols {
					seen[i*tc.op.Cols+r]++
				}
			}
		}
		for e, a := range tc.op.Data {
			if a != 0 && seen[e] != 1 {
				t.Fatalf("%s: entry (%d, %d) in %d pieces, want 1", tc.op.Name, e/tc.op.Cols, e%tc.op.Cols, seen[e])
			}
		}
	}
}

// canonicalTile and rank: a block and the same block with its rows and
// columns shuffled share a key, a changed value does not; rank counts the
// independent rows of random products of known rank.
func TestCanonicalTileRank(t *testing.T) {
	rng := testenv.Rand(t)
	for _, tc := range []struct{ r, c, rank int }{{5, 5, 5}, {7, 4, 4}, {6, 9, 2}, {12, 12, 1}, {3, 8, 0}} {
		u, v := make([]float64, tc.r*tc.rank), make([]float64, tc.rank*tc.c)
		for i := range u {
			u[i] = signed(rng)
		}
		for i := range v {
			v[i] = signed(rng)
		}
		a := make([]float64, tc.r*tc.c)
		for i := 0; i < tc.r; i++ {
			for j := 0; j < tc.c; j++ {
				for q := 0; q < tc.rank; q++ {
					a[i*tc.c+j] += u[i*tc.rank+q] * v[q*tc.c+j]
				}
			}
		}
		if got := rank(a, tc.r, tc.c); got != tc.rank {
			t.Errorf("%d×%d of rank %d: rank %d", tc.r, tc.c, tc.rank, got)
		}
		if tc.rank == 0 {
			continue
		}
		// The block at rows 0.., columns 0.., and shuffled at rows and
		// columns further on, of one operator.
		rows, cols := identity(tc.r), identity(tc.c)
		rng.Shuffle(tc.r, func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
		rng.Shuffle(tc.c, func(i, j int) { cols[i], cols[j] = cols[j], cols[i] })
		m, k := 3*tc.r, 3*tc.c
		data := make([]float64, m*k)
		for i := 0; i < tc.r; i++ {
			for j := 0; j < tc.c; j++ {
				data[i*k+j] = a[i*tc.c+j]
				data[(tc.r+rows[i])*k+tc.c+cols[j]] = a[i*tc.c+j]
				data[(2*tc.r+i)*k+2*tc.c+j] = a[i*tc.c+j]
			}
		}
		data[(2*tc.r)*k+2*tc.c] += 0.25 // the third copy differs in one value
		g := newGen(Problem{Op: mustOp(t, m, k, data), Alpha: 1}, Defaults(Blocks))
		task := func(i0, j0 int) blockTask {
			return blockTask{rows: plusAll(identity(tc.r), i0), cols: plusAll(identity(tc.c), j0)}
		}
		k0, _ := g.canonicalTile(task(0, 0))
		k1, _ := g.canonicalTile(task(tc.r, tc.c))
		k2, _ := g.canonicalTile(task(2*tc.r, 2*tc.c))
		if k0 != k1 || k0 == k2 {
			t.Errorf("%d×%d: shuffled copy same key %v, changed copy same key %v", tc.r, tc.c, k0 == k1, k0 == k2)
		}
	}
}

func plusAll(xs []int, d int) []int {
	for i := range xs {
		xs[i] += d
	}
	return xs
}

// kronCheckOps are the operators whose new candidates are verified: a
// random partial Kronecker product in a random order and its transpose
// (several phases), and the prisms' p5 gradient and divergence.
func kronCheckOps(t *testing.T, rng *rand.Rand) []*operator.Operator {
	return []*operator.Operator{
		partialKron(t, rng, 15, 6, false, true),
		partialKron(t, rng, 15, 6, true, true),
		pyfrElementOp(t, "pri", 5, "m460"),
		pyfrElementOp(t, "pri", 5, "m132"),
	}
}

// Every blocks candidate of the operators above matches the float64
// reference in the interpreter (as written and lowered for the host), β =
// 0 (C poisoned) and 1, both precisions, n, ldb and ldc baked and at run
// time; so do the prisms' blocks candidates for CUDA alone (more shared
// memory, asynchronous copies), and the dmma (fp64; under -short the
// first) and first wgmma (fp32) candidates the p5 gradient is now offered.
func TestKronInterpret(t *testing.T) {
	rng := testenv.Rand(t)
	total := 0
	for _, op := range kronCheckOps(t, rng) {
		for _, dt := range []kernel.DType{kernel.F64, kernel.F32} {
			for _, beta := range shortBetas(0, 1) {
				cs := variantCases(t, rng, op, dt, beta, 45, BlocksCandidates, nil)
				if len(cs) == 0 {
					t.Fatalf("%s: no blocks candidates", op.Name)
				}
				if testing.Short() && dt == kernel.F32 {
					cs = []verify.Case{cs[0], cs[len(cs)-1]}
				}
				for _, c := range cs {
					total += interpretBoth(t, c, nil)
				}
			}
		}
	}
	// The prisms' CUDA-only blocks candidates (-l, -a, -a2) and
	// tensor-core ones.
	prism := pyfrElementOp(t, "pri", 5, "m460")
	cuda := func(pb Problem) []Variant { return append(BlocksLargeCandidates(pb), BlocksAsyncCandidates(pb)...) }
	for _, op := range []*operator.Operator{prism, pyfrElementOp(t, "pri", 5, "m132")} {
		cs := variantCases(t, rng, op, kernel.F64, 0, 45, cuda, nil)
		if testing.Short() && len(cs) > 2 {
			cs = []verify.Case{cs[0], cs[len(cs)-1]}
		}
		for _, c := range cs {
			total += interpretBoth(t, c, nil)
		}
	}
	mma := dmmaCases(t, rng, prism, 1, 45, nil)
	if testing.Short() {
		mma = mma[:1]
	}
	for _, c := range append(mma, wgmmaCases(t, rng, prism, 0, 45, nil)[:1]...) {
		res, err := verify.Interpret(c)
		if err != nil || !res.OK() {
			t.Fatalf("%s %s: %+v, %v", c.Label, c.Kernel.Variant, res, err)
		}
		total++
	}
	t.Logf("%d kernels interpreted", total)
}

// The C backend compiles and runs the blocks candidates of the operators
// above: for the prisms every one in fp64 with β = 0 (n, ldb and ldc
// baked) and the first and last in fp32 with β = 1, for the random ones
// the first and the last (baked, at run time) of each; under -short the
// first and the last everywhere.
func TestKronHost(t *testing.T) {
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	rng := testenv.Rand(t)
	var cs []verify.Case
	for i, op := range kronCheckOps(t, rng) {
		for _, dt := range []kernel.DType{kernel.F64, kernel.F32} {
			beta := 0.0
			if dt == kernel.F32 {
				beta = 1
			}
			all := variantCases(t, rng, op, dt, beta, 45, BlocksCandidates, nil)
			if i >= 2 && dt == kernel.F64 && !testing.Short() {
				cs = append(cs, all[:len(all)/2]...) // the baked instance's
			} else if testing.Short() {
				cs = append(cs, all[0])
			} else {
				cs = append(cs, all[0], all[len(all)-1])
			}
		}
	}
	runCases(t, dev, cs)
}

// The OpenCL backend (PoCL) compiles and runs the first blocks candidate
// of the prism's p5 gradient, baked and at run time.
func TestKronOpenCL(t *testing.T) {
	if os.Getenv("POCL_WORK_GROUP_METHOD") == "" {
		os.Setenv("POCL_WORK_GROUP_METHOD", "auto") // faster builds; see conformance.TestOpenCL
	}
	dev, err := opencl.Open(os.Getenv("BESPOKE_OPENCL_DEVICE"))
	if err != nil {
		testenv.Unavailable(t, "opencl", err)
	}
	defer dev.Close()
	rng := testenv.Rand(t)
	all := variantCases(t, rng, pyfrElementOp(t, "pri", 5, "m460"), kernel.F64, 0, 45, BlocksCandidates, nil)
	runCases(t, dev, []verify.Case{all[0], all[len(all)/2]})
}

func runCases(t *testing.T, dev device.Device, cs []verify.Case) {
	t.Helper()
	for i, o := range verify.RunBatch(dev, cs) {
		if o.Err != nil || !o.Result.OK() {
			t.Errorf("%s %s: %+v, %v", cs[i].Label, cs[i].Kernel.Variant, o.Result, o.Err)
		}
	}
	t.Logf("%d kernels verified on %s", len(cs), dev.Info().Name)
}

// roundedKron is partialKron (natural order) with PyFR's rounding: the
// triangle's copies on the levels l mod 3 = 1 and 2 differ from the
// others in four values by a relative 1e-11 and 2e-11, and strays of
// 1e-10 couple five points of the triangle on the end levels to a sixth
// on the next-but-end ones, through the line's derivative (the gradient)
// or into the rows of the triangle's (the divergence, with transposed),
// as in PyFR's p6 prisms.
func roundedKron(t *testing.T, rng *rand.Rand, tri, line int, transposed bool) *operator.Operator {
	t.Helper()
	op := partialKron(t, rng, tri, line, transposed, false)
	n := tri * line
	a := slices.Clone(op.Data)
	m, k := op.Rows, op.Cols
	at := func(i, r int) *float64 { // (i, r) of the gradient
		if transposed {
			return &a[r*k+i]
		}
		return &a[i*k+r]
	}
	pos := rng.Perm(tri * tri)[:4]
	for lvl := 0; lvl < line; lvl++ {
		for _, e := range pos {
			f := 1 + float64(lvl%3)*1e-11
			*at(lvl*tri+e/tri, lvl*tri+e%tri) *= f
			*at(n+lvl*tri+e/tri, lvl*tri+e%tri) *= f
		}
	}
	pts := rng.Perm(tri)[:6]
	for _, p := range pts[1:] {
		for _, lvl := range []int{0, line - 1} {
			for _, next := range []int{1, line - 2} {
				if transposed {
					a[(lvl*tri+p)*k+2*n+next*tri+pts[0]] = 1e-10 * signed(rng)
				} else {
					a[(2*n+lvl*tri+p)*k+next*tri+pts[0]] = 1e-10 * signed(rng)
				}
			}
		}
	}
	out := mustOp(t, m, k, a)
	out.Name = fmt.Sprintf("rounded-kron-t%d-l%d-t%v", tri, line, transposed)
	return out
}

// The p6 prisms' gradient and divergence (28-point triangle, 7 levels, 3
// components), whose factors repeat only up to rounding and strays, have
// plans of a handful of loops over all the levels' blocks, and their
// blocks kernels compute the product: every candidate in the interpreter
// (as written and lowered for the host) in fp64, the first and last in
// fp32 and with β = 1.
func TestNearPlans(t *testing.T) {
	rng := testenv.Rand(t)
	for _, tc := range []struct {
		op                  *operator.Operator
		maxLoops, maxPhases int
		minCount            int // blocks of the shortest loop
	}{
		// ξ and η, each cut into two pieces of 14×28 (at most 512
		// entries), and ζ: 4 loops of 7 and 1 of 28 blocks; the
		// divergence in 3 phases, ξ and η pieces of disjoint rows
		// together (14 blocks a phase), then ζ.
		{roundedKron(t, rng, 28, 7, false), 5, 1, 7},
		{roundedKron(t, rng, 28, 7, true), 5, 3, 7},
		{pyfrElementOp(t, "pri", 6, "m460"), 5, 1, 7},
		{pyfrElementOp(t, "pri", 6, "m132"), 5, 3, 7},
		{pyfrElementOp(t, "pri", 6, "m0"), 3, 1, 7},
	} {
		t.Run(tc.op.Name, func(t *testing.T) {
			g := newGen(Problem{Op: tc.op, DType: kernel.F64, Alpha: 1}, Defaults(Blocks))
			p, err := g.plan()
			if err != nil {
				t.Fatal(err)
			}
			short := math.MaxInt
			for _, ph := range p.phases {
				for _, l := range ph.loops {
					short = min(short, l.count)
				}
			}
			t.Logf("%d blocks by %s in %d loops, %d phases, the shortest of %d", p.tasks, p.by, p.loops(), len(p.phases), short)
			if p.loops() > tc.maxLoops || len(p.phases) > tc.maxPhases || short < tc.minCount {
				t.Errorf("%d loops in %d phases, the shortest of %d blocks; want at most %d in %d, of at least %d",
					p.loops(), len(p.phases), short, tc.maxLoops, tc.maxPhases, tc.minCount)
			}
			if tc.op.Rows*tc.op.Cols < 1e5 || (testing.Short() && !strings.HasSuffix(tc.op.Name, "-ttrue")) {
				return // -short: the kernels of the rounded divergence only (phases, strays, variants)
			}
			total := 0
			for _, dt := range []kernel.DType{kernel.F64, kernel.F32} {
				for _, beta := range shortBetas(0, 1) {
					cs := variantCases(t, rng, tc.op, dt, beta, 45, BlocksCandidates, nil)
					if len(cs) == 0 {
						t.Fatal("no blocks candidates")
					}
					if dt == kernel.F32 || beta != 0 || testing.Short() {
						cs = []verify.Case{cs[0], cs[len(cs)-1]}
					}
					for _, c := range cs {
						total += interpretBoth(t, c, nil)
					}
				}
			}
			t.Logf("%d kernels interpreted", total)
		})
	}
}

// nearCheckOps are the operators of near classes whose kernels the C and
// OpenCL backends run: the rounded random gradient and divergence of a
// p6 prism's sizes, and PyFR's.
func nearCheckOps(t *testing.T, rng *rand.Rand) []*operator.Operator {
	return []*operator.Operator{
		roundedKron(t, rng, 28, 7, false),
		roundedKron(t, rng, 28, 7, true),
		pyfrElementOp(t, "pri", 6, "m460"),
		pyfrElementOp(t, "pri", 6, "m132"),
	}
}

// The C backend compiles and runs the first and last blocks candidates of
// the operators of near classes, fp64 with β = 0 and fp32 with β = 1;
// under -short the first in fp64.
func TestNearHost(t *testing.T) {
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	rng := testenv.Rand(t)
	var cs []verify.Case
	ops := nearCheckOps(t, rng)
	if testing.Short() {
		ops = ops[1:3] // the rounded divergence and PyFR's gradient
	}
	for _, op := range ops {
		for _, dt := range []kernel.DType{kernel.F64, kernel.F32} {
			beta := 0.0
			if dt == kernel.F32 {
				beta = 1
			}
			all := variantCases(t, rng, op, dt, beta, 45, BlocksCandidates, nil)
			if len(all) == 0 {
				t.Fatalf("%s: no blocks candidates", op.Name)
			}
			if testing.Short() {
				cs = append(cs, all[0])
				break
			}
			cs = append(cs, all[0], all[len(all)-1])
		}
	}
	runCases(t, dev, cs)
}

// The OpenCL backend (PoCL) compiles and runs the first blocks candidate
// of the rounded random divergence and of PyFR's p6 prism gradient.
func TestNearOpenCL(t *testing.T) {
	if os.Getenv("POCL_WORK_GROUP_METHOD") == "" {
		os.Setenv("POCL_WORK_GROUP_METHOD", "auto") // faster builds; see conformance.TestOpenCL
	}
	dev, err := opencl.Open(os.Getenv("BESPOKE_OPENCL_DEVICE"))
	if err != nil {
		testenv.Unavailable(t, "opencl", err)
	}
	defer dev.Close()
	rng := testenv.Rand(t)
	var cs []verify.Case
	ops := nearCheckOps(t, rng)[1:3]
	if testing.Short() {
		ops = ops[:1] // TestNearHost has PyFR's gradient
	}
	for _, op := range ops {
		cs = append(cs, variantCases(t, rng, op, kernel.F64, 0, 45, BlocksCandidates, nil)[0])
	}
	runCases(t, dev, cs)
}

// Near classes (near.go) merge the copies of a block that differ in a
// value or two, or carry a stray, into one loop, and leave a copy that
// differs throughout its own loop; the kernels of every plan compute the
// product (interpreter, as written and lowered, fp64 and fp32).
func TestNearClasses(t *testing.T) {
	rng := testenv.Rand(t)
	const s, copies = 4, 6 // copies of an s×s block on the diagonal
	block := func() []float64 {
		d := make([]float64, s*s)
		for i := range d {
			d[i] = signed(rng)
		}
		return d
	}
	for _, tc := range []struct {
		name   string
		change func(a []float64, d []float64) // a: the operator, d: the block
		loops  int
		vary   int // values chosen by variant, and strays, in the first loop
		strays int
	}{
		{"identical", func(a, d []float64) {}, 1, 0, 0},
		{"rounded", func(a, d []float64) { a[(3*s+1)*s*copies+3*s+2] *= 1 + 1e-12 }, 1, 1, 0},
		{"stray", func(a, d []float64) { a[(2*s+1)*s*copies+4*s] = 1e-11 }, 1, 0, 1},
		{"different", func(a, d []float64) {
			other := block()
			for i := 0; i < s; i++ {
				copy(a[(3*s+i)*s*copies+3*s:], other[i*s:(i+1)*s])
			}
		}, 2, 0, 0}, // the others one loop (t = 0, 1, 2 | 4, 5: q = 3)
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := s * copies
			a, d := make([]float64, n*n), block()
			for c := 0; c < copies; c++ {
				for i := 0; i < s; i++ {
					copy(a[(c*s+i)*n+c*s:], d[i*s:(i+1)*s])
				}
			}
			tc.change(a, d)
			op := mustOp(t, n, n, a)
			op.Name = "near-" + tc.name
			p, err := newGen(Problem{Op: op, DType: kernel.F64, Alpha: 1}, Defaults(Blocks)).plan()
			if err != nil {
				t.Fatal(err)
			}
			l := p.phases[0].loops[0]
			if p.loops() != tc.loops || len(l.vary) != tc.vary || len(l.strays) != tc.strays {
				t.Errorf("%d loops, the first with %d values by variant and %d strays; want %d, %d, %d", p.loops(), len(l.vary), len(l.strays), tc.loops, tc.vary, tc.strays)
			}
			for _, dt := range []kernel.DType{kernel.F64, kernel.F32} {
				for _, c := range variantCases(t, rng, op, dt, 1, 13, nil, []string{"blocks/x8-y4", "blocks/x4-y2-t2"}) {
					interpretBoth(t, c, nil)
				}
			}
		})
	}
}
