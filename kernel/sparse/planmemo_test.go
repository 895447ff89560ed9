package sparse

import (
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/operator"
)

// The memo hands every gen of one α·A the same plan, planned once however
// many ask at once; another α·A (other values, or another α) gets a plan
// of its own, and the oldest plans leave once planMemoSize are kept.
func TestPlanMemo(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	op := kronOp(t, rng, 4, 3, false, nil)
	plan := func(o *operator.Operator, alpha float64) *blockPlan {
		t.Helper()
		p, err := newGen(Problem{Op: o, DType: kernel.F64, Alpha: alpha}, Defaults(Blocks)).plan()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	first := plan(op, 1)
	for _, tc := range []struct {
		name  string
		op    *operator.Operator
		alpha float64
		same  bool
	}{
		{"the same operator", op, 1, true},
		{"a copy of it", op.Clone(), 1, true},
		{"another α", op, 2, false},
		{"another operator", kronOp(t, rng, 4, 3, false, nil), 1, false},
	} {
		if got := plan(tc.op, tc.alpha); (got == first) != tc.same {
			t.Errorf("%s: the same plan %v, want %v", tc.name, got == first, tc.same)
		}
	}
	// Many at once, of a fresh operator: one plan for all.
	fresh := kronOp(t, rng, 3, 3, true, nil)
	got := make([]*blockPlan, 8)
	var wg sync.WaitGroup
	for i := range got {
		wg.Add(1)
		go func() { defer wg.Done(); got[i] = plan(fresh, 1) }()
	}
	wg.Wait()
	for i, p := range got {
		if p != got[0] {
			t.Fatalf("goroutine %d planned its own", i)
		}
	}
	// planMemoSize other operators later, the first is planned again.
	for range planMemoSize {
		plan(kronOp(t, rng, 2, 3, false, nil), 1)
	}
	if plan(op, 1) == first {
		t.Errorf("the oldest plan is still kept after %d others", planMemoSize)
	}
}
