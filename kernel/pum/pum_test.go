package pum

import (
	"fmt"
	"math"
	"testing"

	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/kernel/interp"
	"github.com/bespoke-hpc/bespoke/kernel/pass"
	"github.com/bespoke-hpc/bespoke/pum"
)

// interpret runs a case in the Go interpreter (optionally lowered for
// the host first) and judges it.
func interpret(t *testing.T, c Case, lower bool) {
	t.Helper()
	k := c.Kernel
	if lower {
		var err error
		if k, err = pass.HostLoops(k); err != nil {
			t.Fatal(err)
		}
	}
	args := map[string]any{}
	for n, x := range c.Data.Values {
		args[n] = x
	}
	got := map[string][]float64{}
	for n, a := range c.Data.Arrays {
		if a.Type == kernel.Real {
			x := make([]float64, len(a.Init))
			for i, v := range a.Init {
				x[i] = k.DType.Rounded(v)
			}
			args[n], got[n] = x, x
			continue
		}
		x := make([]int64, len(a.Init))
		for i, v := range a.Init {
			x[i] = int64(v)
		}
		args[n] = x
		got[n] = a.Init
	}
	grid, err := k.Launch.Blocks(c.Data.Values)
	if err != nil {
		t.Fatal(err)
	}
	if err := interp.Run(k, grid, args); err != nil {
		t.Fatal(err)
	}
	// Inputs come back as stored (rounded to the precision): judge them
	// here, hand Compare the originals.
	for n, a := range c.Data.Arrays {
		if a.Output() || a.Type != kernel.Real {
			continue
		}
		for i, x := range got[n] {
			if x != k.DType.Rounded(a.Init[i]) {
				t.Fatalf("%s: input %s[%d] changed", k.Name, n, i)
			}
		}
		got[n] = a.Init
	}
	res, err := c.Data.Compare(got)
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK() {
		t.Errorf("%s %s: %+v", c.Label, c.Kernel.Variant, res)
	}
}

// Every kernel of small problems in the interpreter, as written and as
// lowered for the host, against pum's float64 blocks and assembly.
func TestInterpret(t *testing.T) {
	for _, tc := range []struct {
		level int
		s     Spec
	}{
		{2, Spec{Dim: 2, Degree: 1, Coeff: Coefficients{CoeffSmooth, 1.5, 2}, DType: kernel.F64, Threads: 4}},
		{2, Spec{Dim: 2, Degree: 2, Periodic: true, Coeff: Coefficients{CoeffConst, 1, 0}, DType: kernel.F64, Threads: 1, Layout: Interleaved}},
		{1, Spec{Dim: 3, Degree: 1, Coeff: Coefficients{CoeffSmooth, 1, 1}, DType: kernel.F64, Threads: 8}},
		{2, Spec{Dim: 2, Degree: 3, Coeff: Coefficients{CoeffSmooth, 1, 1}, DType: kernel.F32, Threads: 2}},
	} {
		pr, err := NewProblem(tc.level, tc.s)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := pr.Cases()
		if err != nil {
			t.Fatal(err)
		}
		if len(cs) < 3*len(pr.Plan.Bins) {
			t.Fatalf("%d cases for %d bins", len(cs), len(pr.Plan.Bins))
		}
		for i, c := range cs {
			interpret(t, c, i%2 == 1)
		}
	}
}

// No two cells of a colour group write one block: the premise of the
// colour strategy, over periodic and clipped covers.
func TestColourGroups(t *testing.T) {
	for _, c := range []struct {
		dim, level int
		periodic   bool
	}{{2, 3, false}, {2, 2, true}, {2, 3, true}, {3, 2, false}, {3, 2, true}} {
		cv, err := pum.UniformCover(c.dim, c.level, pum.DefaultAlpha, c.periodic)
		if err != nil {
			t.Fatal(err)
		}
		dec, err := pum.Decompose(cv, 0)
		if err != nil {
			t.Fatal(err)
		}
		pl, err := NewPlan(dec, true)
		if err != nil {
			t.Fatal(err)
		}
		total := 0
		for _, b := range pl.Bins {
			total += len(b.Cells)
			for g := range len(b.Groups) - 1 {
				seen := map[[2]int32]bool{}
				for t0 := b.Groups[g]; t0 < b.Groups[g+1]; t0++ {
					act := b.Act[int(t0)*b.Active : int(t0+1)*b.Active]
					for _, i := range act {
						for _, j := range act {
							if seen[[2]int32{i, j}] {
								t.Fatalf("%+v: block (%d,%d) written twice in group %d", c, i, j, g)
							}
							seen[[2]int32{i, j}] = true
						}
					}
				}
			}
		}
		if total != dec.NCells {
			t.Errorf("%+v: plan holds %d cells, decomposition %d", c, total, dec.NCells)
		}
	}
}

