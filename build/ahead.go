package build

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/kernel"
)

// SlowBuild is how long a compile takes before Ahead reports it.
const SlowBuild = 10 * time.Second

// Ahead compiles groups of kernels into dev's cache (see Cache) on workers
// goroutines, group after group, so that the caller can take up group i
// once ready[i] is closed while later groups compile. kernels(i) makes
// group i's kernels (compiled largest first); it is called in order, on
// one goroutine. Closing stop ends the work early (later groups are never
// made); wait returns once every compile in progress has finished, and the
// device must stay open until then. slow, when set, hears about compiles over SlowBuild (with
// the kernel's group), from any worker.
func Ahead(dev device.Device, groups int, kernels func(i int) []*kernel.Kernel, workers int, stop <-chan struct{}, slow func(group int, k *kernel.Kernel, took time.Duration)) (ready []chan struct{}, wait func()) {
	type job struct {
		k     *kernel.Kernel
		group int
	}
	ready = make([]chan struct{}, groups)
	pending := make([]atomic.Int32, groups)
	for i := range ready {
		ready[i] = make(chan struct{})
	}
	jobs := make(chan job)
	var wg sync.WaitGroup
	done := func(g int) {
		if pending[g].Add(-1) == 0 {
			close(ready[g])
		}
	}
	for w := 0; w < max(workers, 1); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				t0 := time.Now()
				Cache(dev, j.k)
				if d := time.Since(t0); d > SlowBuild && slow != nil {
					slow(j.group, j.k, d)
				}
				done(j.group)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(jobs)
		for i := 0; i < groups; i++ {
			// The largest first, so that a group's last compile does
			// not start late and hold up its timing.
			ks := slices.Clone(kernels(i))
			slices.SortStableFunc(ks, func(a, b *kernel.Kernel) int { return kernel.Size(b.Body) - kernel.Size(a.Body) })
			if len(ks) == 0 {
				close(ready[i])
				continue
			}
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
	return ready, wg.Wait
}
