package bench

import (
	"errors"
	"slices"
	"testing"

	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/kernel"
)

// time launches the warm-ups, then the last warm-up's set as the untimed
// lead-in, then Reps timed launches rotating over the sets from set 0.
func TestTimeLaunchOrder(t *testing.T) {
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	for _, tc := range []struct {
		name         string
		warmup, reps int
		sets         int
		want         []int
	}{
		{"five warm-ups, three sets", 5, 7, 3, []int{0, 1, 2, 0, 1, 1, 0, 1, 2, 0, 1, 2, 0}},
		{"no warm-up, two sets", -1, 3, 2, []int{0, 0, 1, 0}},
		{"one set", 2, 2, 1, []int{0, 0, 0, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewRunner(dev, kernel.F64, Config{Warmup: tc.warmup, Reps: tc.reps, WorkingSet: 1 << 20, MaxMemory: 64 << 20})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			var got []int
			tm, err := r.time(tc.sets, func(set int) error {
				got = append(got, set)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) || tm.Reps != tc.reps || tm.Min > tm.Median || tm.Median > tm.Max {
				t.Errorf("sets %v, timing %+v; want sets %v and %d reps", got, tm, tc.want, tc.reps)
			}
		})
	}
}

// timeRounds takes the launches in turn, forwards then backwards, Reps
// timed launches each over Rounds rounds (the first warmed up Warmup
// times, later ones once), rotating every launch's sets on from where its
// last round stopped; a launch that fails is dropped and reported, and
// a stop ends the timing.
func TestTimeRounds(t *testing.T) {
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	r, err := NewRunner(dev, kernel.F64, Config{Warmup: 2, Reps: 5, Rounds: 2, WorkingSet: 1 << 20, MaxMemory: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	type call struct{ launch, set int }
	var got []call
	failAt := -1 // the call after which launch 1 fails
	launches := make([]func(int) error, 3)
	for i := range launches {
		launches[i] = func(set int) error {
			got = append(got, call{i, set})
			if i == 1 && failAt >= 0 && len(got) > failAt {
				return errors.New("launch failed")
			}
			return nil
		}
	}
	ts, errs, stopped := r.timeRounds(3, launches, func() bool { return false })
	// Each series: warm-ups, the lead-in (the last warm-up's set), the
	// timed launches from set first.
	series := func(i, warmup, first, reps int) []call {
		var cs []call
		for w := 0; w < warmup; w++ {
			cs = append(cs, call{i, w % 3})
		}
		cs = append(cs, call{i, (warmup - 1) % 3})
		for k := 0; k < reps; k++ {
			cs = append(cs, call{i, (first + k) % 3})
		}
		return cs
	}
	var want []call
	for _, i := range []int{0, 1, 2} {
		want = append(want, series(i, 2, 0, 2)...)
	}
	for _, i := range []int{2, 1, 0} {
		want = append(want, series(i, 1, 2, 3)...)
	}
	if stopped || !slices.Equal(got, want) {
		t.Errorf("stopped %v, calls %v; want %v", stopped, got, want)
	}
	for i, tm := range ts {
		if errs[i] != nil || tm.Reps != 5 || tm.Min > tm.Median || tm.Median > tm.Max {
			t.Errorf("launch %d: %+v, %v; want 5 timed launches", i, tm, errs[i])
		}
	}
	// Launch 1 fails in the second round: the others are still timed.
	got, failAt = nil, 3*(2+1+2)+1
	ts, errs, _ = r.timeRounds(3, launches, func() bool { return false })
	if errs[1] == nil || errs[0] != nil || errs[2] != nil || ts[0].Reps != 5 || ts[2].Reps != 5 {
		t.Errorf("launch 1 failing: errors %v, timings %+v", errs, ts)
	}
	// A stop before the third series.
	got, failAt = nil, -1
	n := 0
	_, _, stopped = r.timeRounds(3, launches, func() bool { n++; return n > 2 })
	if !stopped || len(got) != 2*(2+1+2) {
		t.Errorf("stopped %v after %d calls; want a stop after two series (10 calls)", stopped, len(got))
	}
}