func TestBadSpecs(t *testing.T) {
	good := Spec{Dim: 2, Degree: 1, Active: 2, Coeff: Coefficients{CoeffConst, 1, 0}, Threads: 1}
	for name, mod := range map[string]func(*Spec){
		"dim 4":        func(s *Spec) { s.Dim = 4 },
		"degree 6":     func(s *Spec) { s.Degree = 6 },
		"3d degree 4":  func(s *Spec) { s.Dim, s.Degree = 3, 4 },
		"active 0":     func(s *Spec) { s.Active = 0 },
		"threads":      func(s *Spec) { s.Threads = 0 },
		"coeff":        func(s *Spec) { s.Coeff.Name = "sin" },
		"kappa":        func(s *Spec) { s.Coeff.K = 0 },
		"r nan":        func(s *Spec) { s.Coeff.R = math.NaN() },
		"points":       func(s *Spec) { s.Points = 13 },
		"tiles":        func(s *Spec) { s.Tiles = MaxTiles + 1 },
		"side":         func(s *Spec) { s.Side = MaxSide + 1 },
		"vec":          func(s *Spec) { s.Vec = 3 },
		"vec 4 in f64": func(s *Spec) { s.Vec, s.DType = 4, kernel.F64 },
	} {
		s := good
		mod(&s)
		if _, err := Integrate(s); err == nil {
			t.Errorf("%s: no error", name)
		}
		if _, err := Assemble(s, true); err == nil {
			t.Errorf("%s: assemble: no error", name)
		}
	}
	if _, err := Integrate(good); err != nil {
		t.Error(err)
	}
	pl := &Plan{Bins: []Bin{{Active: 4, Cells: make([]int32, 10)}}}
	if _, err := pl.Batches(21, 100); err == nil {
		t.Error("a budget below one block: no error")
	}
	bs, err := pl.Batches(3, 144*3)
	if err != nil || len(bs) != 4 || bs[3].Count != 1 {
		t.Errorf("batches %v, %v", bs, err)
	}

}

