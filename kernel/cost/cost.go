// Package cost counts what one launch of a kernel does, from its IR and
// before any compiler sees it: memory traffic by kind, arithmetic, and the
// most values one thread keeps live. tune turns the counts into predicted
// times to prune candidates that cannot win; the counts themselves make no
// claim about a device.
//
// Counting is static. A loop runs its trip count when the bounds evaluate
// (constants, the launch's sizes, enclosing loop variables); an If counts
// its longer branch (the guards of these kernels are almost always true);
// every load counts, including those a cache will serve.
package cost

import (
	"fmt"

	"github.com/bespoke-hpc/bespoke/kernel"
)

// Counts is what one launch does, summed over every thread.
type Counts struct {
	Threads int64 `json:"threads"`
	// Global memory: bytes loaded and stored by every access.
	LoadBytes  float64 `json:"load_bytes"`
	StoreBytes float64 `json:"store_bytes"`
	Loads      float64 `json:"loads"`  // global load instructions (a vector load is one)
	Stores     float64 `json:"stores"` // global store instructions
	Atomics    float64 `json:"atomics,omitempty"`
	// Shared holds accesses to shared arrays (on a CPU, after the
	// work-group lowering, also the values lifted across barriers).
	Shared float64 `json:"shared"`
	// RealOps are arithmetic operations on reals (an fma is one), IntOps
	// those on integers and indices (addresses, loop counters).
	RealOps float64 `json:"real_ops"`
	IntOps  float64 `json:"int_ops"`
	// Barriers executed by each block.
	Barriers float64 `json:"barriers"`
	// LiveReals is the most real values (scalars and private array
	// elements) one thread holds at once, by a linear scan of its code:
	// the register pressure before any scheduling.
	LiveReals int `json:"live_reals"`
	// Approximate: a loop bound did not evaluate and counted once.
	Approximate bool `json:"approximate,omitempty"`
}

// Count returns the counts of one launch of k with the given sizes (the
// values of its integer scalars and of its grid's size names).
func Count(k *kernel.Kernel, sizes map[string]int64) (Counts, error) {
	if err := kernel.Validate(k); err != nil {
		return Counts{}, fmt.Errorf("cost: %w", err)
	}
	blocks, err := k.Launch.Blocks(sizes)
	if err != nil {
		return Counts{}, fmt.Errorf("cost: %w", err)
	}
	nb := int64(blocks[0]) * int64(blocks[1]) * int64(blocks[2])
	per := int64(k.Launch.Threads())
	threads := nb * per
	if k.Active != nil {
		c := &counter{k: k, env: kernel.NewEnv(k), sizes: sizes, vars: map[string]int64{}}
		if a, ok := c.eval(k.Active); ok && a >= 0 {
			threads = min(threads, a*int64(k.Launch.Block[1]*k.Launch.Block[2]))
		}
	}
	c := &counter{k: k, env: kernel.NewEnv(k), sizes: sizes, vars: map[string]int64{}}
	c.stmts(k.Body, 1)
	out := c.n
	// Per-thread counts to the launch's; barriers stay per block.
	t := float64(threads)
	out.Threads = threads
	out.LoadBytes *= t
	out.StoreBytes *= t
	out.Loads *= t
	out.Stores *= t
	out.Atomics *= t
	out.Shared *= t
	out.RealOps *= t
	out.IntOps *= t
	out.LiveReals = liveReals(k)
	return out, nil
}

// counter walks one thread's code with a multiplier (the trip counts of
// the enclosing loops).
type counter struct {
	k     *kernel.Kernel
	env   *kernel.Env
	sizes map[string]int64
	vars  map[string]int64 // loop variables at their first value
	n     Counts
}

func (c *counter) stmts(ss []kernel.Stmt, mult float64) {
	c.env.Push()
	defer c.env.Pop()
	for _, s := range ss {
		c.stmt(s, mult)
	}
}

