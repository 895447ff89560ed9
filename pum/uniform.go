package pum

import "fmt"

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
