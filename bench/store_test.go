package bench_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/bench"
	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/internal/cache"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/kernel/sparse"
	"github.com/bespoke-hpc/bespoke/operator"
	"github.com/bespoke-hpc/bespoke/tune"
)

// A choice measured once is reused with nothing built or timed; --retune,
// and a damaged or stale entry, measure again and store the new choice.
func TestRunStore(t *testing.T) {
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	dir := t.TempDir()
	t.Setenv("BESPOKE_CACHE_DIR", dir)
	t.Setenv("BESPOKE_NO_CACHE", "")
	op := small(t, "small", []float64{1, 0, 0.5, -2, 0, 3})
	problems := []family.Problem{sparse.NewOperator(op, kernel.F64, 1, 0)}
	store := tune.Open()
	var warnings []string
	// run benches the problem and reports whether it was measured (any
	// progress step at all) and its result.
	run := func(t *testing.T, retune bool) (bool, bench.Result) {
		t.Helper()
		steps := 0
		cfg := bench.Config{Units: 4096, Reps: 3, Warmup: 1, WorkingSet: 1 << 20, MaxMemory: 64 << 20,
			Store: store, Retune: retune, Progress: func(string) { steps++ },
			Warn: func(w string) { warnings = append(warnings, w) }}
		rep, err := bench.Run(dev, problems, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Problems) != 1 || rep.Problems[0].Choice == nil {
			t.Fatalf("no choice: %+v", rep.Problems)
		}
		res := rep.Problems[0]
		if res.Cached == (steps > 0) {
			t.Fatalf("cached %v after %d progress steps", res.Cached, steps)
		}
		return steps > 0, res
	}
	entry := func(t *testing.T) string {
		t.Helper()
		es, _ := filepath.Glob(filepath.Join(dir, "tune", "*.entry"))
		if len(es) != 1 {
			t.Fatalf("%d entries in the tuning store, want 1", len(es))
		}
		return es[0]
	}

	measured, first := run(t, false)
	if !measured {
		t.Fatal("the first run was not measured")
	}
	timed := 0
	for _, c := range first.Candidates {
		if c.Timing.Reps > 0 {
			timed++
		}
	}
	if timed < 2 {
		t.Fatalf("%d candidates timed, want every verified one", timed)
	}
	path := entry(t)
	if measured, again := run(t, false); measured || again.Choice.Winner != first.Choice.Winner {
		t.Fatalf("second run: measured %v, winner %s (first %s)", measured, again.Choice.Winner, first.Choice.Winner)
	}
	if measured, _ := run(t, true); !measured {
		t.Fatal("a retune was not measured")
	}
	key := strings.TrimSuffix(filepath.Base(entry(t)), ".entry")
	good, ok := store.Get(key)
	if !ok {
		t.Fatal("the entry the runs wrote does not read back")
	}
	damage := []struct {
		name  string
		spoil func(t *testing.T)
	}{
		{"truncated", func(t *testing.T) {
			data, _ := os.ReadFile(path)
			os.WriteFile(path, data[:len(data)/2], 0o644)
		}},
		{"bytes flipped", func(t *testing.T) {
			data, _ := os.ReadFile(path)
			data[len(data)-3] ^= 0x55
			os.WriteFile(path, data, 0o644)
		}},
		{"record of another key", func(t *testing.T) {
			r := *good
			r.Key = strings.Repeat("0", 64)
			writeRecord(t, path, key, &r)
		}},
		{"winner not in its result", func(t *testing.T) {
			r := *good
			r.Winner = "gone/x1"
			writeRecord(t, path, key, &r)
		}},
	}
	// forge re-signs the good record with its result changed by f (the
	// winner renamed in the record, its result and its candidate list
	// alike, as a forger would).
	forge := func(t *testing.T, f func(r *tune.Record, res *bench.Result)) {
		t.Helper()
		r := *good
		var res bench.Result
		if err := json.Unmarshal(r.Result, &res); err != nil {
			t.Fatal(err)
		}
		f(&r, &res)
		data, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		r.Result = data
		// Signed by the cache itself: tune's Put refuses some of these.
		payload, err := json.Marshal(&r)
		if err != nil {
			t.Fatal(err)
		}
		if err := cache.Open("tune").Put(key, payload); err != nil {
			t.Fatal(err)
		}
	}
	rename := func(to, kind string) func(r *tune.Record, res *bench.Result) {
		return func(r *tune.Record, res *bench.Result) {
			if c := res.Find(r.Winner); c != nil {
				c.Name, c.Kind = to, kind
			}
			r.Winner, r.Kind = to, kind
			res.Choice.Winner, res.Choice.Kind = to, kind
		}
	}
	// warns: the forged entries are said to be removed, in one line.
	warns := map[string]bool{"forged winner": true, "winner with a newline": true, "stale baseline": true,
		"impossible roof fraction": true, "negative time": true, "a loser's name with a newline": true}
	damage = append(damage, []struct {
		name  string
		spoil func(t *testing.T)
	}{
		{"forged winner", func(t *testing.T) { forge(t, rename("bogus/x999", "bespoke")) }},
		{"winner with a newline", func(t *testing.T) { forge(t, rename("cstream\nPWNED", "bespoke")) }},
		{"stale baseline", func(t *testing.T) { forge(t, rename("gone-blas", "baseline")) }},
		{"impossible roof fraction", func(t *testing.T) {
			forge(t, func(r *tune.Record, res *bench.Result) {
				c := res.Find(r.Winner)
				c.RoofFrac, c.GBs = 5.22, 5.22*res.RoofGBs
			})
		}},
		{"a loser's name with a newline", func(t *testing.T) {
			forge(t, func(r *tune.Record, res *bench.Result) {
				for i := range res.Candidates {
					if res.Candidates[i].Name != r.Winner {
						res.Candidates[i].Name = "x\n\x1b[2Jfake"
						break
					}
				}
			})
		}},
		{"negative time", func(t *testing.T) {
			forge(t, func(r *tune.Record, res *bench.Result) {
				for i := range res.Candidates {
					if res.Candidates[i].Name != r.Winner {
						res.Candidates[i].Timing.Median = -1
						break
					}
				}
			})
		}},
	}...)
	for _, tc := range damage {
		t.Run(tc.name, func(t *testing.T) {
			warnings = nil
			tc.spoil(t)
			if measured, _ := run(t, false); !measured {
				t.Fatal("a damaged entry was reused")
			}
			if warns[tc.name] {
				if len(warnings) != 1 || strings.ContainsAny(warnings[0], "\n\r") || !strings.Contains(warnings[0], "measured again") {
					t.Errorf("warnings %q: want one line saying the choice is measured again", warnings)
				}
			}
			if _, ok := store.Get(key); !ok {
				t.Fatal("the choice was not stored again")
			}
		})
	}
}

