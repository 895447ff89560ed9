package bench

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/emit"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/sparse"
	"github.com/bespoke-hpc/bespoke/operator"
	"github.com/bespoke-hpc/bespoke/verify"
)

// Candidate is one timed implementation of an operator.
type Candidate struct {
	Name      string           `json:"name"`
	Kind      string           `json:"kind"` // "bespoke" or "baseline"
	Timing    Timing           `json:"timing"`
	GBs       float64          `json:"gbs"`  // ideal bytes / median time
	RoofFrac  float64          `json:"roof"` // GBs / copy roof
	MaxRelErr float64          `json:"max_rel_err"`
	Verified  bool             `json:"verified"`
	Resources device.Resources `json:"resources"`
	Err       string           `json:"error,omitempty"`
}

// OpResult is everything measured for one operator.
type OpResult struct {
	Name       string        `json:"name"`
	M          int           `json:"m"`
	K          int           `json:"k"`
	NNZ        int           `json:"nnz"`
	KUsed      int           `json:"k_used"`
	Density    float64       `json:"density"`
	Beta       float64       `json:"beta"`
	N          int           `json:"n"`
	LD         int           `json:"ld"`
	Sets       int           `json:"sets"`        // rotated B/C sets
	IdealBytes int64         `json:"ideal_bytes"` // per launch
	RoofTime   time.Duration `json:"roof_time_ns"`
	Candidates []Candidate   `json:"candidates"`
	Err        string        `json:"error,omitempty"`
}

// Best returns the fastest verified candidate of the given kind ("" for any).
func (o *OpResult) Best(kind string) *Candidate {
	var best *Candidate
	for i := range o.Candidates {
		c := &o.Candidates[i]
		if !c.Verified || (kind != "" && c.Kind != kind) {
			continue
		}
		if best == nil || c.Timing.Median < best.Timing.Median {
			best = c
		}
	}
	return best
}

// Find returns the candidate named name.
func (o *OpResult) Find(name string) *Candidate {
	for i := range o.Candidates {
		if o.Candidates[i].Name == name {
			return &o.Candidates[i]
		}
	}
	return nil
}

// leadingDim pads n to a multiple of 64 elements, so that every row of B
// and C starts 256-byte aligned in fp32 and fp64, and then by 64 more when
// that is a multiple of 512 elements: with a power-of-two stride every row
// of a block maps to the same cache sets (measured on the 2-core EPYC VM,
// hex p3 m0, n = 262,144: 34.5 ms with ld = n, 11.6 ms with ld = n + 16).
func leadingDim(n int) int {
	ld := (n + 63) / 64 * 64
	if ld%512 == 0 {
		ld += 64
	}
	return ld
}

// columns is the n an operator is timed at: Config.N, raised to make one
// launch move MinLaunchBytes (at most MaxN), in whole multiples of 1024.
func (r *Runner) columns(op *operator.Operator, beta float64) int {
	n := r.cfg.N
	if r.cfg.MinLaunchBytes <= 0 {
		return n
	}
	perCol := int64(operator.Analyze(op).BytesPerCol(r.cfg.DType.Bytes(), beta != 0))
	want := (r.cfg.MinLaunchBytes + perCol - 1) / max(perCol, 1)
	want = (want + 1023) / 1024 * 1024
	return int(max(int64(n), min(want, int64(max(r.cfg.MaxN, n)))))
}

