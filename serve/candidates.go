package serve

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/bespoke-hpc/bespoke/emit"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/tune"
)

// familyName is the family every candidate belongs to.
const familyName = "sparse"

// bespokePrefix starts a winner's name when it is one of bespoke's
// candidates ("bespoke/bstream/x128-w2").
const bespokePrefix = "bespoke/"

// Candidates returns the kernels that compute the problem on the device it
// describes, in the order to try them (see order), at most req.Limit
// (DefaultLimit when nil, all when 0). A candidate the device cannot run
// (shared memory over its limits, an architecture below the kernel's, a
// vector width the alignment does not allow, more threads than a block
// may have) is never returned.
func Candidates(req CandidatesRequest) (*CandidatesAnswer, error) {
	limit := DefaultLimit
	if req.Limit != nil {
		if *req.Limit < 0 {
			return nil, badField("limit", "%d: want 0 (all) or more", *req.Limit)
		}
		limit = *req.Limit
	}
	withSource := req.Source == nil || *req.Source
	r, err := resolve(&req.Problem)
	if err != nil {
		return nil, err
	}
	offered, all, err := r.candidates(limit)
	if err != nil {
		return nil, err
	}
	for i := range all {
		all[i].Rank = i
		if !withSource {
			all[i].Source = ""
		}
	}
	return &CandidatesAnswer{Key: r.key(), Offered: offered, Returned: len(all), Candidates: all}, nil
}

// pending is a candidate described but not yet rendered.
type pending struct {
	k    *kernel.Kernel
	cand Candidate
}

// candidates describes the candidates the family offers that the device
// can run, in order, at most limit (0: all); offered is how many the
// family offered. Sources are rendered in that order until limit are
// found: rendering every candidate of a large operator costs seconds.
func (r *resolved) candidates(limit int) (offered int, out []Candidate, err error) {
	cs := r.in.Candidates(r.target)
	work, err := r.workload()
	if err != nil {
		return 0, nil, err
	}
	// Building and predicting the candidates of a large operator takes
	// seconds: on all cores, kept in the family's order.
	prepared := make([]*pending, len(cs))
	errs := make([]error, len(cs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(cs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				prepared[i], errs[i] = r.safePrepare(cs[i], work)
			}
		}()
	}
	for i := range cs {
		next <- i
	}
	close(next)
	wg.Wait()
	var why []string
	var ps []pending
	for i, p := range prepared {
		if errs[i] != nil {
			why = append(why, errs[i].Error())
			continue
		}
		ps = append(ps, *p)
	}
	for _, p := range order(ps, r.roofSeconds(work)) {
		if limit > 0 && len(out) == limit {
			break
		}
		if err := r.render(&p); err != nil {
			why = append(why, err.Error())
			continue
		}
		out = append(out, p.cand)
	}
	if len(out) == 0 {
		msg := "the family offers no candidate for this problem"
		if len(why) > 0 {
			msg = fmt.Sprintf("none of the %d candidates runs on the device described (first: %s)", len(cs), why[0])
		}
		return len(cs), nil, errorf(CodeNoCandidates, "", "%s", oneLine(msg))
	}
	return len(cs), out, nil
}

