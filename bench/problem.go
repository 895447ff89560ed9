package bench

import (
	"cmp"
	"fmt"
	"math"
	"runtime"
	"slices"
	"time"

	"github.com/bespoke-hpc/bespoke/build"
	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/tune"
)

// Candidate is one timed implementation of a problem.
type Candidate struct {
	Name     string  `json:"name"`
	Kind     string  `json:"kind"` // "bespoke" or "baseline"
	Timing   Timing  `json:"timing"`
	GBs      float64 `json:"gbs"`  // ideal bytes / median time
	RoofFrac float64 `json:"roof"` // GBs / the run's roof
	// Bytes is the candidate's least traffic of one launch where the
	// instance says it is not the problem's IdealBytes (a kernel that
	// computes what others read: family.CandidateBytes); 0 otherwise.
	Bytes int64 `json:"bytes,omitempty"`
	// AttainableFrac is the roofline's least time for the problem over
	// the median: ideal bytes at the roof or operations at the measured
	// compute rate (Report.ComputeGFLOPs), whichever is longer.
	AttainableFrac float64          `json:"attainable,omitempty"`
	MaxRelErr      float64          `json:"max_rel_err"`
	Verified       bool             `json:"verified"`
	Resources      device.Resources `json:"resources"`
	Err            string           `json:"error,omitempty"`
	// Screen is the median of the screening launches; Screened: timed
	// there only, too slow to be timed in full (Timing, GBs and RoofFrac
	// are then from the screening).
	Screen   time.Duration `json:"screen_ns,omitempty"`
	Screened bool          `json:"screened,omitempty"`
	// Predicted is the cost model's estimate, made before compiling;
	// Pruned: it was too slow there, so the candidate was not built.
	Predicted *tune.Prediction `json:"predicted,omitempty"`
	Pruned    bool             `json:"pruned,omitempty"`
	// Readmitted: pruned by its prediction, then built and timed after
	// all, because the kept candidates ran slower than it was predicted
	// to (see readmit).
	Readmitted bool `json:"readmitted,omitempty"`
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
	// RoofGBs is the roof the fractions are against: the run's, or, for
	// a result from the tuning store, the run's that measured it.
	RoofGBs float64 `json:"roof_gbs,omitempty"`
	// Choice is the winner and why it won.
	Choice *Choice `json:"choice,omitempty"`
	// Cached: the result comes from the tuning store (Config.Store); no
	// candidate was built or timed in this run. Measured says when (and
	// at which commit) the run that stored it measured it.
	Cached   bool   `json:"cached,omitempty"`
	Measured string `json:"measured,omitempty"`
}

// Choice is the candidate a problem's measurement chose.
type Choice struct {
	Winner string        `json:"winner"`
	Kind   string        `json:"kind"`
	Median time.Duration `json:"median_ns"`
	// Why says what it was chosen over: how many candidates were
	// verified and timed, and its margin over the next best.
	Why string `json:"why"`
}

// choose picks the fastest verified candidate or baseline.
func (o *Result) choose() {
	best := o.Best("")
	if best == nil {
		o.Choice = nil
		return
	}
	timed, baselines := 0, 0
	var next *Candidate
	for i := range o.Candidates {
		c := &o.Candidates[i]
		if !c.Verified || c.Screened || c.Timing.Median <= 0 {
			continue
		}
		timed++
		if c.Kind == "baseline" {
			baselines++
		}
		if c != best && (next == nil || c.Timing.Median < next.Timing.Median) {
			next = c
		}
	}
	screened, pruned, readmitted := 0, 0, 0
	for _, c := range o.Candidates {
		if c.Screened {
			screened++
		}
		if c.Pruned {
			pruned++
		}
		if c.Readmitted {
			readmitted++
		}
	}
	why := fmt.Sprintf("fastest of %d verified and timed in full (%d baselines)", timed, baselines)
	if screened > 0 {
		why += fmt.Sprintf("; %d more were slower in the screening by over the margin", screened)
	}
	if pruned > 0 {
		why += fmt.Sprintf(", %d not built (the cost model predicted them slow)", pruned)
	}
	if readmitted > 0 {
		why += fmt.Sprintf(", %d built after all (the kept ones ran slower than those were predicted to)", readmitted)
	}
	if next != nil {
		why += fmt.Sprintf("; %.3g× as fast as %s", float64(next.Timing.Median)/float64(best.Timing.Median), next.Name)
	}
	o.Choice = &Choice{Winner: best.Name, Kind: best.Kind, Median: best.Timing.Median, Why: why}
}

