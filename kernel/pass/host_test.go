package pass_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/interp"
	"github.com/bespoke-hpc/bespoke/kernel/kerneltest"
	"github.com/bespoke-hpc/bespoke/kernel/pass"
	"github.com/bespoke-hpc/bespoke/kernel/sparse"
	"github.com/bespoke-hpc/bespoke/operator"
)

// run interprets k over the grid with fresh copies of the buffers.
func run(t *testing.T, k *kernel.Kernel, grid int, scalars map[string]int64, bufs map[string][]float64) map[string][]float64 {
	t.Helper()
	args := map[string]any{}
	out := map[string][]float64{}
	for name, b := range bufs {
		out[name] = slices.Clone(b)
		args[name] = out[name]
	}
	for name, s := range scalars {
		args[name] = s
	}
	if err := interp.Run(k, [3]int{grid, 1, 1}, args); err != nil {
		t.Fatal(err)
	}
	return out
}

// same fails unless a and b hold the same bits (NaN equal to NaN).
func same(t *testing.T, what string, a, b map[string][]float64) {
	t.Helper()
	for name := range a {
		for j := range a[name] {
			x, y := a[name][j], b[name][j]
			if x != y && !(math.IsNaN(x) && math.IsNaN(y)) {
				t.Fatalf("%s: %s[%d] = %v lowered, %v as written", what, name, j, y, x)
			}
		}
	}
}

func randoms(rng *rand.Rand, n int) []float64 {
	x := make([]float64, n)
	for j := range x {
		x[j] = rng.Float64()*2 - 1
	}
	return x
}

// HostLoops keeps what a kernel computes, operation for operation: the
// lowered kernel, run with one thread per block, gives the same bits.
func TestHostLoopsSlabs(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	k := kerneltest.Slabs()
	h, err := pass.HostLoops(k)
	if err != nil {
		t.Fatal(err)
	}
	if h.Launch.Block != [3]int{1, 1, 1} || h.HasBarrier() {
		t.Fatalf("lowered block %v, barriers %v", h.Launch.Block, h.HasBarrier())
	}
	// The loop's variables and the private array are lifted per thread.
	var lifted []string
	for _, s := range h.Shared {
		lifted = append(lifted, fmt.Sprint(s.Name, s.Dims))
	}
	if want := "[s[2 3 4] e[2 3 4] acc[2 3 4] hist[2 3 4 3] at[2 3 4] t[2 3 4]]"; fmt.Sprint(lifted) != want {
		t.Errorf("lifted %v, want %s", lifted, want)
	}
	const depth, elems = 3, 6
	bufs := map[string][]float64{"x": randoms(rng, elems*depth*12), "y": make([]float64, elems*depth*12)}
	scalars := map[string]int64{"depth": depth}
	want := run(t, k, elems/2, scalars, bufs)
	same(t, "slabs", want, run(t, h, elems/2, scalars, bufs))
	if want["y"][0] == 0 {
		t.Error("the kernel wrote nothing")
	}
}

// The rest of the IR lowers the same way.
func TestHostLoopsMisc(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, dt := range []kernel.DType{kernel.F64, kernel.F32} {
		k := kerneltest.Misc(dt)
		h, err := pass.HostLoops(k)
		if err != nil {
			t.Fatal(err)
		}
		const n = 10
		to := make([]int64, n)
		for j := range to {
			to[j] = int64(rng.IntN(kerneltest.MiscLen))
		}
		x := randoms(rng, 2*n)
		args := func() map[string]any {
			return map[string]any{"n": n, "to": slices.Clone(to), "x": slices.Clone(x), "y": make([]float64, 2*kerneltest.MiscLen+2*n)}
		}
		a, b := args(), args()
		if err := interp.Run(k, [3]int{3, 1, 1}, a); err != nil {
			t.Fatal(err)
		}
		if err := interp.Run(h, [3]int{3, 1, 1}, b); err != nil {
			t.Fatal(err)
		}
		same(t, k.Name, map[string][]float64{"y": a["y"].([]float64)}, map[string][]float64{"y": b["y"].([]float64)})
	}
}

// Streamed stores lower as any other store.
func TestHostLoopsStream(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	k := kerneltest.Stream(kernel.F64)
	h, err := pass.HostLoops(k)
	if err != nil {
		t.Fatal(err)
	}
	const n, m = 19, (19 + kerneltest.StreamWidth - 1) / kerneltest.StreamWidth
	x := randoms(rng, m*kerneltest.StreamWidth)
	args := func() map[string]any {
		return map[string]any{"n": int64(n), "m": int64(m), "x": slices.Clone(x), "y": make([]float64, kerneltest.StreamRows*n+m)}
	}
	a, b := args(), args()
	if err := interp.Run(k, [3]int{(m + 3) / 4, 1, 1}, a); err != nil {
		t.Fatal(err)
	}
	if err := interp.Run(h, [3]int{(m + 3) / 4, 1, 1}, b); err != nil {
		t.Fatal(err)
	}
	same(t, k.Name, map[string][]float64{"y": a["y"].([]float64)}, map[string][]float64{"y": b["y"].([]float64)})
}

