package bench

import (
	"slices"
	"testing"
	"time"

	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/kernel/sparse"
	"github.com/bespoke-hpc/bespoke/operator"
	"github.com/bespoke-hpc/bespoke/tune"
)

// readmit names the pruned candidates predicted faster, by the machine's
// margin, than the fastest verified bespoke candidate ran (all of them
// when none did), fastest predicted first, at most most.
func TestReadmit(t *testing.T) {
	ran := func(name string, us float64, verified bool, kind string) Candidate {
		return Candidate{Name: name, Kind: kind, Verified: verified, Timing: Timing{Median: time.Duration(us * 1e3)}}
	}
	pruned := func(name string, us float64) Candidate {
		return Candidate{Name: name, Kind: "bespoke", Pruned: true, Predicted: &tune.Prediction{Seconds: us * 1e-6}}
	}
	cs := []Candidate{
		pruned("p5", 5), pruned("p9", 9), pruned("p3", 3), pruned("p12", 12),
		{Name: "unpredicted", Kind: "bespoke", Pruned: true},
		ran("kept", 10, true, "bespoke"),
		ran("wrong", 1, false, "bespoke"),  // unverified: does not count
		ran("cublas", 2, true, "baseline"), // a library: does not count
	}
	for _, tc := range []struct {
		most   int
		margin float64
		want   []string
	}{
		{16, 1, []string{"p3", "p5", "p9"}},
		{16, 0, []string{"p3", "p5", "p9"}}, // no margin: as 1
		{16, 2.5, []string{"p3"}},           // 2.5·5 µs is not under 10
		{2, 1, []string{"p3", "p5"}},
		{0, 1, []string{}},
		{-1, 1, []string{}},
	} {
		if got := readmit(cs, tc.most, tc.margin); !slices.Equal(got, tc.want) {
			t.Errorf("most %d, margin %g: %v, want %v", tc.most, tc.margin, got, tc.want)
		}
	}
	// No kept candidate verified (or none was kept): all of them.
	if got, want := readmit(cs[:5], 16, 1.2), []string{"p3", "p5", "p9", "p12"}; !slices.Equal(got, want) {
		t.Errorf("nothing ran: readmitted %v, want %v", got, want)
	}
}

// In a run, the pruned candidates left unbuilt are predicted no faster
// than the fastest kept candidate screened (unless the cap was reached),
// the readmitted ones were, and every candidate is listed once.
func TestRunReadmits(t *testing.T) {
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	op, err := operator.New("tall", 12, 4, []float64{
		1, 0, 0.5, -2, 0, 3, 1, 1, 0.25, 0, 0, 2, -1, 1, 1, 1, 0.5, 0.5, 0, 1, 2, 0, 0, 0,
		1, 1, 1, 1, 0, -3, 0, 1, 2, 2, 0, 0, 1, 0, 0, 4, 0.5, 0, 1, 0, 0, 1, 1, 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, most := range []int{-1, 2, 1000} {
		cfg := Config{Units: 4096, Reps: 3, Warmup: 1, WorkingSet: 1 << 20, MaxMemory: 64 << 20, Prune: 1 + 1e-9, Readmit: most}
		rep, err := Run(dev, []family.Problem{sparse.NewOperator(op, kernel.F64, 1, 0)}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		res := rep.Problems[0]
		best := time.Duration(1 << 62)
		seen := map[string]bool{}
		var readmitted, leftFast int
		for _, c := range res.Candidates {
			if seen[c.Name] {
				t.Errorf("most %d: %s listed twice", most, c.Name)
			}
			seen[c.Name] = true
			if c.Kind == "bespoke" && c.Verified && !c.Readmitted {
				best = min(best, c.Screen)
			}
		}
		for _, c := range res.Candidates {
			switch {
			case c.Readmitted:
				readmitted++
				if c.Pruned || !c.Verified || c.Predicted == nil || c.Predicted.Seconds >= best.Seconds() {
					t.Errorf("most %d: readmitted %s: pruned %v, verified %v (%s), predicted %v, best kept %v", most, c.Name, c.Pruned, c.Verified, c.Err, c.Predicted, best)
				}
			case c.Pruned && c.Predicted != nil && c.Predicted.Seconds < best.Seconds():
				leftFast++
			}
		}
		if most < 0 && readmitted > 0 || most >= 0 && readmitted > most {
			t.Errorf("most %d: %d readmitted", most, readmitted)
		}
		if most >= 0 && leftFast > 0 && readmitted < most {
			t.Errorf("most %d: %d pruned candidates predicted under the best kept (%v) left unbuilt, %d readmitted", most, leftFast, best, readmitted)
		}
		t.Logf("most %d: %d candidates, %d readmitted, %d predicted faster left", most, len(res.Candidates), readmitted, leftFast)
	}
}