// Best returns the fastest verified candidate of the given kind ("" for
// any) among those timed in full.
func (o *Result) Best(kind string) *Candidate {
	ts := make([]tune.Timed, len(o.Candidates))
	for i, c := range o.Candidates {
		if c.Verified && !c.Screened && (kind == "" || c.Kind == kind) {
			ts[i] = tune.Timed{Name: c.Name, Median: c.Timing.Median.Seconds()}
		}
	}
	if i := tune.Best(ts); i >= 0 {
		return &o.Candidates[i]
	}
	return nil
}

// BestStored is Best among the candidates that read the problem's inputs
// as stored (no Bytes of their own), whose % of the roof is against the
// problem's ideal bytes: a faster kernel that computes part of its input
// (the fem layouts with geometry in the kernel) solves another problem's
// traffic and is reported beside it (GeometryBest). Best where no
// candidate reads the stored inputs.
func (o *Result) BestStored(kind string) *Candidate {
	if best := o.fastest(func(c *Candidate) bool { return c.Bytes == 0 && (kind == "" || c.Kind == kind) }); best != nil {
		return best
	}
	return o.Best(kind)
}

// GeometryBest is the fastest verified bespoke candidate that reads less
// than the problem's stored inputs (Bytes set), or nil.
func (o *Result) GeometryBest() *Candidate {
	return o.fastest(func(c *Candidate) bool { return c.Bytes > 0 && c.Kind == "bespoke" })
}

