package bench

import (
	"fmt"
	"math"
	"time"

	"github.com/bespoke-hpc/bespoke/build"
	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/tune"
)

// Candidate is one timed implementation of a problem.
type Candidate struct {
	Name      string           `json:"name"`
	Kind      string           `json:"kind"` // "bespoke" or "baseline"
	Timing    Timing           `json:"timing"`
	GBs       float64          `json:"gbs"`  // ideal bytes / median time
	RoofFrac  float64          `json:"roof"` // GBs / the run's roof
	MaxRelErr float64          `json:"max_rel_err"`
	Verified  bool             `json:"verified"`
	Resources device.Resources `json:"resources"`
	Err       string           `json:"error,omitempty"`
}

// Result is everything measured for one problem.
type Result struct {
	Name  string `json:"name"`
	Shape string `json:"shape,omitempty"`
	// Facts are the family's facts about the instance (m, k, nnz, β …).
	Facts      map[string]float64 `json:"facts,omitempty"`
	Units      int                `json:"units"`       // size timed (columns, elements …)
	Sets       int                `json:"sets"`        // rotated copies of the arrays
	IdealBytes int64              `json:"ideal_bytes"` // per launch
	Flops      int64              `json:"flops,omitempty"`
	RoofTime   time.Duration      `json:"roof_time_ns"`
	Candidates []Candidate        `json:"candidates"`
	Err        string             `json:"error,omitempty"`
	// Partial: a stop came while the problem was being measured; the
	// candidates listed are those finished.
	Partial bool `json:"partial,omitempty"`
}

// Best returns the fastest verified candidate of the given kind ("" for any).
func (o *Result) Best(kind string) *Candidate {
	ts := make([]tune.Timed, len(o.Candidates))
	for i, c := range o.Candidates {
		if c.Verified && (kind == "" || c.Kind == kind) {
			ts[i] = tune.Timed{Name: c.Name, Median: c.Timing.Median.Seconds()}
		}
	}
	if i := tune.Best(ts); i >= 0 {
		return &o.Candidates[i]
	}
	return nil
}

// Find returns the candidate named name.
func (o *Result) Find(name string) *Candidate {
	for i := range o.Candidates {
		if o.Candidates[i].Name == name {
			return &o.Candidates[i]
		}
	}
	return nil
}

// prepared is a problem ready to time: its instance at the bench's size,
// its workload and candidate kernels.
type prepared struct {
	problem family.Problem
	inst    family.Instance
	work    *family.Workload
	units   int
	ks      []*kernel.Kernel
	failed  []Candidate // candidates whose kernels could not be built
	err     error
}

// prepare sizes a problem and builds its candidates' kernels.
func (r *Runner) prepare(p family.Problem) *prepared {
	pr := &prepared{problem: p, units: r.Units(p)}
	if pr.inst, pr.err = p.Timed(pr.units); pr.err != nil {
		return pr
	}
	if pr.work, pr.err = pr.inst.Workload(); pr.err != nil {
		return pr
	}
	cs, err := tune.Candidates(pr.inst, r.dev, r.cfg.Variants)
	if err != nil {
		pr.err = err
		return pr
	}
	for _, c := range cs {
		k, err := pr.inst.Build(c)
		if err != nil {
			pr.failed = append(pr.failed, Candidate{Name: c.Name(), Kind: "bespoke", Err: err.Error()})
			continue
		}
		pr.ks = append(pr.ks, k)
	}
	return pr
}

// MaxSets bounds the rotated copies of a workload: a tiny problem (one
// column) would otherwise need millions of them to touch the working set
// (5.6 million allocations, 11.7 GB, for p1/quad/m0 at n = 1), and
// launches that small time launch latency whatever the rotation.
const MaxSets = 64

// elemBytes is the width of an array's elements on the device.
func (r *Runner) elemBytes(a family.WorkArray) int64 {
	switch a.Type {
	case kernel.Real:
		return int64(r.dt.Bytes())
	case kernel.Int32:
		return 4
	}
	return 8
}

