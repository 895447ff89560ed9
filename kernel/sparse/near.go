package sparse

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/bespoke-hpc/bespoke/kernel"
)

// Near classes: operators that repeat a factor up to rounding.
//
// PyFR builds a prism's operators through the inverse of its whole
// Vandermonde matrix, so the copies of the triangle's derivatives on the
// levels of the line agree only to about 1e-10 (its cleaning tolerance):
// at p6 a copy differs from the first in 6–8 of its 784 values, in three
// patterns (levels {0, 3, 6}, {1, 4}, {2, 5}), and a few entries of 1e-10
// couple points the line's derivative should not (a stray column in 5 of
// the 28 lines). Exact classes then cut the gradient into 22 loops of 1–3
// blocks, 1,300 lines of CUDA: instruction-cache misses and warps idle
// at the barriers (docs/rationale.md#near-classes).
//
// planNear finds the structure without those: the supports that group
// lines into blocks leave out entries under strayRel of A's largest, and
// every non-zero no block's tile holds is added by the block that writes
// its row (a stray); the blocks of near classes (one tile shape, at most
// one value in nearMaxVary differing) run in one loop whose differing
// values and strays are selected by the block's variant. The kernel still
// applies every value of A as it is.
const (
	strayRel        = 1e-8
	nearMaxVary     = 8 // a tile's values per differing value, at least
	nearMaxVariants = 8
	nearMaxStrays   = 32 // non-zeros per stray, at least
)

// sig says whether α·A[i][r] counts in the supports that group lines into
// blocks: any non-zero, or with below set one of at least below.
func (g *gen) sig(i, r int) bool {
	x := g.at(i, r)
	return x != 0 && (g.below == 0 || math.Abs(x) >= g.below)
}

// Ways nearTasks cuts blocks over a tile's bounds.
const (
	cutNone   = iota // whole blocks
	cutLines         // pieces: along the lines grouped (as pieces)
	cutAcross        // pieces: across them
)

// planNear is planBlocks' plan of near classes: whole blocks and blocks
// cut into pieces either way, both ways, the plan with fewer loops, then
// fewer phases (barriers, and blocks a phase for the y threads: a p6
// prism's divergence cut across its lines is 3 phases of 14 blocks, along
// them 5 of 7), then fewer loads kept.
func (g *gen) planNear() (*blockPlan, error) {
	var best *blockPlan
	var last error
	better := func(p *blockPlan) bool {
		return best == nil || cmp.Or(cmp.Compare(p.loops(), best.loops()), cmp.Compare(len(p.phases), len(best.phases)), cmp.Compare(p.loads(), best.loads())) < 0
	}
	for _, cut := range []int{cutNone, cutLines, cutAcross} {
		for _, by := range []string{"rows", "cols"} {
			tasks, err := g.nearTasks(by, cut)
			if err == nil {
				var p *blockPlan
				if p, err = g.planWith(by, tasks, true); err == nil && better(p) {
					best = p
				}
			}
			if err != nil {
				last = err
			}
		}
	}
	if best == nil {
		return nil, last
	}
	return best, nil
}

// nearTasks groups A's lines by their supports without the entries under
// strayRel of A's largest (none where a row holds only those), cuts the
// blocks into pieces as cut says, and gives each non-zero outside every
// tile to a block that writes its row: of those, the one with a column
// nearest the stray's.
func (g *gen) nearTasks(by string, cut int) ([]blockTask, error) {
	big := 0.0
	for _, x := range g.a {
		big = max(big, math.Abs(x))
	}
	g.below = strayRel * big
	defer func() { g.below = 0 }()
	for i := 0; i < g.m; i++ {
		some, kept := false, false
		for r := 0; r < g.k; r++ {
			some = some || g.at(i, r) != 0
			kept = kept || g.sig(i, r)
		}
		if some && !kept {
			return nil, fmt.Errorf("row %d holds only entries under %g", i, g.below)
		}
	}
	support := make([][]int, g.m)
	if by == "cols" {
		support = make([][]int, g.k)
	}
	nnz := 0
	for i := 0; i < g.m; i++ {
		for r := 0; r < g.k; r++ {
			if g.at(i, r) == 0 {
				continue
			}
			nnz++
			if g.sig(i, r) {
				if by == "cols" {
					support[r] = append(support[r], i)
				} else {
					support[i] = append(support[i], r)
				}
			}
		}
	}
	tasks := groupBySupport(support, by == "cols")
	switch cut {
	case cutLines:
		tasks = g.cutPieces(tasks, by == "rows")
	case cutAcross:
		tasks = g.cutPieces(tasks, by == "cols")
	}
	covered := make([]bool, g.m*g.k)
	blockOf := make([][]int, g.m) // the tasks that write each row
	for ti, t := range tasks {
		for _, i := range t.rows {
			blockOf[i] = append(blockOf[i], ti)
			for _, r := range t.cols {
				covered[i*g.k+r] = true
			}
		}
	}
	strays := 0
	for i := 0; i < g.m; i++ {
		for r := 0; r < g.k; r++ {
			if g.at(i, r) == 0 || covered[i*g.k+r] {
				continue
			}
			if len(blockOf[i]) == 0 {
				return nil, fmt.Errorf("a stray at (%d, %d) in a row no block writes", i, r)
			}
			strays++
			if nearMaxStrays*strays > nnz {
				return nil, fmt.Errorf("more than one non-zero in %d outside the blocks", nearMaxStrays)
			}
			ti := slices.MinFunc(blockOf[i], func(a, b int) int { return cmp.Compare(colDistance(tasks[a], r), colDistance(tasks[b], r)) })
			tasks[ti].strays = append(tasks[ti].strays, [2]int{i, r})
		}
	}
	return tasks, nil
}