// fastest is the fastest verified candidate timed in full that keep
// accepts, or nil.
func (o *Result) fastest(keep func(*Candidate) bool) *Candidate {
	var best *Candidate
	for i := range o.Candidates {
		c := &o.Candidates[i]
		if !c.Verified || c.Screened || c.Timing.Median <= 0 || !keep(c) {
			continue
		}
		if best == nil || c.Timing.Median < best.Timing.Median {
			best = c
		}
	}
	return best
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
// its workload and candidate kernels — or its result from the tuning store.
type prepared struct {
	problem family.Problem
	inst    family.Instance
	work    *family.Workload
	units   int
	key     string // tuning key ("" when the run neither reuses nor records)
	cached  *Result
	ks      []*kernel.Kernel
	failed  []Candidate                // candidates whose kernels could not be built, or pruned
	pruned  map[string]*kernel.Kernel  // the pruned candidates' kernels, by variant (see readmit)
	margin  float64                    // the readmitting margin (tune.Machine.Readmit)
	predict map[string]tune.Prediction // by variant
	err     error
}

// bytesOf is variant name's least traffic of one launch where the
// instance gives it and it is not the workload's IdealBytes, else 0.
func bytesOf(in family.Instance, w *family.Workload, name string) int64 {
	cb, ok := in.(family.CandidateBytes)
	if !ok || w == nil {
		return 0
	}
	c, err := in.Variant(name)
	if err != nil {
		return 0
	}
	if b := cb.CandidateBytes(c); b > 0 && b != w.IdealBytes {
		return b
	}
	return 0
}

// bytes is the candidate's least traffic of one launch: its own, or the
// problem's ideal.
func (c *Candidate) bytes(ideal int64) int64 {
	if c.Bytes > 0 {
		return c.Bytes
	}
	return ideal
}

// plan sizes a problem and looks its result up in the tuning store.
func plan(dev device.Device, cfg Config, p family.Problem) *prepared {
	pr := &prepared{problem: p, units: units(cfg, p)}
	if pr.inst, pr.err = p.Timed(pr.units); pr.err != nil {
		return pr
	}
	// A run restricted to some variants chooses among them only: it
	// neither reuses nor records a choice. (A run without the vendor
	// libraries is left out by its caller, which alone knows.)
	if cfg.Store == nil || len(cfg.Variants) > 0 {
		return pr
	}
	pr.key = tune.Key(pr.inst, dev)
	if cfg.Retune {
		return pr
	}
	pr.cached = fromStore(dev, cfg, pr)
	return pr
}

// prepare builds the candidates' kernels of a planned problem (none for
// one whose result is stored).
func (r *Runner) prepare(pr *prepared) {
	if pr.err != nil || pr.cached != nil {
		return
	}
	if pr.work, pr.err = pr.inst.Workload(); pr.err != nil {
		return
	}
	cs, err := tune.Candidates(pr.inst, r.dev, r.cfg.Variants)
	if err != nil {
		pr.err = err
		return
	}
	for _, c := range cs {
		k, err := pr.inst.Build(c)
		if err != nil {
			pr.failed = append(pr.failed, Candidate{Name: c.Name(), Kind: "bespoke", Err: err.Error()})
			continue
		}
		pr.ks = append(pr.ks, k)
	}
	r.prune(pr)
}

// prune predicts every kernel's time and, unless the run is a full search
// or restricted to named variants, drops those the model rules out.
func (r *Runner) prune(pr *prepared) {
	if len(pr.ks) == 0 {
		return
	}
	m := tune.MachineOf(r.dev.Info(), r.roofGBs)
	ps := make([]tune.Prediction, len(pr.ks))
	for i, k := range pr.ks {
		ideal := pr.work.IdealBytes
		if b := bytesOf(pr.inst, pr.work, k.Variant); b > 0 {
			ideal = b
		}
		p, err := tune.Estimate(m, r.dev.Dialect(), k, pr.work.Values, ideal)
		if err != nil { // no prediction: never pruned
			p = tune.Prediction{Bound: "unknown: " + err.Error()}
		}
		ps[i] = p
	}
	factor := r.cfg.Prune
	if !(factor > 0) {
		factor = m.Prune
	}
	keep := tune.Prune(ps, factor)
	pr.margin = min(m.Readmit, factor)
	prune := r.cfg.Prune >= 0 && len(r.cfg.Variants) == 0
	pr.predict = map[string]tune.Prediction{}
	var kept []*kernel.Kernel
	for i, k := range pr.ks {
		ps[i].Keep = keep[i]
		pr.predict[k.Variant] = ps[i]
		if prune && !ps[i].Keep {
			p := ps[i]
			pr.failed = append(pr.failed, Candidate{Name: k.Variant, Kind: "bespoke", Pruned: true, Predicted: &p, Bytes: bytesOf(pr.inst, pr.work, k.Variant)})
			if pr.pruned == nil {
				pr.pruned = map[string]*kernel.Kernel{}
			}
			pr.pruned[k.Variant] = k
			continue
		}
		kept = append(kept, k)
	}
	pr.ks = kept
}

// readmit names the pruned candidates (at most most, the fastest
// predicted first) whose predicted time, times margin, is under the
// fastest screened time of a verified bespoke candidate (all of them when
// none verified): the model pruned them against predictions that the
// kept candidates then missed, as when unforeseen spills make the
// unrolled kernels of a large operator three times slower than predicted
// (docs/rationale.md#readmit).
func readmit(cs []Candidate, most int, margin float64) []string {
	best := math.Inf(1)
	for _, c := range cs {
		if c.Kind == "bespoke" && c.Verified && c.Timing.Median > 0 {
			best = min(best, c.Timing.Median.Seconds())
		}
	}
	var out []Candidate
	for _, c := range cs {
		if c.Pruned && c.Predicted != nil && c.Predicted.Seconds > 0 && max(margin, 1)*c.Predicted.Seconds < best {
			out = append(out, c)
		}
	}
	slices.SortStableFunc(out, func(a, b Candidate) int { return cmp.Compare(a.Predicted.Seconds, b.Predicted.Seconds) })
	names := make([]string, 0, min(len(out), max(most, 0)))
	for _, c := range out[:min(len(out), max(most, 0))] {
		names = append(names, c.Name)
	}
	return names
}

// DefaultReadmit is Config.Readmit's default.
const DefaultReadmit = 16

// cacheAll compiles ks into the device's cache side by side (readmitted
// candidates: the run's compilers have moved on to later problems).
func (r *Runner) cacheAll(ks []*kernel.Kernel) {
	ready, wait := build.Ahead(r.dev, 1, func(int) []*kernel.Kernel { return ks }, runtime.NumCPU(), r.cfg.Stop, nil)
	select {
	case <-ready[0]:
	case <-r.cfg.Stop:
	}
	wait()
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
		}
		return false
	}
	// Every candidate is verified and screened (screenReps launches)
	// first; only those within Config.Screen of the best screened time are
	// timed in full. The rest keep their screening time (Screened).
	type entry struct {
		idx    int // in res.Candidates
		launch func(set) error
	}
	var entries []entry
	try := func(c Candidate, launch func(set) error, err error) {
		if err == nil {
			err = r.screen(&c, sets, check, launch)
		}
		if err != nil {
			c.Err = err.Error()
		} else {
			entries = append(entries, entry{len(res.Candidates), launch})
		}
		res.Candidates = append(res.Candidates, c)
	}
	var closers []func() error
	defer func() {
		for _, f := range closers {
			f()
		}
	}()
	// add builds, verifies and screens one kernel; false: stopped.
	add := func(k *kernel.Kernel, readmitted bool) bool {
		if stopped() {
			return false
		}
		cfg.Progress(fmt.Sprintf("%s: %s", res.Name, k.Variant))
		c := Candidate{Name: k.Variant, Kind: "bespoke", Readmitted: readmitted, Bytes: bytesOf(pr.inst, w, k.Variant)}
		if p, ok := pr.predict[k.Variant]; ok {
			c.Predicted = &p
		}
		prog, dk, err := build.One(r.dev, k)
		if err != nil && stopped() { // the compilation was stopped, not failed
			return false
		}
		var run func(set) error
		if err == nil {
			closers = append(closers, prog.Close)
			c.Resources = dk.Resources()
			run = func(s set) error { return launch(dk, k, w, s) }
		}
		try(c, run, err)
		return true
	}
	for _, k := range pr.ks {
		if !add(k, false) {
			return res
		}
	}
	// The model was wrong here if the kept candidates all ran slower
	// than pruned ones were predicted to (by the machine's margin): those
	// are built after all.
	if again := readmit(res.Candidates, r.cfg.Readmit, pr.margin); len(again) > 0 {
		cfg.Notes(fmt.Sprintf("%s: the kept candidates ran slower than %d pruned ones were predicted to; building those too", res.Name, len(again)))
		ks := make([]*kernel.Kernel, len(again))
		for i, name := range again {
			ks[i] = pr.pruned[name]
		}
		r.cacheAll(ks)
		drop := map[string]bool{}
		for _, name := range again {
			drop[name] = true
		}
		kept := res.Candidates[:0]
		for _, c := range res.Candidates {
			if !(c.Pruned && drop[c.Name]) {
				kept = append(kept, c)
			}
		}
		// entries index res.Candidates, and every pruned entry comes
		// before them (pr.failed first).
		shift := len(res.Candidates) - len(kept)
		res.Candidates = kept
		for i := range entries {
			entries[i].idx -= shift
		}
		for _, k := range ks {
			if !add(k, true) {
				return res
			}
		}
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
		try(Candidate{Name: bl.Name(), Kind: "baseline"}, func(s set) error { return run(s) }, err)
	}
	// The margin is taken from the best of each kind, so that bespoke's
	// best is timed in full even where a vendor library is far faster
	// (fp64 p6/tet/m3: cuBLAS 1.6× ahead screened out every bespoke
	// candidate, and the report had no bespoke time to compare).
	best := map[string]time.Duration{}
	for _, e := range entries {
		c := res.Candidates[e.idx]
		if b, ok := best[c.Kind]; !ok || c.Timing.Median < b {
			best[c.Kind] = c.Timing.Median
		}
	}
	var final []entry
	for _, e := range entries {
		c := &res.Candidates[e.idx]
		if keep := r.cfg.Screen; keep > 0 && float64(c.Timing.Median) > keep*float64(best[c.Kind]) {
			c.Screened = true
			continue
		}
		final = append(final, e)
	}
	cfg.Progress(fmt.Sprintf("%s: timing %d candidates in %d rounds", res.Name, len(final), r.cfg.Rounds))
	launches := make([]func(int) error, len(final))
	for i, e := range final {
		launches[i] = func(s int) error { return e.launch(sets[s]) }
	}
	ts, errs, halted := r.timeRounds(len(sets), launches, stopped)
	if halted {
		return res
	}
	for i, e := range final {
		c := &res.Candidates[e.idx]
		if errs[i] != nil {
			c.Err, c.Verified = errs[i].Error(), false
			continue
		}
		c.Timing = ts[i]
		c.GBs = float64(c.bytes(res.IdealBytes)) / ts[i].Median.Seconds() / 1e9
	}
	return res
}

