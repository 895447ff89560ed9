package pass

import (
	"fmt"
	"slices"

	"github.com/bespoke-hpc/bespoke/kernel"
)

// Names of the loop variables HostLoops introduces, one per block axis.
var threadVars = [3]string{"_lx", "_ly", "_lz"}

// limVar is the bound of the x loop of a kernel with Active threads.
const limVar = "_lim"

// oldVar receives an atomic fetch-add's old value before it is stored into
// a lifted variable.
const oldVar = "_old"

// HostLoops lowers k, written for one thread of a block, to the code that
// one CPU thread runs for a whole block: the work-group loop transformation
// CPU OpenCL drivers use. The result is a kernel of one thread per block
// that computes what k's block computes, so it runs (and can be
// interpreted) like any kernel; its GroupID x is the block index.
//
// A kernel without barriers and with one row of threads becomes loops over
// x (marked Vectorize), bounded by Active where it is set; long bodies are
// cut into several such loops (see Segments). Any other kernel is cut into
// phases at its barriers, each phase a nest of loops over the block's
// threads; a barrier inside a For or If (uniform, as Validate requires)
// keeps that statement around the phases of its body. Variables declared at
// a level that is cut must outlive a phase: they are lifted into
// block-private arrays indexed by thread (the result's Shared, after k's own
// shared arrays), which the C dialect keeps in a per-thread context.
// Uniform loop bounds and conditions above the thread loops read such
// variables as thread 0 holds them.
//
// It fails for kernels that use more than one grid dimension (the host runs
// a 1-D grid of blocks) and for kernels with warp-level mma (kernel.MMA)
// or TF32 rounding.
func HostLoops(k *kernel.Kernel) (*kernel.Kernel, error) {
	if err := kernel.Validate(k); err != nil {
		return nil, err
	}
	if arch := kernel.NeedsArch(k.Body); arch > 0 {
		return nil, fmt.Errorf("kernel %s: warp-level mma (or TF32 rounding) needs CUDA tensor cores (sm_%d); the host has no warps to run it", k.Name, arch)
	}
	usesGrid := false
	walkAllExprs(k, func(e kernel.Expr) {
		if s, ok := e.(kernel.Special); ok && s.Kind == kernel.GroupID && s.Axis > 0 {
			usesGrid = true
		}
	})
	if usesGrid || k.Launch.Grid[1].Size != "" || k.Launch.Grid[2].Size != "" || k.Launch.Grid[1].Fixed > 1 || k.Launch.Grid[2].Fixed > 1 {
		return nil, fmt.Errorf("kernel %s: the host runs a 1-D grid of blocks; this kernel has a grid over y or z", k.Name)
	}
	h := *k
	h.Launch.Block = [3]int{1, 1, 1}
	h.Active = nil
	h.Shared = slices.Clone(k.Shared)
	l := &lowerer{k: k, lifted: map[string]lifted{}}
	b := k.Launch.Block
	if !k.HasBarrier() && b[1] == 1 && b[2] == 1 {
		h.Body = l.simple()
		return &h, nil
	}
	l.collect(k.Body)
	for _, name := range l.order {
		lf := l.lifted[name]
		h.Shared = append(h.Shared, kernel.Shared{Name: name, Type: lf.typ, Dims: append(l.threadDims(), lf.dims...)})
	}
	h.Body = l.region(k.Body)
	return &h, nil
}

type lowerer struct {
	k      *kernel.Kernel
	lifted map[string]lifted
	order  []string // lifted names in order of declaration
}

type lifted struct {
	typ  kernel.Type
	dims []int // array dimensions after the thread dimensions
}

