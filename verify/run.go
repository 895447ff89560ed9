package verify

import (
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/emit"
	"github.com/bespoke-hpc/bespoke/kernel"
)

// Case is a kernel with the inputs to check it on. The kernel follows the
// GEMM parameter convention: any of n, b, ldb, c, ldc.
type Case struct {
	Kernel *kernel.Kernel
	In     *Inputs
}

// Outcome is a case's verdict.
type Outcome struct {
	Case
	Result
	Resources device.Resources
	Err       error // build or run failure
}

// Passed reports whether the case built, ran and matched.
func (o Outcome) Passed() bool { return o.Err == nil && o.OK() }

// batchKernels is how many kernels share one compiler call: enough to
// amortise the call, few enough that several calls run in parallel.
// batchNonZeros caps a call's total non-zeros (its generated code) for the
// C backend, whose compiler calls are separate gcc processes: gcc handles
// one translation unit serially, so large kernels (thousands of non-zeros
// take it 10–60 s each) get calls of their own. OpenCL keeps whole
// batches: PoCL builds one program at a time per process whatever the
// batching, and more, smaller programs only add its per-build overhead (the
// PoCL conformance suite, empty caches, 2-core VM: 1,038 s with the cap,
// 822 s without).
const (
	batchKernels  = 24
	batchNonZeros = 4000
)

// buildSlots bounds the compiler calls in flight across every RunBatch, so
// that verifying several operators at once cannot start more compilers than
// there are CPUs (each may take a gigabyte of memory on a large kernel).
var buildSlots = make(chan struct{}, runtime.GOMAXPROCS(0))

// serialSlots holds, for each device that builds one program at a time, a
// slot taken before a global one: builds queued behind such a device must
// not hold the global slots that another device's compilers could use
// (PoCL and gcc side by side had used 1.2 of 2 cores).
var serialSlots sync.Map // device.Device → chan struct{}

func deviceSlot(dev device.Device) chan struct{} {
	if s, ok := dev.(device.SerialBuilder); !ok || !s.SerialBuilds() {
		return nil
	}
	ch, _ := serialSlots.LoadOrStore(dev, make(chan struct{}, 1))
	return ch.(chan struct{})
}

// kernelWork is a kernel's share of batchNonZeros.
func kernelWork(c Case) int {
	if nnz, ok := c.Kernel.Meta["nnz"].(int); ok {
		return max(nnz, 1)
	}
	return 1
}

// RunBatch builds every case's kernel — batchKernels to a compiler call,
// the calls in parallel — and runs each case. If a batch fails to build,
// its kernels are built one by one so the failure is pinned on its kernel.
func RunBatch(dev device.Device, cases []Case) []Outcome {
	out := make([]Outcome, len(cases))
	for i, c := range cases {
		out[i].Case = c
	}
	maxWork := math.MaxInt
	if dev.Dialect() == emit.C {
		maxWork = batchNonZeros
	}
	groups := batches(cases, maxWork)
	progs := make([]device.Program, len(groups))
	errs := make([]error, len(groups))
	var wg sync.WaitGroup
	own := deviceSlot(dev)
	for g, idx := range groups {
		wg.Add(1)
		if own != nil {
			own <- struct{}{}
		}
		buildSlots <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() {
				<-buildSlots
				if own != nil {
					<-own
				}
			}()
			progs[g], errs[g] = build(dev, cases, idx)
		}()
	}
	wg.Wait()
	for g, idx := range groups {
		if errs[g] != nil {
			if len(idx) == 1 {
				out[idx[0]].Err = errs[g]
				continue
			}
			for _, i := range idx {
				out[i] = RunBatch(dev, cases[i:i+1])[0]
			}
			continue
		}
		for _, i := range idx {
			out[i] = runCase(dev, progs[g], cases[i])
		}
		progs[g].Close()
	}
	return out
}

// batches groups the cases (as indices) by compiler call: cases of one
// kernel together, at most batchKernels kernels and maxWork non-zeros
// (unless one kernel alone has more) per call.
func batches(cases []Case, maxWork int) [][]int {
	var groups [][]int
	batchOf := map[string]int{}
	work := 0 // non-zeros in the last batch
	for i, c := range cases {
		g, ok := batchOf[c.Kernel.Name]
		if !ok {
			w := kernelWork(c)
			if len(groups) == 0 || kernelsIn(cases, groups[len(groups)-1]) >= batchKernels || work > maxWork-w {
				groups = append(groups, nil)
				work = 0
			}
			work += w
			g = len(groups) - 1
			batchOf[c.Kernel.Name] = g
		}
		groups[g] = append(groups[g], i)
	}
	return groups
}

// kernelsIn counts distinct kernels among the cases idx.
func kernelsIn(cases []Case, idx []int) int {
	seen := map[string]bool{}
	for _, i := range idx {
		seen[cases[i].Kernel.Name] = true
	}
	return len(seen)
}

func runCase(dev device.Device, prog device.Program, c Case) Outcome {
	o := Outcome{Case: c}
	kern, err := prog.Kernel(c.Kernel.Name)
	if err != nil {
		o.Err = err
		return o
	}
	o.Resources = kern.Resources()
	got, err := Launch(dev, kern, c.Kernel, c.In)
	if err != nil {
		o.Err = err
		return o
	}
	o.Result = c.In.Compare(got)
	return o
}

func build(dev device.Device, cases []Case, idx []int) (device.Program, error) {
	var ks []*kernel.Kernel
	seen := map[string]bool{}
	for _, i := range idx {
		k := cases[i].Kernel
		if !seen[k.Name] {
			seen[k.Name] = true
			ks = append(ks, k)
		}
	}
	src, err := emit.Render(dev.Dialect(), ks...)
	if err != nil {
		return nil, err
	}
	return dev.Build(src)
}

// Launch uploads the inputs, runs the kernel once and returns C.
func Launch(dev device.Device, kern device.Kernel, k *kernel.Kernel, in *Inputs) ([]float64, error) {
	b, c, err := Upload(dev, in)
	if err != nil {
		return nil, err
	}
	defer b.Free()
	defer c.Free()
	args, err := k.Args(map[string]any{"n": in.N, "ldb": in.LDB, "ldc": in.LDC, "b": b, "c": c})
	if err != nil {
		return nil, err
	}
	if err := kern.Launch(Geometry(k, in.N), args...); err != nil {
		return nil, fmt.Errorf("%s: %w", k.Variant, err)
	}
	if err := dev.Sync(); err != nil {
		return nil, err
	}
	raw := make([]byte, len(in.C0)*in.DType.Bytes())
	if err := c.Download(raw); err != nil {
		return nil, err
	}
	return Decode(in.DType, raw), nil
}

// Upload allocates B and C on the device and copies the inputs there.
func Upload(dev device.Device, in *Inputs) (b, c device.Buffer, err error) {
	w := int64(in.DType.Bytes())
	if b, err = dev.Alloc(int64(len(in.B)) * w); err != nil {
		return nil, nil, err
	}
	if c, err = dev.Alloc(int64(len(in.C0)) * w); err != nil {
		b.Free()
		return nil, nil, err
	}
	if err = b.Upload(Encode(in.DType, in.B)); err == nil {
		err = c.Upload(Encode(in.DType, in.C0))
	}
	if err != nil {
		b.Free()
		c.Free()
		return nil, nil, err
	}
	return b, c, nil
}

// Geometry resolves a kernel's launch for n columns.
func Geometry(k *kernel.Kernel, n int) device.Launch {
	return device.Launch{Grid: [3]int{k.Launch.Grid(n), 1, 1}, Block: k.Launch.Block}
}