// The group kernels (team per cell, points staged in shared memory,
// tiles of the Gram product; and fused into the matrix) in the
// interpreter, as written and lowered, over shapes that exercise several
// tiles per thread, several cells per block, several point chunks, odd
// n_f and cells past the launch.
func TestGroupKernels(t *testing.T) {
	for _, tc := range []struct {
		level int
		s     Spec
	}{
		{2, Spec{Dim: 2, Degree: 1, Coeff: Coefficients{CoeffSmooth, 1.5, 2}, DType: kernel.F64, Threads: 64}},
		{2, Spec{Dim: 2, Degree: 2, Periodic: true, Coeff: Coefficients{CoeffConst, 1, 0}, DType: kernel.F64, Threads: 8, Layout: Interleaved}},
		{1, Spec{Dim: 3, Degree: 1, Coeff: Coefficients{CoeffSmooth, 1, 1}, DType: kernel.F64, Threads: 32}},
		{2, Spec{Dim: 2, Degree: 4, Coeff: Coefficients{CoeffSmooth, 1, 1}, DType: kernel.F32, Threads: 128}},
		{2, Spec{Dim: 2, Degree: 3, Points: 7, Coeff: Coefficients{CoeffSmooth, 1, 1}, DType: kernel.F64, Threads: 5}},
		{1, Spec{Dim: 3, Degree: 1, Coeff: Coefficients{CoeffSmooth, 1, 1}, DType: kernel.F64, Threads: 64, Tiles: 4}},
		{2, Spec{Dim: 2, Degree: 2, Coeff: Coefficients{CoeffSmooth, 1, 1}, DType: kernel.F32, Threads: 64, Tiles: 3}},
		{2, Spec{Dim: 2, Degree: 3, Coeff: Coefficients{CoeffSmooth, 1, 1}, DType: kernel.F64, Threads: 16, Side: 4}},
		{1, Spec{Dim: 3, Degree: 1, Coeff: Coefficients{CoeffSmooth, 1, 1}, DType: kernel.F64, Threads: 32, Side: 3, Tiles: 2}},
		{2, Spec{Dim: 2, Degree: 1, Periodic: true, Coeff: Coefficients{CoeffSmooth, 1, 1}, DType: kernel.F64, Threads: 8, Side: 1}},
		// Staged loads in pairs in f64 (odd side: padded rows) and one
		// at a time in f32, the defaults' other way round.
		{2, Spec{Dim: 2, Degree: 2, Coeff: Coefficients{CoeffSmooth, 2, 3}, DType: kernel.F64, Threads: 32, Side: 3, Vec: 2}},
		{1, Spec{Dim: 3, Degree: 1, Coeff: Coefficients{CoeffConst, 1, 0}, DType: kernel.F32, Threads: 16, Vec: 1}},
		// Staged loads of four (f32): a side of 4, an odd side (rows
		// padded to 8, with and without the fold) and a side of 6.
		{2, Spec{Dim: 2, Degree: 3, Coeff: Coefficients{CoeffSmooth, 1, 2}, DType: kernel.F32, Threads: 64, Side: 4, Vec: 4}},
		{1, Spec{Dim: 3, Degree: 1, Coeff: Coefficients{CoeffSmooth, 1, 1}, DType: kernel.F32, Threads: 32, Side: 5, Vec: 4}},
		{2, Spec{Dim: 2, Degree: 4, Coeff: Coefficients{CoeffConst, 1, 0}, DType: kernel.F32, Threads: 64, Side: 5, Vec: 4}},
		{2, Spec{Dim: 2, Degree: 2, Coeff: Coefficients{CoeffSmooth, 2, 3}, DType: kernel.F32, Threads: 32, Side: 6, Vec: 4}},
		// Weights folded into the staged values (n_f ≥ foldMinNF) without
		// the mass term, and in f64 with pairs.
		{2, Spec{Dim: 2, Degree: 3, Coeff: Coefficients{CoeffConst, 1, 0}, DType: kernel.F32, Threads: 64, Side: 4}},
		{2, Spec{Dim: 2, Degree: 3, Coeff: Coefficients{CoeffSmooth, 1, 2}, DType: kernel.F64, Threads: 32, Side: 6, Vec: 2}},
		// The Gram product on tensor cores: one block (no blocks above
		// the diagonal), two (a warp without one), three, and several
		// cells a block; k-steps past the rule's last point.
		{2, Spec{Dim: 2, Degree: 1, Periodic: true, Coeff: Coefficients{CoeffSmooth, 1, 1}, DType: kernel.F64, Threads: 32, MMA: 16}},
		{1, Spec{Dim: 3, Degree: 1, Coeff: Coefficients{CoeffConst, 1, 0}, DType: kernel.F64, Threads: 64, MMA: 16}},
		{2, Spec{Dim: 2, Degree: 2, Coeff: Coefficients{CoeffSmooth, 2, 3}, DType: kernel.F64, Threads: 64, MMA: 8}},
		{2, Spec{Dim: 2, Degree: 3, Coeff: Coefficients{CoeffSmooth, 1, 2}, DType: kernel.F32, Threads: 128, MMA: 16}},
		{2, Spec{Dim: 2, Degree: 2, Coeff: Coefficients{CoeffSmooth, 1, 1}, DType: kernel.F32, Threads: 256, MMA: 32}},
	} {
		pr, err := NewProblem(tc.level, tc.s)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := pr.Cases()
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, c := range cs {
			if c.Kernel.Meta["fused"] == nil {
				continue
			}
			n++
			if tc.s.MMA != 0 || !testing.Short() { // -short: the host lowering alone where there is one
				interpret(t, c, false)
			}
			if tc.s.MMA == 0 { // warp-level mma: CUDA only, no host lowering
				interpret(t, c, true)
			}
		}
		if n != 2*len(pr.Plan.Bins) {
			t.Errorf("%d group cases for %d bins", n, len(pr.Plan.Bins))
		}
	}
	// Shapes: chunks and multiple cells per block where they should be.
	s := Spec{Dim: 2, Degree: 5, Active: 4, Coeff: Coefficients{CoeffSmooth, 1, 1}, DType: kernel.F64, Threads: 256}
	if g := s.Group(); g.TC != 256 || g.CB != 1 || g.K != 4 || g.Chunks < 2 {
		t.Errorf("2-D p5 a4 shape %+v", g)
	}
	s.Degree, s.Active = 1, 1
	if g := s.Group(); g.TC != 4 || g.CB != 64 || g.Chunks > 2 || g.PC*g.Chunks < 4 {
		t.Errorf("2-D p1 a1 shape %+v", g)
	}
	s = Spec{Dim: 3, Degree: 1, Active: 8, Coeff: Coefficients{CoeffSmooth, 1, 1}, DType: kernel.F64, Threads: 256, Tiles: 4}
	if g := s.Group(); g.TC != 64 || g.CB != 4 || g.K != 3 {
		t.Errorf("3-D p1 a8, 4 tiles per thread: shape %+v", g)
	}
	s = Spec{Dim: 3, Degree: 3, Active: 8, Coeff: Coefficients{CoeffSmooth, 1, 1}, DType: kernel.F64, Threads: 256}
	if k, err := IntegrateGroup(s, true); err != nil || k.Launch.SharedBytes > MaxGroupShared+1024 {
		t.Errorf("3-D p3 a8: %v, shared %d", err, k.Launch.SharedBytes)
	}
}

