package run

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/bespoke-hpc/bespoke/build"
	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/internal/cache"
	"github.com/bespoke-hpc/bespoke/kernel"
	kpum "github.com/bespoke-hpc/bespoke/kernel/pum"
	"github.com/bespoke-hpc/bespoke/pum"
)

// runKernels are the kernels of a run's one build.Program: the
// decomposition's (device decomposition), one integration and one
// assembly kernel per bin (the fused strategy: no assembly kernel) and
// the zeroing kernel.
type runKernels struct {
	all        []*kernel.Kernel // in the order the program is built from
	dk         decompKernels
	integ, asm map[int]*kernel.Kernel // by the bin's active count
	zero       *kernel.Kernel
	merge      int // cells the fused kernel takes together (Spec.Merge)
}

// newKernels makes the kernels of a settled cfg for the bins of actives:
// with the device decomposition dc, or on the host (dc nil).
func newKernels(cfg Config, gpu bool, dc *kpum.Decomposer, actives []int) (*runKernels, error) {
	fused := cfg.Strategy == Fused
	spec := kpum.Spec{Dim: cfg.Dim, Degree: cfg.Degree, Periodic: cfg.Periodic, Coeff: cfg.Coeff, DType: cfg.DType, Threads: cfg.Threads, Layout: cfg.Layout, Tiles: cfg.Tiles, Side: cfg.Side, Vec: cfg.Vec, MMA: cfg.MMA}
	rk := &runKernels{integ: map[int]*kernel.Kernel{}, asm: map[int]*kernel.Kernel{}}
	var err error
	if dc != nil {
		// The colour strategy needs the colour groups; the atomic adds
		// favour a patch's cells together; the fused kernel sums a set's
		// cells before its atomics, 2^d times fewer (2-D l9 p = 1 made
		// 235 M atomic adds, 3-D l6 p = 1 4 G).
		order := kpum.PatchOrder
		switch {
		case cfg.Strategy == Colour:
			order = kpum.ColourOrder
		case fused && !cfg.PerCell && dc.SetCells > 1:
			// Whether merging pays (large blocks may gain nothing) is
			// a candidate's choice: Shape.PerCell.
			order, spec.Merge = kpum.SetOrder, dc.SetCells
		}
		threads := 128
		if !gpu {
			threads = 16
		}
		if rk.dk, err = newDecompKernels(kpum.DecompSpec{Dim: cfg.Dim, DType: cfg.DType, Threads: threads}, order, dc.Bins); err != nil {
			return nil, err
		}
		rk.all = append(rk.all, rk.dk.kernels()...)
	}
	rk.merge = spec.Merge
	for _, a := range actives {
		s := spec
		s.Active = a
		var k *kernel.Kernel
		if cfg.Integrator == Group {
			k, err = kpum.IntegrateGroup(s, fused)
		} else {
			k, err = kpum.Integrate(s)
		}
		if err != nil {
			return nil, err
		}
		rk.integ[a] = k
		rk.all = append(rk.all, k)
		if fused {
			continue
		}
		if k, err = kpum.Assemble(s, cfg.Strategy == Atomic); err != nil {
			return nil, err
		}
		rk.asm[a] = k
		rk.all = append(rk.all, k)
	}
	zt := 256
	if !gpu {
		zt = 1024
	}
	if rk.zero, err = kpum.Zero(cfg.DType, zt); err != nil {
		return nil, err
	}
	rk.all = append(rk.all, rk.zero)
	return rk, nil
}

// hostPlan decomposes c on the host and plans its bins (with the colour
// groups for the colour strategy); actives are the bins' active counts.
func hostPlan(c *pum.Cover, colour bool) (*kpum.Plan, []int, error) {
	dec, err := pum.Decompose(c, 0)
	if err != nil {
		return nil, nil, err
	}
	pl, err := kpum.NewPlan(dec, colour)
	if err != nil {
		return nil, nil, err
	}
	if colour && pl.Colours == 0 {
		return nil, nil, fmt.Errorf("pum: the cover has no colouring; use --strategy atomic")
	}
	actives := make([]int, len(pl.Bins))
	for i, b := range pl.Bins {
		actives[i] = b.Active
	}
	return pl, actives, nil
}