// simple lowers a kernel without barriers and one row of threads.
func (l *lowerer) simple() []kernel.Stmt {
	k := l.k
	bx := int64(k.Launch.Block[0])
	lim := kernel.Expr(kernel.Int{V: bx})
	var body []kernel.Stmt
	if k.Active != nil {
		g := kernel.Special{Kind: kernel.GroupID}
		body = append(body,
			kernel.Decl{Type: kernel.Index, Name: limVar, Init: kernel.Bin{Op: kernel.OpSub, L: k.Active, R: kernel.Bin{Op: kernel.OpMul, L: g, R: kernel.Int{V: bx}}}},
			kernel.If{Cond: kernel.Bin{Op: kernel.OpGt, L: kernel.Var{Name: limVar}, R: kernel.Int{V: bx}}, Then: []kernel.Stmt{kernel.Assign{Name: limVar, Value: kernel.Int{V: bx}}}})
		lim = kernel.Var{Name: limVar}
	} else {
		body = append(body, kernel.Decl{Type: kernel.Index, Name: limVar, Init: lim})
		lim = kernel.Var{Name: limVar}
	}
	pieces, prefixes := Segments(k.Body, k.Params)
	for i, piece := range pieces {
		loop := append(slices.Clone(prefixes[i]), piece...)
		body = append(body, kernel.For{Var: threadVars[0], From: kernel.Int{}, To: lim, Body: l.threads(loop, false, nil), Vectorize: true})
	}
	return body
}

// threadDims are the dimensions of a lifted variable's thread index: x, and
// y and z where the block has more than one thread along them.
func (l *lowerer) threadDims() []int {
	b := l.k.Launch.Block
	var d []int
	if b[2] > 1 {
		d = append(d, b[2])
	}
	if b[1] > 1 || b[2] > 1 {
		d = append(d, b[1])
	}
	return append(d, b[0])
}

// threadIndex indexes a lifted variable for the current thread, or for
// thread 0 when uniform.
func (l *lowerer) threadIndex(uniform bool) []kernel.Expr {
	b := l.k.Launch.Block
	var idx []kernel.Expr
	for a := 2; a >= 0; a-- {
		if a > 0 && !(b[a] > 1 || (a == 1 && b[2] > 1)) {
			continue
		}
		if uniform {
			idx = append(idx, kernel.Int{})
		} else {
			idx = append(idx, kernel.Var{Name: threadVars[a]})
		}
	}
	return idx
}

// collect lifts the declarations of every level that region cuts (a body
// holding a barrier) that outlive their phase: those that a statement of
// another phase of that level names (a later run of statements, or a For
// or If holding a barrier, whose bounds and bodies are phases of their
// own). A variable used only in the phase that declares it stays a
// variable of that phase's thread loop, where the compiler can keep it in
// a register (or a vector lane) instead of a block-private array.
func (l *lowerer) collect(ss []kernel.Stmt) {
	phase := make([]int, len(ss))
	p := 0
	for i, s := range ss {
		switch s := s.(type) {
		case kernel.Barrier:
			p++
		case kernel.For:
			if kernel.HasBarrier(s.Body) {
				p++
				phase[i] = p
				p++
				continue
			}
		case kernel.If:
			if kernel.HasBarrier(s.Then) || kernel.HasBarrier(s.Else) {
				p++
				phase[i] = p
				p++
				continue
			}
		}
		phase[i] = p
	}
	named := make([]map[string]bool, len(ss))
	for i, s := range ss {
		named[i] = names(s)
	}
	outlives := func(i int, name string) bool {
		for j := range ss {
			if phase[j] != phase[i] && named[j][name] {
				return true
			}
		}
		return false
	}
	for i, s := range ss {
		switch s := s.(type) {
		case kernel.Decl:
			if !outlives(i, s.Name) {
				continue
			}
			lf := lifted{typ: s.Type, dims: s.Dims}
			if old, ok := l.lifted[s.Name]; ok {
				if old.typ == lf.typ && slices.Equal(old.dims, lf.dims) {
					continue
				}
			}
			if _, ok := l.lifted[s.Name]; !ok {
				l.order = append(l.order, s.Name)
			}
			l.lifted[s.Name] = lf
		case kernel.For:
			if kernel.HasBarrier(s.Body) {
				l.collect(s.Body)
			}
		case kernel.If:
			if kernel.HasBarrier(s.Then) || kernel.HasBarrier(s.Else) {
				l.collect(s.Then)
				l.collect(s.Else)
			}
		}
	}
}

// names is every variable and array s (and the statements it holds)
// reads, writes or declares.
func names(s kernel.Stmt) map[string]bool {
	out := map[string]bool{}
	for _, v := range uses(s) {
		out[v] = true
	}
	kernel.WalkStmts([]kernel.Stmt{s}, func(s kernel.Stmt) bool {
		switch s := s.(type) {
		case kernel.Decl:
			out[s.Name] = true
		case kernel.Assign:
			out[s.Name] = true
		case kernel.AtomicFetchAdd:
			out[s.Old] = true
		case kernel.VecLoad:
			for _, d := range s.Dst {
				out[d] = true
			}
		case kernel.For:
			out[s.Var] = true
		}
		return true
	})
	return out
}

