// Package interp runs a kernel.Kernel in Go, one goroutine per thread of a
// block where the kernel has barriers or warp-level mma: a slow but
// independent oracle for every kernel family and for the IR passes. It
// checks what a device does not: every access in bounds, integer
// arithmetic within the kernel's index width, every thread of a block at
// each barrier, every lane of a warp at the same mma.
//
// A warp-level mma (kernel.MMA) is emulated with the warp's semantics: the
// 32 lanes of a warp (consecutive linear thread indices) meet, their
// elements of A, B and C are gathered into matrices by the fragment
// layouts of kernel.MMAShape, and each lane receives its elements of
// D = A·B + C, summed in float64 in order of k. A TF32 mma takes the TF32
// parts of A's and B's elements, their low 13 bits dropped as the tensor
// cores drop them (mma.TruncTF32); their products are exact, and each
// element of D is rounded once to float32 (the tensor cores' adder keeps
// at least fp32's precision, so a device differs by an ulp or so).
//
// Real arithmetic follows the kernel's precision: in f32 every operation
// is rounded to float32 (no contraction into fused multiply-adds), so its
// results differ from a device's only by the order and fusing of roundings.
//
// It may import kernel only.
package interp

import (
	"fmt"
	"math"
	"sync"

	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/mma"
)

// Error is a fault found while running a kernel.
type Error struct {
	Kernel string
	Thread [3]int // thread index in its block
	Block  [3]int // block index
	Msg    string
}

func (e *Error) Error() string {
	return fmt.Sprintf("interp: kernel %s, block %v, thread %v: %s", e.Kernel, e.Block, e.Thread, e.Msg)
}

// fault is raised (panicked) inside a thread and turned into an *Error.
type fault struct{ msg string }

func failf(format string, args ...any) { panic(fault{fmt.Sprintf(format, args...)}) }

