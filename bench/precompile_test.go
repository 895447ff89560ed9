package bench

import (
	"testing"
	"time"

	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/sparse"
	"github.com/bespoke-hpc/bespoke/operator"
)

// precompile closes each operator's channel once its kernels are built,
// and a stopped precompile still lets wait return.
func TestPrecompile(t *testing.T) {
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	var ops []*operator.Operator
	for i, data := range [][]float64{{1, 0, 0.5, -2}, {0, 3, 1, 1}, {2, 2, 0, -1}} {
		op, err := operator.New(string(rune('a'+i)), 2, 2, data)
		if err != nil {
			t.Fatal(err)
		}
		ops = append(ops, op)
	}
	r, err := NewRunner(dev, Config{DType: kernel.F64, N: 1024, WorkingSet: 1 << 20, MaxMemory: 64 << 20,
		Variants: []sparse.Variant{sparse.Defaults(sparse.CStream), sparse.Defaults(sparse.BStream)}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	ready, built, wait := r.precompile(ops, 2, nil)
	for i, c := range ready {
		select {
		case <-c:
		case <-time.After(5 * time.Minute):
			t.Fatalf("operator %d not built after 5 minutes", i)
		}
		if len(built[i].ks) != 2 || built[i].gather == nil || len(built[i].failed) != 0 {
			t.Errorf("operator %d: %d kernels, gather %v, %d failed; want 2, a gather kernel, 0", i, len(built[i].ks), built[i].gather != nil, len(built[i].failed))
		}
	}
	wait()

	stop := make(chan struct{})
	close(stop)
	done := make(chan struct{})
	go func() {
		_, _, wait := r.precompile(ops, 1, stop)
		wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		t.Fatal("a stopped precompile did not return")
	}
}