// region lowers a statement list that is cut at barriers: each run of
// barrier-free statements becomes one nest of thread loops; a For or If
// holding a barrier stays around the lowered regions of its bodies.
func (l *lowerer) region(ss []kernel.Stmt) []kernel.Stmt {
	var out, run []kernel.Stmt
	flush := func() {
		if len(run) > 0 {
			out = append(out, l.nest(run))
			run = nil
		}
	}
	for _, s := range ss {
		switch st := s.(type) {
		case kernel.Barrier:
			flush()
			continue
		case kernel.For:
			if kernel.HasBarrier(st.Body) {
				flush()
				st.From, st.To = l.uniform(st.From), l.uniform(st.To)
				st.Body = l.region(st.Body)
				out = append(out, st)
				continue
			}
		case kernel.If:
			if kernel.HasBarrier(st.Then) || kernel.HasBarrier(st.Else) {
				flush()
				st.Cond = l.uniform(st.Cond)
				st.Then, st.Else = l.region(st.Then), l.region(st.Else)
				out = append(out, st)
				continue
			}
		}
		run = append(run, s)
	}
	flush()
	return out
}

// nest wraps a barrier-free run in loops over the block's threads, z
// outermost; x is marked Vectorize. Kernels with Active threads guard the
// run with it.
func (l *lowerer) nest(run []kernel.Stmt) kernel.Stmt {
	k := l.k
	body := l.threads(run, true, nil)
	if k.Active != nil {
		gx := kernel.Bin{Op: kernel.OpAdd, L: kernel.Bin{Op: kernel.OpMul, L: kernel.Special{Kind: kernel.GroupID}, R: kernel.Int{V: int64(k.Launch.Block[0])}}, R: kernel.Var{Name: threadVars[0]}}
		body = []kernel.Stmt{kernel.If{Cond: kernel.Bin{Op: kernel.OpLt, L: gx, R: l.uniform(k.Active)}, Then: body}}
	}
	var s kernel.Stmt = kernel.For{Var: threadVars[0], From: kernel.Int{}, To: kernel.Int{V: int64(k.Launch.Block[0])}, Body: body, Vectorize: true}
	for a := 1; a < 3; a++ {
		if k.Launch.Block[a] > 1 {
			s = kernel.For{Var: threadVars[a], From: kernel.Int{}, To: kernel.Int{V: int64(k.Launch.Block[a])}, Body: []kernel.Stmt{s}}
		}
	}
	return s
}

// uniform rewrites an expression evaluated above the thread loops: lifted
// variables as thread 0 holds them, thread indices 0.
func (l *lowerer) uniform(e kernel.Expr) kernel.Expr {
	return kernel.MapExpr(e, func(x kernel.Expr) kernel.Expr {
		switch x := x.(type) {
		case kernel.Var:
			if _, ok := l.lifted[x.Name]; ok {
				return kernel.Load{Buf: x.Name, Index: l.threadIndex(true)}
			}
		case kernel.Special:
			return l.special(x, true)
		}
		return x
	})
}

// special spells a thread-geometry value inside (or, uniform, above) the
// thread loops.
func (l *lowerer) special(s kernel.Special, uniform bool) kernel.Expr {
	b := l.k.Launch.Block
	switch s.Kind {
	case kernel.LocalSize:
		return kernel.Int{V: int64(b[s.Axis])}
	case kernel.LocalID:
		if uniform || b[s.Axis] == 1 {
			return kernel.Int{}
		}
		return kernel.Var{Name: threadVars[s.Axis]}
	}
	return s // GroupID x: the block index
}

// shadows is a chain of nested scopes' declarations, which hide lifted
// variables of the same name.
type shadows struct {
	names  map[string]bool
	parent *shadows
}

func (s *shadows) has(name string) bool {
	for ; s != nil; s = s.parent {
		if s.names[name] {
			return true
		}
	}
	return false
}

