package tuned

import (
	"encoding/json"
	"fmt"
	"math/bits"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	kpum "github.com/bespoke-hpc/bespoke/kernel/pum"
	"github.com/bespoke-hpc/bespoke/pum"
	"github.com/bespoke-hpc/bespoke/pum/run"
	"github.com/bespoke-hpc/bespoke/tune"
)

// Problem is a PUM configuration on the family seam with its size left
// open: a size in units is a number of patches, and the instance at that
// size is the uniform cover of the least level with at least that many
// (2^(d·level) patches). Config's level and shape are not read.
type Problem struct {
	Config   run.Config
	Strategy string // restricts the candidates to one strategy ("": all)
}

var _ family.Problem = Problem{}

// Name identifies the problem without its size, e.g. "pum 2d p1 smooth f64".
func (p Problem) Name() string {
	c := p.Config
	per := ""
	if c.Periodic {
		per = " periodic"
	}
	return fmt.Sprintf("pum %dd p%d%s %s %s", c.Dim, c.Degree, per, c.Coeff.Name, c.DType)
}

// Label is Name.
func (p Problem) Label() string { return p.Name() }

// DType is the run's precision.
func (p Problem) DType() kernel.DType { return p.Config.DType }

// UnitBytes is the matrix's bytes per patch: 3^d blocks of B² scalars
// (each patch overlaps its neighbours at most one away per direction),
// the least the assembly writes.
func (p Problem) UnitBytes() int64 {
	b := int64(kpum.Spec{Dim: p.Config.Dim, Degree: p.Config.Degree}.B())
	blocks := int64(1)
	for range p.Config.Dim {
		blocks *= 3
	}
	return blocks * b * b * int64(p.Config.DType.Bytes())
}

// Level is the least level whose cover has at least units patches.
func (p Problem) Level(units int) (int, error) {
	d := p.Config.Dim
	if d != 2 && d != 3 {
		return 0, fmt.Errorf("pum: dimension %d: want 2 or 3", d)
	}
	maxL := pum.MaxLevel2D
	if d == 3 {
		maxL = pum.MaxLevel3D
	}
	if units < 1 {
		return 0, fmt.Errorf("pum: %d patches: want at least 1", units)
	}
	// ⌈log2 units⌉ / d, rounded up.
	l := (bits.Len(uint(units-1)) + d - 1) / d
	if p.Config.Periodic {
		l = max(l, 2) // a periodic cover needs 4 patches per direction
	}
	if l > maxL {
		return 0, fmt.Errorf("pum: %d patches need level %d in %d-D, beyond %d (%d patches)", units, l, d, maxL, 1<<(d*maxL))
	}
	return l, nil
}

// Timed is the instance on the cover of at least units patches.
func (p Problem) Timed(units int) (family.Instance, error) {
	l, err := p.Level(units)
	if err != nil {
		return nil, err
	}
	cfg := p.Config
	cfg.Level = l
	return Instance{Config: cfg, Strategy: p.Strategy, Fixed: Free}, nil
}

// Checks is the instance Timed gives: its candidates are verified as
// whole systems by Choose (at VerifyLevel at most), not through family
// data.
func (p Problem) Checks(units int) ([]family.Instance, error) {
	in, err := p.Timed(units)
	if err != nil {
		return nil, err
	}
	return []family.Instance{in}, nil
}

var _ tune.Chooser = Instance{}

// Choose is the package's Choose as a tune.Chooser: retune drops the
// stored winner first, so that every candidate is measured anew.
func (in Instance) Choose(dev device.Device, st *tune.Store, retune bool) (*tune.Chosen, error) {
	if retune && st != nil {
		st.Remove(tune.Key(in, dev))
	}
	ch, err := Choose(dev, in, st)
	if err != nil {
		return nil, err
	}
	out := &tune.Chosen{Winner: ch.Candidate.Name(), Cached: ch.Source == FromStore, Date: ch.Date, StoreErr: ch.StoreErr}
	for _, t := range ch.Times {
		out.Times = append(out.Times, tune.Measured{Name: t.Name, Seconds: t.TotalS, Reps: reps(t), Verified: t.Verified, Err: t.Err})
	}
	if ch.Source == Only {
		// Nothing was timed: the only candidate is the choice.
		out.Times = []tune.Measured{{Name: out.Winner}}
	}
	return out, nil
}

// CheckStored reports why rec is no longer in's choice on dev: a record
// of another problem or device, a winner that is no candidate now, or
// measurements that are not Choose's.
func (in Instance) CheckStored(rec *tune.Record, dev device.Device) error {
	if _, err := stored(rec, in, dev); err != nil {
		return err
	}
	var times []Timed
	if err := json.Unmarshal(rec.Result, &times); err != nil {
		return fmt.Errorf("its result: %w", err)
	}
	for _, t := range times {
		if t.Name == rec.Winner && t.Verified && t.TotalS > 0 {
			return nil
		}
	}
	return fmt.Errorf("winner %q is not a verified, timed candidate of its result", rec.Winner)
}

// Facts are the cover's patches (the family's size) and degrees of
// freedom (N·B, every patch with the full local space).
func (in Instance) Facts() map[string]float64 {
	c := in.Config
	n := float64(int64(1) << (c.Dim * c.Level))
	b := float64(kpum.Spec{Dim: c.Dim, Degree: c.Degree}.B())
	return map[string]float64{"patches": n, "pum_dofs": n * b}
}

// reps is how many runs a measurement's time is the median of.
func reps(t Timed) int {
	if t.TotalS > 0 {
		return Reps
	}
	return 0
}