// A ticket lifted across a barrier still receives the fetch-add's old
// value.
func TestHostLoopsTickets(t *testing.T) {
	k := kerneltest.Tickets()
	h, err := pass.HostLoops(k)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(h.Shared, func(s kernel.Shared) bool { return s.Name == "ticket" }) {
		t.Fatalf("ticket not lifted: %v", h.Shared)
	}
	const n = 7
	for _, kk := range []*kernel.Kernel{k, h} {
		count, slot := make([]int64, 2), make([]int64, n)
		if err := interp.Run(kk, [3]int{2, 1, 1}, map[string]any{"n": n, "count": count, "slot": slot}); err != nil {
			t.Fatal(err)
		}
		s := slices.Clone(slot)
		slices.Sort(s)
		for j, g := range s {
			if g != int64(j) {
				t.Fatalf("%v: slot %v is no permutation", kk.Launch.Block, slot)
			}
		}
		if count[0] != n || count[1] != n*(n+1)/2 {
			t.Errorf("%v: count %v", kk.Launch.Block, count)
		}
	}
}

// Every GEMM variant, lowered, computes the same bits as on a GPU's
// threads, and both match the family's loop.
func TestHostLoopsGEMM(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	// 7×5 with a zero row (3) and a zero column (2).
	data := make([]float64, 35)
	for j := range data {
		if j/5 != 3 && j%5 != 2 && rng.IntN(4) > 0 {
			data[j] = rng.Float64()*4 - 2
		}
	}
	op, err := operator.New("t", 7, 5, data)
	if err != nil {
		t.Fatal(err)
	}
	const n, ld = 37, 40
	for _, beta := range []float64{0, 1, 0.5} {
		for _, shape := range [][3]int{{n, ld, ld}, {0, ld, ld}, {0, 0, 0}} {
			pb := sparse.Problem{Op: op, DType: kernel.F64, Alpha: 1.5, Beta: beta, N: shape[0], LDB: shape[1], LDC: shape[2]}
			vs := append(sparse.GPUCandidates(pb), sparse.MSplitParams{Kind: sparse.CStreamMSplit, Block: 8, Width: 2, Split: 3, Grouped: true})
			for _, vr := range vs {
				if pb.Check(vr) != nil {
					continue
				}
				name := fmt.Sprintf("%s/β=%g/n=%d", vr.Name(), beta, shape[0])
				k, err := sparse.Build(pb, vr)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				h, err := pass.HostLoops(k)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				c0 := randoms(rng, 7*ld)
				if beta == 0 {
					for j := range c0 {
						c0[j] = math.NaN()
					}
				}
				bufs := map[string][]float64{"b": randoms(rng, 5*ld), "c": c0}
				scalars := map[string]int64{"n": n, "ldb": ld, "ldc": ld}
				grid, err := k.Launch.Blocks(map[string]int64{"n": n})
				if err != nil {
					t.Fatal(err)
				}
				got := run(t, k, grid[0], scalars, bufs)
				same(t, name, got, run(t, h, grid[0], scalars, bufs))
				for r := 0; r < 7; r++ {
					for j := 0; j < ld; j++ {
						want := c0[r*ld+j] // the padding is untouched
						if j < n {
							want = 0
							for q := 0; q < 5; q++ {
								want += 1.5 * data[r*5+q] * bufs["b"][q*ld+j]
							}
							if beta != 0 {
								want += beta * c0[r*ld+j]
							}
						}
						g := got["c"][r*ld+j]
						if math.Abs(g-want) > 1e-12 && !(math.IsNaN(g) && math.IsNaN(want)) {
							t.Fatalf("%s: C[%d][%d] = %v, want %v", name, r, j, g, want)
						}
					}
				}
			}
		}
	}
}

// Kernels over a grid in y cannot run on the host.
func TestHostLoopsRejects(t *testing.T) {
	k := kerneltest.Slabs()
	k.Launch.Grid[1] = kernel.Axis{Fixed: 2}
	if _, err := pass.HostLoops(k); err == nil {
		t.Error("a grid over y was accepted")
	}
}

// Segments cuts a long body between stores, but never while a private
// array declared before the cut is read or written after it: the later
// piece, a loop of its own, would not see it.
func TestSegmentsPrivateArray(t *testing.T) {
	const stores = 200 // several pieces' worth
	out := func(i int) kernel.Stmt {
		return kernel.Put("y", kernel.Lit{V: float64(i)}, kernel.Const(i))
	}
	tests := []struct {
		name    string
		body    func() []kernel.Stmt
		minCuts int // pieces - 1 at least (0: no cut allowed while the array lives)
	}{
		{"array read at the end", func() []kernel.Stmt {
			b := []kernel.Stmt{kernel.Decl{Type: kernel.Real, Name: "a", Dims: []int{4}}, kernel.Put("a", kernel.Lit{V: 1}, kernel.Const(0))}
			for i := range stores {
				b = append(b, out(i))
			}
			return append(b, kernel.Put("y", kernel.At("a", kernel.Const(0)), kernel.Const(stores)))
		}, 0},
		{"array dead early", func() []kernel.Stmt {
			b := []kernel.Stmt{kernel.Decl{Type: kernel.Real, Name: "a", Dims: []int{4}}, kernel.Put("a", kernel.Lit{V: 1}, kernel.Const(0)),
				kernel.Put("y", kernel.At("a", kernel.Const(0)), kernel.Const(stores))}
			for i := range stores {
				b = append(b, out(i))
			}
			return b
		}, 1},
	}
	params := []kernel.Param{{Name: "y", Kind: kernel.BufferParam, Type: kernel.Real}}
	for _, tc := range tests {
		pieces, _ := pass.Segments(tc.body(), params)
		if tc.minCuts == 0 && len(pieces) != 1 {
			t.Errorf("%s: %d pieces, want 1", tc.name, len(pieces))
		}
		if len(pieces)-1 < tc.minCuts {
			t.Errorf("%s: %d pieces, want at least %d", tc.name, len(pieces), tc.minCuts+1)
		}
	}
}
