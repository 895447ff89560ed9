package tensor_test

import (
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/fem"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/kernel/tensor"
	"github.com/bespoke-hpc/bespoke/verify"
)

// cpu is the target of the CPU layouts.
var cpu = family.Target{}

// The CPU layouts in the interpreter, as written and as lowered for the
// host (a block of one thread: the lowering only wraps it).
func TestCPUInterpret(t *testing.T) {
	var cs []verify.Case
	cs = append(cs, cases(t, fem.BK5, []int{1, 2, 3, 4}, 2, cpu)...)
	cs = append(cs, cases(t, fem.BK1, []int{1, 2, 3}, 2, cpu)...)
	cs = append(cs, cases(t, fem.BK3, []int{1, 2, 3}, 2, cpu)...)
	t.Logf("%d kernels interpreted", interpretAll(t, cs))
}

// The CPU layouts compiled by the C backend for N = 1…8 (fp32 to N = 3).
func TestCPUHost(t *testing.T) {
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	orders := []int{1, 2, 3, 4, 5, 6, 7, 8}
	if testing.Short() {
		orders = []int{2, 5} // every layout and tail; the orders' code is the same
	}
	var cs []verify.Case
	for _, op := range fem.Kernels {
		cs = append(cs, cases(t, op, orders, 3, cpu)...)
	}
	for i, o := range verify.RunBatch(dev, cs) {
		if o.Err != nil || !o.Result.OK() {
			t.Errorf("%s %s: %+v, %v", cs[i].Label, cs[i].Kernel.Variant, o.Result, o.Err)
		}
	}
	t.Logf("%d kernels verified on %s", len(cs), dev.Info().Name)
}

// A CPU target is offered the CPU layouts only, a GPU target none of
// them; their names parse back and they run one element per work-item.
func TestCPUCandidates(t *testing.T) {
	for _, op := range fem.Kernels {
		p, err := tensor.New(op, 4, 1, kernel.F64)
		if err != nil {
			t.Fatal(err)
		}
		in, err := p.Timed(10)
		if err != nil {
			t.Fatal(err)
		}
		tests := []struct {
			target family.Target
			cpu    bool
		}{{cpu, true}, {gpu, false}}
		for _, tc := range tests {
			cands := in.Candidates(tc.target)
			if len(cands) == 0 {
				t.Fatalf("%s %+v: no candidates", op, tc.target)
			}
			for _, c := range cands {
				if got := strings.HasPrefix(c.Name(), "cpu"); got != tc.cpu {
					t.Errorf("%s %+v: offered %s", op, tc.target, c.Name())
				}
				back, err := in.Variant(c.Name())
				if err != nil || back.Name() != c.Name() {
					t.Errorf("%s: %s parsed as %v, %v", op, c.Name(), back, err)
				}
			}
		}
		for _, kind := range []string{"cpu"} {
			if err := in.Check(tensor.Variant{Kind: kind, PerBlock: 2}); err == nil {
				t.Errorf("%s: %s with two elements per work-item accepted", op, kind)
			}
			k, err := in.Build(tensor.Variant{Kind: kind, PerBlock: 1})
			if err != nil {
				t.Fatal(err)
			}
			if k.Launch.Threads() != 1 || k.HasBarrier() || len(k.Shared) != 0 {
				t.Errorf("%s %s: block %v, barrier %v, shared %v: want one thread, no barrier, no shared memory", op, kind, k.Launch.Block, k.HasBarrier(), k.Shared)
			}
		}
	}
}

// The x-vectorised contraction loops of cpu/e1 over its private arrays
// never run 4k+3 (k ≥ 1) iterations: with AVX2's 4 doubles such a loop
// ran as a vector, a half vector and a scalar step, and BK1 and BK3 at
// N = 5 (7 Gauss points) and BK5 at N = 6 (7 nodes) were a quarter slower
// than their neighbours; their arrays' rows are padded to a multiple of 4.
func TestCPUPaddedRows(t *testing.T) {
	tests := []struct {
		op fem.Kernel
		n  int
	}{
		{fem.BK1, 5}, {fem.BK3, 5}, {fem.BK5, 6},
		{fem.BK1, 9}, {fem.BK3, 9}, {fem.BK5, 10},
		{fem.BK1, 4}, {fem.BK5, 5},
	}
	for _, tc := range tests {
		in := timedF64(t, tc.op, tc.n, 10)
		k, err := in.Build(tensor.Variant{Kind: "cpu", PerBlock: 1})
		if err != nil {
			t.Fatal(err)
		}
		private := map[string]bool{}
		kernel.WalkStmts(k.Body, func(s kernel.Stmt) bool {
			if d, ok := s.(kernel.Decl); ok && len(d.Dims) > 0 {
				private[d.Name] = true
			}
			return true
		})
		loops := 0
		kernel.WalkStmts(k.Body, func(s kernel.Stmt) bool {
			f, ok := s.(kernel.For)
			// The contraction loops (see contract) along x.
			if !ok || !f.Vectorize || (f.Var != "o" && f.Var != "a" && f.Var != "r") {
				return true
			}
			to, ok := f.To.(kernel.Int)
			if !ok {
				t.Errorf("%s N=%d: loop %s to %v, not a constant", tc.op, tc.n, f.Var, f.To)
				return true
			}
			intoPrivate := false
			kernel.WalkStmts(f.Body, func(s kernel.Stmt) bool {
				if st, ok := s.(kernel.Store); ok && private[st.Buf] {
					intoPrivate = true
				}
				return true
			})
			if !intoPrivate {
				return true
			}
			loops++
			if to.V >= 7 && to.V%4 == 3 {
				t.Errorf("%s N=%d: contraction loop %s runs %d iterations", tc.op, tc.n, f.Var, to.V)
			}
			return true
		})
		if loops == 0 {
			t.Errorf("%s N=%d: no contraction loops into private arrays found", tc.op, tc.n)
		}
	}
}