// The wave set's polynomial sine agrees with math.Sin on [0, 1], and its
// load is the manufactured solution's −KΔu + Ru.
func TestWaveSin(t *testing.T) {
	for _, x := range []float64{0, 1e-9, 0.1, 0.25, 0.3, 0.5, 0.6180339887, 0.75, 0.9, 1} {
		if got, want := WaveSin(x), math.Sin(2*math.Pi*x); math.Abs(got-want) > 4e-16 {
			t.Errorf("WaveSin(%v) = %.17g, math.Sin %.17g", x, got, want)
		}
	}
	co := Coefficients{CoeffWave, 1.5, 2}.Reference()
	for _, x := range [][]float64{{0.1, 0.7}, {0.3, 0.2, 0.9}} {
		g := make([]float64, len(x))
		u := WaveExact(x, g)
		want := (4*math.Pi*math.Pi*float64(len(x))*1.5 + 2) * u
		if got := co.F(x); math.Abs(got-want) > 1e-13*math.Abs(want) {
			t.Errorf("f(%v) = %v, want %v", x, got, want)
		}
	}
}

// mergedCase is the fused group kernel of bin bi with Merge = M over the
// bin's cells regrouped into units of M cells with one active set (in one
// order), as SetOrder lays a uniform cover's bins out, and its float64
// reference: those cells' blocks and loads scattered into the matrix.
func mergedCase(t *testing.T, pr *Problem, bi, M int) (Case, bool) {
	t.Helper()
	b := pr.Plan.Bins[bi]
	s := pr.Spec
	s.Active, s.Merge = b.Active, M
	a, d, nf := b.Active, s.Dim, s.NF()
	c := pr.Sys.Cover
	B := pr.Sys.Space.B
	groups := map[string][]int{}
	var keys []string
	for u := range b.Cells {
		key := fmt.Sprint(b.Act[u*a : (u+1)*a])
		if _, ok := groups[key]; !ok {
			keys = append(keys, key)
		}
		groups[key] = append(groups[key], u)
	}
	var order []int
	for _, key := range keys {
		for g := groups[key]; len(g) >= M; g = g[M:] {
			order = append(order, g[:M]...)
		}
	}
	if len(order) == 0 {
		return Case{}, false
	}
	rd := func(x []float64) []float64 {
		out := make([]float64, len(x))
		for i, v := range x {
			out[i] = s.DType.Rounded(v)
		}
		return out
	}
	var lo, hi, act []float64
	val := make([]float64, len(c.Nbr)*B*B)
	load := make([]float64, c.N*B)
	bsr := pum.BSR{N: c.N, B: B, RowPtr: c.NbrPtr, Col: c.Nbr, Val: val}
	for _, u := range order {
		lo = append(lo, b.Lo[u*d:(u+1)*d]...)
		hi = append(hi, b.Hi[u*d:(u+1)*d]...)
		act = append(act, ints(b.Act[u*a:(u+1)*a])...)
		cell := b.Cells[u]
		E := pr.Elems.E[pr.Elems.EPtr[cell]:pr.Elems.EPtr[cell+1]]
		F := pr.Elems.F[pr.Elems.FPtr[cell]:pr.Elems.FPtr[cell+1]]
		for sa, I := range b.Act[u*a : (u+1)*a] {
			for m := range B {
				load[int(I)*B+m] += F[sa*B+m]
			}
			for sb, J := range b.Act[u*a : (u+1)*a] {
				blk := bsr.Block(int(I), int(J))
				if blk < 0 {
					t.Fatalf("cell couples %d and %d outside the neighbour graph", I, J)
				}
				for m := range B {
					for n := range B {
						val[blk*B*B+m*B+n] += E[(sa*B+m)*nf+sb*B+n]
					}
				}
			}
		}
	}
	k, err := IntegrateGroup(s, true)
	if err != nil {
		t.Fatal(err)
	}
	return Case{Kernel: k, Label: fmt.Sprintf("pum %dd p%d merged %d", d, s.Degree, M), Data: &family.Data{
		Arrays: map[string]*family.Array{
			"lo":     {Type: kernel.Real, Init: rd(lo)},
			"hi":     {Type: kernel.Real, Init: rd(hi)},
			"act":    {Type: kernel.Int32, Init: act},
			"centre": {Type: kernel.Real, Init: rd(c.Centre)},
			"sup":    {Type: kernel.Real, Init: rd(Support(c))},
			"qx":     {Type: kernel.Real, Init: rd(pr.Sys.Rule.X)},
			"qw":     {Type: kernel.Real, Init: rd(pr.Sys.Rule.W)},
			"rowptr": {Type: kernel.Int32, Init: ints(c.NbrPtr)},
			"col":    {Type: kernel.Int32, Init: ints(c.Nbr)},
			"val":    {Type: kernel.Real, Init: make([]float64, len(val)), Want: val},
			"f":      {Type: kernel.Real, Init: make([]float64, len(load)), Want: load},
		},
		Values: map[string]int64{Cells: int64(len(order)), C0: 0},
		Tol:    Tol(s.DType),
	}}, true
}