// Operator verifies and times every candidate of one operator, built by
// kernels (as precompile does). roofGBs is the copy bandwidth measured in
// the same run.
func (r *Runner) Operator(op *operator.Operator, built opKernels, roofGBs float64) OpResult {
	cfg, dt := r.cfg, r.cfg.DType
	w := int64(dt.Bytes())
	st := operator.Analyze(op)
	beta := cfg.Beta(op)
	n := r.columns(op, beta)
	ld := leadingDim(n)
	res := OpResult{Name: op.Name, M: op.Rows, K: op.Cols, NNZ: st.NNZ, KUsed: st.UsedCols, Density: st.Density,
		Beta: beta, N: n, LD: ld, IdealBytes: int64(st.BytesPerCol(int(w), beta != 0)) * int64(n)}
	res.RoofTime = time.Duration(float64(res.IdealBytes) / (roofGBs * 1e9) * float64(time.Second))
	setBytes := int64(op.Rows+op.Cols) * int64(ld) * w
	if setBytes > cfg.MaxMemory {
		res.Err = fmt.Sprintf("one B/C set needs %.1f GB, more than the %.1f GB allowed", float64(setBytes)/1e9, float64(cfg.MaxMemory)/1e9)
		return res
	}
	res.Sets = int(min(max((cfg.WorkingSet+res.IdealBytes-1)/max(res.IdealBytes, 1), 1), cfg.MaxMemory/setBytes))
	sets, err := r.allocSets(op, ld, res.Sets)
	if err != nil {
		res.Err = err.Error()
		return res
	}
	defer freeSets(sets)

	ks, gk := built.ks, built.gather
	res.Candidates = append(res.Candidates, built.failed...)
	gprog, gather, err := r.build(gk)
	if err != nil {
		res.Err = err.Error()
		return res
	}
	defer gprog.Close()
	check := &checker{r: r, op: op, beta: beta, n: n, ld: ld, samples: min(cfg.Samples, n), gk: gk, gather: gather}
	for _, k := range ks {
		cfg.Progress(fmt.Sprintf("%s: %s", op.Name, k.Variant))
		c := Candidate{Name: k.Variant, Kind: "bespoke"}
		prog, dk, err := r.build(k)
		if err == nil {
			defer prog.Close()
			c.Resources = dk.Resources()
			args := func(s set) []any { a, _ := k.Args(map[string]any{"n": n, "b": s.b, "c": s.c}); return a }
			geom := verify.Geometry(k, n)
			err = r.measure(&c, &res, sets, check, func(s set) error { return dk.Launch(geom, args(s)...) })
		}
		if err != nil {
			c.Err = err.Error()
		}
		res.Candidates = append(res.Candidates, c)
	}
	for _, bl := range cfg.Baselines {
		cfg.Progress(fmt.Sprintf("%s: %s", op.Name, bl.Name()))
		c := Candidate{Name: bl.Name(), Kind: "baseline"}
		run, err := bl.Setup(op, dt, cfg.Alpha, beta, n, ld)
		if err == nil {
			err = r.measure(&c, &res, sets, check, func(s set) error { return run(s.b, s.c) })
		}
		if err != nil {
			c.Err = err.Error()
		}
		res.Candidates = append(res.Candidates, c)
	}
	return res
}

// measure verifies launch on set 0, then times it over all sets.
func (r *Runner) measure(c *Candidate, res *OpResult, sets []set, check *checker, launch func(set) error) error {
	relErr, err := check.run(sets[0], launch)
	c.MaxRelErr = relErr
	if err != nil {
		return err
	}
	if relErr > verify.Tolerance(r.cfg.DType) || math.IsNaN(relErr) {
		return fmt.Errorf("wrong result: max relative error %.3g", relErr)
	}
	c.Verified = true
	t, err := r.time(len(sets), func(i int) error { return launch(sets[i]) })
	if err != nil {
		return err
	}
	c.Timing = t
	c.GBs = float64(res.IdealBytes) / t.Median.Seconds() / 1e9
	c.RoofFrac = float64(res.RoofTime) / float64(t.Median)
	return nil
}

type set struct{ b, c device.Buffer }

func freeSets(sets []set) {
	for _, s := range sets {
		s.b.Free()
		s.c.Free()
	}
}

