package bench_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/bench"
	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/kernel/sparse"
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
	// run benches the problem and reports whether it was measured (any
	// progress step at all) and its result.
	run := func(t *testing.T, retune bool) (bool, bench.Result) {
		t.Helper()
		steps := 0
		cfg := bench.Config{Units: 4096, Reps: 3, Warmup: 1, WorkingSet: 1 << 20, MaxMemory: 64 << 20,
			Store: store, Retune: retune, Progress: func(string) { steps++ }}
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
	for _, tc := range damage {
		t.Run(tc.name, func(t *testing.T) {
			tc.spoil(t)
			if measured, _ := run(t, false); !measured {
				t.Fatal("a damaged entry was reused")
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
