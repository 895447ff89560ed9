package tuned

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/pum/run"
	"github.com/bespoke-hpc/bespoke/tune"
)

// Where a choice came from.
const (
	FromStore = "tuning store" // a stored winner: nothing timed for the choice
	Measured  = "measured"     // every candidate timed now, the winner stored
	Only      = "only"         // one candidate: nothing to choose
)

// Reps is how many timed runs (after an untimed one) each candidate gets
// when measured; the median total decides.
const Reps = 3

// Timed is one candidate's measurement: its median total, or why it
// could not run.
type Timed struct {
	Name   string  `json:"name"`
	TotalS float64 `json:"total_s,omitempty"`
	Err    string  `json:"error,omitempty"`
	// Verified: the candidate's system at the check level (VerifyLevel)
	// matched the float64 reference before it was timed.
	Verified bool `json:"verified,omitempty"`
}

// VerifyLevel is the largest level at which a candidate's assembled
// system is checked against pum's float64 reference before it is timed:
// small enough that the reference takes moments, large enough to have
// every kind of cell (clipped and inner, every active count).
const VerifyLevel = 3

// tolerance is the largest relative difference (RelDiff) from the
// float64 reference a candidate's system may show.
func tolerance(dt kernel.DType) float64 {
	if dt == kernel.F32 {
		return 1e-4
	}
	return 1e-10
}

// Choice is the shape a run uses and how it was chosen.
type Choice struct {
	Candidate Candidate
	Source    string // FromStore, Measured or Only
	// Date is when the winner was measured (FromStore, Measured), in
	// RFC 3339, UTC.
	Date string
	// Times are the candidates' measurements (Measured, or the stored
	// record's).
	Times []Timed
	// Candidates is how many were offered.
	Candidates int
	// StoreErr is why the winner could not be stored (Measured), or nil:
	// the choice stands, a later run measures again.
	StoreErr error
}

// Describe says in words which candidate runs and where it came from.
func (c *Choice) Describe() string {
	switch c.Source {
	case FromStore:
		return fmt.Sprintf("%s, from the tuning store (measured %s; nothing timed for the choice)", c.Candidate.Name(), c.Date)
	case Measured:
		return fmt.Sprintf("%s, the fastest of %d candidates verified and measured now (stored in the tuning store)", c.Candidate.Name(), c.Candidates)
	}
	return fmt.Sprintf("%s, the only candidate", c.Candidate.Name())
}

// Choose returns the candidate to run for in on dev: the only one
// offered; else the winner stored under in's key when it is still a
// candidate; else the fastest of the candidates, each first verified (its
// system at VerifyLevel against pum's float64 reference) and then timed
// on dev at in's size (run.Bench, Reps runs, without a solve or a
// download), which is then stored. Every candidate's kernels are built
// before the first is verified, all at once (run.Prebuild), so that the
// runs load them from the device's cache. Candidates that cannot run (a
// build error, too little memory) or compute a wrong system are passed
// over; when none is left, the first one's error is returned.
func Choose(dev device.Device, in Instance, st *tune.Store) (*Choice, error) {
	var cs []Candidate
	var firstErr error
	offered := in.Candidates(tune.Target(dev))
	for _, fc := range offered {
		if err := in.Check(fc); err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("%s: %w", fc.Name(), err)
			}
			continue
		}
		cs = append(cs, fc.(Candidate))
	}
	switch {
	case len(cs) == 0 && len(offered) == 1:
		return &Choice{Candidate: offered[0].(Candidate), Source: Only, Candidates: 1}, nil // the run says why it cannot be
	case len(cs) == 0:
		return nil, fmt.Errorf("pum: no candidate can be built for %s (the first: %w)", in.Name(), firstErr)
	case len(cs) == 1:
		return &Choice{Candidate: cs[0], Source: Only, Candidates: 1}, nil
	}
	key := tune.Key(in, dev)
	if st != nil {
		if rec, ok := st.Get(key); ok {
			if c, err := stored(rec, in, dev); err == nil {
				c.Candidates = len(cs)
				return c, nil
			}
			st.Remove(key)
		}
	}
	ch := &Choice{Source: Measured, Candidates: len(cs), Date: time.Now().UTC().Format(time.RFC3339)}
	cfg := in.Config
	cfg.Solve, cfg.Keep = nil, true // the assembly is timed: nothing downloaded
	check := in.Config
	check.Level = min(check.Level, VerifyLevel)
	check.Solve, check.Keep = nil, false
	ref, err := run.Reference(check)
	if err != nil {
		return nil, err
	}
	built := prebuild(dev, in, check, cfg, cs)
	best := -1
	for i, c := range cs {
		if stopped(in.Stop) {
			return nil, fmt.Errorf("pum: choosing for %s: %w", in.Name(), run.ErrStopped)
		}
		err := built[i]
		if err == nil && in.Progress != nil && dev.Info().GPU { // a CPU has three quick candidates
			fmt.Fprintf(in.Progress, "pum: choosing for %s: candidate %d of %d, %s (verified, then timed)\n", in.Name(), i+1, len(cs), c.Name())
		}
		if err == nil {
			err = verify(dev, check.WithShape(c.Shape), ref)
		}
		var out *run.Outcome
		if err == nil {
			out, err = run.Bench(dev, cfg.WithShape(c.Shape), Reps)
		}
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("%s: %w", c.Name(), err)
			}
			ch.Times = append(ch.Times, Timed{Name: c.Name(), Err: err.Error()})
			continue
		}
		ch.Times = append(ch.Times, Timed{Name: c.Name(), TotalS: out.Tm.Total.Seconds(), Verified: true})
		if t := ch.Times[len(ch.Times)-1].TotalS; best < 0 || t < ch.Times[best].TotalS {
			best = len(ch.Times) - 1
		}
	}
	if best < 0 {
		return nil, firstErr
	}
	w, _ := Parse(ch.Times[best].Name)
	ch.Candidate = w
	if st != nil {
		result, err := json.Marshal(ch.Times)
		if err == nil {
			err = st.Put(&tune.Record{Key: key, Problem: in.Name(), Device: dev.Info().Name, Date: ch.Date,
				Winner: w.Name(), Kind: "bespoke", Result: result})
		}
		ch.StoreErr = err
	}
	return ch, nil
}

