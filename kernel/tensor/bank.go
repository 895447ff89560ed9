package tensor

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/bespoke-hpc/bespoke/kernel"
)

// The bank model of a GPU's shared memory (NVIDIA's from Volta on): 32
// banks of 4 bytes, 128 bytes served per wavefront. A warp's access of
// b-byte words is served in passes of 128/b lanes (the whole warp for
// 4-byte words, each half-warp for 8-byte ones); within a pass, lanes
// that read one word share it (a broadcast), and distinct words in one
// bank group (word index mod 128/b) take one wavefront each. A pass with
// no active lane costs nothing. Conflicts are the wavefronts beyond one
// per pass (docs/rationale.md#cube-banks compares them with Nsight
// Compute's counts).
const (
	warpLanes   = 32
	bankBytes   = 128 // served per wavefront
	unknownAddr = -1
)

// sharedAccess is one warp-wide access of a shared array: the index of
// each lane (nil where the lane does not take part) in the array's own
// dimensions, so that the same trace can be weighed under any layout.
type sharedAccess struct {
	array string
	store bool
	index [warpLanes][]int64
}

// bankPattern is a distinct access of a trace up to a constant offset
// (the first active lane's index subtracted), which moves every address
// alike and so does not change its wavefronts; count is how often it
// occurs.
type bankPattern struct {
	array string
	store bool
	rel   [warpLanes][]int64
	count int
}

// bankTrace is the shared accesses of every warp of a block, folded into
// patterns.
type bankTrace struct {
	patterns []bankPattern
	byKey    map[string]int
}

// add folds one access into the trace.
func (t *bankTrace) add(a sharedAccess) {
	var first []int64
	for _, ix := range a.index {
		if ix != nil {
			first = ix
			break
		}
	}
	if first == nil {
		return // no lane takes part: nothing is issued
	}
	var key strings.Builder
	key.WriteString(a.array)
	if a.store {
		key.WriteString("!")
	}
	var rel [warpLanes][]int64
	var buf []byte
	for l, ix := range a.index {
		buf = buf[:0]
		if ix == nil {
			buf = append(buf, '-')
		} else {
			rel[l] = make([]int64, len(ix))
			for d := range ix {
				rel[l][d] = ix[d] - first[d]
				buf = strconv.AppendInt(buf, rel[l][d], 36)
				buf = append(buf, ',')
			}
		}
		buf = append(buf, ';')
		key.Write(buf)
	}
	k := key.String()
	if i, ok := t.byKey[k]; ok {
		t.patterns[i].count++
		return
	}
	t.byKey[k] = len(t.patterns)
	t.patterns = append(t.patterns, bankPattern{array: a.array, store: a.store, rel: rel, count: 1})
}

// wavefronts is what a warp's access of wordBytes-byte words at addrs
// (in words; unknownAddr for a lane that does not take part) costs, and
// what it would cost without conflicts (one per pass with an active
// lane).
func wavefronts(addrs *[warpLanes]int64, wordBytes int) (got, ideal int) {
	per := bankBytes / wordBytes // lanes per pass, and bank groups
	for p0 := 0; p0 < warpLanes; p0 += per {
		var seen []int64
		groups := make(map[int64]int, per)
		worst := 0
		for _, a := range addrs[p0:min(p0+per, warpLanes)] {
			if a == unknownAddr {
				continue
			}
			dup := false
			for _, s := range seen {
				if s == a {
					dup = true
					break
				}
			}
			if dup {
				continue // a broadcast
			}
			seen = append(seen, a)
			g := a % int64(per)
			groups[g]++
			worst = max(worst, groups[g])
		}
		if worst > 0 {
			got += worst
			ideal++
		}
	}
	return got, ideal
}

// BankCount is what a block's shared accesses cost under the bank model
// above, summed over its warps: warp-wide instructions, their wavefronts
// and the wavefronts they would take without conflicts, loads and stores
// apart.
type BankCount struct {
	Loads, LoadWavefronts, LoadIdeal    int
	Stores, StoreWavefronts, StoreIdeal int
}

