// Package run runs the partition-of-unity pipeline on a device: the
// decomposition of a uniform cover into cells (on the device or on the
// host), the integration and assembly kernels of kernel/pum into the
// device's matrix and load, and the block-Jacobi CG solve (solve.PCG)
// from the matrix where it was assembled. Reference runs pum's float64
// pipeline in Go for comparison. Which shape of kernels and strategy to
// run is the caller's: pum/tuned chooses one for a device.
//
// It may import pum, kernel, kernel/pum, solve, build, tune, device and
// internal/cache (whether compiled kernels are kept), but no backend and
// no command.
package run

import (
	"fmt"
	"os"
	"time"
	"unsafe"

	"github.com/bespoke-hpc/bespoke/build"
	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/kernel"
	kpum "github.com/bespoke-hpc/bespoke/kernel/pum"
	"github.com/bespoke-hpc/bespoke/pum"
	"github.com/bespoke-hpc/bespoke/solve"
	"github.com/bespoke-hpc/bespoke/tune"
)

// Assembly strategies of the device pipeline.
const (
	Atomic = "atomic" // atomic adds, every cell of a batch at once
	Colour = "colour" // plain adds, one colour group per launch
	Fused  = "fused"  // integration kernels add into the matrix atomically: no element buffer
)

// Strategies are the assembly strategies, in the order they are listed.
var Strategies = []string{Atomic, Colour, Fused}

// Integration kernels of the device pipeline.
const (
	Thread = "thread" // kpum.Integrate: one thread per cell (the CPU kernel)
	Group  = "group"  // kpum.IntegrateGroup: a team of threads per cell (the GPU kernel)
)

// Shape is how a run's kernels are built and its matrix assembled: the
// knobs a candidate of pum/tuned sets. Zero fields take neutral
// defaults by the kind of device (see Config).
type Shape struct {
	Strategy   string // Atomic, Colour or Fused
	Integrator string // Thread or Group; "": group on a GPU, thread on a CPU (fused: always group)
	Threads    int    // threads per block; 0: 128 (group) or 64 (thread) on a GPU, 16 or 1 on a CPU
	Tiles      int    // group kernel: tiles per thread (kpum.Spec.Tiles)
	Side       int    // group kernel: tile side (kpum.Spec.Side)
	Vec        int    // group kernel: staged values a load (kpum.Spec.Vec)
	MMA        int    // group kernel: tensor-core block side (kpum.Spec.MMA; 0 or less: the SIMT tiles)
	// PerCell keeps the fused strategy's device decomposition in
	// PatchOrder, one cell per team; otherwise a uniform cover's bins
	// come in SetOrder and the merged kernel (Spec.Merge) takes a set's
	// cells together.
	PerCell bool
}

// Config is one PUM assembly on a device (or in Go: Reference).
type Config struct {
	Dim, Level, Degree int
	Periodic           bool
	Coeff              kpum.Coefficients
	DType              kernel.DType
	Layout             kpum.Layout
	Strategy           string // Shape's fields, flat so that a literal names them
	Integrator         string
	Threads            int
	Tiles              int
	Side               int
	Vec                int
	MMA                int
	PerCell            bool
	Budget             int64  // element-buffer entries per batch; 0: DefaultBudget
	Decompose          string // DecompDevice or DecompHost; "": device
	// Solve, when set, solves A u = f on the device after assembly, from
	// the matrix and load still there (solve.PCG: CG with block Jacobi).
	Solve *Solve
	// Keep leaves the matrix and load on the device, as a solve without
	// Host does: the outcome's Sys.A and Sys.F are nil (for timing runs,
	// which need no download of a matrix that may take gigabytes).
	Keep bool
}

// Shape returns c's shape.
func (c Config) Shape() Shape {
	return Shape{Strategy: c.Strategy, Integrator: c.Integrator, Threads: c.Threads, Tiles: c.Tiles, Side: c.Side, Vec: c.Vec, MMA: c.MMA, PerCell: c.PerCell}
}

// WithShape returns c with s's fields.
func (c Config) WithShape(s Shape) Config {
	c.Strategy, c.Integrator, c.Threads, c.Tiles, c.Side, c.Vec, c.MMA, c.PerCell = s.Strategy, s.Integrator, s.Threads, s.Tiles, s.Side, s.Vec, s.MMA, s.PerCell
	return c
}

// Solve is the device solve after a device assembly.
type Solve struct {
	Tol     float64 // relative residual ‖f − A u‖/‖f‖ by the recurrence
	MaxIter int
	// Host also downloads the matrix and load into the outcome's system
	// (tests check the device solve against pum.Solve on them); without
	// it they stay on the device: only the solution comes back.
	Host bool
}

