package tensor

import (
	"sync"

	"github.com/bespoke-hpc/bespoke/kernel"
)

// The cube layouts (buildCube, buildCube2) are written against the
// logical array s[z][c][b][a] (element z's point (a, b, c)). Every stage
// reads it along a different axis with a warp's lanes spread over the
// other two, so no one set of row-major strides spreads every stage's
// lanes over the banks (rows of Q, or Q|1, put lanes of two rows or two
// elements of a half-warp in one bank). padCube chooses, by the
// bank model (bank.go) over every access of the block, which thread runs
// which pencil in the stages along x and y and the strides of s
// (element, plane, row: s[z][c·Sc + b·Sb + a]) within a little more
// memory (docs/rationale.md#cube-banks).

// cubeStrides are the word strides of s's element, plane and row.
type cubeStrides struct{ se, sc, sb int }

// plainCube is the row-major layout s[E][Q][Q][Q|1].
func plainCube(q int) cubeStrides {
	sb := q | 1
	return cubeStrides{se: q * q * sb, sc: q * sb, sb: sb}
}

// padSlack is the most words padCube adds to an element: an eighth, and
// at least 16 (a bank group of doubles) so that small elements can move.
func padSlack(words int) int { return max(words/8, 16) }

// cubeMap is which thread runs which pencil in the stages along x and y:
// as first written, thread (lx, ly) runs pencil (b, c) = (lx, ly) along x
// and (α, c) = (lx, ly) along y; swapped, (ly, lx). A warp's lanes then
// step through s by other strides, which a layout of s may suit better:
// with rows of Q, stage x wants the plane stride to put a row's lanes in
// other banks than the next row's, stage y wants it to continue them, and
// no one stride does both.
type cubeMap struct{ swapX, swapY bool }

// cubeMaps are the maps padCube tries, the first as written.
var cubeMaps = []cubeMap{{}, {swapY: true}, {swapX: true}, {swapX: true, swapY: true}}

// roles are the pencil's indices in the stages along x, (b, c), and y,
// (α, c), in terms of the thread's.
func (m cubeMap) roles() (xb, xc, ya, yc kernel.Expr) {
	xb, xc, ya, yc = lx, ly, lx, ly
	if m.swapX {
		xb, xc = ly, lx
	}
	if m.swapY {
		ya, yc = ly, lx
	}
	return xb, xc, ya, yc
}

// cubeChoice is the map and strides padCube chose.
type cubeChoice struct {
	m  cubeMap
	st cubeStrides
}

// padMemo holds each kernel's choice by name (the name fixes the
// operator, order, precision, layout and elements per block).
var padMemo sync.Map

// padCube is the kernel build gives for the map of fewest conflict
// wavefronts, its s laid out with the strides of fewest (the block's
// shared memory within MaxShared). It keeps the kernel as first written
// where nothing does better, or where the bank model cannot follow it
// (TestCubePadding makes sure that it can for every candidate).
func padCube(build func(cubeMap) *kernel.Kernel, q, e int) *kernel.Kernel {
	k := build(cubeMap{})
	var ch cubeChoice
	if v, ok := padMemo.Load(k.Name); ok {
		ch = v.(cubeChoice)
	} else {
		ch = chooseCube(build, k, q, e)
		padMemo.Store(k.Name, ch)
	}
	if ch.m != (cubeMap{}) {
		k = build(ch.m)
	}
	if ch.st != plainCube(q) {
		layCube(k, ch.st, e)
	}
	return k
}

// chooseCube is the map and strides of fewest conflict wavefronts (loads
// and stores of every shared array), the first map among equals.
func chooseCube(build func(cubeMap) *kernel.Kernel, k0 *kernel.Kernel, q, e int) cubeChoice {
	best, bestC := cubeChoice{st: plainCube(q)}, -1
	for i, m := range cubeMaps {
		k := k0
		if i > 0 {
			k = build(m)
		}
		st, c, err := chooseStrides(k, q, e)
		if err != nil {
			return cubeChoice{st: plainCube(q)}
		}
		if bestC < 0 || c < bestC {
			best, bestC = cubeChoice{m, st}, c
		}
	}
	return best
}