func (c *counter) stmt(s kernel.Stmt, mult float64) {
	switch s := s.(type) {
	case kernel.Decl:
		c.env.Declare(s.Name, kernel.Symbol{Type: s.Type, Dims: len(s.Dims), Array: len(s.Dims) > 0})
		delete(c.vars, s.Name)
		if s.Init != nil {
			c.expr(s.Init, mult)
			c.track(s.Name, s.Type, s.Init)
		}
	case kernel.Assign:
		c.expr(s.Value, mult)
		if sym, ok := c.env.Lookup(s.Name); ok {
			c.track(s.Name, sym.Type, s.Value)
		}
	case kernel.Store:
		c.indices(s.Index, mult)
		c.expr(s.Value, mult)
		c.access(s.Buf, 1, false, mult)
	case kernel.AtomicAdd:
		c.indices(s.Index, mult)
		c.expr(s.Value, mult)
		c.n.Atomics += mult
		c.access(s.Buf, 1, true, mult)
		c.access(s.Buf, 1, false, mult)
	case kernel.AtomicFetchAdd:
		c.indices(s.Index, mult)
		c.expr(s.Value, mult)
		c.n.Atomics += mult
		c.access(s.Buf, 1, true, mult)
		c.access(s.Buf, 1, false, mult)
		delete(c.vars, s.Old) // a ticket: unknown statically
	case kernel.VecLoad:
		c.expr(s.Index, mult)
		for _, d := range s.Dst {
			c.env.Declare(d, kernel.Symbol{Type: kernel.Real})
		}
		c.access(s.Buf, len(s.Dst), true, mult)
	case kernel.Prefetch:
		c.expr(s.Index, mult)
	case kernel.VecStore:
		c.expr(s.Index, mult)
		for _, e := range s.Src {
			c.expr(e, mult)
		}
		c.access(s.Buf, len(s.Src), false, mult)
	case kernel.If:
		c.expr(s.Cond, mult)
		if v, ok := c.eval(s.Cond); ok {
			// Decided by sizes and the first block's values (such as
			// the clamp of a lowered block's thread count).
			if v != 0 {
				c.stmts(s.Then, mult)
			} else {
				c.stmts(s.Else, mult)
			}
			return
		}
		if f, ok := c.share(s.Cond); ok {
			// A branch on the thread's index within the block: the
			// threads split between the branches.
			c.stmts(s.Then, mult*f)
			c.stmts(s.Else, mult*(1-f))
			return
		}
		then, els := c.branch(s.Then, mult), c.branch(s.Else, mult)
		// Either branch may have run: forget what they assigned.
		for _, ss := range [][]kernel.Stmt{s.Then, s.Else} {
			kernel.WalkStmts(ss, func(st kernel.Stmt) bool {
				switch a := st.(type) {
				case kernel.Assign:
					delete(c.vars, a.Name)
				case kernel.AtomicFetchAdd:
					delete(c.vars, a.Old)
				}
				return true
			})
		}
		if then.weight() >= els.weight() {
			c.n = then
		} else {
			c.n = els
		}
	case kernel.For:
		c.expr(s.From, mult)
		c.expr(s.To, mult)
		trips := float64(1)
		from, ok1 := c.eval(s.From)
		to, ok2 := c.eval(s.To)
		step := max(s.Step, 1)
		switch {
		case ok1 && ok2:
			trips = float64(max((to-from+step-1)/step, 0))
		case ok2 && step > 1:
			// A loop that deals its iterations over the threads
			// (from a thread index, by the thread count): each runs
			// to/step of them on average.
			trips = float64(max(to, 0)) / float64(step)
			c.n.Approximate = true
		default:
			c.n.Approximate = true
		}
		c.env.Push()
		c.env.Declare(s.Var, kernel.Symbol{Type: kernel.Index})
		if ok1 {
			c.vars[s.Var] = from
		}
		// The loop's own compare and increment.
		c.n.IntOps += 2 * trips * mult
		c.stmts(s.Body, trips*mult)
		delete(c.vars, s.Var)
		c.env.Pop()
	case kernel.CopyAsync:
		kernel.StmtExprs(s, func(e kernel.Expr) { c.expr(e, mult) })
		c.access(s.Src, s.Elements(), true, mult)
		c.access(s.Dst, s.Elements(), false, mult)
	case kernel.BulkCopy:
		// One instruction moves the row; the copy engine writes the
		// shared memory, so only its global bytes count.
		kernel.StmtExprs(s, func(e kernel.Expr) { c.expr(e, mult) })
		n, ok := c.eval(s.Elements)
		if !ok {
			n, c.n.Approximate = 1, true
		}
		c.n.LoadBytes += float64(n) * float64(c.k.DType.Bytes()) * mult
		c.n.Loads += mult
	case kernel.TxBarrier:
		kernel.StmtExprs(s, func(e kernel.Expr) { c.expr(e, mult) })
		c.n.IntOps += mult
	case kernel.Barrier:
		c.n.Barriers += mult
	case kernel.MMA:
		kernel.StmtExprs(s, func(e kernel.Expr) { c.expr(e, mult) })
		// A lane's share of the warp's M·N·K multiply-adds, at half the
		// cost of its own: the fp64 tensor cores run at twice the FMA
		// rate of the lanes (sm_80, sm_90).
		sh := s.Shape
		c.n.RealOps += mult * float64(sh.M*sh.N*sh.K) / 64
	}
}