// Where the decomposition runs: on the device from the uniform cover's
// split tables (kpum.Decomposer, with the patch data and matrix pattern
// made there too), or on the host (pum.Decompose and kpum.NewPlan, the
// cover built and uploaded: the reference for comparisons, and the way
// for covers without tables).
const (
	DecompDevice = "device"
	DecompHost   = "host"
)

// DefaultBudget bounds the element buffer of one batch (entries: 128 MiB
// in f64), so device memory does not grow with the level beyond the
// matrix.
const DefaultBudget = 1 << 24

// Outcome is an assembled system with the thesis's split.
type Outcome struct {
	Sys      *pum.System
	Tm       pum.Timings
	Build    time.Duration // kernel compilation (cached), outside Total
	Download time.Duration // matrix and load back to the host, outside Total; 0 when DeviceOnly
	Launches int
	Batches  int
	// Shape is what ran: the config's shape with its defaults filled in.
	Shape Shape
	Merge int // cells the fused kernel took together (1: one)
	// Solved is the device solve (Config.Solve), outside Total; nil
	// without one.
	Solved *solve.PCGResult
	// DeviceOnly: a device solve (Config.Solve without Host) read the
	// matrix and load where they were assembled and neither came back:
	// Sys.A and Sys.F are nil, Download is 0.
	DeviceOnly bool
}

// Reference assembles in float64 Go (pum.Build, all cores).
func Reference(cfg Config) (*Outcome, error) {
	sys, tm, err := pum.Build(pum.Config{Dim: cfg.Dim, Level: cfg.Level, Degree: cfg.Degree, Periodic: cfg.Periodic, Coeffs: cfg.Coeff.Reference()})
	if err != nil {
		return nil, err
	}
	return &Outcome{Sys: sys, Tm: tm}, nil
}

// runner holds a device run's buffers.
type runner struct {
	dev  device.Device
	dt   kernel.DType
	bufs []device.Buffer
	// Wall time of the allocations and uploads, for BESPOKE_PUM_TRACE.
	allocT, uploadT time.Duration
	nAlloc, nUpload int
	// arena, where the device can slice buffers (device.Slicer): one
	// allocation that alloc takes views of while room is left, as a
	// run's two dozen allocations cost a noticeable share of a small
	// level's total.
	arena      device.Buffer
	used, room int64
}

// reserve allocates the arena of bytes where the device can slice
// buffers; allocations beyond it fall back to their own.
func (r *runner) reserve(bytes int64) error {
	if _, ok := r.dev.(device.Slicer); !ok || bytes <= 0 {
		return nil
	}
	b, err := r.alloc(bytes)
	if err != nil {
		return err
	}
	r.arena, r.used, r.room = b, 0, bytes
	return nil
}

// align rounds a buffer's size up to device.SliceAlign (at least 8
// bytes: no buffer is empty).
func align(n int64) int64 {
	return (max(n, 8) + device.SliceAlign - 1) / device.SliceAlign * device.SliceAlign
}

// arenaBytes is what a device-decomposition run allocates before its
// element buffers (the matrix, load, rule, tables, patch data, pattern
// and bins, each aligned), so that one allocation serves them all.
func arenaBytes(dc *kpum.Decomposer, rb int64, B, nq int, entries int64, colour bool) int64 {
	n := 2*align(int64(nq)*rb) + align(entries*rb) + align(int64(dc.N*B)*rb) +
		align(int64(len(dc.SGeo))*rb) + align(4*int64(len(dc.SNbr))) + 2*align(rb*int64(dc.N*dc.Dim)) +
		align(4*int64(dc.N+1)) + align(4*dc.Blocks) + align(rb*int64(len(dc.SPt))) +
		align(4*int64(len(dc.SPtr))) + align(4*int64(len(dc.SIvl))) + align(4*int64(len(dc.SCnt))) + align(4*int64(len(dc.SSet)))
	if colour {
		n += align(4 * int64(dc.HistLen()))
	}
	for _, b := range dc.PatchBins { // every order's bins have these sizes
		n += 2*align(rb*int64(b.Cells*dc.Dim)) + align(4*int64(b.Cells*b.Active))
	}
	return n + int64(3*len(dc.Bins))*align(0) // stand-ins for empty bins
}

// keptBytes is the part of arenaBytes a solve keeps after the
// assembly: the matrix, the load and the pattern, each aligned.
func keptBytes(rb int64, B, np int, blocks int64) int64 {
	return align(blocks*int64(B)*int64(B)*rb) + align(int64(np*B)*rb) + align(4*int64(np+1)) + align(4*blocks)
}

// close frees r's allocations (the arena's views with it) and forgets
// them: a second close frees nothing.
func (r *runner) close() {
	for _, b := range r.bufs {
		b.Free()
	}
	r.bufs, r.arena, r.used, r.room = nil, nil, 0, 0
}