// chooseStrides searches the strides of k's s: rows of at least Q words,
// planes and elements that do not overlap, each stride tried over a bank
// group's residues, at most padSlack more words per element and
// MaxShared in all; the plain layout unless another has fewer conflict
// wavefronts, the fewest words among equals. c is the kernel's conflict
// wavefronts with them, every shared array's.
func chooseStrides(k *kernel.Kernel, q, e int) (best cubeStrides, c int, err error) {
	t, err := traceShared(k)
	if err != nil {
		return cubeStrides{}, 0, err
	}
	word := k.TypeBytes(kernel.Real)
	banks := bankBytes / word
	other := 0
	for _, sh := range k.Shared {
		if sh.Name != "s" {
			other += sh.Len()
		}
	}
	plain := plainCube(q)
	limit := min(plain.se+padSlack(plain.se), (MaxShared/word-other)/e)
	passes := cubePasses(t, banks)
	plainC := cubeCost(passes, plain, banks)
	best, c = plain, plainC
	span := min(banks, 16)
	for sb := q; sb < q+span; sb++ {
		for sc := (q-1)*sb + q; sc < (q-1)*sb+q+span; sc++ {
			lo := (q-1)*sc + (q-1)*sb + q
			for se := lo; se < lo+span && se <= limit; se++ {
				s := cubeStrides{se, sc, sb}
				if x := cubeCost(passes, s, banks); x < c || x == c && x < plainC && se < best.se {
					best, c = s, x
				}
			}
		}
	}
	// The other arrays' conflicts do not change with s's layout, but do
	// with the map.
	st := strideMap{}
	for _, sh := range k.Shared {
		st[sh.Name] = rowMajor(sh.Dims)
	}
	all := t.count(st, word)
	return best, c + all.LoadConflicts() + all.StoreConflicts() - plainC, nil
}

// cubePass is one pass (a half-warp of doubles, a warp of floats) of an
// access of s: the distinct points its lanes touch (a broadcast counts
// once), relative to the access's first lane, and how often it occurs.
type cubePass struct {
	points [][4]int64
	count  int
}

// cubePasses are the passes of the trace's accesses of s.
func cubePasses(t *bankTrace, banks int) []cubePass {
	var out []cubePass
	for _, p := range t.patterns {
		if p.array != "s" {
			continue
		}
		for p0 := 0; p0 < warpLanes; p0 += banks {
			var pts [][4]int64
		lanes:
			for _, ix := range p.rel[p0:min(p0+banks, warpLanes)] {
				if ix == nil {
					continue
				}
				pt := [4]int64{ix[0], ix[1], ix[2], ix[3]}
				for _, o := range pts {
					if o == pt {
						continue lanes
					}
				}
				pts = append(pts, pt)
			}
			if len(pts) > 0 {
				out = append(out, cubePass{pts, p.count})
			}
		}
	}
	return out
}

// cubeCost is the conflict wavefronts of the passes under strides s
// (distinct points are distinct words: the layouts tried do not overlap).
func cubeCost(passes []cubePass, s cubeStrides, banks int) int {
	cost := 0
	hist := make([]int, banks)
	for _, p := range passes {
		clear(hist)
		worst := 0
		for _, pt := range p.points {
			a := pt[0]*int64(s.se) + pt[1]*int64(s.sc) + pt[2]*int64(s.sb) + pt[3]
			g := ((a % int64(banks)) + int64(banks)) % int64(banks)
			hist[g]++
			worst = max(worst, hist[g])
		}
		cost += (worst - 1) * p.count
	}
	return cost
}

// layCube rewrites k's accesses of s[z][c][b][a] as s[z][c·Sc + b·Sb + a]
// and declares s as [e][Se].
func layCube(k *kernel.Kernel, s cubeStrides, e int) {
	flat := func(ix []kernel.Expr) []kernel.Expr {
		return []kernel.Expr{ix[0], affine([]kernel.Expr{ix[1], ix[2], ix[3]}, []int{s.sc, s.sb, 1})}
	}
	f := func(x kernel.Expr) kernel.Expr {
		if ld, ok := x.(kernel.Load); ok && ld.Buf == "s" && len(ld.Index) == 4 {
			return kernel.Load{Buf: "s", Index: flat(ld.Index)}
		}
		return x
	}
	var walk func(ss []kernel.Stmt) []kernel.Stmt
	walk = func(ss []kernel.Stmt) []kernel.Stmt {
		out := make([]kernel.Stmt, len(ss))
		for i, st := range ss {
			st = kernel.MapExprs(st, f)
			switch x := st.(type) {
			case kernel.Store:
				if x.Buf == "s" && len(x.Index) == 4 {
					x.Index = flat(x.Index)
				}
				st = x
			case kernel.If:
				x.Then, x.Else = walk(x.Then), walk(x.Else)
				st = x
			case kernel.For:
				x.Body = walk(x.Body)
				st = x
			}
			out[i] = st
		}
		return out
	}
	k.Body = walk(k.Body)
	for i, sh := range k.Shared {
		if sh.Name == "s" {
			k.Shared[i].Dims = []int{e, s.se}
		}
	}
}

// affine is Σ k[i]·x[i], integer literals folded into one constant.
func affine(x []kernel.Expr, k []int) kernel.Expr {
	var sum kernel.Expr
	c := int64(0)
	for i, xi := range x {
		if v, ok := xi.(kernel.Int); ok {
			c += v.V * int64(k[i])
			continue
		}
		term := xi
		if k[i] != 1 {
			term = kernel.Mul(xi, kernel.Const(k[i]))
		}
		if sum == nil {
			sum = term
		} else {
			sum = kernel.Add(sum, term)
		}
	}
	switch {
	case sum == nil:
		return kernel.Const(int(c))
	case c != 0:
		return kernel.Add(sum, kernel.Const(int(c)))
	}
	return sum
}