// track records an integer variable's value when it evaluates, and
// forgets it otherwise.
func (c *counter) track(name string, t kernel.Type, e kernel.Expr) {
	if v, ok := c.eval(e); ok && t.IsInt() {
		c.vars[name] = v
		return
	}
	delete(c.vars, name)
}

// share is the fraction of a block's threads for which cond holds, when
// cond compares a thread index with a constant.
func (c *counter) share(cond kernel.Expr) (float64, bool) {
	b, ok := cond.(kernel.Bin)
	if !ok || b.Op != kernel.OpEq {
		return 0, false
	}
	l, r := b.L, b.R
	if _, ok := l.(kernel.Int); ok {
		l, r = r, l
	}
	if cast, ok := l.(kernel.Cast); ok {
		l = cast.X
	}
	sp, ok1 := l.(kernel.Special)
	_, ok2 := r.(kernel.Int)
	if !ok1 || !ok2 || sp.Kind != kernel.LocalID {
		return 0, false
	}
	return 1 / float64(c.k.Launch.Block[sp.Axis]), true
}

// branch counts ss on a copy of the counts so far.
func (c *counter) branch(ss []kernel.Stmt, mult float64) Counts {
	saved := c.n
	c.stmts(ss, mult)
	got := c.n
	c.n = saved
	return got
}

// weight orders two branches' counts.
func (n Counts) weight() float64 {
	return n.LoadBytes + n.StoreBytes + n.Shared + n.RealOps + n.IntOps
}

func (c *counter) indices(ix []kernel.Expr, mult float64) {
	for _, e := range ix {
		c.expr(e, mult)
	}
}

// access counts a read or write of width elements of buf.
func (c *counter) access(buf string, width int, load bool, mult float64) {
	sym, ok := c.env.Lookup(buf)
	if !ok {
		return
	}
	switch {
	case sym.Buf:
		bytes := float64(width*c.elemBytes(sym.Type)) * mult
		if load {
			c.n.LoadBytes += bytes
			c.n.Loads += mult
		} else {
			c.n.StoreBytes += bytes
			c.n.Stores += mult
		}
	case c.isShared(buf):
		c.n.Shared += float64(width) * mult
	}
	// A private array's elements are registers: no memory traffic.
}

func (c *counter) isShared(name string) bool {
	for _, s := range c.k.Shared {
		if s.Name == name {
			return true
		}
	}
	return false
}

func (c *counter) elemBytes(t kernel.Type) int {
	switch t {
	case kernel.Real:
		return c.k.DType.Bytes()
	case kernel.Int32:
		return 4
	case kernel.Int64:
		return 8
	}
	if c.k.Index64 {
		return 8
	}
	return 4
}

// expr counts the operations and loads of e.
func (c *counter) expr(e kernel.Expr, mult float64) {
	switch e := e.(type) {
	case kernel.Load:
		c.indices(e.Index, mult)
		c.access(e.Buf, 1, true, mult)
	case kernel.Bin:
		c.expr(e.L, mult)
		c.expr(e.R, mult)
		c.op(e, mult)
	case kernel.Unary:
		c.expr(e.X, mult)
		c.op(e, mult)
	case kernel.Cast:
		c.expr(e.X, mult)
		c.n.IntOps += mult
	case kernel.Select:
		c.expr(e.Cond, mult)
		c.expr(e.Then, mult)
		c.expr(e.Else, mult)
		c.op(e, mult)
	case kernel.Call:
		for _, a := range e.Args {
			c.expr(a, mult)
		}
		c.op(e, mult)
	}
}

// op counts one operation as real or integer by its result type.
func (c *counter) op(e kernel.Expr, mult float64) {
	if t, err := c.env.TypeOf(e); err == nil && t == kernel.Real {
		c.n.RealOps += mult
		return
	}
	c.n.IntOps += mult
}

