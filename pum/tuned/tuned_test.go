package tuned

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/emit"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	kpum "github.com/bespoke-hpc/bespoke/kernel/pum"
	"github.com/bespoke-hpc/bespoke/pum/run"
	"github.com/bespoke-hpc/bespoke/tune"
)

func problem(dim, level, p int, dt kernel.DType) run.Config {
	return run.Config{Dim: dim, Level: level, Degree: p, Coeff: kpum.Coefficients{Name: kpum.CoeffSmooth, K: 1, R: 1}, DType: dt}
}

var targets = map[string]family.Target{"cpu": {}, "gpu": {GPU: true}, "sm_90": {GPU: true, CUDAArch: 90}}

// Every candidate's name parses back to it, on every kind of target and
// with fields fixed; names that Name could not print are refused.
func TestNames(t *testing.T) {
	for tn, tg := range targets {
		for _, f := range []Fixed{Free, {Threads: 32, MMA: -1}, {Side: 3, Vec: 2, MMA: -1}, {PerCell: true, MMA: 0}} {
			in := Instance{Config: problem(2, 3, 2, kernel.F64), Fixed: f}
			cs := in.Candidates(tg)
			if len(cs) == 0 {
				t.Fatalf("%s %+v: no candidates", tn, f)
			}
			for _, c := range cs {
				got, err := Parse(c.Name())
				if err != nil || got != c.(Candidate) {
					t.Errorf("%s: %s parses as %+v, %v", tn, c.Name(), got, err)
				}
			}
		}
	}
	for _, bad := range []string{"", "fused", "tree.group.t64.s2.k1", "fused.warp.t64", "fused.group.t64", "atomic.thread.t64.s2.k1",
		"fused.group.t64.s2.k1.t32", "fused.group.t064.s2.k1", "fused.group.t64.s2.k1.percell.percell", "fused.group.t64.k1.s2", "fused.group.t-1.s2.k1", "fused.group.t0.s0.k0", "atomic.thread.t0"} {
		if c, err := Parse(bad); err == nil {
			t.Errorf("%q parses as %+v", bad, c)
		}
	}
}

// The candidates: one per strategy on a CPU; on a GPU several shapes per
// strategy, tensor cores only where CUDA has them; a strategy keeps its
// own; fixed fields make alike candidates count once.
func TestCandidates(t *testing.T) {
	count := func(in Instance, tg family.Target, f func(Candidate) bool) int {
		n := 0
		for _, c := range in.Candidates(tg) {
			if f(c.(Candidate)) {
				n++
			}
		}
		return n
	}
	all := func(Candidate) bool { return true }
	in := Instance{Config: problem(2, 4, 1, kernel.F64), Fixed: Free}
	for _, tc := range []struct {
		name string
		in   Instance
		tg   family.Target
		f    func(Candidate) bool
		want int
	}{
		{"cpu", in, targets["cpu"], all, 3},
		{"cpu fused", in, targets["cpu"], func(c Candidate) bool { return c.Strategy == run.Fused && c.Integrator == run.Group }, 1},
		{"cpu only colour", Instance{Config: in.Config, Strategy: run.Colour, Fixed: Free}, targets["cpu"], all, 1},
		{"gpu mma", in, targets["gpu"], func(c Candidate) bool { return c.MMA > 0 }, 0},
		{"sm_90 mma", in, targets["sm_90"], func(c Candidate) bool { return c.MMA > 0 }, 2},
		{"gpu fused per cell", in, targets["gpu"], func(c Candidate) bool { return c.PerCell }, 2},
		{"gpu strategies", in, targets["gpu"], func(c Candidate) bool { return c.Strategy == run.Atomic }, 3},
		{"gpu threads fixed", Instance{Config: in.Config, Strategy: run.Atomic, Fixed: Fixed{Threads: 256, Side: 4, MMA: -1}}, targets["gpu"], all, 1},
		{"thread kernel fixed: no fused", Instance{Config: in.Config, Fixed: Fixed{Integrator: run.Thread, MMA: -1}}, targets["gpu"],
			func(c Candidate) bool { return c.Strategy == run.Fused }, 0},
		{"cpu mma fixed", Instance{Config: in.Config, Fixed: Fixed{MMA: 16}}, targets["cpu"], func(c Candidate) bool { return c.MMA == 16 && c.Integrator == run.Group }, 3},
	} {
		if got := count(tc.in, tc.tg, tc.f); got != tc.want {
			t.Errorf("%s: %d candidates, want %d", tc.name, got, tc.want)
		}
	}
}

// The key changes with what the choice depends on.
func TestTuneKey(t *testing.T) {
	base := Instance{Config: problem(2, 4, 1, kernel.F64), Fixed: Free}
	seen := map[string]string{base.TuneKey(): "base"}
	for name, in := range map[string]Instance{
		"level":    {Config: problem(2, 5, 1, kernel.F64)},
		"degree":   {Config: problem(2, 4, 2, kernel.F64)},
		"dim":      {Config: problem(3, 4, 1, kernel.F64)},
		"dtype":    {Config: problem(2, 4, 1, kernel.F32)},
		"strategy": {Config: problem(2, 4, 1, kernel.F64), Strategy: run.Fused},
	} {
		k := in.TuneKey()
		if prev, ok := seen[k]; ok {
			t.Errorf("%s and %s share the key %q", name, prev, k)
		}
		seen[k] = name
	}
}

