package pum

import (
	"fmt"
	"math"
)

// uniformSplits caches the tensor split points of a uniform cover per
// direction and 1-D patch index: on a uniform cover patch i's split
// points along direction k depend only on its index along k, and whether
// a neighbour's support overlaps an interval along k only on the
// neighbour's offset (−1, 0, +1) along k. split is then a table look-up
// and a few bit operations per patch, with results identical to
// Cover.split (the tables are built by it, on one representative patch
// per index).
type uniformSplits struct {
	c   *Cover
	n   [3][]int       // [k][ix] points
	pt  [3][][]float64 // [k][ix] the points
	off [3][][]uint8   // [k][ix][t]: bit o+1 set when offset o overlaps interval t
}

func newUniformSplits(c *Cover) (*uniformSplits, error) {
	u := &uniformSplits{c: c}
	n, d := c.PerDir, c.Dim
	var ps patchSplits
	stride := 1
	for k := range d {
		u.n[k] = make([]int, n)
		u.pt[k] = make([][]float64, n)
		u.off[k] = make([][]uint8, n)
		for ix := range n {
			rep := ix * stride
			if err := c.split(rep, &ps); err != nil {
				return nil, err
			}
			m := ps.n[k]
			u.n[k][ix] = m
			u.pt[k][ix] = append([]float64(nil), ps.pt[k][:m]...)
			offs := make([]uint8, m-1)
			for s, j := range c.Neighbours(rep) {
				o := u.offset(int(j), rep, k)
				for t := range m - 1 {
					if ps.mask[k][t]>>s&1 != 0 {
						offs[t] |= 1 << (o + 1)
					}
				}
			}
			// Every neighbour with one offset agrees (the premise).
			for s, j := range c.Neighbours(rep) {
				o := u.offset(int(j), rep, k)
				for t := range m - 1 {
					if (ps.mask[k][t]>>s&1 != 0) != (offs[t]>>(o+1)&1 != 0) {
						return nil, fmt.Errorf("pum: uniform split tables disagree at patch %d", rep)
					}
				}
			}
			u.off[k][ix] = offs
		}
		stride *= n
	}
	return u, nil
}

// offset is patch j's offset from patch i along k (−1, 0 or +1).
func (u *uniformSplits) offset(j, i, k int) int {
	n := u.c.PerDir
	jk, ik := j, i
	for range k {
		jk /= n
		ik /= n
	}
	o := jk%n - ik%n
	if o > 1 {
		o -= n
	} else if o < -1 {
		o += n
	}
	return o
}

// split fills ps as Cover.split(i, ps) does.
func (u *uniformSplits) split(i int, ps *patchSplits) error {
	c := u.c
	n, d := c.PerDir, c.Dim
	nbr := c.Neighbours(i)
	var idx [3]int
	unflat(i, n, d, &idx)
	// Per direction, the slots at each offset.
	var slots [3][3]uint64
	for s, j := range nbr {
		jj := int(j)
		for k := range d {
			o := jj%n - idx[k]
			if o > 1 {
				o -= n
			} else if o < -1 {
				o += n
			}
			slots[k][o+1] |= 1 << s
			jj /= n
		}
	}
	ps.ncell = 1
	for k := range d {
		ix := idx[k]
		m := u.n[k][ix]
		ps.n[k] = m
		copy(ps.pt[k][:m], u.pt[k][ix])
		for t, off := range u.off[k][ix] {
			var mk uint64
			for o := range 3 {
				if off>>o&1 != 0 {
					mk |= slots[k][o]
				}
			}
			ps.mask[k][t] = mk
		}
		ps.ncell *= m - 1
	}
	return nil
}

// SplitTables are a uniform cover's split tables in flat arrays, as a
// device decomposition reads them (kernel/pum): entry e = k·PerDir + ix
// is direction k and 1-D patch index ix.
type SplitTables struct {
	Dim, PerDir int
	Periodic    bool
	// Ptr has Dim·PerDir+1 entries: the split points of entry e are
	// Pt[Ptr[e]] … Pt[Ptr[e+1]−1], ascending (those Decompose uses).
	Ptr []int32
	Pt  []float64
	// Off[Ptr[e]−e+t] is interval t's offset mask of entry e: bit o+1 is
	// set when the supports of the neighbours at offset o ∈ {−1, 0, 1}
	// along k overlap the interval.
	Off []uint8
}

// Entry returns the first point of entry e (direction k, index ix) and
// its number of points.
func (st *SplitTables) Entry(k, ix int) (first, points int) {
	e := k*st.PerDir + ix
	return int(st.Ptr[e]), int(st.Ptr[e+1] - st.Ptr[e])
}

// UniformSplitTables returns the split tables of UniformCover(dim, level,
// alpha, periodic) without building the cover: along a direction, a
// patch's split points and its intervals' overlaps depend only on its
// index along it and on the three neighbours' offsets along it (each
// counted once: split merges repeated points), computed with the
// cover's own expressions, so the tables are Decompose's bit for bit.
// The work is O(2^level).
func UniformSplitTables(dim, level int, alpha float64, periodic bool) (*SplitTables, error) {
	if err := checkUniform(dim, level, alpha, periodic); err != nil {
		return nil, err
	}
	n := 1 << level
	h := 1 / float64(n)
	centre := func(ix int) float64 { return (float64(ix) + 0.5) * h } // as UniformCover
	var pt1 []float64
	var ptr1 []int32
	var off1 []uint8
	var pts [3*3 + 2]float64
	var mask [3*3 + 1]uint64
	most := 0 // intervals of a patch along a direction, at most
	for ix := range n {
		ci := centre(ix)
		var nb [3]support1
		var offs [3]int
		m := 0
		for o := -1; o <= 1; o++ {
			jx := ix + o
			if jx < 0 || jx >= n {
				if !periodic {
					continue
				}
				jx = (jx + n) % n
			}
			dx := ci - centre(jx) // Cover.dxOf
			if periodic {
				dx -= math.Round(dx)
			}
			nb[m], offs[m] = support1{ci - dx, alpha * (h / 2)}, o
			m++
		}
		np := split1(ci, h/2, periodic, nb[:m], pts[:], mask[:])
		ptr1 = append(ptr1, int32(len(pt1)))
		pt1 = append(pt1, pts[:np]...)
		for t := range np - 1 {
			var b uint8
			for s := range m {
				if mask[t]>>s&1 != 0 {
					b |= 1 << (offs[s] + 1)
				}
			}
			off1 = append(off1, b)
		}
		most = max(most, np-1)
	}
	if cells := math.Pow(float64(most), float64(dim)); cells > MaxCellsPerPatch {
		return nil, fmt.Errorf("pum: a patch has up to %.0f cells, more than MaxCellsPerPatch = %d", cells, MaxCellsPerPatch)
	}
	// Every direction alike.
	st := &SplitTables{Dim: dim, PerDir: n, Periodic: periodic}
	for k := range dim {
		for _, p := range ptr1 {
			st.Ptr = append(st.Ptr, p+int32(k*len(pt1)))
		}
		st.Pt = append(st.Pt, pt1...)
		st.Off = append(st.Off, off1...)
	}
	st.Ptr = append(st.Ptr, int32(len(st.Pt)))
	return st, nil
}