func (s *shadows) add(name string) {
	if s.names == nil {
		s.names = map[string]bool{}
	}
	s.names[name] = true
}

// threads rewrites statements that run inside the thread loops: thread
// indices become the loop variables, and the lifted variables (those not
// shadowed by a nested declaration) their thread's element. At the level
// the variables were lifted from (top), a declaration becomes a store of
// its initial value; below it, a declaration shadows.
func (l *lowerer) threads(ss []kernel.Stmt, top bool, outer *shadows) []kernel.Stmt {
	sc := &shadows{parent: outer}
	isLifted := func(name string) bool {
		_, ok := l.lifted[name]
		return ok && !sc.has(name)
	}
	mapExpr := func(x kernel.Expr) kernel.Expr {
		switch x := x.(type) {
		case kernel.Var:
			if isLifted(x.Name) {
				return kernel.Load{Buf: x.Name, Index: l.threadIndex(false)}
			}
		case kernel.Load:
			if isLifted(x.Buf) {
				return kernel.Load{Buf: x.Buf, Index: append(l.threadIndex(false), x.Index...)}
			}
		case kernel.Special:
			return l.special(x, false)
		}
		return x
	}
	out := make([]kernel.Stmt, 0, len(ss))
	for _, s := range ss {
		s = kernel.MapExprs(s, mapExpr)
		switch st := s.(type) {
		case kernel.Decl:
			if top && isLifted(st.Name) {
				if st.Init != nil {
					out = append(out, kernel.Store{Buf: st.Name, Index: l.threadIndex(false), Value: st.Init})
				}
				continue
			}
			if _, ok := l.lifted[st.Name]; ok {
				sc.add(st.Name)
			}
		case kernel.Assign:
			if isLifted(st.Name) {
				s = kernel.Store{Buf: st.Name, Index: l.threadIndex(false), Value: st.Value}
			}
		case kernel.Store:
			if isLifted(st.Buf) {
				st.Index = append(l.threadIndex(false), st.Index...)
				s = st
			}
		case kernel.AtomicFetchAdd:
			if st.Old != "" && isLifted(st.Old) {
				// The old value into a scoped temporary, then into the
				// thread's element of the lifted variable.
				typ := l.lifted[st.Old].typ
				dst := st.Old
				st.Old = oldVar
				out = append(out, kernel.If{Cond: kernel.Int{V: 1}, Then: []kernel.Stmt{
					kernel.Decl{Type: typ, Name: oldVar},
					st,
					kernel.Store{Buf: dst, Index: l.threadIndex(false), Value: kernel.Var{Name: oldVar}},
				}})
				continue
			}
		case kernel.VecLoad:
			if slices.ContainsFunc(st.Dst, isLifted) {
				// A vector load into lifted variables: element by
				// element (the host has no vector type here).
				for i, d := range st.Dst {
					v := kernel.Load{Buf: st.Buf, Index: []kernel.Expr{offset(st.Index, i)}}
					if isLifted(d) {
						out = append(out, kernel.Store{Buf: d, Index: l.threadIndex(false), Value: v})
					} else {
						out = append(out, kernel.Assign{Name: d, Value: v})
					}
				}
				continue
			}
		case kernel.If:
			st.Then = l.threads(st.Then, false, sc)
			if st.Else != nil {
				st.Else = l.threads(st.Else, false, sc)
			}
			s = st
		case kernel.For:
			inner := &shadows{parent: sc}
			if _, ok := l.lifted[st.Var]; ok {
				inner.add(st.Var)
			}
			st.Body = l.threads(st.Body, false, inner)
			s = st
		}
		out = append(out, s)
	}
	return out
}

// offset is idx + i.
func offset(idx kernel.Expr, i int) kernel.Expr {
	if i == 0 {
		return idx
	}
	return kernel.Bin{Op: kernel.OpAdd, L: idx, R: kernel.Int{V: int64(i)}}
}

// walkAllExprs calls f on every expression of k.
func walkAllExprs(k *kernel.Kernel, f func(kernel.Expr)) {
	if k.Active != nil {
		kernel.WalkExpr(k.Active, f)
	}
	kernel.WalkStmts(k.Body, func(s kernel.Stmt) bool {
		kernel.StmtExprs(s, func(e kernel.Expr) { kernel.WalkExpr(e, f) })
		return true
	})
}