// order is the order to try candidates in: those the cost model predicts
// by their predicted time (ties in the family's order), each strategy's
// best first (see leadersFirst), alternating from
// the top with those it does not (tensor-core kernels), so that a client
// that tries the first few tries both kinds. Where even the model's best
// is predicted over twice roofS (the problem's time at the memory roof),
// the tensor-core kernels take three turns of every four, from the top:
// where they are offered they run far closer to the roof than that, and
// the model underprices the unrolled fp64 kernels of large dense
// operators (docs/rationale.md#cost-model). Of the tensor-core kernels,
// those needing the newest architecture the device has come first (on
// sm_90 the m16n8 DMMA shapes, the ones Hopper runs at full rate, before
// sm_80's m8n8k4), and within an architecture the block sizes take turns,
// largest first, each in the family's order: the model cannot rank them,
// and on PyFR's tets the winner was sometimes the family's first of one
// block size, sometimes of another (docs/rationale.md#dmma-waves).
func order(ps []pending, roofS float64) []pending {
	var modelled, other []pending
	for _, p := range ps {
		if p.cand.Modelled {
			modelled = append(modelled, p)
		} else {
			other = append(other, p)
		}
	}
	slices.SortStableFunc(modelled, func(a, b pending) int { return cmp.Compare(a.cand.PredictedS, b.cand.PredictedS) })
	modelled = leadersFirst(modelled)
	other = turns(other)
	otherLead := len(modelled) > 0 && roofS > 0 && modelled[0].cand.PredictedS > slowModelled*roofS
	otherTurns := 1
	if otherLead {
		otherTurns = 3
	}
	out := make([]pending, 0, len(ps))
	for i, j := 0, 0; i < len(modelled) || j < len(other); {
		if !otherLead && i < len(modelled) {
			out, i = append(out, modelled[i]), i+1
		}
		for t := 0; t < otherTurns && j < len(other); t++ {
			out, j = append(out, other[j]), j+1
		}
		if otherLead && i < len(modelled) {
			out, i = append(out, modelled[i]), i+1
		}
	}
	return out
}

// slowModelled is how many times the memory roof's time the model's best
// prediction may take before the tensor-core kernels lead (see order).
const slowModelled = 2.0

// leadersFirst puts the first kernel of each strategy (the variant's
// name up to "/": cstream, blocks …) before the others, each group in the
// given order. The model misprices whole strategies (sum-factorised
// blocks kernels that it ranked behind unrolled ones ran twice as fast:
// docs/rationale.md#readmit), so a client that tries the first few must
// try each strategy's best.
func leadersFirst(ps []pending) []pending {
	seen := map[string]bool{}
	var leaders, rest []pending
	for _, p := range ps {
		strategy, _, _ := strings.Cut(p.cand.Name, "/")
		if seen[strategy] {
			rest = append(rest, p)
			continue
		}
		seen[strategy] = true
		leaders = append(leaders, p)
	}
	return append(leaders, rest...)
}

// turns orders kernels the model does not rank: by architecture, newest
// first, and within one the block sizes (threads) in turn, largest first,
// each size's kernels in their given order.
func turns(ps []pending) []pending {
	type class struct{ arch, threads int }
	var classes []class
	by := map[class][]pending{}
	for _, p := range ps {
		// Producer warps do no arithmetic: the kernel takes its turns
		// with the plain kernels of its tile.
		c := class{p.k.Hints.MinArch, p.k.Launch.Block[0]*p.k.Launch.Block[1]*p.k.Launch.Block[2] - 32*producerWarps(p.k)}
		if _, ok := by[c]; !ok {
			classes = append(classes, c)
		}
		by[c] = append(by[c], p)
	}
	slices.SortStableFunc(classes, func(a, b class) int {
		return cmp.Or(cmp.Compare(b.arch, a.arch), cmp.Compare(b.threads, a.threads))
	})
	out := make([]pending, 0, len(ps))
	for i := 0; i < len(classes); {
		j := i // classes[i:j]: one architecture
		for j < len(classes) && classes[j].arch == classes[i].arch {
			j++
		}
		for left := true; left; {
			left = false
			for _, c := range classes[i:j] {
				if q := by[c]; len(q) > 0 {
					out, by[c], left = append(out, q[0]), q[1:], true
				}
			}
		}
		i = j
	}
	return out
}

// producerWarps is the warps of k that only copy: as its family
// recorded, else one where it has bulk copies.
func producerWarps(k *kernel.Kernel) int {
	if n, ok := k.Meta["producer_warps"].(int); ok {
		return n
	}
	if kernel.HasBulkCopies(k.Body) {
		return 1
	}
	return 0
}

