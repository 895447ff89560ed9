package bench

import (
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
