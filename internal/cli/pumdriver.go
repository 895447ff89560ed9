package cli

import (
	"fmt"
	"os"
	"time"
	"unsafe"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/emit"
	"github.com/bespoke-hpc/bespoke/kernel"
	kpum "github.com/bespoke-hpc/bespoke/kernel/pum"
	"github.com/bespoke-hpc/bespoke/pum"
	"github.com/bespoke-hpc/bespoke/solve"
	"github.com/bespoke-hpc/bespoke/tune"
)

// Assembly strategies of the device pipeline.
const (
	pumAtomic = "atomic" // atomic adds, every cell of a batch at once
	pumColour = "colour" // plain adds, one colour group per launch
	pumFused  = "fused"  // integration kernels add into the matrix atomically: no element buffer
)

// Integration kernels of the device pipeline.
const (
	pumThread = "thread" // kpum.Integrate: one thread per cell (the CPU kernel)
	pumGroup  = "group"  // kpum.IntegrateGroup: a team of threads per cell (the GPU kernel)
)

// pumConfig is one PUM assembly on a device (or in Go: backend reference).
type pumConfig struct {
	dim, level, degree int
	periodic           bool
	coeff              kpum.Coefficients
	dt                 kernel.DType
	strategy           string
	layout             kpum.Layout
	integrator         string // pumThread or pumGroup; "": group on a GPU, thread on a CPU (fused: always group)
	threads            int    // threads per block; 0: 64–256 (group, by dimension and degree) or 64 (thread) on a GPU, 16 or 1 on a CPU
	tiles              int    // group kernel: tiles per thread (kpum.Spec.Tiles)
	side               int    // group kernel: tile side (kpum.Spec.Side)
	vec                int    // group kernel: staged values a load (kpum.Spec.Vec)
	mma                int    // group kernel: tensor-core block side (kpum.Spec.MMA; 0 the SIMT tiles, -1 the default)
	budget             int64  // element-buffer entries per batch; 0: pumBudget
	decompose          string // pumDecompDevice or pumDecompHost; "": device
	// perCell keeps the fused strategy's device decomposition in
	// PatchOrder, one cell per team; otherwise a uniform cover's bins
	// come in SetOrder and the merged kernel (Spec.Merge) takes a set's
	// cells together.
	perCell bool
	// solve, when set, solves A u = f on the device after assembly, from
	// the matrix and load still there (solve.PCG: CG with block Jacobi).
	solve *pumSolve
}

// pumSolve is the device solve after a device assembly.
type pumSolve struct {
	tol     float64 // relative residual ‖f − A u‖/‖f‖ by the recurrence
	maxIter int
	// host also downloads the matrix and load into the outcome's system
	// (tests check the device solve against pum.Solve on them); without
	// it they stay on the device: only the solution comes back.
	host bool
}

// Where the decomposition runs: on the device from the uniform cover's
// split tables (kpum.Decomposer, with the patch data and matrix pattern
// made there too), or on the host (pum.Decompose and kpum.NewPlan, the
// cover built and uploaded: the reference for comparisons, and the way
// for covers without tables).
const (
	pumDecompDevice = "device"
	pumDecompHost   = "host"
)

// pumBudget bounds the element buffer of one batch (entries: 128 MiB in
// f64), so device memory does not grow with the level beyond the matrix.
const pumBudget = 1 << 24

// pumOutcome is an assembled system with the thesis's split.
type pumOutcome struct {
	sys        *pum.System
	tm         pum.Timings
	build      time.Duration // kernel compilation (cached), outside Total
	download   time.Duration // matrix and load back to the host, outside Total; 0 when deviceOnly
	launches   int
	batches    int
	integrator string // the integration kernel used (pumThread or pumGroup)
	merge      int    // cells the fused kernel took together (1: one)
	// solved is the device solve (pumConfig.solve), outside Total; nil
	// without one.
	solved *solve.PCGResult
	// deviceOnly: a device solve (pumConfig.solve without host) read the
	// matrix and load where they were assembled and neither came back:
	// sys.A and sys.F are nil, download is 0.
	deviceOnly bool
}

