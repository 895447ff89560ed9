package interp

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"time"

	"github.com/bespoke-hpc/bespoke/kernel"
)

// Transaction barriers (kernel.TxBarrier) and the bulk copies that count
// down their bytes (kernel.BulkCopy). A copy reads its source when issued
// and lands a little later, from a goroutine of its own, as a copy
// engine's would: a kernel whose readers wait on the barrier reads what
// the device would, and one whose readers do not may read stale data.

// txWaitLimit bounds a wait on a transaction barrier: a phase that never
// completes (too few arrivals, bytes expected that no copy brings) is a
// fault of the kernel, which on a device would hang.
const txWaitLimit = 20 * time.Second

// txBar is one barrier's state: arrivals still expected in its current
// phase, bytes expected and not yet landed, and phases completed.
type txBar struct {
	count, pending int
	tx             int64
	phase          int64
}

// txState holds a block's transaction barriers, by shared array slot and
// element.
type txState struct {
	mu     sync.Mutex
	cond   *sync.Cond
	bars   map[[2]int]*txBar
	broken bool
	stop   chan struct{}
	// inflight counts the copies issued and not yet landed
	inflight sync.WaitGroup
}

func newTxState() *txState {
	t := &txState{bars: map[[2]int]*txBar{}, stop: make(chan struct{})}
	t.cond = sync.NewCond(&t.mu)
	go func() { // wakes waiters now and then, so that they can time out
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-t.stop:
				return
			case <-tick.C:
				t.cond.Broadcast()
			}
		}
	}()
	return t
}

// close waits for the copies in flight and ends the block's ticker.
func (t *txState) close() { t.inflight.Wait(); close(t.stop) }

// fail breaks every wait, for a thread that failed.
func (t *txState) fail() {
	t.mu.Lock()
	t.broken = true
	t.mu.Unlock()
	t.cond.Broadcast()
}

// bar is the barrier at key, which must have been initialised.
func (t *txState) bar(key [2]int, name string) *txBar {
	b := t.bars[key]
	if b == nil {
		failf("transaction barrier %s[%d] used before it was initialised", name, key[1])
	}
	return b
}

// settle completes b's phase when its arrivals are made and its bytes
// landed.
func (t *txState) settle(b *txBar) {
	if b.pending == 0 && b.tx == 0 {
		b.phase++
		b.pending = b.count
		t.cond.Broadcast()
	}
}

func (t *txState) arrive(key [2]int, name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.bar(key, name)
	if b.pending == 0 {
		failf("transaction barrier %s[%d]: more arrivals than its count %d in one phase", name, key[1], b.count)
	}
	b.pending--
	t.settle(b)
}

// expect adds bytes to the current phase's count; the phase cannot
// complete meanwhile, since the expecting thread has yet to arrive.
func (t *txState) expect(key [2]int, name string, bytes int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.bar(key, name)
	if b.pending == 0 {
		failf("transaction barrier %s[%d]: bytes expected of a phase with no arrival left", name, key[1])
	}
	b.tx += bytes
}

// initialised fails, in the calling thread, where the barrier at key is
// not: a copy lands from a goroutine of its own, where a fault would end
// the process instead of the run.
func (t *txState) initialised(key [2]int, name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.bar(key, name)
}

func (t *txState) landed(key [2]int, name string, bytes int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.bar(key, name)
	b.tx -= bytes
	t.settle(b)
}

func (t *txState) wait(key [2]int, name string, parity int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.bar(key, name)
	start := time.Now()
	for b.phase%2 == parity&1 {
		if t.broken {
			failf(errAbandoned)
		}
		if time.Since(start) > txWaitLimit {
			failf("transaction barrier %s[%d]: phase of parity %d never completed (%d arrivals and %d bytes outstanding)", name, key[1], parity&1, b.pending, b.tx)
		}
		t.cond.Wait()
	}
}

// txKey resolves a barrier element to its key: the shared array's slot and
// the element's index.
func (c *compiler) txKey(name string, index kernel.Expr) func(*frame) [2]int {
	r := c.lookup(name)
	if r.kind != sharedArr {
		panic(name + " is not a shared array")
	}
	at := c.element(name, []kernel.Expr{index})
	return func(f *frame) [2]int {
		_, i := at(f)
		return [2]int{r.slot, i}
	}
}

func (c *compiler) txBarrier(s kernel.TxBarrier) func(*frame) {
	key := c.txKey(s.Bar, s.Index)
	switch s.Op {
	case kernel.TxInit:
		return func(f *frame) {
			t, k := f.bs.tx, key(f)
			t.mu.Lock()
			defer t.mu.Unlock()
			t.bars[k] = &txBar{count: s.Count, pending: s.Count}
		}
	case kernel.TxExpect:
		bytes := c.intExpr(s.Bytes)
		return func(f *frame) { f.bs.tx.expect(key(f), s.Bar, bytes(f)) }
	case kernel.TxArrive:
		return func(f *frame) { f.bs.tx.arrive(key(f), s.Bar) }
	default:
		parity := c.intExpr(s.Parity)
		return func(f *frame) { f.bs.tx.wait(key(f), s.Bar, parity(f)) }
	}
}

func (c *compiler) bulkCopy(s kernel.BulkCopy) func(*frame) {
	src := c.element(s.Src, []kernel.Expr{s.SrcIndex})
	dst := c.element(s.Dst, s.DstIndex)
	n := c.intExpr(s.Elements)
	key := c.txKey(s.Bar, s.BarIndex)
	eb := int64(c.k.DType.Bytes())
	return func(f *frame) {
		ss, at := src(f)
		ds, dat := dst(f)
		elems := n(f)
		switch {
		case elems < 1:
			failf("bulk copy of %d elements from %s", elems, s.Src)
		case (elems*eb)%16 != 0 || (int64(at)*eb)%16 != 0 || (int64(dat)*eb)%16 != 0:
			failf("bulk copy of %d bytes from %s[%d] into %s[%d]: not 16-byte aligned", elems*eb, s.Src, at, s.Dst, dat)
		case int64(at)+elems > int64(len(ss.reals)):
			failf("bulk copy of %d elements from %s[%d] is out of bounds (%d elements)", elems, s.Src, at, len(ss.reals))
		case int64(dat)+elems > int64(len(ds.reals)):
			failf("bulk copy of %d elements into %s[%d] is out of bounds (%d elements)", elems, s.Dst, dat, len(ds.reals))
		}
		// The copy lands from beside the threads, after they have
		// moved on a while, as a copy engine's would: a reader that
		// does not wait on the barrier reads what was there before.
		k, t := key(f), f.bs.tx
		t.initialised(k, s.Bar) // here, where a fault is the thread's
		from := append([]float64(nil), ss.reals[at:at+int(elems)]...)
		t.inflight.Add(1)
		go func() {
			defer t.inflight.Done()
			for i := rand.IntN(8); i > 0; i-- {
				runtime.Gosched()
			}
			t.mu.Lock()
			copy(ds.reals[dat:dat+int(elems)], from)
			t.mu.Unlock()
			t.landed(k, s.Bar, elems*eb)
		}()
	}
}
