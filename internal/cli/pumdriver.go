package cli

import (
	"fmt"
	"time"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/emit"
	"github.com/bespoke-hpc/bespoke/kernel"
	kpum "github.com/bespoke-hpc/bespoke/kernel/pum"
	"github.com/bespoke-hpc/bespoke/pum"
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
	threads            int    // threads per block; 0: 256 (group) or 64 (thread) on a GPU, 1 on a CPU
	budget             int64  // element-buffer entries per batch; 0: pumBudget
}

// pumBudget bounds the element buffer of one batch (entries: 128 MiB in
// f64), so device memory does not grow with the level beyond the matrix.
const pumBudget = 1 << 24

// pumOutcome is an assembled system with the thesis's split.
type pumOutcome struct {
	sys        *pum.System
	tm         pum.Timings
	build      time.Duration // kernel compilation (cached), outside Total
	download   time.Duration // matrix and load back to the host, outside Total (the matrix stays on the device for a solve)
	launches   int
	batches    int
	integrator string // the integration kernel used (pumThread or pumGroup)
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
}

func (r *pumRunner) close() {
	for _, b := range r.bufs {
		b.Free()
	}
}

func (r *pumRunner) alloc(bytes int64) (device.Buffer, error) {
	b, err := r.dev.Alloc(max(bytes, 8))
	if err != nil {
		return nil, err
	}
	r.bufs = append(r.bufs, b)
	return b, nil
}

func (r *pumRunner) reals(x []float64) (device.Buffer, error) {
	b, err := r.alloc(int64(len(x) * r.dt.Bytes()))
	if err != nil {
		return nil, err
	}
	return b, b.Upload(r.dt.Encode(x))
}

func (r *pumRunner) ints(x []int32) (device.Buffer, error) {
	wide := make([]int64, len(x))
	for i, v := range x {
		wide[i] = int64(v)
	}
	b, err := r.alloc(int64(4 * len(x)))
	if err != nil {
		return nil, err
	}
	return b, b.Upload(kernel.EncodeInts(4, wide))
}