// candidate describes the named variant if it is one the family offers
// now and the device can run.
func (r *resolved) candidate(variant string) (*Candidate, error) {
	var found family.Candidate
	for _, c := range r.in.Candidates(r.target) {
		if c.Name() == variant {
			found = c
			break
		}
	}
	if found == nil {
		return nil, fmt.Errorf("%s is not among the current candidates", variant)
	}
	return r.describe(found)
}

// describe is the whole description of candidate c, source included.
func (r *resolved) describe(c family.Candidate) (*Candidate, error) {
	work, err := r.workload()
	if err != nil {
		return nil, err
	}
	p, err := r.prepare(c, work)
	if err != nil {
		return nil, err
	}
	if err := r.render(p); err != nil {
		return nil, err
	}
	return &p.cand, nil
}

// workload is the instance's description for timing: the arrays a
// kernel may take besides B and C (α·A), the sizes, the least bytes.
func (r *resolved) workload() (*family.Workload, error) {
	w, err := r.in.Workload()
	if err != nil {
		return nil, badField("operator", "%v", err)
	}
	return w, nil
}

// prepare builds candidate c (one the family offered, so checked) and
// describes all but its source, or says why a client could not run it.
func (r *resolved) prepare(c family.Candidate, work *family.Workload) (*pending, error) {
	k, err := r.in.Build(c)
	if err != nil {
		return nil, err
	}
	params, err := r.params(k, work)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", k.Variant, err)
	}
	launch, err := r.launch(k, work.Values)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", k.Variant, err)
	}
	cand := Candidate{Name: k.Variant, Family: familyName, Entry: k.Name, Language: string(r.dialect), Params: params, Launch: launch}
	cand.PredictedS, cand.Modelled = r.predict(k, work)
	return &pending{k: k, cand: cand}, nil
}

// safePrepare is prepare on a goroutine of its own: a panic (a bug) is
// the candidate's error, not the process's end.
func (r *resolved) safePrepare(c family.Candidate, work *family.Workload) (p *pending, err error) {
	defer func() {
		if x := recover(); x != nil {
			p, err = nil, errorf(CodeInternal, "", "%s: %s", c.Name(), oneLine(fmt.Sprint(x)))
		}
	}()
	return r.prepare(c, work)
}

// render prints p's source and checks that the device described can run
// it.
func (r *resolved) render(p *pending) error {
	src, err := emit.Render(r.dialect, p.k)
	if err != nil {
		return err
	}
	if err := r.fits(p.k, src); err != nil {
		return fmt.Errorf("%s: %w", p.k.Variant, err)
	}
	p.cand.Source, p.cand.Build = src.Text, r.build(src)
	return nil
}

// fits reports why the device described cannot run k, or nil.
func (r *resolved) fits(k *kernel.Kernel, src emit.Source) error {
	d := r.dev
	if r.dialect == emit.CUDA {
		if src.MinArch > d.CUDAArch {
			return fmt.Errorf("needs sm_%d, the device is sm_%d", src.MinArch, d.CUDAArch)
		}
		if src.ArchSpecific && src.MinArch != d.CUDAArch {
			return fmt.Errorf("uses sm_%da instructions, which run on sm_%d only (the device is sm_%d)", src.MinArch, src.MinArch, d.CUDAArch)
		}
	}
	sh := k.Launch.SharedBytes
	switch {
	case k.Launch.DynamicShared() && r.dialect != emit.CUDA:
		return fmt.Errorf("needs %d bytes of dynamic shared memory, which only CUDA sizes at launch", sh)
	case k.Launch.DynamicShared() && sh > d.MaxDynamicSharedBytes:
		return fmt.Errorf("needs %d bytes of dynamic shared memory, the device allows %d", sh, d.MaxDynamicSharedBytes)
	case !k.Launch.DynamicShared() && r.dialect != emit.C && sh > d.LocalMemBytes:
		return fmt.Errorf("needs %d bytes of shared memory, the device has %d", sh, d.LocalMemBytes)
	case r.dialect != emit.C && k.Launch.Threads() > d.MaxWorkGroupSize:
		return fmt.Errorf("takes %d threads a block, the device at most %d", k.Launch.Threads(), d.MaxWorkGroupSize)
	}
	need := vectorAlign(k)
	eb := k.DType.Bytes()
	for _, b := range []struct {
		name       string
		align, ld  int
		alignField string
	}{{"b", r.alignB, r.in.LDB, "align_b"}, {"c", r.alignC, r.in.LDC, "align_c"}} {
		n := need[b.name]
		if n <= eb {
			continue
		}
		if b.align%n != 0 || (b.ld*eb)%n != 0 {
			return fmt.Errorf("reads or writes %s in %d-byte vectors: %s = %d bytes and ld%s = %d do not allow them", b.name, n, b.alignField, b.align, b.name, b.ld)
		}
	}
	return nil
}