// writeRecord writes r, with a valid header, as the entry for key (where
// the store's Put would file it under r.Key).
func writeRecord(t *testing.T, path, key string, r *tune.Record) {
	t.Helper()
	if err := tune.Open().Put(r); err != nil {
		t.Fatal(err)
	}
	if r.Key == key {
		return
	}
	if err := os.Rename(filepath.Join(filepath.Dir(path), r.Key+".entry"), path); err != nil {
		t.Fatal(err)
	}
}

// Problems whose choices are stored are checked side by side (problems
// sharing one operator included) and all reported from the store.
func TestRunStoreManyProblems(t *testing.T) {
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	t.Setenv("BESPOKE_CACHE_DIR", t.TempDir())
	t.Setenv("BESPOKE_NO_CACHE", "")
	a := small(t, "a", []float64{1, 0, 0.5, -2, 0, 3})
	b := small(t, "b", []float64{0, 1, 2, 0, -1, 0.25})
	var problems []family.Problem
	for _, op := range []*operator.Operator{a, b} {
		for _, beta := range []float64{0, 1, 0.5} {
			problems = append(problems, sparse.NewOperator(op, kernel.F64, 1, beta))
		}
	}
	var warnings []string
	cfg := bench.Config{Units: 4096, Reps: 3, Warmup: 1, WorkingSet: 1 << 20, MaxMemory: 64 << 20,
		Store: tune.Open(), Warn: func(w string) { warnings = append(warnings, w) }}
	first, err := bench.Run(dev, problems, cfg)
	if err != nil {
		t.Fatal(err)
	}
	stored := 0
	for _, p := range first.Problems {
		if p.Choice != nil && !strings.Contains(strings.Join(warnings, "\n"), p.Name+":") {
			stored++
		}
	}
	again, err := bench.Run(dev, problems, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cached := 0
	for i, p := range again.Problems {
		if p.Cached {
			cached++
			if p.Choice.Winner != first.Problems[i].Choice.Winner {
				t.Errorf("%s: winner %s from the store, %s measured", p.Name, p.Choice.Winner, first.Problems[i].Choice.Winner)
			}
		}
	}
	if cached != stored || stored == 0 {
		t.Errorf("%d of %d problems from the store, %d stored (warnings %q)", cached, len(problems), stored, warnings)
	}
}
