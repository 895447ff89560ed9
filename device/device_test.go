package device

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/bespoke-hpc/bespoke/emit"
)

// stepDevice is a Device whose Elapsed reports 1 ms per call and that has
// no SeriesTimer of its own.
type stepDevice struct{ elapsed int }

func (d *stepDevice) Info() Info                         { return Info{} }
func (d *stepDevice) Dialect() emit.Dialect              { return emit.C }
func (d *stepDevice) Alloc(int64) (Buffer, error)        { return nil, errors.New("no memory") }
func (d *stepDevice) Build(emit.Source) (Program, error) { return nil, errors.New("no compiler") }
func (d *stepDevice) Sync() error                        { return nil }
func (d *stepDevice) Close() error                       { return nil }
func (d *stepDevice) Elapsed(f func() error) (time.Duration, error) {
	d.elapsed++
	if err := f(); err != nil {
		return 0, err
	}
	return time.Millisecond, nil
}

func TestElapsedSeriesFallback(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name      string
		n, failAt int // failAt < 0: f never fails
		calls     []int
		elapsed   int // calls of Elapsed
		err       error
	}{
		{"three", 3, -1, []int{0, 1, 2, 3}, 3, nil},
		{"lead-in only", 0, -1, []int{0}, 0, nil},
		{"lead-in fails", 3, 0, []int{0}, 0, boom},
		{"timed launch fails", 3, 2, []int{0, 1, 2}, 2, boom},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &stepDevice{}
			var calls []int
			ds, err := ElapsedSeries(d, tc.n, func(i int) error {
				calls = append(calls, i)
				if i == tc.failAt {
					return boom
				}
				return nil
			})
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if !slices.Equal(calls, tc.calls) || d.elapsed != tc.elapsed {
				t.Errorf("calls %v and %d Elapsed, want %v and %d", calls, d.elapsed, tc.calls, tc.elapsed)
			}
			if err == nil && (len(ds) != tc.n || slices.ContainsFunc(ds, func(x time.Duration) bool { return x != time.Millisecond })) {
				t.Errorf("times %v, want %d of 1ms", ds, tc.n)
			}
		})
	}
	if _, err := ElapsedSeries(&stepDevice{}, -1, func(int) error { return nil }); err == nil {
		t.Error("n = -1 accepted")
	}
}