// eval evaluates an integer expression from constants, sizes and loop
// variables (at their first value).
func (c *counter) eval(e kernel.Expr) (int64, bool) {
	switch e := e.(type) {
	case kernel.Int:
		return e.V, true
	case kernel.Var:
		if v, ok := c.vars[e.Name]; ok {
			return v, true
		}
		v, ok := c.sizes[e.Name]
		return v, ok
	case kernel.Cast:
		return c.eval(e.X)
	case kernel.Special:
		switch e.Kind {
		case kernel.LocalSize:
			return int64(c.k.Launch.Block[e.Axis]), true
		case kernel.GroupID:
			// The first block stands for all (a thread index does
			// not: threads of a block differ, see share).
			return 0, true
		}
		return 0, false
	case kernel.Unary:
		x, ok := c.eval(e.X)
		if !ok {
			return 0, false
		}
		switch e.Op {
		case kernel.OpNeg:
			return -x, true
		case kernel.OpNot:
			return b2i(x == 0), true
		}
		return 0, false
	case kernel.Bin:
		l, ok1 := c.eval(e.L)
		r, ok2 := c.eval(e.R)
		if !ok1 || !ok2 {
			return 0, false
		}
		switch e.Op {
		case kernel.OpAdd:
			return l + r, true
		case kernel.OpSub:
			return l - r, true
		case kernel.OpMul:
			return l * r, true
		case kernel.OpDiv:
			if r != 0 {
				return l / r, true
			}
		case kernel.OpRem:
			if r != 0 {
				return l % r, true
			}
		case kernel.OpLt:
			return b2i(l < r), true
		case kernel.OpLe:
			return b2i(l <= r), true
		case kernel.OpGt:
			return b2i(l > r), true
		case kernel.OpGe:
			return b2i(l >= r), true
		case kernel.OpEq:
			return b2i(l == r), true
		case kernel.OpNe:
			return b2i(l != r), true
		case kernel.OpAnd:
			return b2i(l != 0 && r != 0), true
		case kernel.OpOr:
			return b2i(l != 0 || r != 0), true
		}
	case kernel.Call:
		if len(e.Args) == 2 && (e.Fn == kernel.Min || e.Fn == kernel.Max) {
			l, ok1 := c.eval(e.Args[0])
			r, ok2 := c.eval(e.Args[1])
			if ok1 && ok2 {
				if e.Fn == kernel.Min {
					return min(l, r), true
				}
				return max(l, r), true
			}
		}
	}
	return 0, false
}

// liveReals is the most real values live at once in one thread of k: each
// real scalar or private array (all its elements) is live from its
// declaration to its last use, and a value used inside a loop but declared
// before it stays live to the loop's end.
func liveReals(k *kernel.Kernel) int {
	type interval struct{ from, to, weight int }
	var ivs []interval
	open := map[string]int{} // name → its interval in ivs (the latest declaration)
	pos := 0
	use := func(name string) {
		if i, ok := open[name]; ok {
			ivs[i].to = max(ivs[i].to, pos)
		}
	}
	uses := func(s kernel.Stmt) {
		kernel.StmtExprs(s, func(e kernel.Expr) {
			kernel.WalkExpr(e, func(e kernel.Expr) {
				switch e := e.(type) {
				case kernel.Var:
					use(e.Name)
				case kernel.Load:
					use(e.Buf)
				}
			})
		})
	}
	declare := func(name string, weight int) {
		open[name] = len(ivs)
		ivs = append(ivs, interval{pos, pos, weight})
	}
	var walk func(ss []kernel.Stmt)
	walk = func(ss []kernel.Stmt) {
		for _, s := range ss {
			pos++
			switch s := s.(type) {
			case kernel.Decl:
				uses(s)
				if s.Type == kernel.Real {
					w := 1
					for _, d := range s.Dims {
						w *= d
					}
					declare(s.Name, w)
				}
			case kernel.VecLoad:
				uses(s)
				for _, d := range s.Dst {
					declare(d, 1)
				}
			case kernel.Store:
				uses(s)
				use(s.Buf) // a private array being written
			case kernel.If:
				uses(kernel.If{Cond: s.Cond})
				walk(s.Then)
				walk(s.Else)
			case kernel.For:
				uses(kernel.For{From: s.From, To: s.To})
				start := pos
				before := map[string]int{}
				for name, i := range open {
					before[name] = i
				}
				walk(s.Body)
				pos++
				for i := range ivs {
					if ivs[i].from < start && ivs[i].to > start {
						ivs[i].to = max(ivs[i].to, pos)
					}
				}
				// Declarations inside the body end with it.
				for name, i := range open {
					if before[name] != i {
						if j, ok := before[name]; ok {
							open[name] = j
						} else {
							delete(open, name)
						}
					}
				}
			default:
				uses(s)
			}
		}
	}
	walk(k.Body)
	delta := make([]int, pos+2)
	for _, iv := range ivs {
		delta[iv.from] += iv.weight
		delta[iv.to+1] -= iv.weight
	}
	live, most := 0, 0
	for _, d := range delta {
		live += d
		most = max(most, live)
	}
	return most
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