// measure verifies and times every candidate of a prepared problem (its
// times against the roof are filled in by Run).
func (r *Runner) measure(pr *prepared) Result {
	cfg := r.cfg
	res := Result{Name: pr.problem.Name(), Units: pr.units}
	if pr.err != nil {
		res.Err = pr.err.Error()
		return res
	}
	w := pr.work
	res.Shape, res.Facts, res.IdealBytes, res.Flops = w.Shape, w.Facts, w.IdealBytes, w.Flops
	var setBytes int64
	for _, a := range w.Arrays {
		if a.Type == kernel.Index {
			res.Err = fmt.Sprintf("array %s: a workload's integer arrays are Int32 or Int64, not Index", a.Name)
			return res
		}
		setBytes += a.Len * r.elemBytes(a)
	}
	if setBytes > cfg.MaxMemory {
		res.Err = fmt.Sprintf("one copy of the arrays needs %.1f GB, more than the %.1f GB allowed (--max-memory raises it)", float64(setBytes)/1e9, float64(cfg.MaxMemory)/1e9)
		return res
	}
	res.Sets = int(min(max((cfg.WorkingSet+res.IdealBytes-1)/max(res.IdealBytes, 1), 1), cfg.MaxMemory/max(setBytes, 1), MaxSets))
	sets, err := r.allocSets(w, res.Sets)
	if err != nil {
		res.Err = err.Error()
		return res
	}
	defer freeSets(sets)
	check, err := r.newChecker(w)
	if err != nil {
		res.Err = err.Error()
		return res
	}
	defer check.free()

	res.Candidates = append(res.Candidates, pr.failed...)
	stopped := func() bool {
		select {
		case <-cfg.Stop:
			res.Partial = true
			return true
		default:
			return false
		}
	}
	for _, k := range pr.ks {
		if stopped() {
			return res
		}
		cfg.Progress(fmt.Sprintf("%s: %s", res.Name, k.Variant))
		c := Candidate{Name: k.Variant, Kind: "bespoke"}
		prog, dk, err := build.One(r.dev, k)
		if err == nil {
			defer prog.Close()
			c.Resources = dk.Resources()
			err = r.measureOne(&c, &res, sets, check, func(s set) error { return launch(dk, k, w, s) })
		}
		if err != nil {
			if stopped() { // the compilation was stopped, not failed
				return res
			}
			c.Err = err.Error()
		}
		res.Candidates = append(res.Candidates, c)
	}
	for _, bl := range cfg.Baselines {
		if stopped() {
			return res
		}
		run, applies, err := bl.Setup(pr.inst, w)
		if !applies {
			continue
		}
		cfg.Progress(fmt.Sprintf("%s: %s", res.Name, bl.Name()))
		c := Candidate{Name: bl.Name(), Kind: "baseline"}
		if err == nil {
			err = r.measureOne(&c, &res, sets, check, func(s set) error { return run(s) })
		}
		if err != nil {
			c.Err = err.Error()
		}
		res.Candidates = append(res.Candidates, c)
	}
	return res
}

// launch runs kernel k on one set of the workload's arrays.
func launch(dk device.Kernel, k *kernel.Kernel, w *family.Workload, s set) error {
	l, args, err := device.Bind(k, w.Values, s)
	if err != nil {
		return err
	}
	return dk.Launch(l, args...)
}

// measureOne verifies launch on set 0, then times it over all sets.
func (r *Runner) measureOne(c *Candidate, res *Result, sets []set, check *checker, launch func(set) error) error {
	relErr, err := check.run(sets[0], launch)
	c.MaxRelErr = relErr
	if err != nil {
		return err
	}
	if relErr > check.w.Tol || math.IsNaN(relErr) {
		return fmt.Errorf("wrong result: max relative error %.3g", relErr)
	}
	c.Verified = true
	t, err := r.time(len(sets), func(i int) error { return launch(sets[i]) })
	if err != nil {
		return err
	}
	c.Timing = t
	c.GBs = float64(res.IdealBytes) / t.Median.Seconds() / 1e9
	return nil
}

// set is one copy of a workload's arrays, by name.
type set map[string]device.Buffer

func freeSets(sets []set) {
	for _, s := range sets {
		for _, b := range s {
			b.Free()
		}
	}
}

// tables gives each real array that is read (and not given) the index of
// its fill table.
func tables(w *family.Workload) map[string]int {
	t := map[string]int{}
	for _, a := range w.Arrays {
		if a.Type == kernel.Real && a.Role != family.Output && a.Reals == nil {
			t[a.Name] = len(t) % len(periods)
		}
	}
	return t
}

// allocSets allocates count copies of the arrays, filling real inputs from
// their tables and uploading integer arrays.
func (r *Runner) allocSets(w *family.Workload, count int) ([]set, error) {
	tab := tables(w)
	var sets []set
	for i := 0; i < count; i++ {
		s := set{}
		sets = append(sets, s)
		for _, a := range w.Arrays {
			b, err := r.dev.Alloc(a.Len * r.elemBytes(a))
			if err != nil {
				freeSets(sets)
				return nil, err
			}
			s[a.Name] = b
			switch {
			case a.Type != kernel.Real:
				if int64(len(a.Ints)) != a.Len {
					freeSets(sets)
					return nil, fmt.Errorf("integer array %s holds %d values, not %d", a.Name, len(a.Ints), a.Len)
				}
				err = b.Upload(kernel.EncodeInts(int(r.elemBytes(a)), a.Ints))
			case a.Reals != nil:
				if int64(len(a.Reals)) != a.Len {
					freeSets(sets)
					return nil, fmt.Errorf("array %s holds %d values, not %d", a.Name, len(a.Reals), a.Len)
				}
				err = b.Upload(r.dt.Encode(a.Reals))
			case a.Role != family.Output:
				err = r.fillFrom(tab[a.Name], b, a.Len)
			}
			if err != nil {
				freeSets(sets)
				return nil, err
			}
		}
	}
	return sets, r.dev.Sync()
}

