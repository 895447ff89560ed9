package interp

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/kerneltest"
	"github.com/bespoke-hpc/bespoke/kernel/mma"
)

// Shorthand (kernel's builders).
var (
	lx, gx    = kernel.LocalX, kernel.GroupX
	v, i, bin = kernel.Ref, kernel.Const, kernel.Op
)

// reverse reverses each block's 8 elements through shared memory.
func reverse() *kernel.Kernel {
	return &kernel.Kernel{
		Name: "reverse", DType: kernel.F64,
		Params: []kernel.Param{{Name: "x", Kind: kernel.BufferParam, Type: kernel.Real, Const: true},
			{Name: "y", Kind: kernel.BufferParam, Type: kernel.Real}},
		Shared: []kernel.Shared{{Name: "s", Type: kernel.Real, Dims: []int{8}}},
		Launch: kernel.Launch{Block: [3]int{8, 1, 1}},
		Body: []kernel.Stmt{
			kernel.Decl{Type: kernel.Index, Name: "g", Init: bin("+", bin("*", gx, i(8)), lx)},
			kernel.Put("s", kernel.At("x", v("g")), lx),
			kernel.Barrier{},
			kernel.Put("y", kernel.At("s", bin("-", i(7), lx)), v("g")),
		},
	}
}

func TestBarrier(t *testing.T) {
	x := make([]float64, 24)
	for j := range x {
		x[j] = float64(j)
	}
	y := make([]float64, 24)
	if err := Run(reverse(), [3]int{3, 1, 1}, map[string]any{"x": x, "y": y}); err != nil {
		t.Fatal(err)
	}
	for j := range y {
		if want := float64(j/8*8 + 7 - j%8); y[j] != want {
			t.Fatalf("y[%d] = %v, want %v", j, y[j], want)
		}
	}
}

// Single precision rounds every operation.
func TestF32(t *testing.T) {
	k := &kernel.Kernel{
		Name: "mul", DType: kernel.F32,
		Params: []kernel.Param{{Name: "x", Kind: kernel.BufferParam, Type: kernel.Real}},
		Launch: kernel.Launch{Block: [3]int{1, 1, 1}},
		Body:   []kernel.Stmt{kernel.Put("x", bin("*", bin("+", kernel.At("x", i(0)), kernel.Lit{V: 0.1}), kernel.Lit{V: 3}), i(0))},
	}
	x := []float64{1.0 / 3}
	if err := Run(k, [3]int{1, 1, 1}, map[string]any{"x": x}); err != nil {
		t.Fatal(err)
	}
	want := float64((float32(1.0/3) + float32(0.1)) * 3)
	if x[0] != want {
		t.Errorf("got %v, want %v", x[0], want)
	}
}

