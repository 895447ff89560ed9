package report

import (
	"strings"
	"testing"
	"time"

	"github.com/bespoke-hpc/bespoke/bench"
	"github.com/bespoke-hpc/bespoke/tune"
)

// CheckModel counts what was pruned, and, where every candidate was built,
// whether the candidates the model kept held the winner.
func TestCheckModel(t *testing.T) {
	cand := func(name string, us int, keep, pruned bool) bench.Candidate {
		c := bench.Candidate{Name: name, Kind: "bespoke", Predicted: &tune.Prediction{Seconds: 1, Keep: keep}, Pruned: pruned}
		if !pruned {
			c.Verified, c.Timing.Median = true, time.Duration(us)*time.Microsecond
		}
		return c
	}
	readmitted := func(c bench.Candidate) bench.Candidate { c.Readmitted = true; return c }
	rep := &bench.Report{Problems: []bench.Result{
		// Full search, winner kept.
		{Name: "kept", Candidates: []bench.Candidate{cand("a", 100, true, false), cand("b", 150, false, false)}},
		// Full search, winner dropped; the best kept is 0.5 % slower.
		{Name: "near", Candidates: []bench.Candidate{cand("a", 1000, false, false), cand("b", 1005, true, false)}},
		// Full search, the best kept is 20 % slower.
		{Name: "lost", Candidates: []bench.Candidate{cand("a", 100, false, false), cand("b", 120, true, false)}},
		// Pruned: not a full search.
		{Name: "pruned", Candidates: []bench.Candidate{cand("a", 100, true, false), cand("b", 0, false, true)}},
		// A pruned candidate built after all (readmitted) and 3× faster
		// than the kept one: a full search the model lost.
		{Name: "readmitted", Candidates: []bench.Candidate{cand("a", 300, true, false), readmitted(cand("b", 100, false, false))}},
		// From the store: not counted.
		{Name: "stored", Cached: true, Candidates: []bench.Candidate{cand("a", 100, true, false)}},
	}}
	m := CheckModel(rep)
	want := ModelCheck{Candidates: 10, Pruned: 1, WouldPrune: 4, Readmitted: 1, Searches: 4, WinnerKept: 1, Within1: 2, Worst: 3, WorstName: "readmitted"}
	if m != want {
		t.Errorf("got %+v\nwant %+v", m, want)
	}
	if s := m.String(); !strings.Contains(s, "did not build 1") || !strings.Contains(s, "built 1 it had pruned") || !strings.Contains(s, "200.0 % slower, readmitted") {
		t.Errorf("summary %q", s)
	}
}
