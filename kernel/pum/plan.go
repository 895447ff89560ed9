package pum

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/bespoke-hpc/bespoke/pum"
)

// Plan is a decomposition laid out for the device: its cells binned by
// active-patch count (each bin one kernel of uniform work per thread),
// and within a bin ordered by colour group, so that a colour group is a
// contiguous range of the bin's cells.
type Plan struct {
	Dec  *pum.Decomposition
	Bins []Bin
	// Colours is the number of patch colours (0 when the cover has no
	// colouring: adaptive covers; then only atomic assembly applies).
	Colours int
}

// Bin is the cells with Active active patches, in device order.
type Bin struct {
	Active int
	Cells  []int32   // decomposition cell of each bin cell
	Lo, Hi []float64 // bin cell × d
	Act    []int32   // bin cell × Active
	// Groups[g] … Groups[g+1]−1 are colour group g's bin cells: no two of
	// them write one matrix block (nil without a colouring).
	Groups []int32
}

// colour1 is the colour of index i along a direction of n patches: i mod 3,
// except that on a periodic direction whose n is not a multiple of 3 the
// last n mod 3 indices get colours of their own (3, 4), so that patches
// of one colour stay ≥ 3 apart across the wrap.
func colour1(i, n int, periodic bool) (c, count int) {
	if !periodic || n%3 == 0 {
		return i % 3, 3
	}
	m := n - n%3
	if i < m {
		return i % 3, 3 + n%3
	}
	return 3 + i - m, 3 + n%3
}

// NewPlan bins and orders dec's cells; with colour, each bin is ordered
// by colour group (the colour strategy needs it), without, the bins keep
// the decomposition's order. Patches of one colour are ≥ 3 apart along
// some direction, so their 3^d neighbourhoods are disjoint; cells of such
// owners at one position within their patch (one odometer index)
// therefore write disjoint block rows, and a cell writes each of its
// blocks once.
func NewPlan(dec *pum.Decomposition, colour bool) (*Plan, error) {
	c := dec.Cover
	d := c.Dim
	pl := &Plan{Dec: dec}
	var pcol []int32 // colour of each patch
	if c.PerDir > 0 {
		n := c.PerDir
		_, cnt := colour1(0, n, c.Periodic)
		pl.Colours = pow(cnt, d)
		if colour {
			pcol = make([]int32, c.N)
			for o := range c.N {
				col, mul := 0, 1
				i := o
				for range d {
					cc, cnt := colour1(i%n, n, c.Periodic)
					col += cc * mul
					mul *= cnt
					i /= n
				}
				pcol[o] = int32(col)
			}
		}
	}
	for a := 1; a+1 < len(dec.BinPtr); a++ {
		cells := dec.BinCell[dec.BinPtr[a]:dec.BinPtr[a+1]]
		if len(cells) == 0 {
			continue
		}
		if a > MaxActive {
			return nil, fmt.Errorf("kernel/pum: %d cells have %d active patches, more than MaxActive = %d", len(cells), a, MaxActive)
		}
		b := Bin{Active: a, Cells: cells}
		if pcol != nil {
			// Counting sort by key = colour·MaxCellsPerPatch + position.
			b.Cells = make([]int32, len(cells))
			key := func(cell int32) int {
				o := dec.Owner[cell]
				return int(pcol[o])*pum.MaxCellsPerPatch + int(cell-dec.CellPtr[o])
			}
			nk := pl.Colours * pum.MaxCellsPerPatch
			cnt := make([]int32, nk+1)
			for _, cell := range cells {
				cnt[key(cell)+1]++
			}
			for k := range nk {
				cnt[k+1] += cnt[k]
			}
			for k := range nk {
				if cnt[k+1] > cnt[k] {
					b.Groups = append(b.Groups, cnt[k])
				}
			}
			b.Groups = append(b.Groups, int32(len(cells)))
			next := cnt[:nk]
			for _, cell := range cells {
				k := key(cell)
				b.Cells[next[k]] = cell
				next[k]++
			}
		}
		b.Lo = make([]float64, len(cells)*d)
		b.Hi = make([]float64, len(cells)*d)
		b.Act = make([]int32, len(cells)*a)
		parallel(len(cells), func(lo, hi int) {
			for t := lo; t < hi; t++ {
				cell := int(b.Cells[t])
				copy(b.Lo[t*d:t*d+d], dec.Lo[cell*d:cell*d+d])
				copy(b.Hi[t*d:t*d+d], dec.Hi[cell*d:cell*d+d])
				copy(b.Act[t*a:t*a+a], dec.Act[dec.ActPtr[cell]:dec.ActPtr[cell+1]])
			}
		})
		pl.Bins = append(pl.Bins, b)
	}
	return pl, nil
}

// parallel runs f over [0,n) in contiguous ranges, one per CPU.
func parallel(n int, f func(lo, hi int)) {
	w := max(1, min(runtime.GOMAXPROCS(0), n/4096))
	var wg sync.WaitGroup
	for i := range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(n*i/w, n*(i+1)/w)
		}()
	}
	wg.Wait()
}

// Chunk is a range of one bin's cells whose element blocks fit the
// element buffer together.
type Chunk struct {
	Bin          int
	First, Count int
}

// Batches cuts the bins into batches of at most budget element-buffer
// entries (n_f² per cell), each within one bin.
func (pl *Plan) Batches(B int, budget int64) ([]Chunk, error) {
	return BinBatches(pl.Sizes(), B, budget)
}

// Sizes describes the plan's bins as a device decomposition does.
func (pl *Plan) Sizes() []DeviceBin {
	out := make([]DeviceBin, len(pl.Bins))
	for bi, b := range pl.Bins {
		out[bi] = DeviceBin{Active: b.Active, Cells: len(b.Cells), Groups: b.Groups}
	}
	return out
}

// BinBatches cuts bins into batches of at most budget element-buffer
// entries (n_f² per cell), each within one bin.
func BinBatches(bins []DeviceBin, B int, budget int64) ([]Chunk, error) {
	var out []Chunk
	for bi, b := range bins {
		nf := int64(b.Active * B)
		per := budget / (nf * nf)
		if per < 1 {
			return nil, fmt.Errorf("kernel/pum: one %d×%d element block exceeds the element budget of %d entries", nf, nf, budget)
		}
		for c0 := 0; c0 < b.Cells; c0 += int(per) {
			out = append(out, Chunk{Bin: bi, First: c0, Count: int(min(per, int64(b.Cells-c0)))})
		}
	}
	return out, nil
}

// Support returns the support half-widths α·Half of the cover's patches.
func Support(c *pum.Cover) []float64 {
	s := make([]float64, len(c.Half))
	for i, h := range c.Half {
		s[i] = c.Alpha * h
	}
	return s
}