// LoadConflicts is the extra wavefronts of the loads.
func (c BankCount) LoadConflicts() int { return c.LoadWavefronts - c.LoadIdeal }

// StoreConflicts is the extra wavefronts of the stores.
func (c BankCount) StoreConflicts() int { return c.StoreWavefronts - c.StoreIdeal }

// PerLoad is the conflict wavefronts per warp-wide shared load.
func (c BankCount) PerLoad() float64 {
	if c.Loads == 0 {
		return 0
	}
	return float64(c.LoadConflicts()) / float64(c.Loads)
}

// Share is the conflict wavefronts' share of all the loads' wavefronts
// (Nsight Compute's shared_load_bank_conflicts ÷ shared load wavefronts).
func (c BankCount) Share() float64 {
	if c.LoadWavefronts == 0 {
		return 0
	}
	return float64(c.LoadConflicts()) / float64(c.LoadWavefronts)
}

func (c BankCount) String() string {
	return fmt.Sprintf("%d loads: %d wavefronts (%d ideal, %.3f conflicts per load); %d stores: %d wavefronts (%d ideal)",
		c.Loads, c.LoadWavefronts, c.LoadIdeal, c.PerLoad(), c.Stores, c.StoreWavefronts, c.StoreIdeal)
}

// strideMap gives each shared array's word strides, one per dimension
// (row-major strides of its Dims unless a layout under study says
// otherwise).
type strideMap map[string][]int64

// rowMajor is the strides of dims.
func rowMajor(dims []int) []int64 {
	s := make([]int64, len(dims))
	m := int64(1)
	for d := len(dims) - 1; d >= 0; d-- {
		s[d] = m
		m *= int64(dims[d])
	}
	return s
}

// count weighs the trace under strides, words of wordBytes bytes.
func (t *bankTrace) count(strides strideMap, wordBytes int) BankCount {
	var c BankCount
	var addrs [warpLanes]int64
	for _, p := range t.patterns {
		st := strides[p.array]
		for l, ix := range p.rel {
			addrs[l] = unknownAddr
			if ix == nil {
				continue
			}
			a := int64(0)
			for d, i := range ix {
				a += i * st[d]
			}
			// Non-negative, as wavefronts takes it: the offset of the
			// pattern's first lane does not change its cost.
			addrs[l] = a + 1<<40
		}
		got, ideal := wavefronts(&addrs, wordBytes)
		if p.store {
			c.Stores += p.count
			c.StoreWavefronts += got * p.count
			c.StoreIdeal += ideal * p.count
		} else {
			c.Loads += p.count
			c.LoadWavefronts += got * p.count
			c.LoadIdeal += ideal * p.count
		}
	}
	return c
}

// BankConflicts traces k's shared accesses in every warp of a block and
// weighs them under its shared arrays' own layouts. A block's scalar
// size parameters are taken large (every element live).
func BankConflicts(k *kernel.Kernel) (BankCount, error) {
	t, err := traceShared(k)
	if err != nil {
		return BankCount{}, err
	}
	st := strideMap{}
	for _, sh := range k.Shared {
		st[sh.Name] = rowMajor(sh.Dims)
	}
	return t.count(st, k.TypeBytes(kernel.Real)), nil
}

// traceShared runs k's body symbolically for each warp of one block: the
// integers a shared index depends on (thread indices, loop variables,
// integer declarations) are evaluated per lane, the rest ignored. An If
// whose condition a lane cannot evaluate runs both branches on it (its
// accesses are counted whichever way it goes).
func traceShared(k *kernel.Kernel) (*bankTrace, error) {
	tr := &bankTrace{byKey: map[string]int{}}
	sh := map[string]kernel.Shared{}
	for _, s := range k.Shared {
		if s.Type != kernel.Real {
			return nil, fmt.Errorf("tensor: bank model: shared array %s is not real", s.Name)
		}
		sh[s.Name] = s
	}
	b := k.Launch.Block
	threads := k.Launch.Threads()
	for w0 := 0; w0 < threads; w0 += warpLanes {
		x := &tracer{k: k, shared: sh, tr: tr, block: b}
		var mask [warpLanes]bool
		for l := range warpLanes {
			t := w0 + l
			x.env[l] = map[string]int64{}
			if t >= threads {
				continue
			}
			mask[l] = true
			x.tid[l] = [3]int64{int64(t % b[0]), int64(t / b[0] % b[1]), int64(t / (b[0] * b[1]))}
		}
		for _, p := range k.Params {
			if p.Kind == kernel.ScalarParam {
				for l := range warpLanes {
					x.env[l][p.Name] = 1 << 30
				}
			}
		}
		if err := x.stmts(k.Body, mask); err != nil {
			return nil, err
		}
	}
	return tr, nil
}

