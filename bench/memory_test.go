package bench_test

import (
	"strings"
	"testing"
	"time"

	"github.com/bespoke-hpc/bespoke/bench"
	"github.com/bespoke-hpc/bespoke/element"
	"github.com/bespoke-hpc/bespoke/fem"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/contract"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/kernel/integrate"
	"github.com/bespoke-hpc/bespoke/kernel/sparse"
	"github.com/bespoke-hpc/bespoke/kernel/tensor"
)

func memoryProblems(t *testing.T) []family.Problem {
	t.Helper()
	op := small(t, "small", []float64{1, 0, 0.5, -2, 0, 3})
	ps := []family.Problem{
		sparse.NewOperator(op, kernel.F64, 1, 0), sparse.NewOperator(op, kernel.F32, 1, 1),
	}
	for _, o := range []struct {
		k  element.Kind
		p  element.Problem
		op integrate.Options
	}{{element.Hex, element.Laplace, integrate.Options{}}, {element.Prism, element.CDR, integrate.Options{Load: true}}, {element.Tet, element.Mass, integrate.Options{Symmetric: true, Upper: true}}} {
		p, err := integrate.New(o.k, o.p, kernel.F64, o.op)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	for _, k := range []fem.Kernel{fem.BK1, fem.BK3, fem.BK5} {
		p, err := tensor.New(k, 3, 1, kernel.F32)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	p, err := contract.Derivative(4, 0, kernel.F64)
	if err != nil {
		t.Fatal(err)
	}
	return append(ps, p)
}

// MinArrayBytes bounds what the arrays take from below: bench refuses a
// size by it before drawing the workload.
func TestMinArrayBytesIsALowerBound(t *testing.T) {
	for _, p := range memoryProblems(t) {
		const units = 2048
		in, err := p.Timed(units)
		if err != nil {
			t.Fatal(err)
		}
		w, err := in.Workload()
		if err != nil {
			t.Fatal(err)
		}
		var set int64
		for _, a := range w.Arrays {
			size := int64(8)
			switch a.Type {
			case kernel.Real:
				size = int64(p.DType().Bytes())
			case kernel.Int32:
				size = 4
			}
			set += a.Len * size
		}
		if min := bench.MinArrayBytes(p, units); min > set || min <= 0 {
			t.Errorf("%s: MinArrayBytes %d, the arrays take %d", p.Name(), min, set)
		}
	}
}

// A size beyond --max-memory is refused at once, without drawing anything.
func TestCheckMemory(t *testing.T) {
	for _, p := range memoryProblems(t) {
		start := time.Now()
		err := bench.CheckMemory(bench.Config{Units: 1 << 30, MaxMemory: 1 << 30}, []family.Problem{p})
		if err == nil || !strings.Contains(err.Error(), "--max-memory") {
			t.Errorf("%s: %v, want a --max-memory error", p.Name(), err)
		}
		if took := time.Since(start); took > time.Second {
			t.Errorf("%s: took %v", p.Name(), took)
		}
		if err := bench.CheckMemory(bench.Config{Units: 1024, MaxMemory: 1 << 30}, []family.Problem{p}); err != nil {
			t.Errorf("%s: a small size refused: %v", p.Name(), err)
		}
	}
}