// pumReference assembles in float64 Go (pum.Build, all cores).
func pumReference(cfg pumConfig) (*pumOutcome, error) {
	sys, tm, err := pum.Build(pum.Config{Dim: cfg.dim, Level: cfg.level, Degree: cfg.degree, Periodic: cfg.periodic, Coeffs: cfg.coeff.Reference()})
	if err != nil {
		return nil, err
	}
	return &pumOutcome{sys: sys, tm: tm}, nil
}

// pumRunner holds a device run's buffers.
type pumRunner struct {
	dev  device.Device
	dt   kernel.DType
	bufs []device.Buffer
	// Wall time of the allocations and uploads, for BESPOKE_PUM_TRACE.
	allocT, uploadT time.Duration
	nAlloc, nUpload int
	// arena, where the device can slice buffers (device.Slicer): one
	// allocation that alloc takes views of while room is left (on the
	// H100 the 26 allocations of 2-D l9 p = 1 took 1.2–1.5 ms of its
	// 5.5).
	arena      device.Buffer
	used, room int64
}

// reserve allocates the arena of bytes where the device can slice
// buffers; allocations beyond it fall back to their own.
func (r *pumRunner) reserve(bytes int64) error {
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

// pumAlign rounds a buffer's size up to device.SliceAlign (at least 8
// bytes: no buffer is empty).
func pumAlign(n int64) int64 {
	return (max(n, 8) + device.SliceAlign - 1) / device.SliceAlign * device.SliceAlign
}

// pumArenaBytes is what a device-decomposition run allocates before its
// element buffers (the matrix, load, rule, tables, patch data, pattern
// and bins, each aligned), so that one allocation serves them all.
func pumArenaBytes(dc *kpum.Decomposer, rb int64, B, nq int, entries int64, colour bool) int64 {
	n := 2*pumAlign(int64(nq)*rb) + pumAlign(entries*rb) + pumAlign(int64(dc.N*B)*rb) +
		pumAlign(int64(len(dc.SGeo))*rb) + pumAlign(4*int64(len(dc.SNbr))) + 2*pumAlign(rb*int64(dc.N*dc.Dim)) +
		pumAlign(4*int64(dc.N+1)) + pumAlign(4*dc.Blocks) + pumAlign(rb*int64(len(dc.SPt))) +
		pumAlign(4*int64(len(dc.SPtr))) + pumAlign(4*int64(len(dc.SIvl))) + pumAlign(4*int64(len(dc.SCnt))) + pumAlign(4*int64(len(dc.SSet)))
	if colour {
		n += pumAlign(4 * int64(dc.HistLen()))
	}
	for _, b := range dc.PatchBins { // every order's bins have these sizes
		n += 2*pumAlign(rb*int64(b.Cells*dc.Dim)) + pumAlign(4*int64(b.Cells*b.Active))
	}
	return n + int64(3*len(dc.Bins))*pumAlign(0) // stand-ins for empty bins
}

// pumKeptBytes is the part of pumArenaBytes a solve keeps after the
// assembly: the matrix, the load and the pattern, each aligned.
func pumKeptBytes(rb int64, B, np int, blocks int64) int64 {
	return pumAlign(blocks*int64(B)*int64(B)*rb) + pumAlign(int64(np*B)*rb) + pumAlign(4*int64(np+1)) + pumAlign(4*blocks)
}

// close frees r's allocations (the arena's views with it) and forgets
// them: a second close frees nothing.
func (r *pumRunner) close() {
	for _, b := range r.bufs {
		b.Free()
	}
	r.bufs, r.arena, r.used, r.room = nil, nil, 0, 0
}

func (r *pumRunner) alloc(bytes int64) (device.Buffer, error) {
	t0 := time.Now()
	if n := pumAlign(bytes); r.arena != nil && r.used+n <= r.room {
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
func (r *pumRunner) upload(b device.Buffer, x []byte) error {
	t0 := time.Now()
	err := b.Upload(x)
	r.uploadT += time.Since(t0)
	r.nUpload++
	return err
}

func (r *pumRunner) reals(x []float64) (device.Buffer, error) {
	b, err := r.alloc(int64(len(x) * r.dt.Bytes()))
	if err != nil {
		return nil, err
	}
	return b, r.upload(b, r.dt.Encode(x))
}

func (r *pumRunner) ints(x []int32) (device.Buffer, error) {
	b, err := r.alloc(int64(4 * len(x)))
	if err != nil {
		return nil, err
	}
	return b, r.upload(b, kernel.EncodeInts(4, widen(x)))
}

// pumBin is a bin of the device's plan with its buffers lo, hi, act.
type pumBin struct {
	kpum.DeviceBin
	bufs map[string]device.Buffer
}

// pumOnDevice runs the pipeline on dev: set-up (space, rule, matrix and
// load buffers; the patch data and the matrix pattern made on the device
// from small tables, or with host decomposition the cover built and
// uploaded), decomposition (on the device: for the colour strategy count,
// a small histogram to the host for the prefix sums and fill, for the
// others one fill in patch order; or on the host: pum.Decompose,
// kpum.NewPlan, the bins uploaded), then per batch the integration kernel
// and the assembly kernels on the device into the device's matrix and
// load, and one download at the end. Nothing is accumulated on the host.
// Every kernel is built in one program before the device runs any
// (outside the timings).
func pumOnDevice(dev device.Device, cfg pumConfig) (_ *pumOutcome, err error) {
	if cfg.dt == kernel.F64 && !dev.Info().FP64 {
		return nil, fmt.Errorf("pum: %s has no fp64", dev.Info().Name)
	}
	if cfg.strategy != pumAtomic && cfg.strategy != pumColour && cfg.strategy != pumFused {
		return nil, fmt.Errorf("pum: assembly strategy %q: want %s, %s or %s", cfg.strategy, pumAtomic, pumColour, pumFused)
	}
	switch cfg.decompose {
	case "":
		cfg.decompose = pumDecompDevice
	case pumDecompDevice, pumDecompHost:
	default:
		return nil, fmt.Errorf("pum: decomposition %q: want %s or %s", cfg.decompose, pumDecompDevice, pumDecompHost)
	}
	onDevice := cfg.decompose == pumDecompDevice
	gpu := dev.Info().GPU
	switch {
	case cfg.strategy == pumFused:
		if cfg.integrator == pumThread {
			return nil, fmt.Errorf("pum: the fused strategy needs the group integration kernel")
		}
		cfg.integrator = pumGroup
	case cfg.integrator == "":
		cfg.integrator = pumThread
		if gpu {
			cfg.integrator = pumGroup
		}
	case cfg.integrator != pumThread && cfg.integrator != pumGroup:
		return nil, fmt.Errorf("pum: integration kernel %q: want %s or %s", cfg.integrator, pumThread, pumGroup)
	}
	fused := cfg.strategy == pumFused
	if cfg.threads == 0 {
		switch {
		case gpu && cfg.integrator == pumGroup:
			// Measured on the H100 (fused, 2-D level 9, 3-D level 6,
			// total ms, with the tile sides below; session 6): 2-D p = 3
			// 19.6 with 64 threads (24.0 with 128); p = 2, 4 and 5 with
			// 128 (p = 5: 162 against 229 with 256); 3-D p = 2 with 128
			// (0.61 s against 0.85 with 256 when first measured), p = 1
			// with 128 in f64 (30.0 against 40.5 with 256) but 256 in
			// f32 (19.5 against 22.8).
			switch {
			case cfg.dim == 3 && cfg.degree == 1 && cfg.dt == kernel.F32:
				cfg.threads = 256
			case cfg.dim == 3:
				cfg.threads = 128
			case cfg.degree == 1 && cfg.tiles == 0 && cfg.side == 0:
				// With the merged kernel and the hats once per point
				// (2-D l9 p = 1 integration: 1.75 ms with 3×3 tiles
				// over 256 threads, 1.85–1.9 over 64 or 128, 2.3 with
				// the 2×2 tiles, two per thread, over 64).
				cfg.threads = 256
			case cfg.degree == 0 || cfg.degree == 3:
				cfg.threads = 64
			default:
				cfg.threads = 128
			}
		case gpu:
			cfg.threads = 64
		case cfg.integrator == pumGroup:
			cfg.threads = 16 // a block's threads run as loops in one CPU thread
		default:
			cfg.threads = 1
		}
	}
	defaultShape := cfg.tiles == 0 && cfg.side == 0 // before the defaults below
	if gpu && cfg.integrator == pumGroup && cfg.tiles == 0 && cfg.side == 0 {
		// Measured on the H100 (fused, 2-D level 9, 3-D level 6, total
		// ms, f64; f32 agrees): R×R tiles, one per thread, as large as
		// the element block pays for — 6×6 for 2-D p = 4 and 5 (p = 5:
		// 158–162 against 203 with 4×4; p = 4: 60 against 81 with
		// 3×3), 5×5 for 2-D p = 2 (7.1 against 9.1) and 3-D p = 1 (30.0
		// against 35.7), 4×4 for 2-D p = 3 (19.6 against 24 with 5×5)
		// and 3-D p = 2 (292 against 312 with 6×6), 3×3 for 2-D p = 1
		// (above), 2×2 tiles two per thread for the small blocks of p = 0.
		switch {
		case cfg.degree == 0:
			cfg.side, cfg.tiles = 2, 2
		case cfg.dim == 2 && cfg.degree == 1:
			cfg.side, cfg.tiles = 3, 1
		case cfg.dim == 2 && cfg.degree >= 4:
			cfg.side, cfg.tiles = 6, 1
		case cfg.dim == 2 && cfg.degree == 2, cfg.dim == 3 && cfg.degree == 1:
			cfg.side, cfg.tiles = 5, 1
		default:
			cfg.side, cfg.tiles = 4, 1
		}
	}
	cuda := dev.Info().Backend == "cuda" && tune.CUDAArch(dev.Info().Arch) >= 80
	switch {
	case cfg.mma > 0 && (!cuda || cfg.integrator != pumGroup):
		return nil, fmt.Errorf("pum: --mma %d needs the group kernel on a CUDA device with tensor cores (sm_80 or later)", cfg.mma)
	case cfg.mma < 0:
		// Measured on the H100 (fused, integration ms, SIMT tiles against
		// W = 16, interleaved runs): 3-D l6 p = 1 f64 27.4 against 26.0,
		// f32 17.5–17.7 against 16.6; everywhere else the SIMT tiles won
		// (2-D l9 p = 5 f64 143 against 148, f32 89 against 130; 3-D l6
		// p = 2 f64 282 against 291, f32 161 against 183).
		cfg.mma = 0
		if cuda && fused && cfg.integrator == pumGroup && cfg.dim == 3 && cfg.degree == 1 && defaultShape {
			cfg.mma = 16
		}
	}
	if cfg.budget == 0 {
		cfg.budget = pumBudget
	}
	out := &pumOutcome{integrator: cfg.integrator}
	r := &pumRunner{dev: dev, dt: cfg.dt}
	defer r.close()
	// keep holds what a solve reads after the assembly (the matrix, its
	// pattern and the load), in an allocation of its own, so that r's
	// (rule, tables, patch data, bins, element buffers) can be freed
	// before solve.PCG allocates its vectors; without a solve, one
	// runner holds everything.
	keep := r
	if cfg.solve != nil {
		keep = &pumRunner{dev: dev, dt: cfg.dt}
		defer keep.close()
	}

	// Host set-up: the space and rule, the cover (host decomposition)
	// or the decomposition's tables (device).
	t0 := time.Now()
	sp, err := pum.NewSpace(&pum.Cover{Dim: cfg.dim}, cfg.degree)
	if err != nil {
		return nil, err
	}
	rule, err := pum.NewRule(cfg.dim, cfg.degree+1)
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
		if dc, err = kpum.NewDecomposer(cfg.dim, cfg.level, pum.DefaultAlpha, cfg.periodic); err != nil {
			return nil, err
		}
		tables = time.Since(tt)
		np, blocks = dc.N, dc.Blocks
	} else {
		if c, err = pum.UniformCover(cfg.dim, cfg.level, pum.DefaultAlpha, cfg.periodic); err != nil {
			return nil, err
		}
		np, blocks = c.N, int64(len(c.Nbr))
	}
	entries := blocks * int64(B) * int64(B)
	if entries > pum.MaxMatrixEntries {
		return nil, fmt.Errorf("pum: %d matrix entries exceed MaxMatrixEntries = %d (lower the level or degree)", entries, int64(pum.MaxMatrixEntries))
	}
	rb := int64(cfg.dt.Bytes())
	// Matrix, load, element buffer and loads, patch data, cells (≤ 16·N).
	ebuf := cfg.budget
	if fused {
		ebuf = 0
	}
	need := rb*(entries+int64(np*B)+2*ebuf) + rb*int64(4*np*cfg.dim) + int64(16*np)*(rb*2*int64(cfg.dim)+4*8)
	if m := dev.Info().MemoryBytes; m > 0 && need > m {
		return nil, fmt.Errorf("pum: needs about %d MiB of device memory, %s has %d MiB", need>>20, dev.Info().Name, m>>20)
	}
	// The host holds the matrix in float64 (f32 also its downloaded
	// bytes; see downloadReals), on a CPU device beside the device's own
	// copy; not after a device solve, which leaves it there.
	hostSys := cfg.solve == nil || cfg.solve.host
	host := int64(0)
	if hostSys {
		host = entries * 8
		if cfg.dt != kernel.F64 {
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
	out.tm.Setup = t1.Sub(t0) - tables
	out.tm.Decompose = tables

	// Host decomposition: the plan, before the kernels it sizes.
	var pl *kpum.Plan
	var actives []int // the bins the kernels are built for
	if onDevice {
		actives = dc.Bins
	} else {
		dec, err := pum.Decompose(c, 0)
		if err != nil {
			return nil, err
		}
		if pl, err = kpum.NewPlan(dec, cfg.strategy == pumColour); err != nil {
			return nil, err
		}
		if cfg.strategy == pumColour && pl.Colours == 0 {
			return nil, fmt.Errorf("pum: the cover has no colouring; use --strategy atomic")
		}
		for _, b := range pl.Bins {
			actives = append(actives, b.Active)
		}
	}
	t2 := time.Now()
	out.tm.Decompose += t2.Sub(t1)

	// Kernels: the decomposition's, one integration and one assembly
	// kernel per bin and the zeroing kernel, in one program (one
	// compiler call; cached by source).
	spec := kpum.Spec{Dim: cfg.dim, Degree: cfg.degree, Periodic: cfg.periodic, Coeff: cfg.coeff, DType: cfg.dt, Threads: cfg.threads, Layout: cfg.layout, Tiles: cfg.tiles, Side: cfg.side, Vec: cfg.vec, MMA: cfg.mma}
	var ks []*kernel.Kernel
	var dk pumDecompKernels
	if onDevice {
		// The colour strategy needs the colour groups; the atomic adds
		// favour a patch's cells together; the fused kernel sums a set's
		// cells before its atomics, 2^d times fewer (2-D l9 p = 1 made
		// 235 M atomic adds, 3-D l6 p = 1 4 G).
		order := kpum.PatchOrder
		switch {
		case cfg.strategy == pumColour:
			order = kpum.ColourOrder
		case fused && !cfg.perCell && dc.SetCells > 1 && (cfg.dim == 3 || cfg.degree <= 3):
			// Not for 2-D p ≥ 4, whose large blocks gained nothing (on
			// the H100, 2-D l9 p = 5 integrated in 208 ms merged, 197 per
			// cell; p = 1 in 2.4 against 3.0, 3-D l6 p = 1 33 against 42).
			order, spec.Merge = kpum.SetOrder, dc.SetCells
		}
		threads := 128
		if !gpu {
			threads = 16
		}
		if dk, err = newPUMDecompKernels(kpum.DecompSpec{Dim: cfg.dim, DType: cfg.dt, Threads: threads}, order, dc.Bins); err != nil {
			return nil, err
		}
		ks = append(ks, dk.kernels()...)
	}
	integ := map[int]*kernel.Kernel{}
	asm := map[int]*kernel.Kernel{}
	for _, a := range actives {
		s := spec
		s.Active = a
		if cfg.integrator == pumGroup {
			integ[a], err = kpum.IntegrateGroup(s, fused)
		} else {
			integ[a], err = kpum.Integrate(s)
		}
		if err != nil {
			return nil, err
		}
		ks = append(ks, integ[a])
		if fused {
			continue
		}
		if asm[a], err = kpum.Assemble(s, cfg.strategy == pumAtomic); err != nil {
			return nil, err
		}
		ks = append(ks, asm[a])
	}
	zt := 256
	if !gpu {
		zt = 1024
	}
	zero, err := kpum.Zero(cfg.dt, zt)
	if err != nil {
		return nil, err
	}
	ks = append(ks, zero)
	src, err := emit.Render(dev.Dialect(), ks...)
	if err != nil {
		return nil, err
	}
	prog, err := dev.Build(src)
	if err != nil {
		return nil, err
	}
	defer prog.Close()
	dks := map[string]device.Kernel{}
	for _, k := range ks {
		if dks[k.Name], err = prog.Kernel(k.Name); err != nil {
			return nil, err
		}
	}
	t3 := time.Now()
	out.build = t3.Sub(t2)

	l := &pumLauncher{dev: dev, dks: dks, bufs: map[string]device.Buffer{}}
	bufs, launch, elapsed := l.bufs, l.launch, l.elapsed

	// Device set-up: the rule, the matrix and load, the patch data and
	// the matrix pattern (made on the device, or uploaded).
	t4 := time.Now()
	if onDevice {
		arena := pumArenaBytes(dc, rb, B, len(rule.X), entries, cfg.strategy == pumColour)
		if keep != r {
			kept := pumKeptBytes(rb, B, np, blocks)
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
	out.tm.Setup += time.Since(t4)
	if onDevice {
		if err := pumPatternOnDevice(r, keep, l, dc, dk.pattern, &out.tm.Setup); err != nil {
			return nil, err
		}
	}

	// Decomposition into the bins.
	var bins []pumBin
	if onDevice { // adds its own time
		if bins, err = pumDecomposeOnDevice(r, l, dc, dk, &out.tm.Decompose); err != nil {
			return nil, err
		}
	}
	t5 := time.Now()
	if !onDevice {
		sizes := pl.Sizes()
		for bi, b := range pl.Bins {
			pb := pumBin{DeviceBin: sizes[bi], bufs: map[string]device.Buffer{}}
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
	chunks, err := kpum.BinBatches(sizes, B, cfg.budget)
	if err != nil {
		return nil, err
	}
	out.merge = max(spec.Merge, 1)
	if fused { // one launch per bin: no element buffer to bound it
		chunks = chunks[:0]
		for bi, b := range bins {
			if b.Cells%out.merge != 0 {
				return nil, fmt.Errorf("pum: bin %d holds %d cells, not whole active sets of %d", b.Active, b.Cells, out.merge)
			}
			chunks = append(chunks, kpum.Chunk{Bin: bi, First: 0, Count: b.Cells})
		}
	}
	maxE, maxF := int64(0), int64(0)
	for _, b := range bins {
		nf := int64(b.Active * B)
		maxE = max(maxE, min(cfg.budget/(nf*nf), int64(b.Cells))*nf*nf)
		maxF = max(maxF, min(cfg.budget/(nf*nf), int64(b.Cells))*nf)
	}
	out.tm.Decompose += time.Since(t5)
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
	err = elapsed(&out.tm.Assemble, func() error {
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
		out.batches++
		return launch(integ[b.Active], map[string]int64{kpum.Cells: int64(ch.Count), kpum.C0: int64(ch.First), kpum.Batch: int64(ch.Count)}, b.bufs)
	}
	if fused { // the bins' launches in one timed section: one wait, not one per bin
		err := elapsed(&out.tm.Integrate, func() error {
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
		if err := elapsed(&out.tm.Integrate, func() error { return integrate(ch) }); err != nil {
			return nil, err
		}
		err = elapsed(&out.tm.Assemble, func() error {
			one := func(first, count int) error {
				if count <= 0 {
					return nil
				}
				return launch(asm[a], map[string]int64{kpum.Pairs: int64(count * a * a), kpum.C0: int64(first),
					kpum.E0: int64(first - ch.First), kpum.Batch: int64(ch.Count)}, b.bufs)
			}
			if cfg.strategy == pumAtomic {
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
	out.tm.Total = out.tm.Setup + out.tm.Decompose + out.tm.Integrate + out.tm.Assemble
	out.launches = l.launches
	if os.Getenv("BESPOKE_PUM_TRACE") != "" {
		t := *r
		if keep != r { // both runners' arenas, allocations and uploads
			t.used, t.room, t.nAlloc, t.allocT = t.used+keep.used, t.room+keep.room, t.nAlloc+keep.nAlloc, t.allocT+keep.allocT
			t.nUpload, t.uploadT = t.nUpload+keep.nUpload, t.uploadT+keep.uploadT
		}
		fmt.Fprintf(os.Stderr, "pum trace: arena %d of %d bytes used; %d allocations %v, %d uploads %v, %d launches, %d timed sections %v (device %v); set-up %v decomposition %v integration %v assembly %v\n",
			t.used, t.room, t.nAlloc, t.allocT, t.nUpload, t.uploadT, l.launches, l.sections, l.sectionT, l.devT, out.tm.Setup, out.tm.Decompose, out.tm.Integrate, out.tm.Assemble)
	}

	// The host's view of the result, outside the timings: with device
	// decomposition the cover is built here and the device's pattern
	// checked against it.
	if c == nil {
		if c, err = pum.UniformCover(cfg.dim, cfg.level, pum.DefaultAlpha, cfg.periodic); err != nil {
			return nil, err
		}
	}
	sp.Cover = c
	// The matrix and load come back unless a solve reads them where they
	// are (and the system keeps them nil); the device's pattern is
	// checked either way, as the solve reads it too.
	td := time.Now()
	var a *pum.BSR
	var f []float64
	if hostSys {
		val, err := downloadReals(bufs["val"], entries, cfg.dt)
		if err != nil {
			return nil, err
		}
		a = &pum.BSR{N: c.N, B: B, RowPtr: c.NbrPtr, Col: c.Nbr, Val: val}
		if f, err = downloadReals(bufs["f"], int64(np*B), cfg.dt); err != nil {
			return nil, err
		}
	}
	if onDevice {
		if err := pumCheckPattern(bufs, c); err != nil {
			return nil, err
		}
	}
	if hostSys {
		out.download = time.Since(td)
	}
	out.deviceOnly = !hostSys
	var dec *pum.Decomposition
	if onDevice {
		dec = dc.Summary(c, sizes)
	} else {
		dec = pl.Dec
	}
	out.sys = &pum.System{Cover: c, Space: sp, Dec: dec, Rule: rule, A: a, F: f}
	if cfg.solve != nil {
		// The matrix, its pattern and the load are still on the device,
		// in keep's buffers (keep.close runs on return): PCG reads them
		// there. The rest of the assembly's buffers (r's) are freed
		// first, so that PCG's vectors do not add to them; the deferred
		// r.close then frees nothing more.
		m := solve.BSR{N: np, B: B, Blocks: blocks, RowPtr: bufs["rowptr"], Col: bufs["col"], Val: bufs["val"]}
		rhs := bufs["f"]
		r.close()
		if out.solved, err = solve.PCG(dev, m, rhs, solve.PCGOptions{DType: cfg.dt, Tol: cfg.solve.tol, MaxIter: cfg.solve.maxIter}); err != nil {
			return nil, fmt.Errorf("pum: device solve: %w", err)
		}
	}
	return out, nil
}

// pumLauncher launches a program's kernels with the run's buffers.
type pumLauncher struct {
	dev      device.Device
	dks      map[string]device.Kernel
	bufs     map[string]device.Buffer // by parameter name
	launches int
	// Timed sections and their wall time (launch, events, wait), for
	// BESPOKE_PUM_TRACE.
	sections int
	sectionT time.Duration
	devT     []time.Duration // each section's device time
}

// launch runs k with the values and buffers: those of bin first, then the
// run's own.
func (l *pumLauncher) launch(k *kernel.Kernel, vals map[string]int64, bin map[string]device.Buffer) error {
	bs := map[string]device.Buffer{}
	for _, p := range k.Params {
		if p.Kind != kernel.BufferParam {
			continue
		}
		b, ok := bin[p.Name]
		if !ok {
			b = l.bufs[p.Name]
		}
		if b == nil {
			return fmt.Errorf("pum: no buffer for %s's parameter %s", k.Name, p.Name)
		}
		bs[p.Name] = b
	}
	lc, args, err := device.Bind(k, vals, bs)
	if err != nil {
		return err
	}
	l.launches++
	return l.dks[k.Name].Launch(lc, args...)
}

// elapsed runs f, which launches, and adds its device time to *d.
func (l *pumLauncher) elapsed(d *time.Duration, f func() error) error {
	t0 := time.Now()
	dt, err := l.dev.Elapsed(f)
	*d += dt
	l.devT = append(l.devT, dt)
	l.sections++
	l.sectionT += time.Since(t0)
	return err
}

// pumPatternOnDevice makes the patch data (centre, sup) and the matrix
// pattern (rowptr, col) on the device: the tables up, the pattern kernel.
// The pattern's buffers come from keep (a solve reads them after the
// assembly), the rest from r. It adds the time to *tm: device time of
// the kernel, wall time of the rest.
func pumPatternOnDevice(r, keep *pumRunner, l *pumLauncher, dc *kpum.Decomposer, pattern *kernel.Kernel, tm *time.Duration) (err error) {
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

// pumDecompKernels are the device decomposition's kernels: the pattern,
// and the count and fill kernels of ColourOrder or PatchOrder's fill.
type pumDecompKernels struct {
	order                kpum.BinOrder
	pattern, count, fill *kernel.Kernel
}

func newPUMDecompKernels(ds kpum.DecompSpec, order kpum.BinOrder, bins []int) (dk pumDecompKernels, err error) {
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

func (dk pumDecompKernels) kernels() []*kernel.Kernel {
	if dk.count == nil {
		return []*kernel.Kernel{dk.pattern, dk.fill}
	}
	return []*kernel.Kernel{dk.pattern, dk.count, dk.fill}
}

// pumDecomposeOnDevice runs the device decomposition (the pattern kernel
// has run): the tables up; in ColourOrder the count kernel, the
// histogram down and its prefix sums, the cursors up; the bins' buffers
// and the fill kernel. It adds the time to *tm: device time of the
// kernels, wall time of the rest.
func pumDecomposeOnDevice(r *pumRunner, l *pumLauncher, dc *kpum.Decomposer, dk pumDecompKernels, tm *time.Duration) (_ []pumBin, err error) {
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
	var bins []pumBin
	fb := map[string]device.Buffer{}
	for _, s := range sizes {
		b := pumBin{DeviceBin: s, bufs: map[string]device.Buffer{}}
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

// pumCheckPattern compares the matrix pattern the device made with the
// cover's (a wrong pattern would put the matrix's values in the wrong
// blocks).
func pumCheckPattern(bufs map[string]device.Buffer, c *pum.Cover) error {
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