// pumOnDevice runs the pipeline on dev: set-up (cover, space, rule, the
// matrix pattern, uploads of the patch data), decomposition (pum.Decompose
// on the host, binned and ordered by kpum.NewPlan, uploaded), then per
// batch the integration kernel and the assembly kernels on the device
// into the device's matrix and load, and one download at the end. Nothing
// is accumulated on the host.
func pumOnDevice(dev device.Device, cfg pumConfig) (_ *pumOutcome, err error) {
	if cfg.dt == kernel.F64 && !dev.Info().FP64 {
		return nil, fmt.Errorf("pum: %s has no fp64", dev.Info().Name)
	}
	if cfg.strategy != pumAtomic && cfg.strategy != pumColour && cfg.strategy != pumFused {
		return nil, fmt.Errorf("pum: assembly strategy %q: want %s, %s or %s", cfg.strategy, pumAtomic, pumColour, pumFused)
	}
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
			cfg.threads = 256
		case gpu:
			cfg.threads = 64
		case cfg.integrator == pumGroup:
			cfg.threads = 16 // a block's threads run as loops in one CPU thread
		default:
			cfg.threads = 1
		}
	}
	if cfg.budget == 0 {
		cfg.budget = pumBudget
	}
	out := &pumOutcome{integrator: cfg.integrator}
	r := &pumRunner{dev: dev, dt: cfg.dt}
	defer r.close()
	t0 := time.Now()
	c, err := pum.UniformCover(cfg.dim, cfg.level, pum.DefaultAlpha, cfg.periodic)
	if err != nil {
		return nil, err
	}
	sp, err := pum.NewSpace(c, cfg.degree)
	if err != nil {
		return nil, err
	}
	rule, err := pum.NewRule(cfg.dim, cfg.degree+1)
	if err != nil {
		return nil, err
	}
	B := sp.B
	entries := int64(len(c.Nbr)) * int64(B) * int64(B)
	if entries > pum.MaxMatrixEntries {
		return nil, fmt.Errorf("pum: %d matrix entries exceed MaxMatrixEntries = %d (lower the level or degree)", entries, int64(pum.MaxMatrixEntries))
	}
	rb := int64(cfg.dt.Bytes())
	// Matrix, load, element buffer and loads, patch data, cells (≤ 16·N).
	ebuf := cfg.budget
	if fused {
		ebuf = 0
	}
	need := rb*(entries+int64(c.N*B)+2*ebuf) + rb*int64(4*len(c.Centre)) + int64(16*c.N)*(rb*2*int64(cfg.dim)+4*8)
	if m := dev.Info().MemoryBytes; m > 0 && need > m {
		return nil, fmt.Errorf("pum: needs about %d MiB of device memory, %s has %d MiB", need>>20, dev.Info().Name, m>>20)
	}
	// The host holds the downloaded bytes and their float64 decoding
	// (on a CPU device, beside the device's own copy).
	host := entries * (rb + 8)
	if !gpu {
		host += need
	}
	if m := dev.Info().MemoryBytes; !gpu && m > 0 && host > m*4/5 {
		return nil, fmt.Errorf("pum: needs about %d MiB of host memory, more than 80%% of the %d MiB there", host>>20, m>>20)
	}
	bufs := map[string]device.Buffer{}
	for name, x := range map[string][]float64{"centre": c.Centre, "sup": kpum.Support(c), "qx": rule.X, "qw": rule.W} {
		if bufs[name], err = r.reals(x); err != nil {
			return nil, err
		}
	}
	for name, x := range map[string][]int32{"rowptr": c.NbrPtr, "col": c.Nbr} {
		if bufs[name], err = r.ints(x); err != nil {
			return nil, err
		}
	}
	if bufs["val"], err = r.alloc(entries * rb); err != nil {
		return nil, err
	}
	if bufs["f"], err = r.alloc(int64(c.N*B) * rb); err != nil {
		return nil, err
	}
	t1 := time.Now()
	out.tm.Setup = t1.Sub(t0)

	// Decomposition.
	dec, err := pum.Decompose(c, 0)
	if err != nil {
		return nil, err
	}
	pl, err := kpum.NewPlan(dec, cfg.strategy == pumColour)
	if err != nil {
		return nil, err
	}
	if cfg.strategy == pumColour && pl.Colours == 0 {
		return nil, fmt.Errorf("pum: the cover has no colouring; use --strategy atomic")
	}
	chunks, err := pl.Batches(B, cfg.budget)
	if err != nil {
		return nil, err
	}
	if fused { // one launch per bin: no element buffer to bound it
		chunks = chunks[:0]
		for bi, b := range pl.Bins {
			chunks = append(chunks, kpum.Chunk{Bin: bi, First: 0, Count: len(b.Cells)})
		}
	}
	binBufs := make([]map[string]device.Buffer, len(pl.Bins))
	maxE, maxF := int64(0), int64(0)
	for bi, b := range pl.Bins {
		binBufs[bi] = map[string]device.Buffer{}
		for name, x := range map[string][]float64{"lo": b.Lo, "hi": b.Hi} {
			if binBufs[bi][name], err = r.reals(x); err != nil {
				return nil, err
			}
		}
		if binBufs[bi]["act"], err = r.ints(b.Act); err != nil {
			return nil, err
		}
		nf := int64(b.Active * B)
		maxE = max(maxE, min(cfg.budget/(nf*nf), int64(len(b.Cells)))*nf*nf)
		maxF = max(maxF, min(cfg.budget/(nf*nf), int64(len(b.Cells)))*nf)
	}
	t2 := time.Now()
	out.tm.Decompose = t2.Sub(t1)
	if fused {
		maxE, maxF = 0, 0
	}
	if bufs["e"], err = r.alloc(maxE * rb); err != nil {
		return nil, err
	}
	if bufs["fl"], err = r.alloc(maxF * rb); err != nil {
		return nil, err
	}

	// Kernels: one integration and one assembly kernel per bin, in one
	// program (one compiler call; cached by source).
	spec := kpum.Spec{Dim: cfg.dim, Degree: cfg.degree, Periodic: cfg.periodic, Coeff: cfg.coeff, DType: cfg.dt, Threads: cfg.threads, Layout: cfg.layout}
	var ks []*kernel.Kernel
	integ := make([]*kernel.Kernel, len(pl.Bins))
	asm := make([]*kernel.Kernel, len(pl.Bins))
	for bi, b := range pl.Bins {
		s := spec
		s.Active = b.Active
		if cfg.integrator == pumGroup {
			integ[bi], err = kpum.IntegrateGroup(s, fused)
		} else {
			integ[bi], err = kpum.Integrate(s)
		}
		if err != nil {
			return nil, err
		}
		ks = append(ks, integ[bi])
		if fused {
			continue
		}
		if asm[bi], err = kpum.Assemble(s, cfg.strategy == pumAtomic); err != nil {
			return nil, err
		}
		ks = append(ks, asm[bi])
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

	launch := func(k *kernel.Kernel, vals map[string]int64, bin map[string]device.Buffer) error {
		bs := map[string]device.Buffer{}
		for _, p := range k.Params {
			if p.Kind != kernel.BufferParam {
				continue
			}
			b, ok := bin[p.Name]
			if !ok {
				b = bufs[p.Name]
			}
			bs[p.Name] = b
		}
		l, args, err := device.Bind(k, vals, bs)
		if err != nil {
			return err
		}
		out.launches++
		return dks[k.Name].Launch(l, args...)
	}
	// Zero the matrix and load on the device.
	dt, err := dev.Elapsed(func() error {
		if err := launch(zero, map[string]int64{"n": entries}, map[string]device.Buffer{"x": bufs["val"]}); err != nil {
			return err
		}
		return launch(zero, map[string]int64{"n": int64(c.N * B)}, map[string]device.Buffer{"x": bufs["f"]})
	})
	if err != nil {
		return nil, err
	}
	out.tm.Assemble += dt
	for _, ch := range chunks {
		b := pl.Bins[ch.Bin]
		a := b.Active
		dt, err := dev.Elapsed(func() error {
			return launch(integ[ch.Bin], map[string]int64{kpum.Cells: int64(ch.Count), kpum.C0: int64(ch.First), kpum.Batch: int64(ch.Count)}, binBufs[ch.Bin])
		})
		if err != nil {
			return nil, err
		}
		out.tm.Integrate += dt
		out.batches++
		if fused {
			continue
		}
		dt, err = dev.Elapsed(func() error {
			one := func(first, count int) error {
				if count <= 0 {
					return nil
				}
				return launch(asm[ch.Bin], map[string]int64{kpum.Pairs: int64(count * a * a), kpum.C0: int64(first),
					kpum.E0: int64(first - ch.First), kpum.Batch: int64(ch.Count)}, binBufs[ch.Bin])
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
		out.tm.Assemble += dt
	}
	td := time.Now()
	raw := make([]byte, max(entries, int64(c.N*B))*rb)
	if err := bufs["val"].Download(raw[:entries*rb]); err != nil {
		return nil, err
	}
	a := &pum.BSR{N: c.N, B: B, RowPtr: c.NbrPtr, Col: c.Nbr, Val: cfg.dt.Decode(raw[:entries*rb])}
	if err := bufs["f"].Download(raw[:int64(c.N*B)*rb]); err != nil {
		return nil, err
	}
	f := cfg.dt.Decode(raw[:int64(c.N*B)*rb])
	out.download = time.Since(td)
	out.tm.Total = out.tm.Setup + out.tm.Decompose + out.tm.Integrate + out.tm.Assemble
	out.sys = &pum.System{Cover: c, Space: sp, Dec: dec, Rule: rule, A: a, F: f}
	return out, nil
}
