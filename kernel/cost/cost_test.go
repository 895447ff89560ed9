package cost_test

import (
	"testing"

	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/cost"
	"github.com/bespoke-hpc/bespoke/kernel/kerneltest"
)

// Shorthand (kernel's builders).
var (
	lx, gx    = kernel.LocalX, kernel.GroupX
	v, i, bin = kernel.Ref, kernel.Const, kernel.Op
)

// axpy is y[g] ← 2·x[g] + y[g] over n threads in blocks of 64, with the
// given statements appended to its body.
func axpy(dt kernel.DType, extra ...kernel.Stmt) *kernel.Kernel {
	body := []kernel.Stmt{
		kernel.Decl{Type: kernel.Index, Name: "g", Init: bin("+", bin("*", gx, i(64)), lx)}, // 2 int ops
		kernel.Decl{Type: kernel.Real, Name: "t", Init: bin("*", kernel.Lit{V: 2}, kernel.At("x", v("g")))},
		kernel.Put("y", bin("+", v("t"), kernel.At("y", v("g"))), v("g")),
	}
	return &kernel.Kernel{
		Name: "axpy", Variant: "test", DType: dt, Doc: "cost test",
		Params: []kernel.Param{{Name: "n", Kind: kernel.ScalarParam, Type: kernel.Index},
			{Name: "m", Kind: kernel.ScalarParam, Type: kernel.Index},
			{Name: "x", Kind: kernel.BufferParam, Type: kernel.Real, Const: true},
			{Name: "y", Kind: kernel.BufferParam, Type: kernel.Real}},
		Launch: kernel.Launch{Block: [3]int{64, 1, 1}, Grid: [3]kernel.Axis{kernel.Over("n", 64)}},
		Body:   append(body, extra...),
	}
}

func TestCount(t *testing.T) {
	const threads = 256
	sizes := map[string]int64{"n": threads, "m": 7}
	loop := kernel.For{Var: "k", From: i(0), To: v("m"), Body: []kernel.Stmt{
		kernel.Put("y", kernel.At("x", v("k")), v("k")),
	}}
	master := kernel.If{Cond: bin("==", lx, i(0)), Then: []kernel.Stmt{kernel.Put("y", kernel.Lit{V: 1}, v("g"))}}
	unknown := kernel.For{Var: "k", From: i(0), To: bin("*", v("q"), i(2)), Body: []kernel.Stmt{
		kernel.Put("y", kernel.Lit{V: 1}, v("k")),
	}}
	longer := kernel.If{Cond: bin("<", v("g"), v("n")),
		Then: []kernel.Stmt{kernel.Put("y", kernel.Lit{V: 1}, v("g"))},
		Else: []kernel.Stmt{kernel.Put("y", kernel.At("x", v("g")), v("g"))}}
	// The clamp a lowered block puts on its thread loop: an If that the
	// sizes decide, assigning the variable the loop runs to.
	clamped := []kernel.Stmt{
		kernel.Decl{Type: kernel.Index, Name: "lim", Init: bin("-", v("m"), bin("*", gx, i(2)))},
		kernel.If{Cond: bin(">", v("lim"), i(5)), Then: []kernel.Stmt{kernel.Assign{Name: "lim", Value: i(5)}}},
		kernel.For{Var: "k", From: i(0), To: v("lim"), Body: []kernel.Stmt{kernel.Put("y", kernel.Lit{V: 1}, v("k"))}},
	}
	withQ := axpy(kernel.F64, unknown)
	withQ.Params = append(withQ.Params, kernel.Param{Name: "q", Kind: kernel.ScalarParam, Type: kernel.Index})

	tests := []struct {
		name                                 string
		k                                    *kernel.Kernel
		loadBytes, storeBytes, loads, stores float64
		realOps, intOps                      float64
		approximate                          bool
	}{
		{"f64", axpy(kernel.F64), threads * 16, threads * 8, threads * 2, threads, threads * 2, threads * 2, false},
		{"f32", axpy(kernel.F32), threads * 8, threads * 4, threads * 2, threads, threads * 2, threads * 2, false},
		// 7 trips of one load and one store, plus the loop's compare
		// and increment on each trip.
		{"loop", axpy(kernel.F64, loop), threads * (16 + 7*8), threads * (8 + 7*8), threads * (2 + 7), threads * (1 + 7), threads * 2, threads * (2 + 2*7), false},
		// One thread in 64 stores; the compare counts for every thread.
		{"thread 0 of a block", axpy(kernel.F64, master), threads * 16, threads*8 + threads/64*8, threads * 2, threads + threads/64, threads * 2, threads * 3, false},
		// A bound that does not evaluate counts one trip and says so.
		{"unknown bound", withQ, threads * 16, threads * 16, threads * 2, threads * 2, threads * 2, threads * (2 + 1 + 2), true},
		{"clamped bound", axpy(kernel.F64, clamped...), threads * 16, threads * (8 + 5*8), threads * 2, threads * (1 + 5), threads * 2, threads * (2 + 2 + 1 + 2*5), false},
		// A guard on data counts its longer branch.
		{"longer branch", axpy(kernel.F64, longer), threads * 24, threads * 16, threads * 3, threads * 2, threads * 2, threads * 3, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := cost.Count(tc.k, sizes)
			if err != nil {
				t.Fatal(err)
			}
			if c.Threads != threads {
				t.Errorf("threads = %d, want %d", c.Threads, threads)
			}
			got := []float64{c.LoadBytes, c.StoreBytes, c.Loads, c.Stores, c.RealOps, c.IntOps}
			want := []float64{tc.loadBytes, tc.storeBytes, tc.loads, tc.stores, tc.realOps, tc.intOps}
			names := []string{"load bytes", "store bytes", "loads", "stores", "real ops", "int ops"}
			for j := range got {
				if got[j] != want[j] {
					t.Errorf("%s = %g, want %g", names[j], got[j], want[j])
				}
			}
			if c.Approximate != tc.approximate {
				t.Errorf("approximate = %v, want %v", c.Approximate, tc.approximate)
			}
			if c.LiveReals != 1 {
				t.Errorf("live reals = %d, want 1 (t)", c.LiveReals)
			}
		})
	}
}

