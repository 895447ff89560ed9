package bench_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/bench"
	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/tune"
)

// pipeline is a problem whose instance chooses for itself, with a choice
// given by the test.
type pipeline struct {
	name   string
	chosen *tune.Chosen
	err    error
	got    *[]string // what Choose was asked: "size retune"
}

func (p pipeline) Name() string        { return p.name }
func (p pipeline) Label() string       { return p.name }
func (p pipeline) DType() kernel.DType { return kernel.F64 }
func (p pipeline) UnitBytes() int64    { return 8 }
func (p pipeline) Checks(n int) ([]family.Instance, error) {
	in, err := p.Timed(n)
	return []family.Instance{in}, err
}
func (p pipeline) Timed(n int) (family.Instance, error) { return pipelineInstance{p, n}, nil }

type pipelineInstance struct {
	pipeline
	n int
}

func (in pipelineInstance) Name() string                             { return fmt.Sprintf("%s n%d", in.name, in.n) }
func (pipelineInstance) Candidates(family.Target) []family.Candidate { return nil }
func (pipelineInstance) Variant(string) (family.Candidate, error)    { return nil, errors.New("none") }
func (pipelineInstance) Check(family.Candidate) error                { return nil }
func (pipelineInstance) Build(family.Candidate) (*kernel.Kernel, error) {
	return nil, errors.New("none")
}
func (pipelineInstance) Data(*rand.Rand) (*family.Data, error) { return nil, errors.New("none") }
func (pipelineInstance) DataBytes() int64                      { return 0 }
func (pipelineInstance) Workload() (*family.Workload, error) {
	return nil, errors.New("timed as a whole")
}
func (in pipelineInstance) TuneKey() string { return in.Name() }
func (in pipelineInstance) Facts() map[string]float64 {
	return map[string]float64{"units": float64(in.n)}
}
func (pipelineInstance) CheckStored(*tune.Record, device.Device) error { return nil }
func (in pipelineInstance) Choose(_ device.Device, _ *tune.Store, retune bool) (*tune.Chosen, error) {
	*in.got = append(*in.got, fmt.Sprintf("%d %v", in.n, retune))
	return in.chosen, in.err
}

// Problems whose instances are tune.Choosers are handed the device, the
// size and Retune; the report gives each choice with its candidates'
// times, says where it came from, and measures no roof. A failing one is
// its problem's error, not the run's.
func TestRunChoosers(t *testing.T) {
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	var got []string
	// The dates are the fixtures' data, which the report must copy.
	measured := &tune.Chosen{Winner: "b", Date: "2026-01-02T03:04:05Z", Times: []tune.Measured{
		{Name: "a", Seconds: 0.003, Reps: 3, Verified: true}, {Name: "b", Seconds: 0.002, Reps: 3, Verified: true}, {Name: "c", Err: "too big"}}}
	stored := &tune.Chosen{Winner: "a", Cached: true, Date: "2025-12-01T00:00:00Z", Times: []tune.Measured{{Name: "a", Seconds: 0.001, Reps: 3, Verified: true}}}
	ps := []family.Problem{
		pipeline{name: "new", chosen: measured, got: &got},
		pipeline{name: "old", chosen: stored, got: &got},
		pipeline{name: "bad", err: errors.New("no candidate can be built"), got: &got},
	}
	rep, err := bench.Run(dev, ps, bench.Config{Units: 100, Retune: true})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != "100 true,100 true,100 true" {
		t.Errorf("Choose was asked %q; want size 100 with retune, three times", got)
	}
	if rep.RoofGBs != 0 || !strings.Contains(rep.RoofMethod, "not measured") || len(rep.Problems) != 3 {
		t.Fatalf("roof %g (%q), %d problems", rep.RoofGBs, rep.RoofMethod, len(rep.Problems))
	}
	p := rep.Problems[0]
	if p.Name != "new n100" || p.Units != 100 || p.Facts["units"] != 100 || p.Cached || len(p.Candidates) != 3 {
		t.Errorf("measured problem: %+v", p)
	}
	if c := p.Choice; c == nil || c.Winner != "b" || c.Kind != "bespoke" || c.Median.Seconds() != 0.002 || !strings.Contains(c.Why, "2 candidates") {
		t.Errorf("measured choice: %+v", c)
	}
	if c := p.Find("c"); c == nil || c.Verified || c.Err != "too big" || c.Timing.Reps != 0 {
		t.Errorf("the failed candidate: %+v", c)
	}
	q := rep.Problems[1]
	if !q.Cached || q.Measured != stored.Date || q.Choice == nil || q.Choice.Winner != "a" || !strings.Contains(q.Choice.Why, "tuning store") {
		t.Errorf("stored problem: %+v, %+v", q, q.Choice)
	}
	if r := rep.Problems[2]; r.Choice != nil || !strings.Contains(r.Err, "no candidate") {
		t.Errorf("failing problem: %+v", r)
	}
}
