// Package build renders kernels and compiles them on a device: several
// kernels to a compiler call where that pays, compiler calls in parallel
// up to the number of CPUs (fewer where a device compiles one program at a
// time), and compilation ahead of use into the device's cache while other
// work goes on. verify, tune and bench all build through it; Program runs
// a program of kernels (a solver's, an application's) built that way,
// binding buffers and values by name.
//
// It may import kernel, emit and device, but no backend and no family.
package build

import (
	"math"
	"runtime"
	"sync"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/emit"
	"github.com/bespoke-hpc/bespoke/kernel"
)

// batchKernels is how many kernels share one compiler call: enough to
// amortise the call, few enough that several calls run in parallel.
// batchWork caps a call's IR nodes (kernel.Size, a measure of the code a
// compiler must handle) for the C backend, whose compiler calls are
// separate gcc processes: gcc handles one translation unit serially, so
// large kernels get calls of their own. It was 4,000 non-zeros of a GEMM
// operator, about 40,000 nodes (its kernels have 4–32 nodes per non-zero,
// 11 typically). OpenCL keeps whole batches: PoCL builds one program at a
// time per process whatever the batching, and more, smaller programs only
// add its per-build overhead (the PoCL conformance suite from empty caches
// took a quarter longer with the cap: docs/rationale.md#build-batches).
const (
	batchKernels = 24
	batchWork    = 40000
)

// slots bounds the compiler calls in flight across the process, so that
// building for several callers at once cannot start more compilers than
// there are CPUs (each may take a gigabyte of memory on a large kernel).
var slots = make(chan struct{}, runtime.GOMAXPROCS(0))

// deviceSlots holds, for each device that limits its builds (one at a
// time on PoCL, a few on NVIDIA's OpenCL), slots taken before a global one:
// builds queued behind such a device must not hold the global slots that
// another device's compilers could use (PoCL and gcc side by side had used
// 1.2 of 2 cores).
var deviceSlots sync.Map // device.Device → chan struct{}

func deviceSlot(dev device.Device) chan struct{} {
	n := 0
	if l, ok := dev.(device.BuildLimiter); ok {
		n = l.MaxBuilds()
	}
	if s, ok := dev.(device.SerialBuilder); ok && s.SerialBuilds() {
		n = 1
	}
	if n <= 0 {
		return nil
	}
	ch, _ := deviceSlots.LoadOrStore(dev, make(chan struct{}, n))
	return ch.(chan struct{})
}

// acquire takes a compiler slot (and the device's own, if it has one);
// the returned function gives them back.
func acquire(dev device.Device) func() {
	own := deviceSlot(dev)
	if own != nil {
		own <- struct{}{}
	}
	slots <- struct{}{}
	return func() {
		<-slots
		if own != nil {
			<-own
		}
	}
}

// Built is one kernel ready to launch.
type Built struct {
	Kernel device.Kernel
	Err    error
}

// Batch builds the kernels — batchKernels to a compiler call, the calls
// in parallel — and returns one Built per kernel (kernels of one name are
// built once) and a function that closes the programs. If a call fails,
// its kernels are built one by one so that the failure is pinned on its
// kernel.
func Batch(dev device.Device, ks []*kernel.Kernel) ([]Built, func()) {
	out := make([]Built, len(ks))
	maxWork := math.MaxInt
	if dev.Dialect() == emit.C {
		maxWork = batchWork
	}
	groups := batches(ks, maxWork)
	progs := make([]device.Program, len(groups))
	errs := make([]error, len(groups))
	var wg sync.WaitGroup
	for g, idx := range groups {
		wg.Add(1)
		release := acquire(dev)
		go func() {
			defer wg.Done()
			defer release()
			progs[g], errs[g] = program(dev, ks, idx)
		}()
	}
	wg.Wait()
	var closers []func()
	for g, idx := range groups {
		if errs[g] != nil {
			if len(idx) == 1 {
				out[idx[0]].Err = errs[g]
				continue
			}
			for _, i := range idx {
				one, closeOne := Batch(dev, ks[i:i+1])
				out[i] = one[0]
				closers = append(closers, closeOne)
			}
			continue
		}
		for _, i := range idx {
			out[i].Kernel, out[i].Err = progs[g].Kernel(ks[i].Name)
		}
		closers = append(closers, func() { progs[g].Close() })
	}
	return out, func() {
		for _, c := range closers {
			c()
		}
	}
}

// batches groups the kernels (as indices) by compiler call: kernels of one
// name together, at most batchKernels names and maxWork IR nodes (unless
// one kernel alone has more) per call.
func batches(ks []*kernel.Kernel, maxWork int) [][]int {
	var groups [][]int
	batchOf := map[string]int{}
	names, work := 0, 0 // in the last batch
	for i, k := range ks {
		g, ok := batchOf[k.Name]
		if !ok {
			w := max(kernel.Size(k.Body), 1)
			if len(groups) == 0 || names >= batchKernels || work > maxWork-w {
				groups = append(groups, nil)
				names, work = 0, 0
			}
			names++
			work += w
			g = len(groups) - 1
			batchOf[k.Name] = g
		}
		groups[g] = append(groups[g], i)
	}
	return groups
}

// program renders the distinct kernels among ks[idx] as one source and
// builds it.
func program(dev device.Device, ks []*kernel.Kernel, idx []int) (device.Program, error) {
	var distinct []*kernel.Kernel
	seen := map[string]bool{}
	for _, i := range idx {
		if k := ks[i]; !seen[k.Name] {
			seen[k.Name] = true
			distinct = append(distinct, k)
		}
	}
	src, err := emit.Render(dev.Dialect(), distinct...)
	if err != nil {
		return nil, err
	}
	return dev.Build(src)
}

// One builds one kernel as a program of its own, so that kernels compile
// in parallel and a slow one holds up nothing else.
func One(dev device.Device, k *kernel.Kernel) (device.Program, device.Kernel, error) {
	src, err := emit.Render(dev.Dialect(), k)
	if err != nil {
		return nil, nil, err
	}
	prog, err := dev.Build(src)
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

// Cache puts k in the device's cache: without loading it where the device
// can (device.Compiler), else by building and closing it. Errors are left
// for the later build to report.
func Cache(dev device.Device, k *kernel.Kernel) {
	src, err := emit.Render(dev.Dialect(), k)
	if err != nil {
		return
	}
	if c, ok := dev.(device.Compiler); ok {
		_ = c.Compile(src)
		return
	}
	if prog, err := dev.Build(src); err == nil {
		prog.Close()
	}
}