// tracer is one warp's symbolic run.
type tracer struct {
	k      *kernel.Kernel
	shared map[string]kernel.Shared
	tr     *bankTrace
	block  [3]int
	tid    [warpLanes][3]int64
	env    [warpLanes]map[string]int64
}

// eval is an integer expression on lane l; ok false where it depends on
// what the model does not follow (reals, buffer contents).
func (x *tracer) eval(e kernel.Expr, l int) (int64, bool) {
	switch e := e.(type) {
	case kernel.Int:
		return e.V, true
	case kernel.Var:
		v, ok := x.env[l][e.Name]
		return v, ok
	case kernel.Special:
		switch e.Kind {
		case kernel.LocalID:
			return x.tid[l][e.Axis], true
		case kernel.GroupID:
			return 0, true
		case kernel.LocalSize:
			return int64(x.block[e.Axis]), true
		}
	case kernel.Unary:
		v, ok := x.eval(e.X, l)
		if !ok {
			return 0, false
		}
		if e.Op == kernel.OpNot {
			return b2i(v == 0), true
		}
		return -v, true
	case kernel.Select:
		c, ok := x.eval(e.Cond, l)
		if !ok {
			return 0, false
		}
		if c != 0 {
			return x.eval(e.Then, l)
		}
		return x.eval(e.Else, l)
	case kernel.Bin:
		a, ok := x.eval(e.L, l)
		if !ok {
			return 0, false
		}
		c, ok := x.eval(e.R, l)
		if !ok {
			return 0, false
		}
		switch e.Op {
		case kernel.OpAdd:
			return a + c, true
		case kernel.OpSub:
			return a - c, true
		case kernel.OpMul:
			return a * c, true
		case kernel.OpDiv:
			if c == 0 {
				return 0, false
			}
			return a / c, true
		case kernel.OpRem:
			if c == 0 {
				return 0, false
			}
			return a % c, true
		case kernel.OpBitAnd:
			return a & c, true
		case kernel.OpBitOr:
			return a | c, true
		case kernel.OpXor:
			return a ^ c, true
		case kernel.OpShl:
			return a << c, true
		case kernel.OpShr:
			return a >> c, true
		case kernel.OpLt:
			return b2i(a < c), true
		case kernel.OpLe:
			return b2i(a <= c), true
		case kernel.OpGt:
			return b2i(a > c), true
		case kernel.OpGe:
			return b2i(a >= c), true
		case kernel.OpEq:
			return b2i(a == c), true
		case kernel.OpNe:
			return b2i(a != c), true
		case kernel.OpAnd:
			return b2i(a != 0 && c != 0), true
		case kernel.OpOr:
			return b2i(a != 0 || c != 0), true
		}
	}
	return 0, false
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// access records the access of shared array name at index on the lanes
// of mask.
func (x *tracer) access(name string, index []kernel.Expr, store bool, mask [warpLanes]bool) error {
	a := sharedAccess{array: name, store: store}
	for l := range warpLanes {
		if !mask[l] {
			continue
		}
		ix := make([]int64, len(index))
		for d, e := range index {
			v, ok := x.eval(e, l)
			if !ok {
				return fmt.Errorf("tensor: bank model: kernel %s: an index of %s is not an integer of the thread (%T)", x.k.Name, name, e)
			}
			ix[d] = v
		}
		a.index[l] = ix
	}
	x.tr.add(a)
	return nil
}

// loads records the shared loads of e.
func (x *tracer) loads(e kernel.Expr, mask [warpLanes]bool) (err error) {
	kernel.WalkExpr(e, func(e kernel.Expr) {
		if ld, ok := e.(kernel.Load); ok && err == nil {
			if _, sh := x.shared[ld.Buf]; sh {
				err = x.access(ld.Buf, ld.Index, false, mask)
			}
		}
	})
	return err
}

// exprLoads records the shared loads of every expression s holds.
func (x *tracer) exprLoads(s kernel.Stmt, mask [warpLanes]bool) (err error) {
	kernel.StmtExprs(s, func(e kernel.Expr) {
		if err == nil {
			err = x.loads(e, mask)
		}
	})
	return err
}

// set gives integer variable name its value on the lanes of mask.
func (x *tracer) set(name string, e kernel.Expr, mask [warpLanes]bool) {
	for l := range warpLanes {
		if !mask[l] {
			continue
		}
		if v, ok := x.eval(e, l); ok {
			x.env[l][name] = v
		} else {
			delete(x.env[l], name)
		}
	}
}

func any32(m [warpLanes]bool) bool {
	for _, b := range m {
		if b {
			return true
		}
	}
	return false
}

func (x *tracer) stmts(ss []kernel.Stmt, mask [warpLanes]bool) error {
	if !any32(mask) {
		return nil
	}
	for _, s := range ss {
		if err := x.stmt(s, mask); err != nil {
			return err
		}
	}
	return nil
}

func (x *tracer) stmt(s kernel.Stmt, mask [warpLanes]bool) error {
	switch s := s.(type) {
	case kernel.Decl:
		if err := x.exprLoads(s, mask); err != nil {
			return err
		}
		if s.Init != nil && s.Type.IsInt() {
			x.set(s.Name, s.Init, mask)
		}
	case kernel.Assign:
		if err := x.exprLoads(s, mask); err != nil {
			return err
		}
		x.set(s.Name, s.Value, mask)
	case kernel.Store:
		if err := x.exprLoads(s, mask); err != nil {
			return err
		}
		if _, sh := x.shared[s.Buf]; sh {
			return x.access(s.Buf, s.Index, true, mask)
		}
	case kernel.If:
		if err := x.loads(s.Cond, mask); err != nil {
			return err
		}
		var then, els [warpLanes]bool
		for l := range warpLanes {
			if !mask[l] {
				continue
			}
			c, ok := x.eval(s.Cond, l)
			then[l] = !ok || c != 0
			els[l] = !ok || c == 0
		}
		if err := x.stmts(s.Then, then); err != nil {
			return err
		}
		return x.stmts(s.Else, els)
	case kernel.For:
		var from, to [warpLanes]int64
		for l := range warpLanes {
			if !mask[l] {
				continue
			}
			f, ok1 := x.eval(s.From, l)
			t, ok2 := x.eval(s.To, l)
			if !ok1 || !ok2 {
				return fmt.Errorf("tensor: bank model: kernel %s: the bounds of loop %s are not integers of the thread", x.k.Name, s.Var)
			}
			from[l], to[l] = f, t
		}
		step := max(s.Step, 1)
		for it := int64(0); ; it++ {
			var on [warpLanes]bool
			for l := range warpLanes {
				if mask[l] && from[l]+it*step < to[l] {
					on[l] = true
					x.env[l][s.Var] = from[l] + it*step
				}
			}
			if !any32(on) {
				break
			}
			if err := x.stmts(s.Body, on); err != nil {
				return err
			}
		}
	case kernel.Barrier, kernel.Comment, kernel.AsyncCommit, kernel.AsyncWait:
	default:
		var touches bool
		kernel.WalkStmts([]kernel.Stmt{s}, func(s kernel.Stmt) bool {
			switch s := s.(type) {
			case kernel.VecLoad:
				_, touches = x.shared[s.Buf]
			case kernel.VecStore:
				_, touches = x.shared[s.Buf]
			case kernel.CopyAsync:
				_, touches = x.shared[s.Dst]
			}
			return true
		})
		if touches {
			return fmt.Errorf("tensor: bank model: kernel %s: %T of a shared array is not modelled", x.k.Name, s)
		}
		return x.exprLoads(s, mask)
	}
	return nil
}
