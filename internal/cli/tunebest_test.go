package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/kernel/family/registry"
)

// What tune stores for every registered family (and what fem bench and
// integrate bench store), gen --best finds at the size the run timed (its
// --n) and writes the winner's source.
func TestTuneThenGenBestFamilies(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles and times kernels")
	}
	type tuneGen struct {
		name      string
		tune, gen []string
	}
	var tests []tuneGen
	args := familyArgs(t, t.TempDir())
	for _, f := range registry.All() {
		a := append([]string{"--family", f.Name}, args[f.Name]...)
		tune := []string{"tune"}
		if !f.Baselines {
			// No vendor library to leave out: the choice is kept all the same.
			tune = append(tune, "--no-baselines")
		}
		tests = append(tests, tuneGen{f.Name, append(tune, a...), append([]string{"gen"}, a...)})
	}
	tests = append(tests,
		tuneGen{"fem gen", []string{"fem", "bench", "--kernel", "bk1", "--order", "1"},
			[]string{"fem", "gen", "--kernel", "bk1", "--order", "1"}},
		tuneGen{"integrate bench", []string{"integrate", "bench", "--element", "tet", "--problem", "mass"},
			[]string{"gen", "--family", "integrate", "--element", "tet", "--problem", "mass"}})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			t.Setenv("BESPOKE_CACHE_DIR", filepath.Join(dir, "cache"))
			t.Setenv("BESPOKE_NO_CACHE", "")
			js := filepath.Join(dir, "tune.json")
			args := append(tc.tune, "--backend", "c", "--n", "1024", "--working-set", "1M", "--reps", "3", "--warmup", "1", "-q", "--json", js)
			if code, _, stderr := run(t, args...); code != ExitOK {
				t.Fatalf("%s: exit %d: %s", strings.Join(args, " "), code, stderr)
			}
			var rep struct {
				Problems []struct {
					Choice struct{ Winner, Kind string } `json:"choice"`
				} `json:"problems"`
			}
			data, err := os.ReadFile(js)
			if err != nil || json.Unmarshal(data, &rep) != nil || len(rep.Problems) != 1 || rep.Problems[0].Choice.Winner == "" {
				t.Fatalf("%s: %v %.300q", js, err, data)
			}
			winner := rep.Problems[0].Choice.Winner
			src := filepath.Join(dir, "best.c")
			gen := append(tc.gen, "--best", "--backend", "c", "--n", "1024", "-o", src)
			code, _, stderr := run(t, gen...)
			if rep.Problems[0].Choice.Kind == "baseline" { // the CPU BLAS won the race
				if code != ExitFailure || !strings.Contains(stderr, "a vendor library: no kernel to write") {
					t.Fatalf("gen --best with %s chosen: exit %d, %q", winner, code, stderr)
				}
				return
			}
			if code != ExitOK {
				t.Fatalf("%s: exit %d: %s", strings.Join(gen, " "), code, stderr)
			}
			text, err := os.ReadFile(src)
			if err != nil || !strings.Contains(string(text), winner) {
				t.Fatalf("gen --best wrote %.300q (%v); want the source of %s", text, err, winner)
			}
			// Another size is another key: said in one line.
			other := append(tc.gen, "--best", "--backend", "c", "--n", "1048576")
			if code, _, stderr := run(t, other...); code != ExitFailure || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "no choice") {
				t.Fatalf("gen --best at another size: exit %d, %q", code, stderr)
			}
		})
	}
}

// gen refuses --n for the families whose kernels take their size at run
// time, except with --best.
func TestGenNOnlyWithBest(t *testing.T) {
	for _, args := range [][]string{
		{"gen", "--family", "fem", "--kernel", "bk5", "--order", "1", "--n", "1024", "--backend", "c", "--variant", "cpu/e1"},
		{"gen", "--family", "contract", "--order", "1", "--axis", "x", "--n", "1024", "--backend", "c", "--variant", "slab/e1"},
		{"gen", "--family", "fem", "--kernel", "bk5", "--order", "1", "--n", "-3", "--best", "--backend", "c"},
	} {
		code, _, stderr := run(t, args...)
		if code != ExitUsage || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "--n") {
			t.Errorf("%s: exit %d, %q; want a usage error naming --n", strings.Join(args, " "), code, stderr)
		}
	}
}