// allocSets allocates count B/C pairs and fills every B from the table.
func (r *Runner) allocSets(op *operator.Operator, ld, count int) ([]set, error) {
	w := int64(r.cfg.DType.Bytes())
	var sets []set
	for i := 0; i < count; i++ {
		b, err := r.dev.Alloc(int64(op.Cols) * int64(ld) * w)
		if err != nil {
			freeSets(sets)
			return nil, err
		}
		c, err := r.dev.Alloc(int64(op.Rows) * int64(ld) * w)
		if err != nil {
			b.Free()
			freeSets(sets)
			return nil, err
		}
		sets = append(sets, set{b, c})
		if err := r.fill(r.fillB, r.tabB, b, int64(op.Cols)*int64(ld)); err != nil {
			freeSets(sets)
			return nil, err
		}
		if err := r.fill(r.fillC, r.tabC, c, int64(op.Rows)*int64(ld)); err != nil {
			freeSets(sets)
			return nil, err
		}
	}
	return sets, r.dev.Sync()
}

// checker verifies one launch on sampled columns against float64.
type checker struct {
	r              *Runner
	op             *operator.Operator
	beta           float64
	n, ld, samples int
	gk             *kernel.Kernel
	gather         device.Kernel
	ref            []float64 // reference C at the sampled columns, row-major by sample
	norm           float64   // largest magnitude in ref
}

// reference computes, once per operator, the float64 reference at the
// sampled columns: every candidate and baseline is checked against the
// same B and C tables, and on the largest operators this loop cost more
// than the candidate's timed launches.
func (ch *checker) reference() {
	r, dt := ch.r, ch.r.cfg.DType
	m, k, ld := ch.op.Rows, ch.op.Cols, int64(ch.ld)
	type nz struct {
		col int
		a   float64
	}
	rows := make([][]nz, m)
	for i := range rows {
		for c := 0; c < k; c++ {
			if a := ch.op.At(i, c); a != 0 {
				rows[i] = append(rows[i], nz{c, verify.Rounded(dt, r.cfg.Alpha*a)})
			}
		}
	}
	beta := verify.Rounded(dt, ch.beta)
	ch.ref = make([]float64, m*ch.samples)
	for smp := 0; smp < ch.samples; smp++ {
		j := int64(sampleColumn(smp, ch.n, ch.samples))
		for i := 0; i < m; i++ {
			ref := 0.0
			for _, e := range rows[i] {
				ref += e.a * r.hostB[(int64(e.col)*ld+j)%periodB]
			}
			if ch.beta != 0 {
				ref += beta * r.hostC[(int64(i)*ld+j)%periodC]
			}
			ch.ref[i*ch.samples+smp] = ref
			ch.norm = math.Max(ch.norm, math.Abs(ref))
		}
	}
}

// run resets C (NaN when β = 0, the C table otherwise), launches once,
// gathers the sampled columns and returns the max error relative to the
// reference's largest magnitude.
func (ch *checker) run(s set, launch func(set) error) (float64, error) {
	r, dt := ch.r, ch.r.cfg.DType
	m, ld := ch.op.Rows, ch.ld
	clen := int64(m) * int64(ld)
	var err error
	if ch.beta == 0 {
		err = r.fill(r.fillNaN, r.tabNaN, s.c, clen)
	} else {
		err = r.fill(r.fillC, r.tabC, s.c, clen)
	}
	if err != nil {
		return 0, err
	}
	if err := launch(s); err != nil {
		return 0, err
	}
	out, err := r.dev.Alloc(int64(m*ch.samples) * int64(dt.Bytes()))
	if err != nil {
		return 0, err
	}
	defer out.Free()
	if err := ch.gather.Launch(verify.Geometry(ch.gk, ch.samples), int64(ch.n), s.c, out); err != nil {
		return 0, err
	}
	if err := r.dev.Sync(); err != nil {
		return 0, err
	}
	raw := make([]byte, m*ch.samples*dt.Bytes())
	if err := out.Download(raw); err != nil {
		return 0, err
	}
	got := verify.Decode(dt, raw)
	if ch.ref == nil {
		ch.reference()
	}
	diff := 0.0
	for idx, g := range got {
		if math.IsNaN(g) {
			i, smp := idx/ch.samples, idx%ch.samples
			return math.Inf(1), fmt.Errorf("C[%d][%d] was not written", i, sampleColumn(smp, ch.n, ch.samples))
		}
		diff = math.Max(diff, math.Abs(g-ch.ref[idx]))
	}
	return diff / ch.norm, nil
}