// Faults a device would not report are errors here.
func TestFaults(t *testing.T) {
	buf := func() kernel.Param { return kernel.Param{Name: "y", Kind: kernel.BufferParam, Type: kernel.Real} }
	for _, tc := range []struct {
		name    string
		index64 bool
		body    []kernel.Stmt
		want    string
	}{
		{"out of bounds", false, []kernel.Stmt{kernel.Put("y", kernel.Lit{V: 1}, i(4))}, "out of bounds"},
		{"negative index", false, []kernel.Stmt{kernel.Put("y", kernel.Lit{V: 1}, i(-1))}, "out of bounds"},
		{"32-bit overflow", false, []kernel.Stmt{kernel.Decl{Type: kernel.Index, Name: "a", Init: bin("*", i(1<<20), i(1<<12))}}, "overflow"},
		{"division by zero", true, []kernel.Stmt{kernel.Decl{Type: kernel.Index, Name: "a", Init: bin("/", i(1), bin("-", lx, lx))}}, "division by zero"},
		{"misaligned vector", true, []kernel.Stmt{kernel.Decl{Type: kernel.Real, Name: "a"}, kernel.Decl{Type: kernel.Real, Name: "b"},
			kernel.VecLoad{Dst: []string{"a", "b"}, Buf: "y", Index: i(1)}}, "not aligned"},
		{"shared array bounds", true, []kernel.Stmt{kernel.Decl{Type: kernel.Real, Name: "r", Dims: []int{2, 3}}, kernel.Put("r", kernel.Lit{V: 1}, i(0), i(3))}, "out of 0..2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := &kernel.Kernel{Name: "f", DType: kernel.F64, Index64: tc.index64, Params: []kernel.Param{buf()},
				Launch: kernel.Launch{Block: [3]int{1, 1, 1}}, Body: tc.body}
			err := Run(k, [3]int{1, 1, 1}, map[string]any{"y": make([]float64, 4)})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Run = %v, want an error containing %q", err, tc.want)
			}
		})
	}
	// 64-bit index arithmetic takes what 32 bits cannot.
	k := &kernel.Kernel{Name: "f", DType: kernel.F64, Index64: true, Params: []kernel.Param{buf()},
		Launch: kernel.Launch{Block: [3]int{1, 1, 1}}, Body: []kernel.Stmt{kernel.Decl{Type: kernel.Index, Name: "a", Init: bin("*", i(1<<20), i(1<<12))}}}
	if err := Run(k, [3]int{1, 1, 1}, map[string]any{"y": make([]float64, 1)}); err != nil {
		t.Errorf("64-bit product: %v", err)
	}
	if err := Run(reverse(), [3]int{1, 1, 1}, map[string]any{"x": []float64{}}); err == nil {
		t.Error("a missing argument was accepted")
	}
}

// A thread-private array, loops, intrinsics, atomics and casts.
func TestStatements(t *testing.T) {
	k := &kernel.Kernel{
		Name: "misc", DType: kernel.F64,
		Params: []kernel.Param{{Name: "n", Kind: kernel.ScalarParam, Type: kernel.Index},
			{Name: "to", Kind: kernel.BufferParam, Type: kernel.Int32, Const: true},
			{Name: "y", Kind: kernel.BufferParam, Type: kernel.Real}},
		Launch: kernel.Launch{Block: [3]int{4, 1, 1}},
		Active: v("n"),
		Body: []kernel.Stmt{
			kernel.Decl{Type: kernel.Index, Name: "g", Init: bin("+", bin("*", gx, i(4)), lx)},
			kernel.Decl{Type: kernel.Real, Name: "r", Dims: []int{3}},
			kernel.For{Var: "q", From: i(0), To: i(3), Body: []kernel.Stmt{kernel.Put("r", kernel.Cast{To: kernel.Real, X: bin("*", v("q"), v("g"))}, v("q"))}},
			kernel.Decl{Type: kernel.Real, Name: "s", Init: kernel.Call{Fn: kernel.Sqrt, Args: []kernel.Expr{kernel.Call{Fn: kernel.Fma, Args: []kernel.Expr{kernel.At("r", i(2)), kernel.Lit{V: 2}, kernel.At("r", i(1))}}}}},
			kernel.AtomicAdd{Buf: "y", Index: []kernel.Expr{kernel.At("to", v("g"))}, Value: kernel.Select{Cond: bin(">", v("s"), kernel.Lit{V: 2}), Then: v("s"), Else: kernel.Unary{Op: "-", X: v("s")}}},
		},
	}
	y := make([]float64, 2)
	if err := Run(k, [3]int{2, 1, 1}, map[string]any{"n": 6, "to": []int64{0, 1, 0, 1, 0, 1, 0, 1}, "y": y}); err != nil {
		t.Fatal(err)
	}
	want := make([]float64, 2)
	for g := 0; g < 6; g++ { // threads 6 and 7 are inactive
		s := math.Sqrt(float64(2*g)*2 + float64(g))
		if s <= 2 {
			s = -s
		}
		want[g%2] += s
	}
	for j := range y {
		if math.Abs(y[j]-want[j]) > 1e-12 {
			t.Errorf("y[%d] = %v, want %v", j, y[j], want[j])
		}
	}
}