// Kernels returns, for each of cfgs, the kernels OnDevice builds for it
// on dev, in the order it gives them to its build.Program, or why they
// cannot be made (errs[i]; ks[i] is then nil). The decomposition that
// sizes them is made once for configs that share it.
func Kernels(dev device.Device, cfgs ...Config) (ks [][]*kernel.Kernel, errs []error) {
	type layout struct {
		dim, level int
		periodic   bool
		decompose  string
		colour     bool // a host plan with colour groups
	}
	type bins struct {
		dc      *kpum.Decomposer
		actives []int
		err     error
	}
	made := map[layout]bins{}
	ks, errs = make([][]*kernel.Kernel, len(cfgs)), make([]error, len(cfgs))
	for i, cfg := range cfgs {
		cfg, err := settle(dev, cfg)
		if err != nil {
			errs[i] = err
			continue
		}
		onDevice := cfg.Decompose == DecompDevice
		key := layout{cfg.Dim, cfg.Level, cfg.Periodic, cfg.Decompose, !onDevice && cfg.Strategy == Colour}
		b, ok := made[key]
		if !ok {
			if onDevice {
				if b.dc, b.err = kpum.NewDecomposer(cfg.Dim, cfg.Level, pum.DefaultAlpha, cfg.Periodic); b.err == nil {
					b.actives = b.dc.Bins
				}
			} else {
				var c *pum.Cover
				if c, b.err = pum.UniformCover(cfg.Dim, cfg.Level, pum.DefaultAlpha, cfg.Periodic); b.err == nil {
					_, b.actives, b.err = hostPlan(c, key.colour)
				}
			}
			made[key] = b
		}
		if b.err != nil {
			errs[i] = b.err
			continue
		}
		rk, err := newKernels(cfg, dev.Info().GPU, b.dc, b.actives)
		if err != nil {
			errs[i] = err
			continue
		}
		ks[i] = rk.all
	}
	return ks, errs
}

// ErrStopped is the error of a program Prebuild did not begin because it
// was stopped.
var ErrStopped = errors.New("pum: stopped")

// Prebuild builds programs (each a run's kernels, from Kernels) on dev
// all at once, so that the runs, built one after another, load them from
// the device's cache: each as OnDevice's build.Program builds it (the same
// compiler calls, so the same sources), up to GOMAXPROCS programs at a
// time and the largest first, with build.Batch's compiler calls in
// parallel within each; programs of the same kernels are built once, nil
// ones not at all. errs[i] is why program i cannot be built (the build's
// error, as OnDevice's would be), or ErrStopped where stop closed before
// it began. With caching off (BESPOKE_NO_CACHE) nothing is built: each
// run would compile its kernels again.
func Prebuild(dev device.Device, progs [][]*kernel.Kernel, stop <-chan struct{}) (errs []error) {
	errs = make([]error, len(progs))
	if cache.Disabled() {
		return errs
	}
	first := map[string]int{} // a program's kernel names → its first index
	same := make([]int, len(progs))
	var todo []int
	size := make([]int, len(progs))
	for i, ks := range progs {
		same[i] = i
		if len(ks) == 0 {
			continue
		}
		names := make([]string, len(ks))
		for j, k := range ks {
			names[j] = k.Name
			size[i] += kernel.Size(k.Body)
		}
		key := strings.Join(names, "\x00")
		if j, ok := first[key]; ok {
			same[i] = j
			continue
		}
		first[key] = i
		todo = append(todo, i)
	}
	// The largest first, so that the last to finish is a small one.
	slices.SortStableFunc(todo, func(a, b int) int { return size[b] - size[a] })
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(todo)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				p, err := build.NewProgram(dev, progs[i]...)
				if err == nil {
					p.Close()
				}
				errs[i] = err
			}
		}()
	}
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	for n, i := range todo {
		if !stopped() {
			select {
			case next <- i:
				continue
			case <-stop:
			}
		}
		for _, j := range todo[n:] {
			errs[j] = ErrStopped
		}
		break
	}
	close(next)
	wg.Wait()
	for i, j := range same {
		errs[i] = errs[j]
	}
	return errs
}