// vectorAlign is, for each buffer parameter, the widest aligned vector
// access k makes to it, in bytes: its base must be aligned to that. A
// streamed store of the C dialect aligns itself at run time and needs
// nothing.
func vectorAlign(k *kernel.Kernel) map[string]int {
	eb := k.DType.Bytes()
	need := map[string]int{}
	note := func(buf string, elems int) {
		if _, ok := k.Param(buf); ok {
			need[buf] = max(need[buf], elems*eb)
		}
	}
	kernel.WalkStmts(k.Body, func(s kernel.Stmt) bool {
		switch v := s.(type) {
		case kernel.VecLoad:
			note(v.Buf, len(v.Dst))
		case kernel.VecStore:
			if !v.Stream {
				note(v.Buf, len(v.Src))
			} else {
				note(v.Buf, 1)
			}
		case kernel.CopyAsync:
			note(v.Src, v.Elements())
		case kernel.BulkCopy: // 16-byte aligned rows
			note(v.Src, 16/eb)
		}
		return true
	})
	return need
}

// params lists k's parameters in order with their roles: B and C, data
// buffers with their contents (α·A for kernels that read it from memory),
// and the sizes. A parameter of any other kind is an error: the candidate
// is not offered, since a client could not bind it.
func (r *resolved) params(k *kernel.Kernel, work *family.Workload) ([]Param, error) {
	need := vectorAlign(k)
	out := make([]Param, 0, len(k.Params))
	for _, p := range k.Params {
		q := Param{Name: p.Name, Kind: string(p.Kind), Type: r.typeName(k, p.Type)}
		switch p.Kind {
		case kernel.BufferParam:
			c := p.Const
			q.Const = &c
			switch {
			case p.Name == "b" && p.Type == kernel.Real && p.Const:
				q.Role = "b"
			case p.Name == "c" && p.Type == kernel.Real && !p.Const:
				q.Role = "c"
			default:
				a := workArray(work, p.Name)
				if a == nil || !p.Const || a.Role != family.Input || p.Type != a.Type || (a.Reals == nil && a.Ints == nil) {
					return nil, fmt.Errorf("parameter %q: a buffer of no known role", p.Name)
				}
				q.Role = "data"
				q.Values = a.Reals
				if a.Reals == nil {
					q.Values = make([]float64, len(a.Ints))
					for i, v := range a.Ints {
						q.Values[i] = float64(v)
					}
				}
				if int64(len(q.Values)) != a.Len {
					return nil, fmt.Errorf("parameter %q: %d values for %d elements", p.Name, len(q.Values), a.Len)
				}
				if n := need[p.Name]; n > k.TypeBytes(p.Type) {
					q.Align = n
				}
			}
		case kernel.ScalarParam:
			v, ok := work.Values[p.Name]
			if !ok || !slices.Contains([]string{"n", "ldb", "ldc"}, p.Name) || !p.Type.IsInt() {
				return nil, fmt.Errorf("parameter %q: a scalar of no known role", p.Name)
			}
			q.Role = p.Name
			q.Value = &v
		default:
			return nil, fmt.Errorf("parameter %q of kind %q", p.Name, p.Kind)
		}
		out = append(out, q)
	}
	return out, nil
}