// TestCountSlabs counts a kernel with a loop over layers holding two
// barriers, a shared slab and a private array.
func TestCountSlabs(t *testing.T) {
	k := kerneltest.Slabs()
	const elems, depth = 6, 5
	c, err := cost.Count(k, map[string]int64{"e": elems, "depth": depth})
	if err != nil {
		t.Fatal(err)
	}
	threads := int64(elems / kerneltest.SlabZ * kerneltest.SlabX * kerneltest.SlabY * kerneltest.SlabZ)
	if c.Threads != threads {
		t.Errorf("threads = %d, want %d", c.Threads, threads)
	}
	if c.Barriers != 2*depth {
		t.Errorf("barriers per block = %g, want %d", c.Barriers, 2*depth)
	}
	// Each layer: one global load of x and one store of y; then one final store.
	if want := float64(threads * depth); c.Loads != want {
		t.Errorf("loads = %g, want %g", c.Loads, want)
	}
	if want := float64(threads * (depth + 1)); c.Stores != want {
		t.Errorf("stores = %g, want %g", c.Stores, want)
	}
	// Each layer: one shared store, SlabX shared loads in the row sum and
	// one mirrored load in the If (its longer branch).
	if want := float64(threads * depth * (1 + kerneltest.SlabX + 1)); c.Shared != want {
		t.Errorf("shared accesses = %g, want %g", c.Shared, want)
	}
	// acc, hist[3], t and w can all be live at once.
	if c.LiveReals < 5 || c.LiveReals > 6 {
		t.Errorf("live reals = %d, want 5 or 6", c.LiveReals)
	}
}

func TestCountRejectsInvalid(t *testing.T) {
	k := axpy(kernel.F64, kernel.Put("nowhere", kernel.Lit{V: 1}, i(0)))
	if _, err := cost.Count(k, map[string]int64{"n": 64}); err == nil {
		t.Fatal("a kernel storing to an undeclared buffer was counted")
	}
}