func (r *runner) alloc(bytes int64) (device.Buffer, error) {
	t0 := time.Now()
	if n := align(bytes); r.arena != nil && r.used+n <= r.room {
		b, err := r.dev.(device.Slicer).Slice(r.arena, r.used, max(bytes, 8))
		if err != nil {
			return nil, err
		}
		r.used += n
		r.allocT += time.Since(t0)
		return b, nil
	}
	b, err := r.dev.Alloc(max(bytes, 8))
	if err != nil {
		return nil, err
	}
	r.allocT += time.Since(t0)
	r.nAlloc++
	r.bufs = append(r.bufs, b)
	return b, nil
}

// upload copies x into b and counts it for the trace.
func (r *runner) upload(b device.Buffer, x []byte) error {
	t0 := time.Now()
	err := b.Upload(x)
	r.uploadT += time.Since(t0)
	r.nUpload++
	return err
}

func (r *runner) reals(x []float64) (device.Buffer, error) {
	b, err := r.alloc(int64(len(x) * r.dt.Bytes()))
	if err != nil {
		return nil, err
	}
	return b, r.upload(b, r.dt.Encode(x))
}

func (r *runner) ints(x []int32) (device.Buffer, error) {
	b, err := r.alloc(int64(4 * len(x)))
	if err != nil {
		return nil, err
	}
	return b, r.upload(b, kernel.EncodeInts(4, widen(x)))
}

// devBin is a bin of the device's plan with its buffers lo, hi, act.
type devBin struct {
	kpum.DeviceBin
	bufs map[string]device.Buffer
}

// settle checks cfg against dev and fills in its defaults: the
// decomposition, the integration kernel, the threads, the tensor-core
// blocks and the budget.
func settle(dev device.Device, cfg Config) (Config, error) {
	if cfg.DType == kernel.F64 && !dev.Info().FP64 {
		return cfg, fmt.Errorf("pum: %s has no fp64", dev.Info().Name)
	}
	if cfg.Strategy != Atomic && cfg.Strategy != Colour && cfg.Strategy != Fused {
		return cfg, fmt.Errorf("pum: assembly strategy %q: want %s, %s or %s", cfg.Strategy, Atomic, Colour, Fused)
	}
	switch cfg.Decompose {
	case "":
		cfg.Decompose = DecompDevice
	case DecompDevice, DecompHost:
	default:
		return cfg, fmt.Errorf("pum: decomposition %q: want %s or %s", cfg.Decompose, DecompDevice, DecompHost)
	}
	gpu := dev.Info().GPU
	switch {
	case cfg.Strategy == Fused:
		if cfg.Integrator == Thread {
			return cfg, fmt.Errorf("pum: the fused strategy needs the group integration kernel")
		}
		cfg.Integrator = Group
	case cfg.Integrator == "":
		cfg.Integrator = Thread
		if gpu {
			cfg.Integrator = Group
		}
	case cfg.Integrator != Thread && cfg.Integrator != Group:
		return cfg, fmt.Errorf("pum: integration kernel %q: want %s or %s", cfg.Integrator, Thread, Group)
	}
	if cfg.Threads == 0 {
		// Neutral defaults by the kind of device; the shape that wins
		// on a device is pum/tuned's to find.
		switch {
		case gpu && cfg.Integrator == Group:
			cfg.Threads = 128
		case gpu:
			cfg.Threads = 64
		case cfg.Integrator == Group:
			cfg.Threads = 16 // a block's threads run as loops in one CPU thread
		default:
			cfg.Threads = 1
		}
	}
	cuda := dev.Info().Backend == "cuda" && tune.CUDAArch(dev.Info().Arch) >= 80
	if cfg.MMA > 0 && (!cuda || cfg.Integrator != Group) {
		return cfg, fmt.Errorf("pum: --mma %d needs the group kernel on a CUDA device with tensor cores (sm_80 or later)", cfg.MMA)
	}
	cfg.MMA = max(cfg.MMA, 0)
	if cfg.Budget == 0 {
		cfg.Budget = DefaultBudget
	}
	return cfg, nil
}

