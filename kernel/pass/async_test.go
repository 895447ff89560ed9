package pass_test

import (
	"math/rand/v2"
	"testing"

	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/pass"
)

// TestSyncCopies: a kernel whose copies are made plain computes what it
// did (vectors cut short, copies under a condition, zero-filled), holds
// no asynchronous statement, and a kernel without copies comes back as is.
func TestSyncCopies(t *testing.T) {
	lx, i := kernel.LocalX, kernel.Const
	at := kernel.Op(kernel.OpMul, lx, i(4))
	body := []kernel.Stmt{
		kernel.CopyAsync{Dst: "s", DstIndex: []kernel.Expr{at}, Src: "x", SrcIndex: at, Width: 4, Valid: kernel.Op(kernel.OpSub, i(4), lx)},
		kernel.CopyAsync{Dst: "t", DstIndex: []kernel.Expr{lx}, Src: "x", SrcIndex: lx, Cond: kernel.Op(kernel.OpLt, lx, i(2))},
		kernel.AsyncCommit{},
		kernel.AsyncWait{},
		kernel.Barrier{},
		kernel.For{Var: "j", From: i(0), To: i(4), Body: []kernel.Stmt{
			kernel.Put("y", kernel.At("s", kernel.Op(kernel.OpAdd, at, kernel.Ref("j"))), kernel.Op(kernel.OpAdd, at, kernel.Ref("j"))),
		}},
		kernel.Put("y", kernel.At("t", lx), kernel.Op(kernel.OpAdd, lx, i(16))),
	}
	k := &kernel.Kernel{
		Name: "k", DType: kernel.F64,
		Params: []kernel.Param{{Name: "x", Kind: kernel.BufferParam, Type: kernel.Real, Const: true},
			{Name: "y", Kind: kernel.BufferParam, Type: kernel.Real}},
		Shared: []kernel.Shared{{Name: "s", Type: kernel.Real, Dims: []int{16}}, {Name: "t", Type: kernel.Real, Dims: []int{4}}},
		Launch: kernel.Launch{Block: [3]int{4, 1, 1}},
		Hints:  kernel.Hints{MinArch: 80},
		Body:   body,
	}
	sync := pass.SyncCopies(k)
	if kernel.HasAsyncCopies(sync.Body) || !kernel.HasAsyncCopies(k.Body) {
		t.Fatalf("async copies left: %v (the original's kept: %v)", kernel.HasAsyncCopies(sync.Body), kernel.HasAsyncCopies(k.Body))
	}
	if err := kernel.Validate(sync); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(rand.Uint64(), 1))
	x := make([]float64, 16)
	for j := range x {
		x[j] = rng.Float64() + 1 // never zero: a zero-fill shows
	}
	bufs := map[string][]float64{"x": x, "y": make([]float64, 20)}
	want, got := run(t, k, 1, nil, bufs)["y"], run(t, sync, 1, nil, bufs)["y"]
	for j := range want {
		// Thread l copies 4 − l of its 4 elements; threads 0 and 1 copy t.
		ref := 0.0
		if (j < 16 && j%4 < 4-j/4) || (j >= 16 && j-16 < 2) {
			ref = x[j%16]
		}
		if want[j] != ref || got[j] != ref {
			t.Errorf("y[%d]: %g async, %g made plain, want %g", j, want[j], got[j], ref)
		}
	}
	plain := &kernel.Kernel{Name: "p", Body: []kernel.Stmt{kernel.Barrier{}}}
	if pass.SyncCopies(plain) != plain {
		t.Error("a kernel without copies is copied")
	}
}
