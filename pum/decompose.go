package pum

import (
	"fmt"
	"math/bits"
	"runtime"
	"sync"
)

// Decomposition is every patch's basic extent cut into integration cells on
// which the PU is smooth (layout in the package comment). The cells of all
// patches tile the domain. A summary of a decomposition made elsewhere
// (on a device) holds only Cover, NCells, MaxActive and BinPtr, and nil
// per-cell arrays.
type Decomposition struct {
	Cover     *Cover
	NCells    int
	MaxActive int // most patches active on one cell
	CellPtr   []int32
	Lo, Hi    []float64
	Owner     []int32
	ActPtr    []int32
	Act       []int32
	Mask      []uint64
	BinPtr    []int32 // MaxActive+2 entries
	BinCell   []int32
}

// splitTol merges split points closer than this (relative to the basic
// extent): coordinates from different patches that coincide mathematically
// may differ by rounding.
const splitTol = 1e-12

// patchSplits is the per-patch scratch of the tensor split-point
// algorithm: fixed-size arrays, as a device thread would hold them.
type patchSplits struct {
	n     [3]int
	pt    [3][3*MaxNeighbours + 2]float64
	mask  [3][3*MaxNeighbours + 1]uint64 // per interval: slots whose support overlaps it
	ncell int
}

// split computes patch i's split points and per-interval slot masks.
// Each neighbour contributes its support's lower bound, centre and upper
// bound where they fall strictly inside the basic extent: W_j has kinks
// exactly there.
func (c *Cover) split(i int, ps *patchSplits) error {
	d := c.Dim
	nbr := c.Neighbours(i)
	if len(nbr) > MaxNeighbours {
		return fmt.Errorf("pum: patch %d overlaps %d patches, more than MaxNeighbours = %d", i, len(nbr), MaxNeighbours)
	}
	ps.ncell = 1
	var nb [MaxNeighbours]support1
	for k := range d {
		ci := c.Centre[i*d+k]
		for s, j := range nbr {
			nb[s] = support1{ci - c.dxOf(int(j), k, ci), c.Alpha * c.Half[int(j)*d+k]} // image of c_j nearest c_i
		}
		m := split1(ci, c.Half[i*d+k], c.Periodic, nb[:len(nbr)], ps.pt[k][:], ps.mask[k][:])
		ps.n[k] = m
		ps.ncell *= m - 1
	}
	if ps.ncell > MaxCellsPerPatch {
		return fmt.Errorf("pum: patch %d has %d cells, more than MaxCellsPerPatch = %d", i, ps.ncell, MaxCellsPerPatch)
	}
	return nil
}

// support1 is a neighbour's support along one direction: the image of its
// centre nearest the patch's, and its half-width.
type support1 struct{ c, s float64 }

// split1 computes the split points along one direction of a patch with
// centre ci and basic half-width hi into pt, and into mask[t] the slots
// of nb whose supports overlap interval t; it returns the number of
// points. The points are the basic extent's bounds and the neighbours'
// support bounds and centres strictly inside it, sorted, with points
// closer than splitTol·(extent) merged: which neighbours give a point,
// and how often, does not change the result.
func split1(ci, hi float64, periodic bool, nb []support1, pt []float64, mask []uint64) int {
	lo, up := ci-hi, ci+hi
	if !periodic {
		lo, up = max(lo, 0), min(up, 1)
	}
	tol := splitTol * (up - lo)
	pts := pt[:0]
	pts = append(pts, lo, up)
	for _, n := range nb {
		for _, v := range [3]float64{n.c - n.s, n.c, n.c + n.s} {
			if v > lo+tol && v < up-tol {
				pts = append(pts, v)
			}
		}
	}
	// Insertion sort (a few dozen points) and merge near-duplicates.
	for a := 1; a < len(pts); a++ {
		for b := a; b > 0 && pts[b] < pts[b-1]; b-- {
			pts[b], pts[b-1] = pts[b-1], pts[b]
		}
	}
	m := 1
	for a := 1; a < len(pts); a++ {
		if pts[a]-pts[m-1] > tol {
			pts[m] = pts[a]
			m++
		} else if a == len(pts)-1 {
			pts[m-1] = pts[a] // keep the exact upper bound
		}
	}
	for t := range m - 1 {
		a, b := pts[t], pts[t+1]
		var mk uint64
		for s, n := range nb {
			if n.c-n.s < b-tol && n.c+n.s > a+tol {
				mk |= 1 << s
			}
		}
		mask[t] = mk
	}
	return m
}

// cellMask returns the active-slot mask of cell t (odometer order, x
// fastest) and its interval indices.
func (ps *patchSplits) cellMask(d, t int) (uint64, [3]int) {
	var iv [3]int
	m := ^uint64(0)
	for k := range d {
		iv[k] = t % (ps.n[k] - 1)
		t /= ps.n[k] - 1
		m &= ps.mask[k][iv[k]]
	}
	return m, iv
}

