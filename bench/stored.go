package bench

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/tune"
)

// fromStore returns the result the tuning store holds for a planned
// problem, or nil. An entry that does not hold up — its result damaged,
// its winner not a candidate the instance offers now nor one of the run's
// baselines, or figures no measurement could give — is removed, said in
// one warning, and the problem measured anew.
func fromStore(dev device.Device, cfg Config, pr *prepared) *Result {
	rec, ok := cfg.Store.Get(pr.key)
	if !ok {
		return nil
	}
	names := make([]string, len(cfg.Baselines))
	for i, b := range cfg.Baselines {
		names[i] = b.Name()
	}
	res, err := Stored(rec, pr.inst, dev, names)
	if err != nil {
		cfg.Store.Remove(pr.key)
		cfg.Warn(fmt.Sprintf("%s: the stored choice was removed and is measured again: %v", pr.problem.Name(), err))
		return nil
	}
	res.Cached, res.Name = true, pr.problem.Name()
	res.Measured = rec.Date
	if rec.Commit != "" {
		res.Measured += ", commit " + rec.Commit
	}
	return res
}

// Stored reads a tuning record's result and checks it: the result is the
// record's, its figures are possible, and its winner exists now (one of
// the candidates the instance offers on dev, or of baselines).
func Stored(rec *tune.Record, in family.Instance, dev device.Device, baselines []string) (*Result, error) {
	var res Result
	if err := json.Unmarshal(rec.Result, &res); err != nil {
		return nil, fmt.Errorf("its result: %w", err)
	}
	if err := res.checkStored(rec); err != nil {
		return nil, err
	}
	if err := rec.Check(in, dev, baselines); err != nil {
		return nil, err
	}
	return &res, nil
}

// checkStored checks that a stored result is the record's and that its
// figures are possible.
func (o *Result) checkStored(rec *tune.Record) error {
	if o.Choice == nil || o.Choice.Winner != rec.Winner || o.Choice.Kind != rec.Kind {
		return fmt.Errorf("its result's choice is not the record's winner %q", rec.Winner)
	}
	w := o.Find(rec.Winner)
	if w == nil || !w.Verified || w.Kind != rec.Kind || w.Timing.Median <= 0 || w.Timing.Median != o.Choice.Median {
		return fmt.Errorf("winner %q is not a verified, timed candidate of its result", rec.Winner)
	}
	for _, c := range o.Candidates { // every name is printed in the tables
		if err := tune.CheckName(c.Name); err != nil {
			return fmt.Errorf("candidate %w", err)
		}
	}
	if o.Units <= 0 || o.IdealBytes <= 0 {
		return fmt.Errorf("size %d and %d bytes a launch: want both positive", o.Units, o.IdealBytes)
	}
	return o.checkFigures()
}

// checkFigures refuses a result whose figures no measurement could give:
// a roof that is not a positive bandwidth, negative or non-finite times
// and bandwidths, or a candidate over tune.MaxRoofFrac of the roof (the
// roof was measured while the machine was busy).
func (o *Result) checkFigures() error {
	if !(o.RoofGBs > 0) || math.IsInf(o.RoofGBs, 0) {
		return fmt.Errorf("roof %g GB/s: want a positive bandwidth", o.RoofGBs)
	}
	for _, c := range o.Candidates {
		switch {
		case c.Timing.Median < 0 || c.Timing.Min < 0 || c.Timing.Max < c.Timing.Min:
			return fmt.Errorf("candidate %q: impossible timing %+v", c.Name, c.Timing)
		case !(c.GBs >= 0) || math.IsInf(c.GBs, 0) || !(c.RoofFrac >= 0) || math.IsInf(c.RoofFrac, 0):
			return fmt.Errorf("candidate %q: %g GB/s, %g of the roof: want finite, non-negative figures", c.Name, c.GBs, c.RoofFrac)
		case c.RoofFrac > tune.MaxRoofFrac || c.GBs > tune.MaxRoofFrac*o.RoofGBs:
			return fmt.Errorf("candidate %q at %.0f %% of the roof (%.1f GB/s against %.1f GB/s), over %.0f %%: the roof measurement was unreliable (a busy machine); run again",
				c.Name, 100*max(c.RoofFrac, c.GBs/o.RoofGBs), c.GBs, o.RoofGBs, 100*tune.MaxRoofFrac)
		}
	}
	return nil
}

// overRoof is the highest bandwidth of a result's candidates as a fraction
// of roofGBs.
func (o *Result) overRoof(roofGBs float64) float64 {
	most := 0.0
	for _, c := range o.Candidates {
		most = max(most, c.GBs/roofGBs)
	}
	return most
}