// Screening: a candidate is first timed over one pass of the sets (at least
// screenReps launches, after one warm-up); only those within Config.Screen
// (DefaultScreen) of the fastest screened time are timed over Config.Reps.
// The margin is wide against the spread of launches (a few percent on a
// dedicated GPU, tens of percent on a shared VM); every candidate's
// screening time is reported
// (Candidate.Screen), so that runs show how the full timings ranked the
// candidates the screening kept.
const (
	screenReps    = 3
	DefaultScreen = 1.3
)

// screen verifies launch on set 0, then times a few launches.
func (r *Runner) screen(c *Candidate, sets []set, check *checker, launch func(set) error) error {
	relErr, err := check.run(sets[0], launch)
	c.MaxRelErr = relErr
	if err != nil {
		return err
	}
	if relErr > check.w.Tol || math.IsNaN(relErr) {
		return fmt.Errorf("wrong result: max relative error %.3g", relErr)
	}
	c.Verified = true
	// One pass over every set, so the screening sees the working set and
	// not a few sets that a large cache holds.
	saved := r.cfg
	r.cfg.Warmup, r.cfg.Reps = 1, max(screenReps, len(sets))
	t, err := r.time(len(sets), func(i int) error { return launch(sets[i]) })
	r.cfg = saved
	if err != nil {
		return err
	}
	c.Timing, c.Screen = t, t.Median
	c.GBs = float64(c.bytes(check.w.IdealBytes)) / t.Median.Seconds() / 1e9
	return nil
}

// launch runs kernel k on one set of the workload's arrays.
func launch(dk device.Kernel, k *kernel.Kernel, w *family.Workload, s set) error {
	l, args, err := device.Bind(k, w.Values, s)
	if err != nil {
		return err
	}
	return dk.Launch(l, args...)
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

// allocSets allocates count copies of the arrays, filling real arrays from
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
			default:
				// Outputs are filled too: a page first written inside a
				// timed launch would charge the host's page faults to
				// whichever candidate touched it first.
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