// Decompose cuts every patch of c into integration cells. Like a device
// kernel it runs in three passes: count (cells and active entries per
// patch), exclusive prefix sums, fill; then the cells are binned by their
// number of active patches the same way. workers ≤ 0 means GOMAXPROCS.
func Decompose(c *Cover, workers int) (*Decomposition, error) {
	split := c.split
	if c.PerDir > 0 && !c.Adaptive && !generalOnly {
		u, err := newUniformSplits(c)
		if err != nil {
			return nil, err
		}
		split = u.split
	}
	d := c.Dim
	N := c.N
	cnt := make([]int32, N)
	acnt := make([]int32, N)
	err := parallel(N, workers, func(lo, hi int) error {
		var ps patchSplits
		for i := lo; i < hi; i++ {
			if err := split(i, &ps); err != nil {
				return err
			}
			na := 0
			for t := range ps.ncell {
				m, _ := ps.cellMask(d, t)
				na += bits.OnesCount64(m)
			}
			cnt[i], acnt[i] = int32(ps.ncell), int32(na)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	dec := &Decomposition{Cover: c, CellPtr: make([]int32, N+1)}
	aptr := make([]int64, N+1) // first active entry of each patch
	var nc, na int64
	for i := range N {
		dec.CellPtr[i] = int32(nc)
		aptr[i] = na
		nc += int64(cnt[i])
		na += int64(acnt[i])
		if nc > MaxCells {
			return nil, fmt.Errorf("pum: decomposition exceeds MaxCells = %d cells", MaxCells)
		}
	}
	if na > 1<<31-1 {
		return nil, fmt.Errorf("pum: %d active entries exceed the int32 index range", na)
	}
	dec.CellPtr[N], aptr[N] = int32(nc), na
	dec.NCells = int(nc)
	dec.Lo = make([]float64, nc*int64(d))
	dec.Hi = make([]float64, nc*int64(d))
	dec.Owner = make([]int32, nc)
	dec.ActPtr = make([]int32, nc+1)
	dec.Act = make([]int32, na)
	dec.Mask = make([]uint64, nc)
	dec.ActPtr[nc] = int32(na)
	maxAct := 0
	var mu sync.Mutex
	err = parallel(N, workers, func(lo, hi int) error {
		var ps patchSplits
		ma := 0
		for i := lo; i < hi; i++ {
			if err := split(i, &ps); err != nil {
				return err
			}
			nbr := c.Neighbours(i)
			cell := int(dec.CellPtr[i])
			a := int(aptr[i])
			for t := range ps.ncell {
				m, iv := ps.cellMask(d, t)
				dec.Owner[cell] = int32(i)
				dec.Mask[cell] = m
				dec.ActPtr[cell] = int32(a)
				for k := range d {
					dec.Lo[cell*d+k] = ps.pt[k][iv[k]]
					dec.Hi[cell*d+k] = ps.pt[k][iv[k]+1]
				}
				n := 0
				for mm := m; mm != 0; mm &= mm - 1 {
					dec.Act[a] = nbr[bits.TrailingZeros64(mm)]
					a++
					n++
				}
				ma = max(ma, n)
				cell++
			}
		}
		mu.Lock()
		maxAct = max(maxAct, ma)
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, err
	}
	dec.MaxActive = maxAct
	// Bins: count, prefix sum, fill (a stable counting sort by n_active).
	dec.BinPtr = make([]int32, dec.MaxActive+2)
	for cell := range dec.NCells {
		dec.BinPtr[dec.ActPtr[cell+1]-dec.ActPtr[cell]+1]++
	}
	for k := 1; k < len(dec.BinPtr); k++ {
		dec.BinPtr[k] += dec.BinPtr[k-1]
	}
	next := append([]int32(nil), dec.BinPtr...)
	dec.BinCell = make([]int32, dec.NCells)
	for cell := range dec.NCells {
		k := dec.ActPtr[cell+1] - dec.ActPtr[cell]
		dec.BinCell[next[k]] = int32(cell)
		next[k]++
	}
	return dec, nil
}

// generalOnly makes Decompose use the general split on uniform covers
// too (tests compare the two).
var generalOnly = false

// Active returns the active patches of cell c.
func (dec *Decomposition) Active(c int) []int32 { return dec.Act[dec.ActPtr[c]:dec.ActPtr[c+1]] }

// parallel runs f over [0,n) split into contiguous ranges, one per worker,
// and returns the first error.
func parallel(n, workers int, f func(lo, hi int) error) error {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = max(1, min(workers, n))
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := n*w/workers, n*(w+1)/workers
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[w] = f(lo, hi)
		}()
	}
	wg.Wait()
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