// Run executes k on a grid of blocks (each count at least 1). args binds
// every parameter by name: a real buffer as []float64 (values are stored
// rounded to k's precision), an integer buffer as []int64, an integer
// scalar as int or int64. Buffers are updated in place.
func Run(k *kernel.Kernel, grid [3]int, args map[string]any) error {
	if err := kernel.Validate(k); err != nil {
		return err
	}
	prog, err := compile(k)
	if err != nil {
		return err
	}
	m := &machine{prog: prog, k: k}
	if err := m.bind(args); err != nil {
		return err
	}
	for i := range grid {
		grid[i] = max(grid[i], 1)
	}
	for gz := 0; gz < grid[2]; gz++ {
		for gy := 0; gy < grid[1]; gy++ {
			for gx := 0; gx < grid[0]; gx++ {
				if err := m.block([3]int{gx, gy, gz}); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// machine is one run: the compiled kernel and its bound arguments.
type machine struct {
	prog   *program
	k      *kernel.Kernel
	reals  [][]float64 // buffer parameters by slot
	ints   [][]int64
	scalar []int64
	atomic sync.Mutex // serialises atomic adds across a block's goroutines
}

func (m *machine) bind(args map[string]any) error {
	p := m.prog
	m.reals = make([][]float64, len(p.realBufs))
	m.ints = make([][]int64, len(p.intBufs))
	m.scalar = make([]int64, len(p.scalars))
	for _, prm := range m.k.Params {
		v, ok := args[prm.Name]
		if !ok {
			return fmt.Errorf("interp: kernel %s: no value for parameter %q", m.k.Name, prm.Name)
		}
		bad := func() error {
			return fmt.Errorf("interp: kernel %s: parameter %q (%s %s) given a %T", m.k.Name, prm.Name, prm.Type, prm.Kind, v)
		}
		switch {
		case prm.Kind == kernel.ScalarParam:
			switch x := v.(type) {
			case int:
				m.scalar[p.scalarSlot[prm.Name]] = int64(x)
			case int64:
				m.scalar[p.scalarSlot[prm.Name]] = x
			default:
				return bad()
			}
		case prm.Type == kernel.Real:
			x, ok := v.([]float64)
			if !ok {
				return bad()
			}
			m.reals[p.bufSlot[prm.Name]] = x
		default:
			x, ok := v.([]int64)
			if !ok {
				return bad()
			}
			m.ints[p.bufSlot[prm.Name]] = x
		}
	}
	return nil
}

// blockState is what the threads of one block share.
type blockState struct {
	group   [3]int
	reals   [][]float64 // shared arrays
	ints    [][]int64
	barrier *barrier
	warps   []*warp    // where the kernel has warp-level mma
	groups  []*warp    // warpgroups, where it has WGMMA
	parts   []*barrier // barriers of part of the block (Barrier.Threads)
	tx      *txState   // transaction barriers, where the kernel has them
}

// block runs one block: its threads in turn, or side by side where the
// kernel has barriers.
func (m *machine) block(g [3]int) (err error) {
	p, b := m.prog, m.k.Launch.Block
	bs := &blockState{group: g}
	for _, sh := range p.shared {
		if sh.Type == kernel.Real {
			a := make([]float64, sh.Len())
			for i := range a {
				a[i] = math.NaN() // reading before writing shows
			}
			bs.reals = append(bs.reals, a)
		} else {
			bs.reals = append(bs.reals, nil)
		}
		bs.ints = append(bs.ints, make([]int64, sh.Len()))
	}
	threads := b[0] * b[1] * b[2]
	run := func(t int) (err error) {
		f := &frame{m: m, bs: bs, lin: t, local: [3]int{t % b[0], t / b[0] % b[1], t / (b[0] * b[1])}}
		defer func() {
			if r := recover(); r != nil {
				flt, ok := r.(fault)
				if !ok {
					panic(r)
				}
				err = &Error{Kernel: m.k.Name, Thread: f.local, Block: g, Msg: flt.msg}
			}
			if bs.barrier != nil {
				bs.barrier.leave(err != nil)
			}
			if bs.warps != nil {
				bs.warps[t/32].leave(err != nil)
			}
			if bs.groups != nil {
				bs.groups[t/128].leave(err != nil)
			}
			if bs.parts != nil {
				bs.parts[t/p.part].leave(err != nil)
			}
			if bs.tx != nil && err != nil {
				bs.tx.fail()
			}
		}()
		f.reals = make([]float64, p.realSlots)
		f.ints = make([]int64, p.intSlots)
		f.realArrs = make([][]float64, p.arrSlots)
		f.intArrs = make([][]int64, p.arrSlots)
		for i := range f.reals {
			f.reals[i] = math.NaN()
		}
		if p.active != nil {
			gx := int64(g[0])*int64(b[0]) + int64(f.local[0])
			if gx >= p.active(f) {
				return nil
			}
		}
		p.body(f)
		return nil
	}
	if p.bulk {
		bs.tx = newTxState()
		defer bs.tx.close()
	}
	if !p.barriers && !p.warps && !p.bulk {
		for t := 0; t < threads; t++ {
			if err := run(t); err != nil {
				return err
			}
		}
		return nil
	}
	bs.barrier = newBarrier(threads)
	for g := 0; p.part > 0 && g < threads/p.part; g++ {
		bs.parts = append(bs.parts, newBarrier(p.part))
	}
	if p.warps { // Validate asked for whole warps
		for w := 0; w < threads/32; w++ {
			bs.warps = append(bs.warps, newWarp(32))
		}
		for w := 0; w < threads/128 && p.groups; w++ {
			bs.groups = append(bs.groups, newWarp(128))
		}
	}
	errs := make([]error, threads)
	var wg sync.WaitGroup
	for t := 0; t < threads; t++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[t] = run(t)
		}()
	}
	wg.Wait()
	// The thread that failed first explains the others' abandonment.
	var first error
	for _, e := range errs {
		if e == nil {
			continue
		}
		if ie, ok := e.(*Error); !ok || (ie.Msg != errAbandoned && ie.Msg != errWarpAbandoned) {
			return e
		}
		if first == nil {
			first = e
		}
	}
	return first
}

// frame is one thread's state.
type frame struct {
	m        *machine
	bs       *blockState
	lin      int // linear index in the block: x + y·bx + z·bx·by
	local    [3]int
	reals    []float64
	ints     []int64
	realArrs [][]float64
	intArrs  [][]int64
	// open is the thread's asynchronous copies since its last commit,
	// groups its committed ones still in flight, oldest first.
	open   []pendingCopy
	groups [][]pendingCopy
}

// pendingCopy is an asynchronous copy in flight: v into dst[at].
type pendingCopy struct {
	dst []float64
	at  int
	v   float64
}

const errAbandoned = "left at a barrier: another thread of the block failed or returned"

// barrier holds the threads of a block until all have arrived; a thread
// that ends (or fails) while others wait is an error, since on a device
// those would wait forever or read stale shared memory.
type barrier struct {
	mu      sync.Mutex
	cond    *sync.Cond
	alive   int // threads not yet finished
	done    int // threads finished
	arrived int
	gen     int
	broken  bool
}

func newBarrier(n int) *barrier {
	b := &barrier{alive: n}
	b.cond = sync.NewCond(&b.mu)
	return b
}

func (b *barrier) wait() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.broken {
		failf(errAbandoned)
	}
	if b.done > 0 {
		b.broken = true
		b.cond.Broadcast()
		failf("a barrier that %d thread(s) of the block never reach", b.done)
	}
	b.arrived++
	if b.arrived == b.alive {
		b.arrived = 0
		b.gen++
		b.cond.Broadcast()
		return
	}
	gen := b.gen
	for gen == b.gen && !b.broken {
		b.cond.Wait()
	}
	if b.broken {
		failf(errAbandoned)
	}
}

// leave marks a thread finished; while others wait at a barrier that is a
// fault of the kernel, and it breaks the barrier for them.
func (b *barrier) leave(failed bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.alive--
	b.done++
	if failed || b.arrived > 0 {
		b.broken = true
		b.cond.Broadcast()
	}
}

const errWarpAbandoned = "left at an mma: another lane of the warp failed or returned"

// mmaIn is what one lane gives a warp-level mma: the statement it is at and
// its elements of A, B and C (for a WGMMA, of A and D, and B's offset).
type mmaIn struct {
	id      int
	a, b, c []float64
	bAt     int64
}

// warp is where the lanes of a warp (32) or of a warpgroup (128, for
// WGMMA) meet at an mma. As with barrier, a lane that ends (or fails)
// while others wait is an error, and so are lanes at different mma
// statements.
type warp struct {
	mu      sync.Mutex
	cond    *sync.Cond
	alive   int // lanes not yet finished
	done    int // lanes finished
	arrived int
	gen     int
	broken  bool
	in      []mmaIn
	out     [][]float64
}

func newWarp(lanes int) *warp {
	w := &warp{alive: lanes, in: make([]mmaIn, lanes), out: make([][]float64, lanes)}
	w.cond = sync.NewCond(&w.mu)
	return w
}

// exchange gives lane's elements and waits for the warp's other lanes; the
// last to arrive computes every lane's D with compute.
func (w *warp) exchange(lane int, in mmaIn, compute func(w *warp)) []float64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.broken {
		failf(errWarpAbandoned)
	}
	if w.done > 0 {
		w.broken = true
		w.cond.Broadcast()
		failf("an mma that %d lane(s) of the warp never reach", w.done)
	}
	w.in[lane] = in
	w.arrived++
	if w.arrived == w.alive {
		for l := range w.in {
			if w.in[l].id != in.id {
				w.broken = true
				w.cond.Broadcast()
				failf("lanes %d and %d of a warp at different mma statements", lane, l)
			}
		}
		func() {
			defer func() {
				if r := recover(); r != nil {
					w.broken = true
					w.cond.Broadcast()
					panic(r)
				}
			}()
			compute(w)
		}()
		w.arrived = 0
		w.gen++
		w.cond.Broadcast()
		return w.out[lane]
	}
	gen := w.gen
	for gen == w.gen && !w.broken {
		w.cond.Wait()
	}
	if w.broken {
		failf(errWarpAbandoned)
	}
	return w.out[lane]
}