// Streamed stores write what they are given wherever they start (the rows
// of the sample begin unaligned), and the check refuses streamed stores
// of no elements or of more than a cache line of fp32.
func TestStreamSample(t *testing.T) {
	const n, w, rows = 21, kerneltest.StreamWidth, kerneltest.StreamRows
	m := (n + w - 1) / w
	x := make([]float64, m*w)
	for j := range x {
		x[j] = 0.5 + float64(j)/7
	}
	y := make([]float64, rows*n+m)
	for j := range y {
		y[j] = math.NaN()
	}
	if err := Run(kerneltest.Stream(kernel.F64), [3]int{(m + 3) / 4, 1, 1}, map[string]any{"n": int64(n), "m": int64(m), "x": x, "y": y}); err != nil {
		t.Fatal(err)
	}
	for r := range rows {
		for e := range n {
			if want := float64(r+1)*x[e] + float64(e%w); y[r*n+e] != want {
				t.Errorf("y[%d][%d] = %v, want %v", r, e, y[r*n+e], want)
			}
		}
	}
	for g := range m {
		if y[rows*n+g] != float64(g) {
			t.Errorf("y[%d] = %v, want %d", rows*n+g, y[rows*n+g], g)
		}
	}
	for _, width := range []int{0, kernel.MaxStreamWidth + 1} {
		k := kerneltest.Stream(kernel.F64)
		k.Body = append(k.Body, kernel.VecStore{Buf: "y", Index: kernel.Const(0), Src: make([]kernel.Expr, width), Stream: true})
		for j := range width {
			k.Body[len(k.Body)-1].(kernel.VecStore).Src[j] = kernel.Lit{V: 1}
		}
		if err := kernel.Validate(k); err == nil || !strings.Contains(err.Error(), "streamed store") {
			t.Errorf("a streamed store of %d elements: %v", width, err)
		}
	}
}