// opKernels are one operator's candidate kernels and its gather kernel;
// variants that do not apply are failed candidates.
type opKernels struct {
	ks     []*kernel.Kernel
	gather *kernel.Kernel
	failed []Candidate
}

// kernels builds the candidate kernels and the gather kernel for one
// operator at the columns and β its run uses.
func (r *Runner) kernels(op *operator.Operator) (b opKernels) {
	cfg, dt := r.cfg, r.cfg.DType
	beta := cfg.Beta(op)
	n := r.columns(op, beta)
	ld := leadingDim(n)
	pb := sparse.Problem{Op: op, DType: dt, Alpha: cfg.Alpha, Beta: beta, LDB: ld, LDC: ld}
	variants := cfg.Variants
	if variants == nil {
		variants = sparse.Candidates(pb)
		if r.dev.Info().GPU {
			variants = sparse.GPUCandidates(pb)
		}
	}
	for _, v := range variants {
		k, err := sparse.Build(pb, v)
		if err != nil {
			b.failed = append(b.failed, Candidate{Name: v.Name(), Kind: "bespoke", Err: err.Error()})
			continue
		}
		b.ks = append(b.ks, k)
	}
	b.gather = gatherKernel(dt, op.Rows, ld, min(cfg.Samples, n))
	return b
}

// build compiles one kernel as a program of its own, so that kernels
// compile in parallel and a slow one holds up nothing else.
func (r *Runner) build(k *kernel.Kernel) (device.Program, device.Kernel, error) {
	src, err := emit.Render(r.dev.Dialect(), k)
	if err != nil {
		return nil, nil, err
	}
	prog, err := r.dev.Build(src)
	if err != nil {
		return nil, nil, err
	}
	dk, err := prog.Kernel(k.Name)
	if err != nil {
		prog.Close()
		return nil, nil, err
	}
	return prog, dk, nil
}

// precompile builds every operator's kernels, each on its own and
// concurrently, so that the timing loop finds them in the backend's cache;
// errors are left for the timing loop to report. It returns at once: the
// i-th channel is closed when operator i's kernels are built, and then
// built[i] holds them. Operators are
// built in order, so the timing loop can start on the first while later
// ones compile. Closing stop ends it early; wait returns once every build
// in progress has finished (the device must stay open until then).
func (r *Runner) precompile(ops []*operator.Operator, workers int, stop <-chan struct{}) (ready []chan struct{}, built []opKernels, wait func()) {
	type job struct {
		k  *kernel.Kernel
		op int
	}
	ready = make([]chan struct{}, len(ops))
	built = make([]opKernels, len(ops))
	pending := make([]atomic.Int32, len(ops))
	for i := range ready {
		ready[i] = make(chan struct{})
	}
	jobs := make(chan job)
	var wg sync.WaitGroup
	for w := 0; w < max(workers, 1); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				t0 := time.Now()
				r.compile(j.k)
				if d := time.Since(t0); d > 10*time.Second {
					r.cfg.Notes(fmt.Sprintf("%v: %s compiled in %.1f s", j.k.Meta["operator"], j.k.Variant, d.Seconds()))
				}
				if pending[j.op].Add(-1) == 0 {
					close(ready[j.op])
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(jobs)
		for i, op := range ops {
			built[i] = r.kernels(op)
			ks := append(slices.Clip(built[i].ks), built[i].gather)
			pending[i].Store(int32(len(ks)))
			for _, k := range ks {
				select {
				case jobs <- job{k, i}:
				case <-stop:
					return
				}
			}
		}
	}()
	return ready, built, wg.Wait
}

// compile puts k in the backend's cache: without loading it where the
// device can (device.Compiler), else by building and closing it.
func (r *Runner) compile(k *kernel.Kernel) {
	src, err := emit.Render(r.dev.Dialect(), k)
	if err != nil {
		return
	}
	if c, ok := r.dev.(device.Compiler); ok {
		_ = c.Compile(src)
		return
	}
	if prog, err := r.dev.Build(src); err == nil {
		prog.Close()
	}
}
