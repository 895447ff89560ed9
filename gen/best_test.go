package gen

import (
	"errors"
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

// pipeline is a problem whose instance keeps its own records
// (tune.Chooser); stale says why CheckStored refuses one, or nil.
type pipeline struct{ stale error }

func (pipeline) Name() string        { return "pipe" }
func (pipeline) Label() string       { return "pipe" }
func (pipeline) DType() kernel.DType { return kernel.F64 }
func (pipeline) UnitBytes() int64    { return 8 }
func (p pipeline) Checks(n int) ([]family.Instance, error) {
	in, err := p.Timed(n)
	return []family.Instance{in}, err
}
func (p pipeline) Timed(n int) (family.Instance, error) { return pipelineInstance{p, n}, nil }

type pipelineInstance struct {
	pipeline
	n int
}

func (pipelineInstance) Candidates(family.Target) []family.Candidate { return nil }
func (pipelineInstance) Variant(string) (family.Candidate, error)    { return nil, errors.New("none") }
func (pipelineInstance) Check(family.Candidate) error                { return nil }
func (pipelineInstance) Build(family.Candidate) (*kernel.Kernel, error) {
	return nil, errors.New("none")
}
func (pipelineInstance) Data(*rand.Rand) (*family.Data, error) { return nil, errors.New("none") }
func (pipelineInstance) DataBytes() int64                      { return 0 }
func (pipelineInstance) Workload() (*family.Workload, error)   { return nil, errors.New("whole") }
func (in pipelineInstance) TuneKey() string                    { return "pipe " + string(rune('0'+in.n)) }
func (pipelineInstance) Facts() map[string]float64             { return nil }
func (pipelineInstance) Choose(device.Device, *tune.Store, bool) (*tune.Chosen, error) {
	return nil, errors.New("not here")
}
func (in pipelineInstance) CheckStored(*tune.Record, device.Device) error { return in.stale }

// Best reads a pipeline's record through its own CheckStored, not as
// bench's result (which it is not), and removes one it refuses.
func TestBestChooser(t *testing.T) {
	t.Setenv("BESPOKE_CACHE_DIR", t.TempDir())
	t.Setenv("BESPOKE_NO_CACHE", "")
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	st := tune.Open()
	for _, tc := range []struct {
		name  string
		stale error
		want  string // "": the winner
	}{
		{"its own record", nil, ""},
		{"a record it refuses", errors.New("winner gone"), "removed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pipeline{tc.stale}
			in, _ := p.Timed(3)
			key := tune.Key(in, dev)
			if err := st.Put(&tune.Record{Key: key, Problem: "pipe", Winner: "fast.one", Kind: "bespoke", Result: []byte(`[{"name":"fast.one","total_s":0.5}]`)}); err != nil {
				t.Fatal(err)
			}
			v, got, err := Best(p, dev, bench.Config{Units: 3}, st)
			_, left := st.Get(key)
			switch {
			case tc.want == "" && (err != nil || v != "fast.one" || got != in || !left):
				t.Errorf("%q, %v, %v (kept %v); want fast.one kept", v, got, err, left)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || left):
				t.Errorf("%q, %v (kept %v); want an error with %q and the record removed", v, err, left, tc.want)
			}
		})
	}
}