// The fused group kernel with merged cells (Spec.Merge, the CLI's default
// on uniform covers where it pays) in the interpreter: M cells of one
// active set into the same accumulators, SIMT tiles and tensor-core
// blocks (CUDA's default for 3-D p = 1), against the cells' float64
// blocks scattered.
func TestGroupKernelsMerged(t *testing.T) {
	for _, tc := range []struct {
		level, merge int
		s            Spec
	}{
		{2, 4, Spec{Dim: 2, Degree: 2, Coeff: Coefficients{CoeffSmooth, 1.5, 2}, DType: kernel.F64, Threads: 64, Side: 3}},
		{2, 4, Spec{Dim: 2, Degree: 2, Coeff: Coefficients{CoeffSmooth, 1.5, 2}, DType: kernel.F64, Threads: 64, MMA: 8}},
		{2, 8, Spec{Dim: 3, Degree: 1, Coeff: Coefficients{CoeffSmooth, 1, 1}, DType: kernel.F64, Threads: 128, MMA: 16}},
		{2, 8, Spec{Dim: 3, Degree: 1, Coeff: Coefficients{CoeffSmooth, 1, 1}, DType: kernel.F32, Threads: 256, MMA: 16}},
	} {
		pr, err := NewProblem(tc.level, tc.s)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for bi, b := range pr.Plan.Bins {
			if b.Active < 2 {
				continue
			}
			c, ok := mergedCase(t, pr, bi, tc.merge)
			if !ok {
				continue
			}
			n++
			interpret(t, c, false)
			if tc.s.MMA == 0 {
				interpret(t, c, true)
			}
		}
		if n == 0 {
			t.Errorf("%+v: no bin with %d cells of one active set", tc.s, tc.merge)
		}
	}
}