// colDistance is how far column r lies from t's nearest column.
func colDistance(t blockTask, r int) int {
	d := math.MaxInt
	for _, c := range t.cols {
		d = min(d, abs(c-r))
	}
	return d
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// nearGroups maps each task's class to the first class near it: the same
// offsets, and values that differ in at most one entry in nearMaxVary.
func nearGroups(classes []blockClass, classOf []int) []int {
	rep := make([]int, len(classes))
	for c := range classes {
		rep[c] = c
		for d := 0; d < c; d++ {
			if rep[d] == d && nearClass(classes[d], classes[c]) {
				rep[c] = d
				break
			}
		}
	}
	out := make([]int, len(classOf))
	for ti, c := range classOf {
		out[ti] = rep[c]
	}
	return out
}

func nearClass(a, b blockClass) bool {
	if !slices.Equal(a.rowOff, b.rowOff) || !slices.Equal(a.colOff, b.colOff) {
		return false
	}
	differ := 0
	for e := range a.vals {
		if a.vals[e] != b.vals[e] {
			differ++
		}
	}
	return differ*nearMaxVary <= len(a.vals)
}

// variants sets l's differing entries, its strays and the variants of its
// blocks (the most frequent variant first).
func (g *gen) variants(p *blockPlan, l *blockLoop) error {
	c := p.classes[l.class]
	nc := len(c.colOff)
	at := func(t blockTask, e int) float64 { return g.at(t.rows[e/nc], t.cols[e%nc]) }
	for e := range c.vals {
		if slices.ContainsFunc(l.blocks, func(t blockTask) bool { return at(t, e) != c.vals[e] }) {
			l.vary = append(l.vary, e)
		}
	}
	for _, t := range l.blocks {
		for _, s := range t.strays {
			key := [2]int{slices.Index(t.rows, s[0]), s[1]}
			if !slices.Contains(l.strays, key) {
				l.strays = append(l.strays, key)
			}
		}
	}
	if len(l.vary)+len(l.strays) == 0 {
		return nil
	}
	if (len(l.vary)+len(l.strays))*nearMaxVary > len(c.vals) {
		return fmt.Errorf("%d differing values and %d strays in a loop of %d×%d blocks", len(l.vary), len(l.strays), len(c.rowOff), nc)
	}
	rows := make([][]float64, len(l.blocks))
	for b, t := range l.blocks {
		for _, e := range l.vary {
			rows[b] = append(rows[b], at(t, e))
		}
		for _, s := range l.strays {
			x := 0.0
			if i := t.rows[s[0]]; slices.Contains(t.strays, [2]int{i, s[1]}) {
				x = g.at(i, s[1])
			}
			rows[b] = append(rows[b], x)
		}
	}
	var distinct [][]float64
	count := map[int]int{}
	for _, r := range rows {
		v := slices.IndexFunc(distinct, func(d []float64) bool { return slices.Equal(d, r) })
		if v < 0 {
			v = len(distinct)
			distinct = append(distinct, r)
		}
		count[v]++
	}
	if len(distinct) > nearMaxVariants {
		return fmt.Errorf("%d variants of a loop's blocks (at most %d)", len(distinct), nearMaxVariants)
	}
	order := make([]int, len(distinct))
	for v := range order {
		order[v] = v
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(count[b], count[a]) })
	for _, v := range order {
		l.variants = append(l.variants, distinct[v])
	}
	for _, r := range rows {
		l.variant = append(l.variant, slices.IndexFunc(l.variants, func(d []float64) bool { return slices.Equal(d, r) }))
	}
	return nil
}

// variantIndex is the variant of block t: 0 but where t is one of those
// of another variant.
func variantIndex(variant []int, n int) kernel.Expr {
	var e kernel.Expr = kernel.Const(0)
	for v := n - 1; v > 0; v-- {
		e = kernel.Select{Cond: anyEq(kernel.Ref("t"), variant, func(x int) bool { return x == v }), Then: kernel.Const(v), Else: e}
	}
	return e
}

// variantValue is the k-th value of the variant vk: variant 0's but where
// vk is one of those with another.
func (l *blockLoop) variantValue(k int) kernel.Expr {
	x0 := l.variants[0][k]
	var e kernel.Expr = kernel.Float(x0)
	var done []float64
	for v := len(l.variants) - 1; v > 0; v-- {
		x := l.variants[v][k]
		if x == x0 || slices.Contains(done, x) {
			continue
		}
		done = append(done, x)
		vs := make([]int, len(l.variants))
		for w := range vs {
			vs[w] = w
		}
		e = kernel.Select{Cond: anyEq(kernel.Ref("vk"), vs, func(w int) bool { return l.variants[w][k] == x }), Then: kernel.Float(x), Else: e}
	}
	return e
}

// anyEq is x == i for any i with keep(of[i]), or-ed.
func anyEq(x kernel.Expr, of []int, keep func(int) bool) kernel.Expr {
	var e kernel.Expr
	for i, y := range of {
		if !keep(y) {
			continue
		}
		eq := kernel.Eq(x, kernel.Const(i))
		if e == nil {
			e = eq
		} else {
			e = kernel.Or(e, eq)
		}
	}
	return e
}