// checker verifies one launch at the workload's sampled outputs against
// its float64 reference.
type checker struct {
	r     *Runner
	w     *family.Workload
	tab   map[string]int
	at    map[string]device.Buffer // sample indices, per output array
	out   map[string]device.Buffer // gathered samples, per output array
	where map[string][]int         // positions in w.Samples, per output array
	ref   []float64                // reference at the samples, once computed
	norm  float64                  // largest magnitude in ref
}

func (r *Runner) newChecker(w *family.Workload) (*checker, error) {
	ch := &checker{r: r, w: w, tab: tables(w), at: map[string]device.Buffer{}, out: map[string]device.Buffer{}, where: map[string][]int{}}
	if len(w.Samples) == 0 {
		return nil, fmt.Errorf("the workload names no output to check")
	}
	idx := map[string][]int64{}
	for i, s := range w.Samples {
		ch.where[s.Array] = append(ch.where[s.Array], i)
		idx[s.Array] = append(idx[s.Array], s.Index)
	}
	for name, is := range idx {
		at, err := r.dev.Alloc(int64(len(is)) * 8)
		if err == nil {
			ch.at[name] = at
			err = at.Upload(kernel.EncodeInts(8, is))
		}
		if err == nil {
			var out device.Buffer
			out, err = r.dev.Alloc(int64(len(is) * r.dt.Bytes()))
			ch.out[name] = out
		}
		if err != nil {
			ch.free()
			return nil, err
		}
	}
	return ch, nil
}

func (ch *checker) free() {
	for _, m := range []map[string]device.Buffer{ch.at, ch.out} {
		for _, b := range m {
			if b != nil {
				b.Free()
			}
		}
	}
}

// reference computes, once per problem, the float64 reference at the
// samples: every candidate and baseline is checked against the same
// tables, and on the largest problems this loop costs more than the
// timed launches.
func (ch *checker) reference() {
	given := map[string][]float64{}
	for _, a := range ch.w.Arrays {
		if a.Reals != nil {
			given[a.Name] = a.Reals
		}
	}
	ch.ref = ch.w.Reference(func(array string, i int64) float64 {
		if x, ok := given[array]; ok {
			return ch.r.dt.Rounded(x[i])
		}
		t, ok := ch.tab[array]
		if !ok {
			panic(fmt.Sprintf("bench: the reference reads %q, which is no real input", array))
		}
		return ch.r.hostTab[t][i%int64(periods[t])]
	})
	for _, x := range ch.ref {
		ch.norm = math.Max(ch.norm, math.Abs(x))
	}
}

// run resets the outputs (NaN for written-only arrays, their tables for
// read-and-written ones), launches once, gathers the samples and returns
// the max error relative to the reference's largest magnitude.
func (ch *checker) run(s set, launch func(set) error) (float64, error) {
	r := ch.r
	for _, a := range ch.w.Arrays {
		var err error
		switch {
		case a.Role == family.Output && a.Type == kernel.Real:
			err = r.fillFrom(-1, s[a.Name], a.Len)
		case a.Role == family.InOut && a.Type == kernel.Real:
			err = r.fillFrom(ch.tab[a.Name], s[a.Name], a.Len)
		}
		if err != nil {
			return 0, err
		}
	}
	if err := launch(s); err != nil {
		return 0, err
	}
	got := make([]float64, len(ch.w.Samples))
	for name, pos := range ch.where {
		x, ok := s[name]
		if !ok {
			return 0, fmt.Errorf("sample of %q, which is no array of the workload", name)
		}
		if err := r.launchAux(r.gather, int64(len(pos)), nil, map[string]device.Buffer{"x": x, "at": ch.at[name], "out": ch.out[name]}); err != nil {
			return 0, err
		}
		if err := r.dev.Sync(); err != nil {
			return 0, err
		}
		raw := make([]byte, len(pos)*r.dt.Bytes())
		if err := ch.out[name].Download(raw); err != nil {
			return 0, err
		}
		for i, v := range r.dt.Decode(raw) {
			got[pos[i]] = v
		}
	}
	if ch.ref == nil {
		ch.reference()
	}
	diff := 0.0
	for i, g := range got {
		if math.IsNaN(g) {
			s := ch.w.Samples[i]
			return math.Inf(1), fmt.Errorf("%s[%d] was not written", s.Array, s.Index)
		}
		diff = math.Max(diff, math.Abs(g-ch.ref[i]))
	}
	if ch.norm == 0 {
		return diff, nil
	}
	return diff / ch.norm, nil
}
