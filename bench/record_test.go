package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/bespoke-hpc/bespoke/tune"
)

// record stores no result whose figures are impossible (a candidate over
// tune.MaxRoofFrac of the roof: the roof was measured on a busy machine),
// and says so in one line.
func TestRecordRefusesImpossibleFigures(t *testing.T) {
	t.Setenv("BESPOKE_CACHE_DIR", t.TempDir())
	t.Setenv("BESPOKE_NO_CACHE", "")
	result := func(roof, gbs float64) Result {
		med := 100 * time.Microsecond
		ideal := int64(gbs * 1e9 * med.Seconds())
		res := Result{Name: "p", Units: 1024, IdealBytes: ideal, RoofGBs: roof, Candidates: []Candidate{
			{Name: "cstream", Kind: "bespoke", Verified: true, Timing: Timing{Median: med, Min: med, Max: med, Reps: 3}, GBs: gbs},
		}}
		return res
	}
	tests := []struct {
		name      string
		roof, gbs float64
		stored    bool
	}{
		{"under the roof", 20, 15, true},
		{"a little over", 20, 25, true},
		{"522 % of a busy roof", 11.5, 60, false},
		{"no roof", 0, 15, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			store := tune.Open()
			var warnings []string
			cfg := Config{Store: store, Warn: func(w string) { warnings = append(warnings, w) }}
			cfg.defaults()
			rep := &Report{RoofGBs: tc.roof, Problems: []Result{result(tc.roof, tc.gbs)}}
			key := strings.Repeat("ab", 32)
			store.Remove(key)
			rep.scale()
			rep.record([]*prepared{{key: key}}, cfg)
			_, stored := store.Get(key)
			if stored != tc.stored {
				t.Fatalf("stored %v, want %v (warnings %q)", stored, tc.stored, warnings)
			}
			if !tc.stored && (len(warnings) != 1 || strings.Contains(warnings[0], "\n") || !strings.Contains(warnings[0], "not stored")) {
				t.Errorf("warnings %q: want one line saying the choice was not stored", warnings)
			}
		})
	}
}
