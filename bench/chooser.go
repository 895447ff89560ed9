package bench

import (
	"fmt"
	"time"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/tune"
)

// choosers returns the problems' instances at their bench sizes when
// they choose their candidates themselves (tune.Chooser: a pipeline of
// kernels timed as a whole), or nil when they are kernels bench times.
// A family's problems are all one or all the other; the first one's
// instance at size 1 (cheap for every family) tells which.
func choosers(cfg Config, problems []family.Problem) ([]tune.Chooser, []int, error) {
	if in, err := problems[0].Timed(1); err != nil {
		return nil, nil, nil // a kernel problem's error is measure's to report
	} else if _, ok := in.(tune.Chooser); !ok {
		return nil, nil, nil
	}
	var out []tune.Chooser
	var sizes []int
	for _, p := range problems {
		n := units(cfg, p)
		in, err := p.Timed(n)
		if err != nil {
			return nil, nil, fmt.Errorf("bench: %s: %w", p.Name(), err)
		}
		ch, ok := in.(tune.Chooser)
		if !ok {
			return nil, nil, fmt.Errorf("bench: %s is a kernel and %s a pipeline: one run times one kind", p.Name(), problems[0].Name())
		}
		out, sizes = append(out, ch), append(sizes, n)
	}
	return out, sizes, nil
}

// runChoosers lets each instance choose its candidate on dev, through the
// store (Config.Store, Retune), and reports the choices and the times
// behind them. No roof is measured: a pipeline's time is not one
// launch's traffic, so the report gives times, not % of a roof.
func runChoosers(dev device.Device, cfg Config, ins []tune.Chooser, sizes []int, rep *Report) *Report {
	if len(cfg.Variants) > 0 {
		cfg.Warn("--variant does not apply to candidates chosen as whole pipelines; every candidate is offered")
	}
	rep.RoofMethod = "not measured: each candidate is a pipeline of kernels, timed as a whole"
	for i, in := range ins {
		select {
		case <-cfg.Stop:
			rep.Interrupted = true
			return rep
		default:
		}
		cfg.Progress(in.Name())
		res := Result{Name: in.Name(), Facts: in.Facts(), Units: sizes[i], Candidates: []Candidate{}}
		ch, err := in.Choose(dev, cfg.Store, cfg.Retune)
		if err != nil {
			res.Err = err.Error()
			rep.Problems = append(rep.Problems, res)
			continue
		}
		if ch.StoreErr != nil {
			cfg.Warn(fmt.Sprintf("%s: the choice was not stored: %v", in.Name(), ch.StoreErr))
		}
		res.Cached = ch.Cached
		if ch.Cached {
			res.Measured = ch.Date
		}
		var won *Candidate
		for _, t := range ch.Times {
			d := time.Duration(t.Seconds * float64(time.Second))
			c := Candidate{Name: t.Name, Kind: "bespoke", Verified: t.Verified, Err: t.Err,
				Timing: Timing{Median: d, Reps: t.Reps}} // the median only: no spread to state
			res.Candidates = append(res.Candidates, c)
		}
		timed := 0
		for j := range res.Candidates {
			c := &res.Candidates[j]
			if c.Verified && c.Timing.Median > 0 {
				timed++
			}
			if c.Name == ch.Winner {
				won = c
			}
		}
		why := fmt.Sprintf("the fastest of %d candidates verified and timed as whole pipelines", timed)
		switch {
		case ch.Cached:
			why = "from the tuning store (measured " + ch.Date + "; nothing timed now): " + why
		case won == nil || won.Timing.Median <= 0:
			why = "the only candidate: nothing timed"
		}
		res.Choice = &Choice{Winner: ch.Winner, Kind: "bespoke", Why: why}
		if won != nil {
			res.Choice.Median = won.Timing.Median
		}
		rep.Problems = append(rep.Problems, res)
	}
	return rep
}
