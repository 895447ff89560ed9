package pum

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/interp"
	"github.com/bespoke-hpc/bespoke/kernel/pass"
	"github.com/bespoke-hpc/bespoke/pum"
)

// decompInterp runs the decomposition kernels in the interpreter (lowered
// for the host first with lower): pattern, then in ColourOrder count,
// Prefix and fill, in PatchOrder the patch fill. It returns the patch
// data and pattern, and the bins with their arrays.
func decompInterp(t *testing.T, dc *Decomposer, s DecompSpec, order BinOrder, lower bool) (map[string][]float64, []BinData) {
	t.Helper()
	pk, err := PatternKernel(s)
	if err != nil {
		t.Fatal(err)
	}
	ck, err := CountKernel(s)
	if err != nil {
		t.Fatal(err)
	}
	fk, err := FillKernel(s, dc.Bins)
	switch order {
	case PatchOrder:
		fk, err = FillPatchKernel(s, dc.Bins)
	case SetOrder:
		fk, err = FillSetKernel(s, dc.Bins)
	}
	if err != nil {
		t.Fatal(err)
	}
	wide := func(x []int32) []int64 {
		out := make([]int64, len(x))
		for i, v := range x {
			out[i] = int64(v)
		}
		return out
	}
	rd := func(x []float64) []float64 {
		out := make([]float64, len(x))
		for i, v := range x {
			out[i] = s.DType.Rounded(v)
		}
		return out
	}
	args := map[string]any{"sptr": wide(dc.SPtr), "spt": rd(dc.SPt), "sivl": wide(dc.SIvl), "snbr": wide(dc.SNbr), "sgeo": rd(dc.SGeo), "scnt": wide(dc.SCnt), "sset": wide(dc.SSet),
		"centre": make([]float64, dc.N*dc.Dim), "sup": make([]float64, dc.N*dc.Dim),
		"rowptr": make([]int64, dc.N+1), "col": make([]int64, dc.Blocks), "hist": make([]int64, dc.HistLen())}
	for n, x := range dc.Values() {
		args[n] = x
	}
	run := func(k *kernel.Kernel, args map[string]any) {
		t.Helper()
		if lower {
			if k, err = pass.HostLoops(k); err != nil {
				t.Fatal(err)
			}
		}
		grid, err := k.Launch.Blocks(dc.Values())
		if err != nil {
			t.Fatal(err)
		}
		a := map[string]any{}
		for _, p := range k.Params {
			a[p.Name] = args[p.Name]
		}
		if err := interp.Run(k, grid, a); err != nil {
			t.Fatal(err)
		}
	}
	run(pk, args)
	bins, start := dc.PatchBins, []int64(nil)
	if order == ColourOrder {
		run(ck, args)
		hist := args["hist"].([]int64)
		h32 := make([]int32, len(hist))
		for i, v := range hist {
			h32[i] = int32(v)
		}
		if bins, err = dc.Prefix(h32); err != nil {
			t.Fatal(err)
		}
		start = wide(h32)
		args["hist"] = slices.Clone(start)
	}
	out := make([]BinData, len(bins))
	for _, a := range dc.Bins {
		args[fmt.Sprintf("lo%d", a)], args[fmt.Sprintf("hi%d", a)], args[fmt.Sprintf("act%d", a)] = []float64{}, []float64{}, []int64{}
	}
	for bi, b := range bins {
		a := b.Active
		args[fmt.Sprintf("lo%d", a)] = make([]float64, b.Cells*dc.Dim)
		args[fmt.Sprintf("hi%d", a)] = make([]float64, b.Cells*dc.Dim)
		args[fmt.Sprintf("act%d", a)] = make([]int64, b.Cells*a)
		out[bi].DeviceBin = b
	}
	run(fk, args)
	for bi, b := range bins {
		a := b.Active
		out[bi].Lo = args[fmt.Sprintf("lo%d", a)].([]float64)
		out[bi].Hi = args[fmt.Sprintf("hi%d", a)].([]float64)
		for _, v := range args[fmt.Sprintf("act%d", a)].([]int64) {
			out[bi].Act = append(out[bi].Act, int32(v))
		}
	}
	// Each cursor ended where the next (key, copy) starts, the last at the
	// bin's end: every slot was taken once.
	nk, one := dc.Colours*dc.MaxCells, dc.HistLen()/dc.Stripes
	end := args["hist"].([]int64)
	for _, b := range bins {
		if order != ColourOrder {
			break
		}
		next := int64(b.Cells)
		for key := nk - 1; key >= 0; key-- {
			for s := dc.Stripes - 1; s >= 0; s-- {
				h := s*one + b.Active*nk + key
				if end[h] != next {
					t.Fatalf("bin %d, key %d, copy %d: cursor ended at %d, the next starts at %d", b.Active, key, s, end[h], next)
				}
				next = start[h]
			}
		}
	}
	pat := map[string][]float64{"centre": args["centre"].([]float64), "sup": args["sup"].([]float64)}
	for _, n := range []string{"rowptr", "col"} {
		for _, v := range args[n].([]int64) {
			pat[n] = append(pat[n], float64(v))
		}
	}
	return pat, out
}