// prebuild builds the kernels of every candidate's runs, at the check
// level (check) and at the timed size (cfg), on dev at once
// (run.Prebuild), so that the runs that verify and time them, one after
// another, load them from the device's cache. It returns why each
// candidate cannot be built, nil where it can.
func prebuild(dev device.Device, in Instance, check, cfg run.Config, cs []Candidate) []error {
	cfgs := make([]run.Config, 0, 2*len(cs))
	for _, c := range cs {
		cfgs = append(cfgs, check.WithShape(c.Shape), cfg.WithShape(c.Shape))
	}
	progs, errs := run.Kernels(dev, cfgs...)
	if in.Progress != nil && dev.Info().GPU {
		names := map[string]bool{}
		for _, ks := range progs {
			for _, k := range ks {
				names[k.Name] = true
			}
		}
		fmt.Fprintf(in.Progress, "pum: building %d kernels of %d candidates\n", len(names), len(cs))
	}
	built := run.Prebuild(dev, progs, in.Stop)
	out := make([]error, len(cs))
	for i := range cs {
		for _, err := range []error{errs[2*i], built[2*i], errs[2*i+1], built[2*i+1]} {
			if err != nil {
				out[i] = err
				break
			}
		}
	}
	return out
}

// stopped reports whether stop is closed.
func stopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// verify assembles cfg on dev and compares the system with ref.
func verify(dev device.Device, cfg run.Config, ref *run.Outcome) error {
	out, err := run.OnDevice(dev, cfg)
	if err != nil {
		return err
	}
	ea, ef := run.RelDiff(out.Sys, ref.Sys)
	if tol := tolerance(cfg.DType); !(ea <= tol && ef <= tol) {
		return fmt.Errorf("wrong system at level %d: relative difference from the float64 reference %.3g in A, %.3g in f (tolerance %g)", cfg.Level, ea, ef, tol)
	}
	return nil
}

// stored reads a record's winner, if it is still one of in's candidates.
func stored(rec *tune.Record, in Instance, dev device.Device) (*Choice, error) {
	if err := rec.Check(in, dev, nil); err != nil {
		return nil, err
	}
	c, err := Parse(rec.Winner)
	if err != nil {
		return nil, err
	}
	var times []Timed
	_ = json.Unmarshal(rec.Result, &times)
	return &Choice{Candidate: c, Source: FromStore, Date: rec.Date, Times: times}, nil
}

// Resolve is Choose with the result applied: cfg with the chosen shape.
func Resolve(dev device.Device, in Instance, st *tune.Store) (run.Config, *Choice, error) {
	ch, err := Choose(dev, in, st)
	if err != nil {
		return in.Config, nil, err
	}
	return in.Config.WithShape(ch.Candidate.Shape), ch, nil
}

var _ family.Candidate = Candidate{}