// OnDevice runs the pipeline on dev: set-up (space, rule, matrix and
// load buffers; the patch data and the matrix pattern made on the device
// from small tables, or with host decomposition the cover built and
// uploaded), decomposition (on the device: for the colour strategy count,
// a small histogram to the host for the prefix sums and fill, for the
// others one fill in patch order; or on the host: pum.Decompose,
// kpum.NewPlan, the bins uploaded), then per batch the integration kernel
// and the assembly kernels on the device into the device's matrix and
// load, and one download at the end. Nothing is accumulated on the host.
// Every kernel is built in one build.Program before the device runs any
// (outside the timings).
func OnDevice(dev device.Device, cfg Config) (_ *Outcome, err error) {
	if cfg, err = settle(dev, cfg); err != nil {
		return nil, err
	}
	onDevice := cfg.Decompose == DecompDevice
	gpu := dev.Info().GPU
	fused := cfg.Strategy == Fused
	out := &Outcome{Shape: cfg.Shape()}
	r := &runner{dev: dev, dt: cfg.DType}
	defer r.close()
	// keep holds what a solve reads after the assembly (the matrix, its
	// pattern and the load), in an allocation of its own, so that r's
	// (rule, tables, patch data, bins, element buffers) can be freed
	// before solve.PCG allocates its vectors; without a solve, one
	// runner holds everything.
	keep := r
	if cfg.Solve != nil {
		keep = &runner{dev: dev, dt: cfg.DType}
		defer keep.close()
	}

	// Host set-up: the space and rule, the cover (host decomposition)
	// or the decomposition's tables (device).
	t0 := time.Now()
	sp, err := pum.NewSpace(&pum.Cover{Dim: cfg.Dim}, cfg.Degree)
	if err != nil {
		return nil, err
	}
	rule, err := pum.NewRule(cfg.Dim, cfg.Degree+1)
	if err != nil {
		return nil, err
	}
	B := sp.B
	var c *pum.Cover
	var dc *kpum.Decomposer
	var np int
	var blocks int64
	var tables time.Duration // the decomposition's share of the host set-up
	if onDevice {
		tt := time.Now()
		if dc, err = kpum.NewDecomposer(cfg.Dim, cfg.Level, pum.DefaultAlpha, cfg.Periodic); err != nil {
			return nil, err
		}
		tables = time.Since(tt)
		np, blocks = dc.N, dc.Blocks
	} else {
		if c, err = pum.UniformCover(cfg.Dim, cfg.Level, pum.DefaultAlpha, cfg.Periodic); err != nil {
			return nil, err
		}
		np, blocks = c.N, int64(len(c.Nbr))
	}
	entries := blocks * int64(B) * int64(B)
	if entries > pum.MaxMatrixEntries {
		return nil, fmt.Errorf("pum: %d matrix entries exceed MaxMatrixEntries = %d (lower the level or degree)", entries, int64(pum.MaxMatrixEntries))
	}
	rb := int64(cfg.DType.Bytes())
	// Matrix, load, element buffer and loads, patch data, cells (≤ 16·N).
	ebuf := cfg.Budget
	if fused {
		ebuf = 0
	}
	need := rb*(entries+int64(np*B)+2*ebuf) + rb*int64(4*np*cfg.Dim) + int64(16*np)*(rb*2*int64(cfg.Dim)+4*8)
	if m := dev.Info().MemoryBytes; m > 0 && need > m {
		return nil, fmt.Errorf("pum: needs about %d MiB of device memory, %s has %d MiB", need>>20, dev.Info().Name, m>>20)
	}
	// The host holds the matrix in float64 (f32 also its downloaded
	// bytes; see downloadReals), on a CPU device beside the device's own
	// copy; not after a device solve, which leaves it there.
	hostSys := (cfg.Solve == nil || cfg.Solve.Host) && !cfg.Keep
	host := int64(0)
	if hostSys {
		host = entries * 8
		if cfg.DType != kernel.F64 {
			host += entries * rb
		}
	}
	if !gpu {
		host += need
	}
	if m := dev.Info().MemoryBytes; !gpu && m > 0 && host > m*4/5 {
		return nil, fmt.Errorf("pum: needs about %d MiB of host memory, more than 80%% of the %d MiB there", host>>20, m>>20)
	}
	t1 := time.Now()
	out.Tm.Setup = t1.Sub(t0) - tables
	out.Tm.Decompose = tables

	// Host decomposition: the plan, before the kernels it sizes.
	var pl *kpum.Plan
	var actives []int // the bins the kernels are built for
	if onDevice {
		actives = dc.Bins
	} else if pl, actives, err = hostPlan(c, cfg.Strategy == Colour); err != nil {
		return nil, err
	}
	t2 := time.Now()
	out.Tm.Decompose += t2.Sub(t1)

	// Kernels in one build.Program (build.Batch's compiler calls; cached
	// by source).
	pk, err := newKernels(cfg, gpu, dc, actives)
	if err != nil {
		return nil, err
	}
	dk, integ, asm, zero := pk.dk, pk.integ, pk.asm, pk.zero
	prog, err := build.NewProgram(dev, pk.all...)
	if err != nil {
		return nil, err
	}
	defer prog.Close()
	t3 := time.Now()
	out.Build = t3.Sub(t2)

	l := &launcher{prog: prog, bufs: map[string]device.Buffer{}}
	bufs, launch, elapsed := l.bufs, l.launch, l.elapsed

	// Device set-up: the rule, the matrix and load, the patch data and
	// the matrix pattern (made on the device, or uploaded).
	t4 := time.Now()
	if onDevice {
		arena := arenaBytes(dc, rb, B, len(rule.X), entries, cfg.Strategy == Colour)
		if keep != r {
			kept := keptBytes(rb, B, np, blocks)
			if err := keep.reserve(kept); err != nil {
				return nil, err
			}
			arena -= kept
		}
		if err := r.reserve(arena); err != nil {
			return nil, err
		}
	}
	for name, x := range map[string][]float64{"qx": rule.X, "qw": rule.W} {
		if bufs[name], err = r.reals(x); err != nil {
			return nil, err
		}
	}
	if bufs["val"], err = keep.alloc(entries * rb); err != nil {
		return nil, err
	}
	if bufs["f"], err = keep.alloc(int64(np*B) * rb); err != nil {
		return nil, err
	}
	if !onDevice {
		for name, x := range map[string][]float64{"centre": c.Centre, "sup": kpum.Support(c)} {
			if bufs[name], err = r.reals(x); err != nil {
				return nil, err
			}
		}
		for name, x := range map[string][]int32{"rowptr": c.NbrPtr, "col": c.Nbr} {
			if bufs[name], err = keep.ints(x); err != nil {
				return nil, err
			}
		}
	}
	out.Tm.Setup += time.Since(t4)
	if onDevice {
		if err := patternOnDevice(r, keep, l, dc, dk.pattern, &out.Tm.Setup); err != nil {
			return nil, err
		}
	}

	// Decomposition into the bins.
	var bins []devBin
	if onDevice { // adds its own time
		if bins, err = decomposeOnDevice(r, l, dc, dk, &out.Tm.Decompose); err != nil {
			return nil, err
		}
	}
	t5 := time.Now()
	if !onDevice {
		sizes := pl.Sizes()
		for bi, b := range pl.Bins {
			pb := devBin{DeviceBin: sizes[bi], bufs: map[string]device.Buffer{}}
			for name, x := range map[string][]float64{"lo": b.Lo, "hi": b.Hi} {
				if pb.bufs[name], err = r.reals(x); err != nil {
					return nil, err
				}
			}
			if pb.bufs["act"], err = r.ints(b.Act); err != nil {
				return nil, err
			}
			bins = append(bins, pb)
		}
	}
	sizes := make([]kpum.DeviceBin, len(bins))
	for bi, b := range bins {
		sizes[bi] = b.DeviceBin
	}
	chunks, err := kpum.BinBatches(sizes, B, cfg.Budget)
	if err != nil {
		return nil, err
	}
	out.Merge = max(pk.merge, 1)
	if fused { // one launch per bin: no element buffer to bound it
		chunks = chunks[:0]
		for bi, b := range bins {
			if b.Cells%out.Merge != 0 {
				return nil, fmt.Errorf("pum: bin %d holds %d cells, not whole active sets of %d", b.Active, b.Cells, out.Merge)
			}
			chunks = append(chunks, kpum.Chunk{Bin: bi, First: 0, Count: b.Cells})
		}
	}
	maxE, maxF := int64(0), int64(0)
	for _, b := range bins {
		nf := int64(b.Active * B)
		maxE = max(maxE, min(cfg.Budget/(nf*nf), int64(b.Cells))*nf*nf)
		maxF = max(maxF, min(cfg.Budget/(nf*nf), int64(b.Cells))*nf)
	}
	out.Tm.Decompose += time.Since(t5)
	if fused {
		maxE, maxF = 0, 0
	}
	if bufs["e"], err = r.alloc(maxE * rb); err != nil {
		return nil, err
	}
	if bufs["fl"], err = r.alloc(maxF * rb); err != nil {
		return nil, err
	}

	// Zero the matrix and load on the device.
	err = elapsed(&out.Tm.Assemble, func() error {
		if err := launch(zero, map[string]int64{"n": entries}, map[string]device.Buffer{"x": bufs["val"]}); err != nil {
			return err
		}
		return launch(zero, map[string]int64{"n": int64(np * B)}, map[string]device.Buffer{"x": bufs["f"]})
	})
	if err != nil {
		return nil, err
	}
	integrate := func(ch kpum.Chunk) error {
		b := bins[ch.Bin]
		out.Batches++
		return launch(integ[b.Active], map[string]int64{kpum.Cells: int64(ch.Count), kpum.C0: int64(ch.First), kpum.Batch: int64(ch.Count)}, b.bufs)
	}
	if fused { // the bins' launches in one timed section: one wait, not one per bin
		err := elapsed(&out.Tm.Integrate, func() error {
			for _, ch := range chunks {
				if err := integrate(ch); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		chunks = nil // nothing left to assemble
	}
	for _, ch := range chunks {
		b := bins[ch.Bin]
		a := b.Active
		if err := elapsed(&out.Tm.Integrate, func() error { return integrate(ch) }); err != nil {
			return nil, err
		}
		err = elapsed(&out.Tm.Assemble, func() error {
			one := func(first, count int) error {
				if count <= 0 {
					return nil
				}
				return launch(asm[a], map[string]int64{kpum.Pairs: int64(count * a * a), kpum.C0: int64(first),
					kpum.E0: int64(first - ch.First), kpum.Batch: int64(ch.Count)}, b.bufs)
			}
			if cfg.Strategy == Atomic {
				return one(ch.First, ch.Count)
			}
			// Colour groups are ordered and contiguous: launch each
			// group's part of the batch, one after another.
			for g := range len(b.Groups) - 1 {
				lo, hi := max(int(b.Groups[g]), ch.First), min(int(b.Groups[g+1]), ch.First+ch.Count)
				if err := one(lo, hi-lo); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	out.Tm.Total = out.Tm.Setup + out.Tm.Decompose + out.Tm.Integrate + out.Tm.Assemble
	out.Launches = l.launches
	if os.Getenv("BESPOKE_PUM_TRACE") != "" {
		t := *r
		if keep != r { // both runners' arenas, allocations and uploads
			t.used, t.room, t.nAlloc, t.allocT = t.used+keep.used, t.room+keep.room, t.nAlloc+keep.nAlloc, t.allocT+keep.allocT
			t.nUpload, t.uploadT = t.nUpload+keep.nUpload, t.uploadT+keep.uploadT
		}
		fmt.Fprintf(os.Stderr, "pum trace: arena %d of %d bytes used; %d allocations %v, %d uploads %v, %d launches, %d timed sections %v (device %v); set-up %v decomposition %v integration %v assembly %v\n",
			t.used, t.room, t.nAlloc, t.allocT, t.nUpload, t.uploadT, l.launches, l.sections, l.sectionT, l.devT, out.Tm.Setup, out.Tm.Decompose, out.Tm.Integrate, out.Tm.Assemble)
	}

	// The host's view of the result, outside the timings: with device
	// decomposition the cover is built here and the device's pattern
	// checked against it.
	if c == nil {
		if c, err = pum.UniformCover(cfg.Dim, cfg.Level, pum.DefaultAlpha, cfg.Periodic); err != nil {
			return nil, err
		}
	}
	sp.Cover = c
	// The matrix and load come back unless a solve reads them where they
	// are or Keep leaves them there (and the system keeps them nil); the
	// device's pattern is checked either way, as the solve reads it too.
	td := time.Now()
	var a *pum.BSR
	var f []float64
	if hostSys {
		val, err := downloadReals(bufs["val"], entries, cfg.DType)
		if err != nil {
			return nil, err
		}
		a = &pum.BSR{N: c.N, B: B, RowPtr: c.NbrPtr, Col: c.Nbr, Val: val}
		if f, err = downloadReals(bufs["f"], int64(np*B), cfg.DType); err != nil {
			return nil, err
		}
	}
	if onDevice {
		if err := checkPattern(bufs, c); err != nil {
			return nil, err
		}
	}
	if hostSys {
		out.Download = time.Since(td)
	}
	out.DeviceOnly = !hostSys
	var dec *pum.Decomposition
	if onDevice {
		dec = dc.Summary(c, sizes)
	} else {
		dec = pl.Dec
	}
	out.Sys = &pum.System{Cover: c, Space: sp, Dec: dec, Rule: rule, A: a, F: f}
	if cfg.Solve != nil {
		// The matrix, its pattern and the load are still on the device,
		// in keep's buffers (keep.close runs on return): PCG reads them
		// there. The rest of the assembly's buffers (r's) are freed
		// first, so that PCG's vectors do not add to them; the deferred
		// r.close then frees nothing more.
		m := solve.BSR{N: np, B: B, Blocks: blocks, RowPtr: bufs["rowptr"], Col: bufs["col"], Val: bufs["val"]}
		rhs := bufs["f"]
		r.close()
		if out.Solved, err = solve.PCG(dev, m, rhs, solve.PCGOptions{DType: cfg.DType, Tol: cfg.Solve.Tol, MaxIter: cfg.Solve.MaxIter}); err != nil {
			return nil, fmt.Errorf("pum: device solve: %w", err)
		}
	}
	return out, nil
}

// launcher launches a program's kernels with the run's buffers, which
// the run's runners own (arena views among them).
type launcher struct {
	prog     *build.Program
	bufs     map[string]device.Buffer // by parameter name
	launches int
	// Timed sections and their wall time (launch, events, wait), for
	// BESPOKE_PUM_TRACE.
	sections int
	sectionT time.Duration
	devT     []time.Duration // each section's device time
}

// launch runs k with the buffers, those of bin first, then the run's
// own, and those of vals that k takes (a decomposer's values serve
// several kernels).
func (l *launcher) launch(k *kernel.Kernel, vals map[string]int64, bin map[string]device.Buffer) error {
	w := build.With{Values: map[string]int64{}, Use: map[string]device.Buffer{}}
	for _, p := range k.Params {
		if p.Kind != kernel.BufferParam {
			if v, ok := vals[p.Name]; ok {
				w.Values[p.Name] = v
			}
			continue
		}
		b, ok := bin[p.Name]
		if !ok {
			b = l.bufs[p.Name]
		}
		if b == nil {
			return fmt.Errorf("pum: no buffer for %s's parameter %s", k.Name, p.Name)
		}
		w.Use[p.Name] = b
	}
	for _, a := range k.Launch.Grid {
		if v, ok := vals[a.Size]; ok && a.Size != "" {
			w.Values[a.Size] = v
		}
	}
	l.launches++
	return l.prog.Launch(k.Name, w)
}

// elapsed runs f, which launches, and adds its device time to *d.
func (l *launcher) elapsed(d *time.Duration, f func() error) error {
	t0 := time.Now()
	dt, err := l.prog.Elapsed(f)
	*d += dt
	l.devT = append(l.devT, dt)
	l.sections++
	l.sectionT += time.Since(t0)
	return err
}

// patternOnDevice makes the patch data (centre, sup) and the matrix
// pattern (rowptr, col) on the device: the tables up, the pattern kernel.
// The pattern's buffers come from keep (a solve reads them after the
// assembly), the rest from r. It adds the time to *tm: device time of
// the kernel, wall time of the rest.
func patternOnDevice(r, keep *runner, l *launcher, dc *kpum.Decomposer, pattern *kernel.Kernel, tm *time.Duration) (err error) {
	t0 := time.Now()
	if l.bufs["sgeo"], err = r.reals(dc.SGeo); err != nil {
		return err
	}
	if l.bufs["snbr"], err = r.ints(dc.SNbr); err != nil {
		return err
	}
	rb := int64(r.dt.Bytes())
	for name, n := range map[string]int64{"centre": rb * int64(dc.N*dc.Dim), "sup": rb * int64(dc.N*dc.Dim)} {
		if l.bufs[name], err = r.alloc(n); err != nil {
			return err
		}
	}
	for name, n := range map[string]int64{"rowptr": 4 * int64(dc.N+1), "col": 4 * dc.Blocks} {
		if l.bufs[name], err = keep.alloc(n); err != nil {
			return err
		}
	}
	*tm += time.Since(t0)
	return l.elapsed(tm, func() error { return l.launch(pattern, dc.Values(), nil) })
}

// decompKernels are the device decomposition's kernels: the pattern,
// and the count and fill kernels of ColourOrder or PatchOrder's fill.
type decompKernels struct {
	order                kpum.BinOrder
	pattern, count, fill *kernel.Kernel
}

func newDecompKernels(ds kpum.DecompSpec, order kpum.BinOrder, bins []int) (dk decompKernels, err error) {
	dk.order = order
	if dk.pattern, err = kpum.PatternKernel(ds); err != nil {
		return dk, err
	}
	switch order {
	case kpum.PatchOrder:
		dk.fill, err = kpum.FillPatchKernel(ds, bins)
		return dk, err
	case kpum.SetOrder:
		dk.fill, err = kpum.FillSetKernel(ds, bins)
		return dk, err
	}
	if dk.count, err = kpum.CountKernel(ds); err != nil {
		return dk, err
	}
	dk.fill, err = kpum.FillKernel(ds, bins)
	return dk, err
}

func (dk decompKernels) kernels() []*kernel.Kernel {
	if dk.count == nil {
		return []*kernel.Kernel{dk.pattern, dk.fill}
	}
	return []*kernel.Kernel{dk.pattern, dk.count, dk.fill}
}

// decomposeOnDevice runs the device decomposition (the pattern kernel
// has run): the tables up; in ColourOrder the count kernel, the
// histogram down and its prefix sums, the cursors up; the bins' buffers
// and the fill kernel. It adds the time to *tm: device time of the
// kernels, wall time of the rest.
func decomposeOnDevice(r *runner, l *launcher, dc *kpum.Decomposer, dk decompKernels, tm *time.Duration) (_ []devBin, err error) {
	bufs, launch, elapsed := l.bufs, l.launch, l.elapsed
	t0 := time.Now()
	if bufs["spt"], err = r.reals(dc.SPt); err != nil {
		return nil, err
	}
	tables := map[string][]int32{"sptr": dc.SPtr, "sivl": dc.SIvl, "scnt": dc.SCnt}
	switch dk.order {
	case kpum.SetOrder:
		tables["sset"] = dc.SSet
	case kpum.ColourOrder:
		tables = map[string][]int32{"sptr": dc.SPtr, "sivl": dc.SIvl, "hist": make([]int32, dc.HistLen())}
	}
	for name, x := range tables {
		if bufs[name], err = r.ints(x); err != nil {
			return nil, err
		}
	}
	*tm += time.Since(t0)
	sizes := dc.PatchBins
	if dk.order == kpum.ColourOrder {
		if err := elapsed(tm, func() error { return launch(dk.count, dc.Values(), nil) }); err != nil {
			return nil, err
		}
		t1 := time.Now()
		raw := make([]byte, 4*dc.HistLen())
		if err := bufs["hist"].Download(raw); err != nil {
			return nil, err
		}
		hist := make([]int32, dc.HistLen())
		for i, v := range kernel.DecodeInts(4, raw) {
			hist[i] = int32(v)
		}
		if sizes, err = dc.Prefix(hist); err != nil {
			return nil, err
		}
		if err := bufs["hist"].Upload(kernel.EncodeInts(4, widen(hist))); err != nil {
			return nil, err
		}
		*tm += time.Since(t1)
	}
	t2 := time.Now()
	var bins []devBin
	fb := map[string]device.Buffer{}
	for _, s := range sizes {
		b := devBin{DeviceBin: s, bufs: map[string]device.Buffer{}}
		for name, n := range map[string]int64{"lo": int64(r.dt.Bytes()) * int64(s.Cells*dc.Dim), "hi": int64(r.dt.Bytes()) * int64(s.Cells*dc.Dim), "act": 4 * int64(s.Cells*s.Active)} {
			if b.bufs[name], err = r.alloc(n); err != nil {
				return nil, err
			}
			fb[fmt.Sprintf("%s%d", name, s.Active)] = b.bufs[name]
		}
		bins = append(bins, b)
	}
	for _, a := range dc.Bins { // bins without cells (none on a uniform cover) get a stand-in
		for _, name := range []string{"lo", "hi", "act"} {
			key := fmt.Sprintf("%s%d", name, a)
			if fb[key] == nil {
				if fb[key], err = r.alloc(8); err != nil {
					return nil, err
				}
			}
		}
	}
	*tm += time.Since(t2)
	if err := elapsed(tm, func() error { return launch(dk.fill, dc.Values(), fb) }); err != nil {
		return nil, err
	}
	return bins, nil
}

// checkPattern compares the matrix pattern the device made with the
// cover's (a wrong pattern would put the matrix's values in the wrong
// blocks).
func checkPattern(bufs map[string]device.Buffer, c *pum.Cover) error {
	for name, want := range map[string][]int32{"rowptr": c.NbrPtr, "col": c.Nbr} {
		raw := make([]byte, 4*len(want))
		if err := bufs[name].Download(raw); err != nil {
			return err
		}
		for i, got := range kernel.DecodeInts(4, raw) {
			if w := int64(want[i]); got != w {
				return fmt.Errorf("pum: the device's matrix pattern differs from the cover's: %s[%d] = %d, want %d", name, i, got, w)
			}
		}
	}
	return nil
}

func widen(x []int32) []int64 {
	wide := make([]int64, len(x))
	for i, v := range x {
		wide[i] = int64(v)
	}
	return wide
}

// littleEndian: the host stores a float64 as the devices' buffers do.
var littleEndian = func() bool { x := uint16(1); return *(*byte)(unsafe.Pointer(&x)) == 1 }()

// downloadReals reads the first n reals of buf as float64. An f64 buffer
// goes straight into the result's memory (on a little-endian host), so a
// large matrix is held once, not as bytes and again decoded: the 2-D
// level 9, p = 5 matrix is 8.3 GB.
func downloadReals(buf device.Buffer, n int64, dt kernel.DType) ([]float64, error) {
	if n == 0 {
		return nil, nil
	}
	if dt == kernel.F64 && littleEndian {
		out := make([]float64, n)
		if err := buf.Download(unsafe.Slice((*byte)(unsafe.Pointer(&out[0])), n*8)); err != nil {
			return nil, err
		}
		return out, nil
	}
	raw := make([]byte, n*int64(dt.Bytes()))
	if err := buf.Download(raw); err != nil {
		return nil, err
	}
	return dt.Decode(raw), nil
}