// compute gathers A, B and C from the lanes by the fragment layouts and
// hands out D = A·B + C, rounded to float32 for a TF32 mma.
func (w *warp) compute(s kernel.MMAShape, typ kernel.MMAType) {
	a, b, c := make([]float64, s.M*s.K), make([]float64, s.K*s.N), make([]float64, s.M*s.N)
	for l, in := range w.in {
		for v, x := range in.a {
			i, j := mma.AAt(s, l, v)
			a[i*s.K+j] = x
		}
		for v, x := range in.b {
			i, j := mma.BAt(s, l, v)
			b[i*s.N+j] = x
		}
		for v, x := range in.c {
			i, j := mma.CAt(s, l, v)
			c[i*s.N+j] = x
		}
	}
	for l := range w.out {
		d := make([]float64, len(w.in[l].c))
		for v := range d {
			i, j := mma.CAt(s, l, v)
			sum := c[i*s.N+j]
			for r := 0; r < s.K; r++ {
				sum += a[i*s.K+r] * b[r*s.N+j]
			}
			if typ == kernel.MMATF32 {
				sum = float64(float32(sum))
			}
			d[v] = sum
		}
		w.out[l] = d
	}
}

// computeWGMMA hands out a warpgroup's D = A·B + D for s (see kernel.WGMMA):
// A from the lanes' elements, B's TF32 parts from the shared array sh, D
// rounded to float32.
func (w *warp) computeWGMMA(s kernel.WGMMA, sh []float64) {
	at := w.in[0].bAt
	a := make([]float64, 64*8)
	for l, in := range w.in {
		if in.bAt != at {
			failf("wgmma: lanes 0 and %d give B's offsets %d and %d", l, at, in.bAt)
		}
		for x, v := range in.a {
			a[mma.WGARow(l, x)*8+mma.WGACol(l, x)] = v
		}
	}
	b := make([]float64, 8*s.N)
	for k := 0; k < 8; k++ {
		for n := 0; n < s.N; n++ {
			i := mma.WGBElement(at, s.LBO, s.SBO, k, n)
			if at%4 != 0 || i < 0 || i >= int64(len(sh)) {
				failf("wgmma: B[%d][%d] at %s[%d] is out of bounds (%d elements) or its start %d is not 16-byte aligned", k, n, s.B, i, len(sh), at)
			}
			b[k*s.N+n] = mma.TruncTF32(sh[i])
		}
	}
	for l, in := range w.in {
		d := make([]float64, len(in.c))
		for e := range d {
			i, j := mma.WGDAt(l, e)
			sum := in.c[e]
			for r := 0; r < 8; r++ {
				sum += a[i*8+r] * b[r*s.N+j]
			}
			d[e] = float64(float32(sum))
		}
		w.out[l] = d
	}
}

// leave marks a lane finished; while others wait at an mma that is a fault
// of the kernel, and it breaks the mma for them.
func (w *warp) leave(failed bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.alive--
	w.done++
	if failed || w.arrived > 0 {
		w.broken = true
		w.cond.Broadcast()
	}
}
