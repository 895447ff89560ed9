package sparse

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"math"
	"sync"
)

// planMemoSize bounds the plans planMemo keeps: a bench or serve works
// through a few operators at a time.
const planMemoSize = 32

// plans memoises planBlocks by α·A. A block plan depends on α·A alone,
// and planning a large operator (near classes, pieces) takes seconds,
// which every blocks variant's check and build would spend again.
var plans = &planMemo{entries: map[[32]byte]*planEntry{}}

// planMemo holds the block plans of the latest operators asked for, the
// oldest first out. A plan is read, never changed, once made.
type planMemo struct {
	mu      sync.Mutex
	entries map[[32]byte]*planEntry
	order   [][32]byte // oldest first
}

type planEntry struct {
	once sync.Once
	plan *blockPlan
	err  error
}

// get returns g's plan, planning it once for all callers that ask for the
// same α·A at once.
func (m *planMemo) get(g *gen) (*blockPlan, error) {
	key := planKey(g)
	m.mu.Lock()
	e, ok := m.entries[key]
	if !ok {
		e = &planEntry{}
		m.entries[key] = e
		m.order = append(m.order, key)
		if len(m.order) > planMemoSize {
			delete(m.entries, m.order[0])
			m.order = m.order[1:]
		}
	}
	m.mu.Unlock()
	e.once.Do(func() { e.plan, e.err = planBlocks(g) })
	if e.plan == nil && e.err == nil {
		// The first planning panicked (a bug, recovered by a caller such
		// as serve's): every later caller gets an error, not a nil plan.
		return nil, errors.New("sparse: planning the operator's blocks failed")
	}
	return e.plan, e.err
}

// planKey digests what a plan depends on: the shape and the bits of α·A.
func planKey(g *gen) [32]byte {
	b := make([]byte, 0, 8*(2+len(g.a)))
	b = binary.LittleEndian.AppendUint64(b, uint64(g.m))
	b = binary.LittleEndian.AppendUint64(b, uint64(g.k))
	for _, x := range g.a {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
	}
	return sha256.Sum256(b)
}