func workArray(w *family.Workload, name string) *family.WorkArray {
	for i := range w.Arrays {
		if w.Arrays[i].Name == name {
			return &w.Arrays[i]
		}
	}
	return nil
}

// typeName is the type of a buffer's elements or of a scalar as the
// dialect declares it.
func (r *resolved) typeName(k *kernel.Kernel, t kernel.Type) string {
	switch t {
	case kernel.Real:
		return k.DType.String()
	case kernel.Int32:
		return "int32"
	case kernel.Index:
		if !k.Index64 && r.dialect != emit.C { // C declares every index 64-bit
			return "int32"
		}
	}
	return "int64"
}

// launch resolves k's grid against the sizes; shared memory over the
// static limit is dynamic, with the CUDA attribute that opts the function
// in to it.
func (r *resolved) launch(k *kernel.Kernel, sizes map[string]int64) (Launch, error) {
	grid, err := k.Launch.Blocks(sizes)
	if err != nil {
		return Launch{}, err
	}
	if r.dialect == emit.C && (grid[1] > 1 || grid[2] > 1) {
		return Launch{}, fmt.Errorf("grid %v: the C entry takes a 1-D grid", grid)
	}
	for i, g := range grid {
		if g < 1 || k.Launch.Block[i] < 1 {
			return Launch{}, fmt.Errorf("launch grid %v block %v: every dimension must be positive", grid, k.Launch.Block)
		}
	}
	l := Launch{Grid: grid, Block: k.Launch.Block, Attributes: map[string]int{}}
	if k.Launch.DynamicShared() {
		l.DynamicSharedBytes = k.Launch.SharedBytes
		l.Attributes["max_dynamic_shared_size_bytes"] = k.Launch.SharedBytes
	} else {
		l.StaticSharedBytes = k.Launch.SharedBytes
	}
	return l, nil
}

// cFlags are the host backend's base flags (device/host.BaseFlags, which
// a test holds this to): a shared object with OpenMP.
var cFlags = []string{"-O3", "-march=native", "-fopenmp", "-fPIC", "-shared", "-std=gnu11"}

// build is how bespoke compiles the source on the device described.
func (r *resolved) build(src emit.Source) Build {
	b := Build{Options: []string{}, MinArch: src.MinArch, ArchSpecific: src.ArchSpecific}
	switch r.dialect {
	case emit.CUDA:
		arch := fmt.Sprintf("-arch=sm_%d", r.dev.CUDAArch)
		if src.ArchSpecific {
			arch += "a"
		}
		b.Options = []string{arch, "-default-device", "-std=c++17"}
	case emit.OpenCL:
		b.Options = []string{"-cl-std=CL1.2"}
	case emit.C:
		b.Options = slices.Clone(cFlags)
	}
	return b
}

// predict is the cost model's time for one launch of k, only to order
// the candidates: its constants were fitted on one GPU and one CPU, and
// where the client gives no bandwidth tune.MachineOf guesses one. Kernels
// the model does not cover (tensor cores) get the time at that bandwidth,
// a bound nothing beats, so that they are tried early: the family offers
// them only where they can win.
func (r *resolved) predict(k *kernel.Kernel, work *family.Workload) (float64, bool) {
	m := tune.MachineOf(r.info, r.dev.BandwidthGBs)
	p, err := tune.Estimate(m, r.dialect, k, work.Values, work.IdealBytes)
	if err == nil && p.Seconds > 0 {
		return p.Seconds, true
	}
	return r.roofSeconds(work), false
}

// roofSeconds is the problem's time at the device's memory roof.
func (r *resolved) roofSeconds(work *family.Workload) float64 {
	m := tune.MachineOf(r.info, r.dev.BandwidthGBs)
	return float64(work.IdealBytes) / (m.RoofGBs * 1e9)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