// Choose on the C backend: the first choice times every candidate and
// stores the fastest; the second reads it from the store and times
// nothing; a stored winner that is no longer a candidate is measured
// anew; one strategy asked for is the only candidate.
func TestChooseStores(t *testing.T) {
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
	in := Instance{Config: problem(2, 3, 1, kernel.F64), Fixed: Free}
	first, err := Choose(dev, in, st)
	if err != nil {
		t.Fatal(err)
	}
	if first.Source != Measured || len(first.Times) != 3 || first.StoreErr != nil {
		t.Fatalf("first choice: %s, %d times, store %v; want every candidate measured and stored", first.Source, len(first.Times), first.StoreErr)
	}
	for _, tm := range first.Times {
		if tm.Err != "" || !(tm.TotalS > 0) {
			t.Errorf("%s: %g s, %q", tm.Name, tm.TotalS, tm.Err)
		}
		if tm.TotalS < timeOf(first, first.Candidate.Name()) {
			t.Errorf("winner %s (%g s) is slower than %s (%g s)", first.Candidate.Name(), timeOf(first, first.Candidate.Name()), tm.Name, tm.TotalS)
		}
	}
	second, err := Choose(dev, in, st)
	if err != nil {
		t.Fatal(err)
	}
	if second.Source != FromStore || second.Candidate != first.Candidate || second.Date != first.Date || !strings.Contains(second.Describe(), "tuning store") {
		t.Errorf("second choice: %s %s (%s), want %s from the store", second.Source, second.Candidate.Name(), second.Date, first.Candidate.Name())
	}
	// A forged record: its winner is no candidate here.
	key := tune.Key(in, dev)
	res, _ := json.Marshal([]Timed{})
	if err := st.Put(&tune.Record{Key: key, Problem: in.Name(), Winner: "fused.group.t999.s2.k1", Kind: "bespoke", Result: res}); err != nil {
		t.Fatal(err)
	}
	third, err := Choose(dev, in, st)
	if err != nil {
		t.Fatal(err)
	}
	if third.Source != Measured {
		t.Errorf("a stale record was used: %s %s", third.Source, third.Candidate.Name())
	}
	only, err := Choose(dev, Instance{Config: in.Config, Strategy: run.Atomic, Fixed: Free}, st)
	if err != nil || only.Source != Only || only.Candidate.Strategy != run.Atomic || len(only.Times) != 0 {
		t.Errorf("atomic asked for: %+v, %v", only, err)
	}
}

func timeOf(c *Choice, name string) float64 {
	for _, t := range c.Times {
		if t.Name == name {
			return t.TotalS
		}
	}
	return -1
}

// A fixed field no candidate can take gives the run's reason, not a
// silent fallback.
func TestChooseImpossible(t *testing.T) {
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	_, err = Choose(dev, Instance{Config: problem(2, 2, 1, kernel.F64), Fixed: Fixed{Vec: 4, MMA: -1}}, nil)
	if err == nil || !strings.Contains(err.Error(), "widest load") {
		t.Errorf("--vec 4 in f64: %v", err)
	}
}

// Every GPU candidate that passes Check builds its integration kernel and
// renders in CUDA and OpenCL, over the dimensions, degrees and precisions
// the bench offers; each configuration has a fused candidate.
func TestGPUCandidatesBuild(t *testing.T) {
	type tc struct{ dim, p int }
	cases := []tc{{2, 0}, {2, 1}, {2, 2}, {2, 3}, {2, 4}, {2, 5}, {3, 0}, {3, 1}, {3, 2}}
	if testing.Short() {
		cases = []tc{{2, 1}, {3, 1}}
	}
	for _, c := range cases {
		for _, dt := range []kernel.DType{kernel.F64, kernel.F32} {
			in := Instance{Config: problem(c.dim, 6, c.p, dt), Fixed: Free}
			in.Config.Layout = kpum.Interleaved
			fused := 0
			for _, fc := range in.Candidates(targets["sm_90"]) {
				name := fmt.Sprintf("%d-D p=%d %s %s", c.dim, c.p, dt, fc.Name())
				if err := in.Check(fc); err != nil {
					t.Logf("%s: %v", name, err)
					continue
				}
				k, err := in.Build(fc)
				if err != nil {
					t.Errorf("%s: %v", name, err)
					continue
				}
				for _, d := range []emit.Dialect{emit.CUDA, emit.OpenCL} {
					if fc.(Candidate).MMA > 0 && d != emit.CUDA {
						continue
					}
					if _, err := emit.Render(d, k); err != nil {
						t.Errorf("%s in %s: %v", name, d, err)
					}
				}
				if fc.(Candidate).Strategy == run.Fused {
					fused++
				}
			}
			if fused == 0 {
				t.Errorf("%d-D p=%d %s: no fused candidate builds", c.dim, c.p, dt)
			}
		}
	}
}