// Atomic fetch-adds hand out distinct tickets, also to threads that run
// side by side (a kernel with a barrier), and fault past 32 bits.
func TestTickets(t *testing.T) {
	const n = 10
	count, slot := make([]int64, 2), make([]int64, n)
	if err := Run(kerneltest.Tickets(), [3]int{3, 1, 1}, map[string]any{"n": n, "count": count, "slot": slot}); err != nil {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	for _, g := range slot {
		seen[g] = true
	}
	if len(seen) != n || count[0] != n || count[1] != n*(n+1)/2 {
		t.Errorf("slot %v, count %v: want a permutation of 0…%d, %d and %d", slot, count, n-1, n, n*(n+1)/2)
	}
	count = []int64{math.MaxInt32, 0}
	err := Run(kerneltest.Tickets(), [3]int{1, 1, 1}, map[string]any{"n": 1, "count": count, "slot": slot})
	if err == nil || !strings.Contains(err.Error(), "overflow") {
		t.Errorf("a ticket past 32 bits: %v", err)
	}
}

// The warp-level mma samples of every shape give D = A₁·B₁ + A₀·B₀ + C
// tile by tile, computed here directly: the emulation gathers each warp's
// fragments by the layouts the sample writes out.
func TestMMA(t *testing.T) {
	const tiles = 2 * kerneltest.MMATiles
	for _, sh := range kernel.MMAShapes {
		k := kerneltest.MMA(sh)
		kk := 2 * sh.K
		fill := func(n int, seed float64) []float64 {
			x := make([]float64, n)
			for j := range x {
				x[j] = math.Sin(seed*float64(j+1)) + 0.25
			}
			return x
		}
		a, b, c := fill(tiles*sh.M*kk, 1.3), fill(tiles*kk*sh.N, 2.1), fill(tiles*sh.M*sh.N, 0.7)
		d := make([]float64, len(c))
		args := map[string]any{"a": a, "b": b, "c": c, "d": d}
		if err := Run(k, [3]int{tiles / kerneltest.MMATiles, 1, 1}, args); err != nil {
			t.Fatalf("%s: %v", sh, err)
		}
		for p := 0; p < tiles; p++ {
			for r := 0; r < sh.M; r++ {
				for col := 0; col < sh.N; col++ {
					want := c[(p*sh.M+r)*sh.N+col]
					for q := 0; q < kk; q++ {
						want += a[(p*sh.M+r)*kk+q] * b[(p*kk+q)*sh.N+col]
					}
					if got := d[(p*sh.M+r)*sh.N+col]; math.Abs(got-want) > 1e-13*math.Abs(want)+1e-14 {
						t.Fatalf("%s: tile %d D[%d][%d] = %v, want %v", sh, p, r, col, got, want)
					}
				}
			}
		}
	}
}

// The wgmma sample gives d = A·B tile by tile with B's columns from cols
// on zero (vector copies cut short), the operands' TF32 parts (truncated)
// multiplied exactly and summed in fp32, the sums' initial ones ignored
// (the first wgmma's Accumulate 0).
func TestWGMMASample(t *testing.T) {
	const tiles, n, cols = 3, kerneltest.WGMMAN, kerneltest.WGMMAN - 3
	fill := func(m int, seed float64) []float64 {
		x := make([]float64, m)
		for j := range x {
			x[j] = float64(float32(math.Sin(seed*float64(j+1)) + 0.25))
		}
		return x
	}
	a, b := fill(tiles*64*16, 1.3), fill(tiles*16*n, 2.1)
	d := make([]float64, tiles*64*n)
	if err := Run(kerneltest.WGMMA(), [3]int{tiles, 1, 1}, map[string]any{"a": a, "b": b, "d": d, "cols": int64(cols), "tiles": int64(tiles)}); err != nil {
		t.Fatal(err)
	}
	worst := 0.0
	for p := 0; p < tiles; p++ {
		for r := 0; r < 64; r++ {
			for c := 0; c < n; c++ {
				want, scale := 0.0, 0.0
				for q := 0; q < 16 && c < cols; q++ {
					x := mma.TruncTF32(a[(p*64+r)*16+q]) * mma.TruncTF32(b[(p*16+q)*n+c])
					want += x
					scale += math.Abs(x)
				}
				got := d[(p*64+r)*n+c]
				if err := math.Abs(got - want); err > 1e-6*scale || (c >= cols && got != 0) {
					t.Fatalf("tile %d D[%d][%d] = %v, want %v", p, r, c, got, want)
				}
				if scale > 0 {
					worst = max(worst, math.Abs(got-want)/scale)
				}
			}
		}
	}
	// The full fp32 product differs by more: the TF32 parts matter.
	if x, y := a[0]*b[0], mma.TruncTF32(a[0])*mma.TruncTF32(b[0]); x == y {
		t.Errorf("a[0]·b[0] = %v is its TF32 parts' product: a weak sample", x)
	}
	t.Logf("largest error %.3g of the sum of magnitudes", worst)
}

// The 3×TF32 samples give D = A·B + C within fp32's accuracy (the
// interpreter rounds as cvt.rna does, truncates the operands' low bits as
// the tensor cores do and sums the exact products), which one TF32 mma a
// step would not; fp32 operands as they are give the truncated product.
func TestTF32MMA(t *testing.T) {
	const tiles = 2 * kerneltest.MMATiles
	for _, sh := range kernel.MMATF32Shapes {
		k := kerneltest.TF32MMA(sh)
		kk := 2 * sh.K
		fill := func(n int, seed float64) []float64 {
			x := make([]float64, n)
			for j := range x {
				x[j] = float64(float32(math.Sin(seed*float64(j+1)) + 0.25))
			}
			return x
		}
		a, b, c := fill(tiles*sh.M*kk, 1.3), fill(tiles*kk*sh.N, 2.1), fill(tiles*sh.M*sh.N, 0.7)
		d := make([]float64, len(c))
		args := map[string]any{"a": a, "b": b, "c": c, "d": d}
		if err := Run(k, [3]int{tiles / kerneltest.MMATiles, 1, 1}, args); err != nil {
			t.Fatalf("%s: %v", sh, err)
		}
		// errs is the largest error of d, over the sum of |products|.
		errs := func() float64 {
			worst := 0.0
			for p := 0; p < tiles; p++ {
				for r := 0; r < sh.M; r++ {
					for col := 0; col < sh.N; col++ {
						want, scale := c[(p*sh.M+r)*sh.N+col], 1.0
						for q := 0; q < kk; q++ {
							x := a[(p*sh.M+r)*kk+q] * b[(p*kk+q)*sh.N+col]
							want += x
							scale += math.Abs(x)
						}
						got := d[(p*sh.M+r)*sh.N+col]
						if float64(float32(got)) != got {
							t.Fatalf("%s: D[%d][%d] = %v is not an fp32 value", sh, r, col, got)
						}
						worst = max(worst, math.Abs(got-want)/scale)
					}
				}
			}
			return worst
		}
		if e := errs(); e > 4e-7 || e == 0 {
			t.Errorf("%s: error %.3g of the sum of |products|, want fp32's (a few 1e-8, not 0)", sh, e)
		}
		// Without the lo parts (A_hi·B_hi alone) the error is TF32's.
		k.Body = slices.DeleteFunc(slices.Clone(k.Body), func(s kernel.Stmt) bool {
			m, ok := s.(kernel.MMA)
			return ok && (strings.HasPrefix(m.A[0].(kernel.Var).Name, "al") || strings.HasPrefix(m.B[0].(kernel.Var).Name, "bl"))
		})
		if err := Run(k, [3]int{tiles / kerneltest.MMATiles, 1, 1}, args); err != nil {
			t.Fatalf("%s, one TF32 mma a step: %v", sh, err)
		}
		if e := errs(); e < 1e-4 {
			t.Errorf("%s: one TF32 mma a step: error %.3g, want TF32's (~1e-3)", sh, e)
		}
		// One mma of the fp32 values as they are: the tensor cores
		// truncate them to TF32.
		k = kerneltest.TF32RawMMA(sh)
		if err := Run(k, [3]int{tiles / kerneltest.MMATiles, 1, 1}, args); err != nil {
			t.Fatalf("%s, fp32 operands: %v", sh, err)
		}
		for p := 0; p < tiles; p++ {
			for r := 0; r < sh.M; r++ {
				for col := 0; col < sh.N; col++ {
					want := c[(p*sh.M+r)*sh.N+col]
					scale := math.Abs(want)
					for q := 0; q < kk; q++ {
						x := mma.TruncTF32(a[(p*sh.M+r)*kk+q]) * mma.TruncTF32(b[(p*kk+q)*sh.N+col])
						want += x
						scale += math.Abs(x)
					}
					if got := d[(p*sh.M+r)*sh.N+col]; math.Abs(got-want) > 2e-7*scale {
						t.Fatalf("%s, fp32 operands: D[%d][%d] = %v, want %v (truncated)", sh, r, col, got, want)
					}
				}
			}
		}
	}
}

// A lane that fails before an mma (an out-of-bounds read) leaves its
// warp waiting there: the run ends with that lane's fault, not a hang.
func TestMMALeft(t *testing.T) {
	k := kerneltest.MMA(kernel.M8N8K4)
	k.Body = append([]kernel.Stmt{kernel.If{Cond: bin("==", lx, i(5)), Then: []kernel.Stmt{
		kernel.Decl{Type: kernel.Real, Name: "boom", Init: kernel.At("a", i(1<<20))},
	}}}, k.Body...)
	n := kerneltest.MMATiles * 8 * 8
	err := Run(k, [3]int{1, 1, 1}, map[string]any{"a": make([]float64, n), "b": make([]float64, n), "c": make([]float64, n), "d": make([]float64, n)})
	if err == nil || !strings.Contains(err.Error(), "out of bounds") {
		t.Fatalf("got %v, want the failing lane's out-of-bounds read", err)
	}
}