// The device decomposition (in the interpreter, as written and lowered)
// gives the host plan: the same bins, colour groups and cells per group,
// and the cover's patch data and matrix pattern.
func TestDeviceDecomposition(t *testing.T) {
	type tc struct {
		dim, level int
		periodic   bool
		s          DecompSpec
	}
	var cases []tc
	for _, dim := range []int{2, 3} {
		for level := 1; level <= 4; level++ {
			if dim == 3 && level > 3 {
				continue // the interpreter is slow; the C backend runs 3-D level 4 (internal/cli)
			}
			cases = append(cases, tc{dim, level, false, DecompSpec{Dim: dim, DType: kernel.F64, Threads: 1 + level%3*3}})
		}
		cases = append(cases, tc{dim, 2, true, DecompSpec{Dim: dim, DType: kernel.F64, Threads: 5}})
	}
	cases = append(cases, tc{2, 3, true, DecompSpec{Dim: 2, DType: kernel.F32, Threads: 8}}, tc{2, 0, false, DecompSpec{Dim: 2, DType: kernel.F64, Threads: 2}},
		tc{3, 3, true, DecompSpec{Dim: 3, DType: kernel.F64, Threads: 32}})
	for _, c := range cases {
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
		dc, err := NewDecomposer(c.dim, c.level, pum.DefaultAlpha, c.periodic)
		if err != nil {
			t.Fatal(err)
		}
		if dc.Colours != pl.Colours || dc.N != cv.N || dc.Blocks != int64(len(cv.Nbr)) {
			t.Fatalf("%+v: %d colours, %d patches, %d blocks; the cover %d, %d, %d", c, dc.Colours, dc.N, dc.Blocks, pl.Colours, cv.N, len(cv.Nbr))
		}
		var hostBins []int
		for _, b := range pl.Bins {
			hostBins = append(hostBins, b.Active)
		}
		if !slices.Equal(hostBins, dc.Bins) {
			t.Errorf("%+v: predicted bins %v, host %v", c, dc.Bins, hostBins)
		}
		plain, err := NewPlan(dec, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, run := range []struct {
			order BinOrder
			lower bool
		}{{ColourOrder, false}, {ColourOrder, true}, {PatchOrder, false}, {PatchOrder, true}, {SetOrder, false}, {SetOrder, true}} {
			name := fmt.Sprintf("%dd-l%d-per%v-%s-t%d-%s-lower%v", c.dim, c.level, c.periodic, c.s.DType, c.s.Threads, run.order, run.lower)
			pat, bins := decompInterp(t, dc, c.s, run.order, run.lower)
			want := pl
			switch run.order {
			case PatchOrder:
				want = plain
			case SetOrder:
				want = wholeBins(plain)
				if err := checkSets(bins, dc.SetCells, c.dim); err != nil {
					t.Errorf("%s: %v", name, err)
				}
				for i := range bins {
					bins[i].Groups = []int32{0, int32(bins[i].Cells)}
				}
			}
			if err := want.CompareDevice(c.s.DType, bins); err != nil {
				t.Errorf("%s: %v", name, err)
			}
			if got := dc.Summary(cv, sizesOf(bins)); got.NCells != dec.NCells || got.MaxActive != dec.MaxActive || !slices.Equal(got.BinPtr, dec.BinPtr) {
				t.Errorf("%s: summary %d cells, %d active, bins %v; host %d, %d, %v", name, got.NCells, got.MaxActive, got.BinPtr, dec.NCells, dec.MaxActive, dec.BinPtr)
			}
			for n, want := range map[string][]float64{"centre": cv.Centre, "sup": Support(cv), "rowptr": ints(cv.NbrPtr), "col": ints(cv.Nbr)} {
				for i, w := range want {
					if pat[n][i] != c.s.DType.Rounded(w) {
						t.Fatalf("%s: %s[%d] = %v, the cover's %v", name, n, i, pat[n][i], w)
					}
				}
			}
		}
	}
}

// wholeBins is pl with every bin one group: CompareDevice then compares
// a bin's cells as a multiset (SetOrder orders them by set).
func wholeBins(pl *Plan) *Plan {
	out := *pl
	out.Bins = slices.Clone(pl.Bins)
	for i := range out.Bins {
		out.Bins[i].Groups = []int32{0, int32(len(out.Bins[i].Cells))}
	}
	return &out
}

// checkSets reports a SetOrder bin whose runs of m cells (m = 2^d on a
// uniform cover: what the merged kernels take together) do not share
// their active patches, or whose sets are not contiguous.
func checkSets(bins []BinData, m, dim int) error {
	if m != 1<<dim {
		return fmt.Errorf("SetCells = %d, want %d on a uniform cover", m, 1<<dim)
	}
	for _, b := range bins {
		a := b.Active
		if b.Cells%m != 0 {
			return fmt.Errorf("bin %d: %d cells, not whole sets of %d", a, b.Cells, m)
		}
		seen := map[string]bool{}
		for u := 0; u < b.Cells; u += m {
			first := b.Act[u*a : u*a+a]
			for c := u + 1; c < u+m; c++ {
				if !slices.Equal(b.Act[c*a:c*a+a], first) {
					return fmt.Errorf("bin %d: cell %d has active patches %v, its set's first %v", a, c, b.Act[c*a:c*a+a], first)
				}
			}
			key := fmt.Sprint(first)
			if seen[key] {
				return fmt.Errorf("bin %d: active set %v in two runs", a, first)
			}
			seen[key] = true
		}
	}
	return nil
}

// sizesOf are the bins of downloaded bin data.
func sizesOf(bs []BinData) []DeviceBin {
	out := make([]DeviceBin, len(bs))
	for i, b := range bs {
		out[i] = b.DeviceBin
	}
	return out
}

// A wrong cell, group or bin is found.
func TestCompareDevice(t *testing.T) {
	cv, err := pum.UniformCover(2, 2, pum.DefaultAlpha, false)
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
	good := func() []BinData {
		var out []BinData
		for _, b := range pl.Bins {
			// Reverse each group: the order within one does not matter.
			bd := BinData{DeviceBin: DeviceBin{Active: b.Active, Cells: len(b.Cells), Groups: slices.Clone(b.Groups)},
				Lo: slices.Clone(b.Lo), Hi: slices.Clone(b.Hi), Act: slices.Clone(b.Act)}
			for g := range len(b.Groups) - 1 {
				g0, g1 := int(b.Groups[g]), int(b.Groups[g+1])
				for x, y := g0, g1-1; x < y; x, y = x+1, y-1 {
					for k := range 2 {
						bd.Lo[x*2+k], bd.Lo[y*2+k] = bd.Lo[y*2+k], bd.Lo[x*2+k]
						bd.Hi[x*2+k], bd.Hi[y*2+k] = bd.Hi[y*2+k], bd.Hi[x*2+k]
					}
					for k := range b.Active {
						bd.Act[x*b.Active+k], bd.Act[y*b.Active+k] = bd.Act[y*b.Active+k], bd.Act[x*b.Active+k]
					}
				}
			}
			out = append(out, bd)
		}
		return out
	}
	if err := pl.CompareDevice(kernel.F64, good()); err != nil {
		t.Fatalf("reordered groups: %v", err)
	}
	// Without colour the order counts.
	plain, err := NewPlan(dec, false)
	if err != nil {
		t.Fatal(err)
	}
	var exact []BinData
	for _, b := range plain.Bins {
		exact = append(exact, BinData{DeviceBin: DeviceBin{Active: b.Active, Cells: len(b.Cells)}, Lo: b.Lo, Hi: b.Hi, Act: b.Act})
	}
	if err := plain.CompareDevice(kernel.F64, exact); err != nil {
		t.Errorf("the plan itself: %v", err)
	}
	swapped := slices.Clone(exact)
	swapped[0].Act = slices.Clone(exact[0].Act)
	last := len(swapped[0].Act) - 1 // another patch's cell
	swapped[0].Act[0], swapped[0].Act[last] = swapped[0].Act[last], swapped[0].Act[0]
	if err := plain.CompareDevice(kernel.F64, swapped); err == nil {
		t.Error("two cells swapped without colour: no error")
	}
	for name, spoil := range map[string]func([]BinData){
		"corner":   func(b []BinData) { b[0].Lo[0] = math.Nextafter(b[0].Lo[0], 2) },
		"patch":    func(b []BinData) { b[1].Act[0]++ },
		"group":    func(b []BinData) { b[1].Groups[1]++ },
		"bin":      func(b []BinData) { b[2].Active++ },
		"no bin":   func(b []BinData) { copy(b, b[1:]) },
		"too few":  func(b []BinData) { b[0].Lo = b[0].Lo[1:] },
		"swap two": func(b []BinData) { b[0].Act[0], b[0].Act[len(b[0].Act)-1] = b[0].Act[len(b[0].Act)-1], b[0].Act[0] },
	} {
		b := good()
		spoil(b)
		if name == "no bin" {
			b = b[:len(b)-1]
		}
		if err := pl.CompareDevice(kernel.F64, b); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Bad inputs give one-line errors.
func TestDecomposerErrors(t *testing.T) {
	for name, f := range map[string]func() error{
		"level":    func() error { _, err := NewDecomposer(2, 11, pum.DefaultAlpha, false); return err },
		"dim":      func() error { _, err := NewDecomposer(4, 1, pum.DefaultAlpha, false); return err },
		"alpha":    func() error { _, err := NewDecomposer(2, 3, 2.5, false); return err },
		"periodic": func() error { _, err := NewDecomposer(2, 1, pum.DefaultAlpha, true); return err },
		"threads":  func() error { _, err := CountKernel(DecompSpec{Dim: 2, Threads: 0}); return err },
		"spec dim": func() error { _, err := PatternKernel(DecompSpec{Dim: 1, Threads: 1}); return err },
		"bins":     func() error { _, err := FillKernel(DecompSpec{Dim: 2, Threads: 1}, []int{2, 1}); return err },
		"no bins":  func() error { _, err := FillKernel(DecompSpec{Dim: 2, Threads: 1}, nil); return err },
		"bin 17":   func() error { _, err := FillKernel(DecompSpec{Dim: 2, Threads: 1}, []int{17}); return err },
		"hist size": func() error {
			dc, _ := NewDecomposer(2, 2, pum.DefaultAlpha, false)
			_, err := dc.Prefix(make([]int32, 3))
			return err
		},
		"hist bin": func() error {
			dc, _ := NewDecomposer(2, 2, pum.DefaultAlpha, false)
			h := make([]int32, dc.HistLen())
			h[3*dc.Colours*dc.MaxCells] = 1 // three active: not a bin of this cover
			_, err := dc.Prefix(h)
			return err
		},
		"hist negative": func() error {
			dc, _ := NewDecomposer(2, 2, pum.DefaultAlpha, false)
			h := make([]int32, dc.HistLen())
			h[dc.Colours*dc.MaxCells] = -1
			_, err := dc.Prefix(h)
			return err
		},
	} {
		if err := f(); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want a one-line error", name, err)
		}
	}
}

// The host work of a uniform cover's set-up and decomposition, by the
// host path (the cover and its neighbour graph, the patch supports,
// pum.Decompose, NewPlan) and by the device path (NewDecomposer's
// tables): go test -run - -bench DecompositionHostWork ./kernel/pum/.
func BenchmarkDecompositionHostWork(b *testing.B) {
	for _, c := range []struct{ dim, level int }{{2, 7}, {2, 8}, {2, 9}, {3, 5}, {3, 6}} {
		b.Run(fmt.Sprintf("%dd-l%d/cover", c.dim, c.level), func(b *testing.B) {
			for b.Loop() {
				cv, err := pum.UniformCover(c.dim, c.level, pum.DefaultAlpha, false)
				if err != nil {
					b.Fatal(err)
				}
				Support(cv)
			}
		})
		cv, err := pum.UniformCover(c.dim, c.level, pum.DefaultAlpha, false)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("%dd-l%d/decompose-plan", c.dim, c.level), func(b *testing.B) {
			for b.Loop() {
				dec, err := pum.Decompose(cv, 0)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := NewPlan(dec, true); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("%dd-l%d/tables", c.dim, c.level), func(b *testing.B) {
			for b.Loop() {
				if _, err := NewDecomposer(c.dim, c.level, pum.DefaultAlpha, false); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
