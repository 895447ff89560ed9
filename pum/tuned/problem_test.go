package tuned

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/tune"
)

// A size in patches is the least uniform cover with at least that many;
// sizes beyond the largest cover, or none, are refused.
func TestProblemLevel(t *testing.T) {
	tests := []struct {
		dim, units int
		periodic   bool
		level      int
		err        string
	}{
		{2, 1, false, 0, ""},
		{2, 4, false, 1, ""},
		{2, 5, false, 2, ""},
		{2, 1024, false, 5, ""},
		{2, 1 << 18, false, 9, ""},
		{3, 1 << 18, false, 6, ""},
		{3, 1024, false, 4, ""}, // 2^12 ≥ 2^10: the least 3-D cover past it
		{2, 1 << 20, false, 10, ""},
		{2, 1<<20 + 1, false, 0, "beyond 10"},
		{3, 1<<18 + 1, false, 0, "beyond 6"},
		{2, 1, true, 2, ""}, // periodic covers have 4 patches a side at least
		{2, 0, false, 0, "at least 1"},
		{4, 16, false, 0, "want 2 or 3"},
	}
	for _, tc := range tests {
		cfg := problem(tc.dim, 0, 1, kernel.F64)
		cfg.Periodic = tc.periodic
		p := Problem{Config: cfg}
		l, err := p.Level(tc.units)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%d-D, %d patches: level %d, %v; want an error with %q", tc.dim, tc.units, l, err, tc.err)
		case tc.err == "" && (err != nil || l != tc.level):
			t.Errorf("%d-D, %d patches (periodic %v): level %d, %v; want %d", tc.dim, tc.units, tc.periodic, l, err, tc.level)
		}
		if tc.err != "" {
			continue
		}
		in, err := p.Timed(tc.units)
		if err != nil {
			t.Fatal(err)
		}
		pi := in.(Instance)
		if pi.Config.Level != tc.level || pi.Fixed != Free {
			t.Errorf("Timed(%d): level %d, fixed %+v", tc.units, pi.Config.Level, pi.Fixed)
		}
		facts := pi.Facts()
		if n := float64(int64(1) << (tc.dim * tc.level)); facts["patches"] != n || facts["pum_dofs"] != n*float64(pi.spec(Candidate{}).B()) {
			t.Errorf("facts %v; want %g patches, B = %d DOF each", facts, n, pi.spec(Candidate{}).B())
		}
	}
}

// The problem's name has no size (the store's key has it, through the
// instance), and its strategy restriction reaches the instance.
func TestProblemInstance(t *testing.T) {
	p := Problem{Config: problem(3, 0, 2, kernel.F32), Strategy: "colour"}
	if p.Name() != "pum 3d p2 smooth f32" || p.DType() != kernel.F32 || p.UnitBytes() != 27*10*10*4 {
		t.Errorf("%q %s %d bytes a patch", p.Name(), p.DType(), p.UnitBytes())
	}
	ins, err := p.Checks(64)
	if err != nil || len(ins) != 1 || ins[0].(Instance).Strategy != "colour" || ins[0].Name() != "pum 3d l2 p2 smooth f32" {
		t.Fatalf("checks: %v, %v", ins, err)
	}
}

// Through tune.Chooser: the first choice is measured and stored, the
// second read from the store, retune measures again, and CheckStored
// accepts the record and refuses one whose winner was not timed.
func TestChooser(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds and times three pipelines")
	}
	t.Setenv("BESPOKE_CACHE_DIR", t.TempDir())
	t.Setenv("BESPOKE_NO_CACHE", "")
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	st := tune.Open()
	var in tune.Chooser = Instance{Config: problem(2, 3, 1, kernel.F64), Fixed: Free}
	first, err := in.Choose(dev, st, false)
	if err != nil {
		t.Fatal(err)
	}
	if first.Cached || len(first.Times) != 3 || first.StoreErr != nil {
		t.Fatalf("first: %+v", first)
	}
	for _, m := range first.Times {
		if !m.Verified || !(m.Seconds > 0) || m.Reps != Reps {
			t.Errorf("%+v: want verified and timed", m)
		}
	}
	second, err := in.Choose(dev, st, false)
	if err != nil || !second.Cached || second.Winner != first.Winner || second.Date != first.Date {
		t.Fatalf("second: %+v, %v; want %s from the store", second, err, first.Winner)
	}
	rec, ok := st.Get(tune.Key(in, dev))
	if !ok {
		t.Fatal("nothing stored")
	}
	if err := in.CheckStored(rec, dev); err != nil {
		t.Errorf("the stored record: %v", err)
	}
	forged := *rec
	forged.Result, _ = json.Marshal([]Timed{{Name: rec.Winner, Err: "out of memory"}})
	if err := in.CheckStored(&forged, dev); err == nil {
		t.Error("a winner never timed was accepted")
	}
	third, err := in.Choose(dev, st, true)
	if err != nil || third.Cached {
		t.Errorf("retune: %+v, %v; want measured anew", third, err)
	}
}
