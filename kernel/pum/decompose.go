package pum

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/pum"
)

// The device decomposition of a uniform cover: what pum.Decompose and
// NewPlan do on the host, done by kernels from small per-direction tables
// (Decomposer):
//
//   - Pattern (a thread per patch) writes the patch data and the matrix
//     pattern: centre, sup (N × d) and the BSR block row pointers and
//     block columns (rowptr, col: a patch's neighbours, ascending, in
//     closed form).
//
// Then the bins, in one of two orders (BinOrder). ColourOrder, NewPlan's
// with colour, which the colour strategy needs:
//
//   - Count (a thread per patch) computes each of the patch's cells' bin
//     (its number of active patches, a) and key (owner colour·MaxCells +
//     position in the patch, NewPlan's order) and counts it in a
//     histogram hist[a][key] with an atomic add (in one of several copies
//     of it, by patch, so that fewer threads add to one counter).
//   - The host downloads the histogram (at most 64 Ki counters when
//     striped, 256 KiB: it needs the bin sizes anyway, to allocate the
//     bins and to size the launches, and the colour groups to launch the
//     colour strategy, so a prefix sum there costs one pass over what it
//     must read; a device scan would still need the download), turns it
//     into cursors by an exclusive prefix sum per bin (Prefix) and
//     uploads them.
//   - Fill (a thread per patch) computes every cell again and writes its
//     lo, hi and active patches into its bin's arrays at the slot an
//     atomic fetch-add on its (bin, key) cursor hands out.
//
// The bins come out as NewPlan lays them out with colour: same bins, same
// group boundaries, the same cells in each group; only the order of the
// cells inside a group differs (the tickets' order), which the kernels
// that read a group do not depend on.
//
// PatchOrder, NewPlan's without colour (the decomposition's order), which
// the atomic and fused strategies' adds favour:
//
//   - FillPatch (a thread per cell slot) writes each cell at its place in
//     closed form: the bin's cells in the patches before it and in its
//     patch before it, from per-direction counts (the bin sizes too, on
//     the host: no count, no histogram). Cell for cell NewPlan's bins.
//
// SetOrder, the same bins ordered by active set (the fused strategy's
// merged kernels):
//
//   - FillSet (as FillPatch) writes each cell at the number of the bin's
//     cells in the sets before its own plus its rank in its set, in
//     closed form from SSet.

// Scalar arguments of the decomposition kernels, by name.
const (
	Patches   = "patches"   // patches of the cover: one thread each
	PerDir    = "per"       // patches per direction
	NColours  = "colours"   // patch colours
	KeyStride = "maxcells"  // cells of one patch at most: the stride of a colour's keys
	Stripes   = "stripes"   // copies of the histogram (patch i counts in copy i mod stripes)
	Stripe    = "stripe"    // counters of one copy
	CellSlots = "cellslots" // patches × maxcells: PatchOrder's threads
)

// Decomposer holds a uniform cover's decomposition tables. Entry e =
// k·PerDir + ix of a table is direction k and 1-D patch index ix; every
// table is O(PerDir·Dim).
type Decomposer struct {
	Dim, Level, PerDir, N int
	Alpha                 float64
	Periodic              bool
	Colours               int   // patch colours (NewPlan's colouring)
	MaxCells              int   // cells of one patch at most
	MaxActive             int   // most active patches the tables allow on a cell (the histogram's last bin)
	Stripes               int   // copies of the histogram, so that fewer threads add to one counter
	Bins                  []int // the active counts cells have, ascending (every combination along the directions occurs)
	Blocks                int64 // neighbour pairs: blocks of the BSR pattern
	// SPtr (Dim·PerDir+1): the split points of entry e are
	// SPt[SPtr[e]] … SPt[SPtr[e+1]−1] (pum.UniformSplitTables).
	SPtr []int32
	SPt  []float64
	// SIvl, 7 per interval i = SPtr[e]−e+t: the patches active on
	// interval t along k, counted, then their indices along k, ascending
	// (unused slots 0), then the intervals before t in the entry with 1,
	// 2 and 3 active patches.
	SIvl []int32
	// SNbr, 6 per entry: the patch colour's term, the neighbours along k
	// (counted, their prefix sum over ix, their indices along k
	// ascending).
	SNbr []int32
	// SGeo, 2 per entry: the patch centre and support half-width along k.
	SGeo []float64
	// SCnt, 6 per entry: the intervals along k with v = 1, 2, 3 active
	// patches, then their prefix sums over ix (PatchOrder's closed form).
	SCnt []int32
	// PatchBins are the bins in PatchOrder, sized in closed form (SetOrder's
	// bins have the same sizes).
	PatchBins []DeviceBin
	// SSet, 5 per interval (indexed as SIvl): SetOrder's closed form. The
	// intervals along k with one list of active indices form a 1-D set;
	// per interval the intervals of its set, its rank among them, and
	// the intervals of the sets before its own with 1, 2 and 3 active
	// patches (sets ordered by first appearance, ix then t).
	SSet []int32
	// SetCells is the cells of every active set (the product over the
	// directions of their 1-D sets' size) where that is one number (2^d
	// on uniform covers), else 0: SetOrder's bins then hold whole sets of
	// SetCells cells one after another, which a merged integration
	// kernel (Spec.Merge) takes together.
	SetCells int
}

// BinOrder is how a device decomposition orders a bin's cells.
type BinOrder int

const (
	// ColourOrder is NewPlan's order with colour: by colour group (owner
	// colour, then position in the patch), a group's cells in the order
	// of their tickets. Count, prefix sum, fill; what the colour strategy
	// needs.
	ColourOrder BinOrder = iota
	// PatchOrder is NewPlan's order without colour, the decomposition's:
	// by owner, then position. The fill kernel alone: a patch's first
	// slot in each bin is the number of the bin's cells in the patches
	// before it, in closed form (as rowptr). Cells of one patch lie
	// together, which the atomic and fused strategies' adds favour
	// (docs/rationale.md#pum-patch-order).
	PatchOrder
)

// SetOrder orders a bin by active set: the cells with one set of active
// patches (on a uniform cover 2^d cells of 2^d owners: e.g. the two
// halves of an overlap, split at the basic extents' border) lie together,
// sets by their directions' first appearance, z slowest, a set's cells
// x fastest. The fill kernel alone, in closed form as PatchOrder's (from
// SSet). A merged integration kernel (Spec.Merge = SetCells) sums a set's
// cells in registers and adds each matrix entry once per set instead of
// once per cell: the fused strategy's atomics, which bound it on a GPU,
// fall by 2^d.
const SetOrder BinOrder = PatchOrder + 1

func (o BinOrder) String() string {
	switch o {
	case PatchOrder:
		return "patch"
	case SetOrder:
		return "set"
	}
	return "colour"
}

// The layout of SIvl and SNbr.
const (
	ivlStride = 7
	ivlPre    = 4 // SIvl: intervals before this one in its entry with 1, 2, 3 active
	cntStride = 6
	nbrStride = 6
	nbrColour = 0
	nbrCount  = 1
	nbrPrefix = 2
	nbrIndex  = 3
	setStride = 5
	setBefore = 2 // SSet: the intervals of the sets before this one's with 1, 2, 3 active
)

// maxHist bounds the histogram (its counters are int32); stripeHist is
// the size up to which it is striped (a few hundred KiB down and up).
const (
	maxHist    = 1 << 24
	stripeHist = 1 << 16
	maxStripes = 32
)

// NewDecomposer builds the tables of UniformCover(dim, level, alpha,
// periodic) in O(2^level) work, without the cover.
func NewDecomposer(dim, level int, alpha float64, periodic bool) (*Decomposer, error) {
	st, err := pum.UniformSplitTables(dim, level, alpha, periodic)
	if err != nil {
		return nil, err
	}
	n := st.PerDir
	dc := &Decomposer{Dim: dim, Level: level, PerDir: n, N: pow(n, dim), Alpha: alpha, Periodic: periodic,
		SPtr: st.Ptr, SPt: st.Pt}
	_, cnt := colour1(0, n, periodic)
	dc.Colours = pow(cnt, dim)
	// wrap is the index of the neighbour at offset o along a direction,
	// or −1 where there is none.
	wrap := func(ix, o int) int {
		j := ix + o
		if j < 0 || j >= n {
			if !periodic {
				return -1
			}
			j = (j + n) % n
		}
		return j
	}
	// sorted3 writes the indices of the patches at the offsets in mask
	// (bit o+1 for offset o) along a direction from index ix, ascending,
	// into row and returns their count: those outside the cover left
	// out with clip, else −1.
	sorted3 := func(ix int, mask uint8, row []int32, clip bool) int {
		m := 0
		for o := -1; o <= 1; o++ {
			if mask>>(o+1)&1 == 0 {
				continue
			}
			j := wrap(ix, o)
			if j < 0 {
				if clip {
					continue
				}
				return -1
			}
			row[m] = int32(j)
			for a := m; a > 0 && row[a] < row[a-1]; a-- {
				row[a], row[a-1] = row[a-1], row[a]
			}
			m++
		}
		return m
	}
	h := 1 / float64(n)
	dc.MaxCells, dc.MaxActive, dc.Blocks = 1, 1, 1
	dc.SNbr = make([]int32, 0, dim*n*nbrStride)
	dc.SGeo = make([]float64, 0, dim*n*2)
	dc.SIvl = make([]int32, 0, (len(st.Pt)-dim*n)*ivlStride)
	dc.SCnt = make([]int32, 0, dim*n*cntStride)
	dc.SSet = make([]int32, 0, cap(dc.SIvl)/ivlStride*setStride)
	bins := []int{1}
	mul := 1
	var tot [3][4]int64 // per direction, the intervals with v active over all ix
	setCells := 1
	for k := range dim {
		most, total := 0, 0
		var seen [4]bool // active counts along k
		for ix := range n {
			// Neighbours along k, ascending.
			var row [nbrStride]int32
			nn := sorted3(ix, 7, row[nbrIndex:], true)
			c, _ := colour1(ix, n, periodic)
			row[nbrColour], row[nbrCount], row[nbrPrefix] = int32(c*mul), int32(nn), int32(total)
			dc.SNbr = append(dc.SNbr, row[:]...)
			total += nn
			dc.SGeo = append(dc.SGeo, (float64(ix)+0.5)*h, alpha*(h/2)) // as UniformCover and Support
			// Intervals: the patches active on each, ascending.
			first, np := st.Entry(k, ix)
			iv := first - (k*n + ix)
			var ncnt [cntStride]int32
			for v := 1; v <= 3; v++ {
				ncnt[3+v-1] = int32(tot[k][v])
			}
			for t := range np - 1 {
				var row [ivlStride]int32
				a := sorted3(ix, st.Off[iv+t], row[1:ivlPre], false)
				if a < 1 {
					return nil, fmt.Errorf("kernel/pum: interval %d of index %d along direction %d: split tables name no active patch, or one outside the cover", t, ix, k)
				}
				row[0] = int32(a)
				copy(row[ivlPre:], ncnt[:3]) // the counts so far
				dc.SIvl = append(dc.SIvl, row[:]...)
				seen[a] = true
				ncnt[a-1]++
				tot[k][a]++
			}
			dc.SCnt = append(dc.SCnt, ncnt[:]...)
			most = max(most, np-1)
		}
		m, err := setTable(dc.SIvl[len(dc.SIvl)-ivlStride*int(tot[k][1]+tot[k][2]+tot[k][3]):], n, &dc.SSet)
		if err != nil {
			return nil, err
		}
		setCells = setCells * m // 0 stays 0: sets of several sizes
		// Every combination of the directions' counts occurs: a patch's
		// intervals along each direction are chosen independently.
		var next []int
		for _, b := range bins {
			for a, ok := range seen {
				if ok {
					next = append(next, b*a)
				}
			}
		}
		slices.Sort(next)
		bins = slices.Compact(next)
		dc.MaxCells *= most
		dc.Blocks *= int64(total)
		mul *= cnt
	}
	dc.Bins = bins
	dc.MaxActive = bins[len(bins)-1]
	dc.SetCells = setCells
	// PatchOrder's bins: per combination of the directions' counts, the
	// product of their interval totals.
	size := map[int]int64{}
	for c := range pow(3, dim) {
		a, cells := 1, int64(1)
		for k, q := 0, c; k < dim; k, q = k+1, q/3 {
			a *= q%3 + 1
			cells *= tot[k][q%3+1]
		}
		size[a] += cells
	}
	for _, a := range bins {
		if size[a] > 0 {
			dc.PatchBins = append(dc.PatchBins, DeviceBin{Active: a, Cells: int(min(size[a], math.MaxInt32))})
		}
	}
	if err := checkBins(dc.PatchBins); err != nil {
		return nil, err
	}
	dc.Stripes = 1
	if one := dc.stripe(); one > 0 {
		dc.Stripes = max(1, min(maxStripes, stripeHist/one))
	}
	switch {
	case dc.MaxActive > MaxActive:
		return nil, fmt.Errorf("kernel/pum: cells of this cover have up to %d active patches, more than MaxActive = %d", dc.MaxActive, MaxActive)
	case dc.Blocks > math.MaxInt32:
		return nil, fmt.Errorf("kernel/pum: %d neighbour pairs exceed the int32 index range of the matrix pattern", dc.Blocks)
	case int64(dc.N)*int64(dc.MaxCells) > math.MaxInt32:
		return nil, fmt.Errorf("kernel/pum: %d patches × %d cells exceed the int32 range of the bin cursors", dc.N, dc.MaxCells)
	case dc.HistLen() > maxHist:
		return nil, fmt.Errorf("kernel/pum: a histogram of %d counters exceeds %d", dc.HistLen(), maxHist)
	}
	return dc, nil
}

// setTable appends to sset SetOrder's rows (setStride each) for one
// direction's intervals ivl (SIvl rows, ix then t; indices below per)
// and returns the intervals of every 1-D set where all sets have as
// many, else 0.
func setTable(ivl []int32, per int, sset *[]int32) (int, error) {
	type set struct {
		size, v int32
		before  [3]int32
	}
	n := len(ivl) / ivlStride
	// Sets by their active indices: single and adjacent pairs in arrays
	// by the first index (a map of every set cost 0.3–0.8 ms at 2-D
	// level 9, inside the timed run), the rest (periodic wraps) in a map.
	single := make([]int32, 2*per)
	pair := single[per:]
	for i := range single {
		single[i] = -1
	}
	other := map[[ivlPre]int32]int32{}
	sets := make([]set, 0, n)
	of := make([]int32, n)
	rank := make([]int32, n)
	for t := range n {
		row := ivl[t*ivlStride:]
		c, i0 := row[0], row[1]
		if c < 1 || c > 3 || i0 < 0 || int(i0) >= per {
			return 0, fmt.Errorf("kernel/pum: interval %d has %d active patches along a direction, the first %d (want 1…3 of 0…%d)", t, c, i0, per-1)
		}
		j := int32(-1)
		var key [ivlPre]int32
		switch {
		case c == 1:
			j = single[i0]
		case c == 2 && row[2] == i0+1:
			j = pair[i0]
		default:
			copy(key[:], row)
			if k, ok := other[key]; ok {
				j = k
			}
		}
		if j < 0 { // a new set
			j = int32(len(sets))
			sets = append(sets, set{v: c})
			switch {
			case c == 1:
				single[i0] = j
			case c == 2 && row[2] == i0+1:
				pair[i0] = j
			default:
				other[key] = j
			}
		}
		of[t], rank[t] = j, sets[j].size
		sets[j].size++
	}
	var run [3]int32 // intervals of the sets so far, by active count
	for j := range sets {
		sets[j].before = run
		run[sets[j].v-1] += sets[j].size
	}
	common := 0
	for j, st := range sets {
		if j == 0 {
			common = int(st.size)
		} else if int(st.size) != common {
			common = 0
			break
		}
	}
	for t := range n {
		st := sets[of[t]]
		*sset = append(*sset, st.size, rank[t], st.before[0], st.before[1], st.before[2])
	}
	return common, nil
}

// HistLen is the histogram's length: Stripes copies of (MaxActive+1) ×
// Colours × MaxCells counters, patch i counting its cell at position t
// with a active patches in hist[(i mod Stripes)·stripe + (a·Colours +
// colour(i))·MaxCells + t]. Without the copies the threads of every patch
// of one colour would add to one counter per cell position: the stripes
// spread them (with one copy the count kernel took about as long as the
// whole decomposition should).
func (dc *Decomposer) HistLen() int {
	return dc.Stripes * dc.stripe()
}

// stripe is the counters of one copy of the histogram.
func (dc *Decomposer) stripe() int {
	return (dc.MaxActive + 1) * dc.Colours * dc.MaxCells
}

// Values are the scalar arguments of the decomposition kernels.
func (dc *Decomposer) Values() map[string]int64 {
	return map[string]int64{Patches: int64(dc.N), PerDir: int64(dc.PerDir), NColours: int64(dc.Colours), KeyStride: int64(dc.MaxCells),
		Stripes: int64(dc.Stripes), Stripe: int64(dc.stripe()), CellSlots: int64(dc.N) * int64(dc.MaxCells)}
}

// DeviceBin is a bin laid out on the device: Cells cells with Active
// active patches, colour group g its cells Groups[g] … Groups[g+1]−1.
type DeviceBin struct {
	Active, Cells int
	Groups        []int32
}

// Prefix turns the histogram the count kernel made into the fill
// kernel's cursors, in place: per bin, an exclusive prefix sum over its
// keys in order (colour, then position; within a key over the stripes),
// so that a bin's cells lie by colour group as NewPlan orders them. It
// returns the non-empty bins, ascending, with their colour groups.
func (dc *Decomposer) Prefix(hist []int32) ([]DeviceBin, error) {
	if len(hist) != dc.HistLen() {
		return nil, fmt.Errorf("kernel/pum: histogram of %d counters, want %d", len(hist), dc.HistLen())
	}
	nk, one := dc.Colours*dc.MaxCells, dc.stripe()
	var bins []DeviceBin
	for a := 0; a <= dc.MaxActive; a++ {
		var groups []int32
		total := int64(0)
		for key := range nk {
			start := total
			for s := range dc.Stripes {
				h := &hist[s*one+a*nk+key]
				c := *h
				if c < 0 || total+int64(c) > math.MaxInt32 {
					return nil, fmt.Errorf("kernel/pum: histogram counter %d of bin %d, copy %d, is %d (out of range)", key, a, s, c)
				}
				*h = int32(total)
				total += int64(c)
			}
			if total > start {
				groups = append(groups, int32(start))
			}
		}
		if total == 0 {
			continue
		}
		if !slices.Contains(dc.Bins, a) {
			return nil, fmt.Errorf("kernel/pum: %d cells have %d active patches, which the tables do not allow", total, a)
		}
		bins = append(bins, DeviceBin{Active: a, Cells: int(min(total, math.MaxInt32)), Groups: append(groups, int32(total))})
	}
	return bins, checkBins(bins)
}

// checkBins reports bins beyond pum's limits (those of Decompose).
func checkBins(bins []DeviceBin) error {
	var cells, active int64
	for _, b := range bins {
		cells += int64(b.Cells)
		active += int64(b.Cells) * int64(b.Active)
	}
	if cells > pum.MaxCells {
		return fmt.Errorf("pum: decomposition exceeds MaxCells = %d cells", pum.MaxCells)
	}
	if active > math.MaxInt32 {
		return fmt.Errorf("pum: %d active entries exceed the int32 index range", active)
	}
	return nil
}

// Summary is the decomposition the bins describe, as pum reports it
// (NCells, MaxActive, BinPtr; no per-cell arrays).
func (dc *Decomposer) Summary(c *pum.Cover, bins []DeviceBin) *pum.Decomposition {
	dec := &pum.Decomposition{Cover: c}
	for _, b := range bins {
		dec.NCells += b.Cells
		dec.MaxActive = max(dec.MaxActive, b.Active)
	}
	dec.BinPtr = make([]int32, dec.MaxActive+2)
	for _, b := range bins {
		dec.BinPtr[b.Active+1] = int32(b.Cells)
	}
	for a := 1; a < len(dec.BinPtr); a++ {
		dec.BinPtr[a] += dec.BinPtr[a-1]
	}
	return dec
}

// DecompSpec fixes what the decomposition kernels are compiled for: the
// dimension, the precision of their reals (that of the integration
// kernels, which read what they write) and the threads per block. The
// cover's size and level are arguments, so one build serves every level.
type DecompSpec struct {
	Dim     int
	DType   kernel.DType
	Threads int
}

// Check reports why the spec cannot be built.
func (s DecompSpec) Check() error {
	switch {
	case s.Dim != 2 && s.Dim != 3:
		return fmt.Errorf("kernel/pum: dimension %d not supported (2 or 3)", s.Dim)
	case s.Threads < 1 || s.Threads > kernel.MaxThreads:
		return fmt.Errorf("kernel/pum: %d threads per block outside 1…%d", s.Threads, kernel.MaxThreads)
	}
	return nil
}

func (s DecompSpec) suffix() string {
	return fmt.Sprintf("d%d_%s_t%d", s.Dim, s.DType, s.Threads)
}

func icast(e kernel.Expr) kernel.Expr { return kernel.Cast{To: kernel.Index, X: e} }

// sum and prod fold index expressions (nil for an empty list: 0 and 1).
func sum(xs ...kernel.Expr) kernel.Expr {
	if len(xs) == 0 {
		return ci(0)
	}
	return kernel.Sum(xs...)
}

func prod(xs ...kernel.Expr) kernel.Expr {
	if len(xs) == 0 {
		return ci(1)
	}
	return kernel.Prod(xs...)
}

// decompKernel is a decomposition kernel's frame: one thread per patch,
// its index i and per direction its index ixK, table entry eK and the
// stride stK = per^K of direction K in the patch numbering.
func (s DecompSpec) decompKernel(kind, doc string, params ...kernel.Param) (*kernel.Kernel, []kernel.Stmt) {
	T := s.Threads
	k := &kernel.Kernel{
		Name:    "bespoke_pum_decomp_" + kind + "_" + s.suffix(),
		Variant: "decomp-" + kind + "/" + s.suffix(),
		DType:   s.DType,
		Index64: true,
		Params: append([]kernel.Param{
			size(Patches, "patches of the cover (one thread each)"),
			size(PerDir, "patches per direction"),
		}, params...),
		Launch: kernel.Launch{Block: [3]int{T, 1, 1}, Grid: [3]kernel.Axis{kernel.Over(Patches, T)}},
		Active: v(Patches),
		Doc:    doc,
		Meta:   map[string]any{"dim": s.Dim},
	}
	body := []kernel.Stmt{
		idecl("i", ibin("+", ibin("*", kernel.GroupX, ci(T)), kernel.LocalX)),
		idecl("st0", ci(1)),
	}
	for kk := range s.Dim {
		if kk > 0 {
			body = append(body, idecl(nm("st%d", kk), ibin("*", v(nm("st%d", kk-1)), v(PerDir))))
		}
		body = append(body,
			idecl(nm("ix%d", kk), ibin("%", ibin("/", v("i"), v(nm("st%d", kk))), v(PerDir))),
			idecl(nm("e%d", kk), ibin("+", ibin("*", ci(kk), v(PerDir)), v(nm("ix%d", kk)))))
	}
	return k, body
}

// cells appends the loop over a patch's cells (position t, x fastest as
// pum.Decompose numbers them), declaring per direction the first point
// pK, the intervals mK and the first interval gK of the patch's entry,
// the interval uK of the cell (stepped after body), and in the loop the
// SIvl row wK of uK and the cell's active count a; with keyed also the
// patch's colour and the cell's histogram entry h. body follows.
func (s DecompSpec) cells(pre []kernel.Stmt, keyed bool, body ...kernel.Stmt) []kernel.Stmt {
	d := s.Dim
	var colour, ncell []kernel.Expr
	for kk := range d {
		e := v(nm("e%d", kk))
		pre = append(pre,
			idecl(nm("p%d", kk), icast(at("sptr", e))),
			idecl(nm("m%d", kk), ibin("-", ibin("-", icast(at("sptr", ibin("+", e, ci(1)))), v(nm("p%d", kk))), ci(1))),
			idecl(nm("g%d", kk), ibin("-", v(nm("p%d", kk)), e)))
		colour = append(colour, icast(at("snbr", ibin("+", ibin("*", e, ci(nbrStride)), ci(nbrColour)))))
		ncell = append(ncell, v(nm("m%d", kk)))
	}
	if keyed {
		pre = append(pre, idecl("colour", sum(colour...)))
	}
	// The cell's intervals uK: an odometer, x fastest (no divisions).
	var in []kernel.Stmt
	var acts []kernel.Expr
	for kk := range d {
		u, w := nm("u%d", kk), nm("w%d", kk)
		pre = append(pre, idecl(u, ci(0)))
		in = append(in, idecl(w, ibin("*", ibin("+", v(nm("g%d", kk)), v(u)), ci(ivlStride))))
		acts = append(acts, icast(at("sivl", v(w))))
	}
	in = append(in, idecl("a", prod(acts...)))
	if keyed {
		in = append(in, idecl("h", ibin("+", ibin("*", ibin("%", v("i"), v(Stripes)), v(Stripe)),
			ibin("+", ibin("*", ibin("+", ibin("*", v("a"), v(NColours)), v("colour")), v(KeyStride)), v("t")))))
	}
	in = append(in, body...)
	var step []kernel.Stmt
	for kk := d - 1; kk >= 0; kk-- {
		u := nm("u%d", kk)
		inc := []kernel.Stmt{kernel.Assign{Name: u, Value: ibin("+", v(u), ci(1))}}
		if kk < d-1 {
			inc = append(inc, kernel.If{Cond: ibin("==", v(u), v(nm("m%d", kk))), Then: append([]kernel.Stmt{kernel.Assign{Name: u, Value: ci(0)}}, step...)})
		}
		step = inc
	}
	in = append(in, step...)
	return append(pre, loop("t", ci(0), prod(ncell...), in...))
}

// keyedParams are the arguments ColourOrder's count and fill kernels
// share.
func keyedParams() []kernel.Param {
	return []kernel.Param{
		size(NColours, "patch colours"),
		size(KeyStride, "cells of one patch at most"),
		size(Stripes, "copies of the histogram"),
		size(Stripe, "counters of one copy"),
		buf("sptr", kernel.Int32, true, "split points per direction and index: first point (dim × per + 1)"),
		buf("sivl", kernel.Int32, true, "per interval: active patches along the direction, their indices, the intervals before it by active patches"),
		buf("snbr", kernel.Int32, true, "per direction and index: colour term, neighbours, their prefix, their indices"),
	}
}

// PatternKernel builds the kernel that writes the patch data and the
// matrix pattern of a uniform cover: for patch i its centre and support
// half-width (N × d, from SGeo), its BSR block row pointer rowptr[i]
// (the neighbours of the patches before it, in closed form from SNbr's
// prefix sums; rowptr[N] by the last thread) and its block columns
// col[rowptr[i] …], the neighbours ascending (the tensor product of the
// directions' index lists, z slowest).
func PatternKernel(s DecompSpec) (*kernel.Kernel, error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	d := s.Dim
	k, body := s.decompKernel("pattern",
		"for each patch i: centre, sup (i·d + k) from sgeo; rowptr[i] = Σ_{j<i} |nbr(j)| (rowptr[N] by the last); col[rowptr[i]…] = nbr(i) ascending",
		buf("snbr", kernel.Int32, true, "per direction and index: colour term, neighbours, their prefix, their indices"),
		buf("sgeo", kernel.Real, true, "per direction and index: patch centre, support half-width"),
		buf("centre", kernel.Real, false, "patch centres, N × d"),
		buf("sup", kernel.Real, false, "patch support half-widths, N × d"),
		buf("rowptr", kernel.Int32, false, "BSR block-row pointers (N + 1)"),
		buf("col", kernel.Int32, false, "BSR block columns"))
	nb := func(e kernel.Expr, field kernel.Expr) kernel.Expr {
		return icast(at("snbr", ibin("+", ibin("*", e, ci(nbrStride)), field)))
	}
	var cnt, tot []kernel.Expr
	for kk := range d {
		e := v(nm("e%d", kk))
		for f, name := range []string{"centre", "sup"} {
			body = append(body, kernel.Put(name, at("sgeo", ibin("+", ibin("*", e, ci(2)), ci(f))),
				ibin("+", ibin("*", v("i"), ci(d)), ci(kk))))
		}
		last := ibin("-", ibin("*", ci(kk+1), v(PerDir)), ci(1)) // entry (kk, per−1)
		body = append(body,
			idecl(nm("c%d", kk), nb(e, ci(nbrCount))),
			idecl(nm("tot%d", kk), ibin("+", nb(last, ci(nbrPrefix)), nb(last, ci(nbrCount)))))
		cnt = append(cnt, v(nm("c%d", kk)))
		tot = append(tot, v(nm("tot%d", kk)))
	}
	// The patches before i: along the slowest direction those with a
	// smaller index, then within its row the same recursively.
	var terms []kernel.Expr
	for kk := range d {
		terms = append(terms, prod(append(append(slices.Clone(cnt[kk+1:]), nb(v(nm("e%d", kk)), ci(nbrPrefix))), tot[:kk]...)...))
	}
	body = append(body,
		idecl("row", sum(terms...)),
		kernel.Put("rowptr", kernel.Cast{To: kernel.Int32, X: v("row")}, v("i")),
		kernel.If{Cond: ibin("==", v("i"), ibin("-", v(Patches), ci(1))), Then: []kernel.Stmt{
			kernel.Put("rowptr", kernel.Cast{To: kernel.Int32, X: prod(tot...)}, v(Patches)),
		}},
		idecl("q", v("row")))
	// The neighbours, z slowest.
	var idx []kernel.Expr
	for kk := range d {
		idx = append(idx, ibin("*", nb(v(nm("e%d", kk)), ibin("+", ci(nbrIndex), v(nm("r%d", kk)))), v(nm("st%d", kk))))
	}
	inner := []kernel.Stmt{
		kernel.Put("col", kernel.Cast{To: kernel.Int32, X: sum(idx...)}, v("q")),
		kernel.Assign{Name: "q", Value: ibin("+", v("q"), ci(1))},
	}
	for kk := range d {
		inner = []kernel.Stmt{loop(nm("r%d", kk), ci(0), v(nm("c%d", kk)), inner...)}
	}
	k.Body = append(body, inner...)
	return k, kernel.Validate(k)
}

// CountKernel builds the count kernel: for each cell of patch i (t < its
// cells, x fastest) its active count a = Π_k (patches active on its
// interval along k) and its key colour(i)·maxcells + t, counted with an
// atomic add in its copy of the histogram (HistLen).
func CountKernel(s DecompSpec) (*kernel.Kernel, error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	k, body := s.decompKernel("count",
		"for each patch i and cell t of it: hist[(i mod stripes)·stripe + (a·colours + colour(i))·maxcells + t] += 1, a the cell's active patches",
		append(keyedParams(), buf("hist", kernel.Int32, false, "cells per (active count, colour, position)"))...)
	k.Body = s.cells(body, true, kernel.AtomicFetchAdd{Buf: "hist", Index: []kernel.Expr{v("h")}, Value: ci(1)})
	return k, kernel.Validate(k)
}

// FillKernel builds the fill kernel of ColourOrder for cells with the
// given active counts (bins, ascending; each needs its buffers loA, hiA,
// actA, named by Active): for each cell of patch i, as the count kernel
// finds it, a slot from an atomic fetch-add on its cursor hist[…] and
// there its lower and upper corners (split points from spt) and its
// active patches, ascending (the tensor product of the directions'
// active indices, z slowest), in the layout Integrate reads.
func FillKernel(s DecompSpec, bins []int) (*kernel.Kernel, error) {
	params, names, err := s.binParams(bins)
	if err != nil {
		return nil, err
	}
	params = append(append(keyedParams(), params...),
		buf("hist", kernel.Int32, false, "cursors per (active count, colour, position): the next free slot of the bin"))
	k, body := s.decompKernel("fill_a"+names,
		"for each patch i and cell t of it: slot = hist[(i mod stripes)·stripe + (a·colours + colour(i))·maxcells + t]++; loA, hiA, actA at slot",
		params...)
	k.Meta["bins"] = bins
	cell := []kernel.Stmt{
		idecl("slot", ci(0)),
		kernel.AtomicFetchAdd{Old: "slot", Buf: "hist", Index: []kernel.Expr{v("h")}, Value: ci(1)},
	}
	for _, a := range bins {
		cell = append(cell, kernel.If{Cond: ibin("==", v("a"), ci(a)), Then: s.store(a)})
	}
	k.Body = s.cells(body, true, cell...)
	return k, kernel.Validate(k)
}

// FillPatchKernel builds the fill kernel of PatchOrder (bins as for
// FillKernel), one thread per cell slot g = i·maxcells + t (patch i, its
// cell t if it has one), all in closed form, no atomics: the cell's slot
// in bin A is the number of the bin's cells in the patches before i plus
// those of patch i before t. Each count is a sum over the directions'
// active counts (v_k) with Π v_k = A of the closed form rowptr has: for
// the patches, SCnt's counts of intervals with v_k active in place of the
// neighbours; within the patch, SIvl's counts of the intervals before the
// cell's. The bins are NewPlan's without colour, cell for cell, and a
// warp writes neighbouring cells.
func FillPatchKernel(s DecompSpec, bins []int) (*kernel.Kernel, error) {
	return s.fillClosed(bins, false)
}

// FillSetKernel builds the fill kernel of SetOrder (bins as for
// FillKernel; threads as FillPatchKernel's): the cell's slot in bin A is
// the number of the bin's cells in the active sets before its own plus
// its rank in its set. Both in closed form from SSet: the sets before,
// per combination of the directions' active counts, as rowptr counts the
// patches before (the intervals of the directions' sets in place of a
// patch's); the rank x fastest over the directions' ranks.
func FillSetKernel(s DecompSpec, bins []int) (*kernel.Kernel, error) {
	return s.fillClosed(bins, true)
}

// fillClosed is FillPatchKernel, or with set FillSetKernel.
func (s DecompSpec) fillClosed(bins []int, set bool) (*kernel.Kernel, error) {
	params, names, err := s.binParams(bins)
	if err != nil {
		return nil, err
	}
	params = append([]kernel.Param{
		size(KeyStride, "cells of one patch at most"),
		size(CellSlots, "patches × maxcells: one thread each"),
		buf("sptr", kernel.Int32, true, "split points per direction and index: first point (dim × per + 1)"),
		buf("sivl", kernel.Int32, true, "per interval: active patches along the direction, their indices, the intervals before it by active patches"),
		buf("scnt", kernel.Int32, true, "per direction and index: intervals with 1, 2, 3 active patches, their prefix sums over the index"),
	}, params...)
	kind, doc := "fillp_a", "for each patch i and cell t of it: slot = (cells of bin a in patches before i) + (cells of bin a in patch i before t); loA, hiA, actA at slot"
	if set {
		params = append(params, buf("sset", kernel.Int32, true, "per interval: intervals of its 1-D set, its rank there, the intervals of the sets before with 1, 2, 3 active patches"))
		kind, doc = "fills_a", "for each patch i and cell t of it: slot = (cells of bin a in the active sets before the cell's) + (its rank in its set); loA, hiA, actA at slot"
	}
	k, body := s.decompKernel(kind+names, doc, params...)
	k.Meta["bins"] = bins
	// One thread per cell slot: i and t from the thread's index.
	T := s.Threads
	k.Launch.Grid[0] = kernel.Over(CellSlots, T)
	k.Active = v(CellSlots)
	body = append([]kernel.Stmt{
		idecl("g", ibin("+", ibin("*", kernel.GroupX, ci(T)), kernel.LocalX)),
		idecl("i", ibin("/", v("g"), v(KeyStride))),
		idecl("t", ibin("%", v("g"), v(KeyStride))),
	}, body[1:]...) // body[0] declared i
	d := s.Dim
	cnt := func(e kernel.Expr, field int) kernel.Expr {
		return icast(at("scnt", ibin("+", ibin("*", e, ci(cntStride)), ci(field))))
	}
	var ncell []kernel.Expr
	for kk := range d {
		e := v(nm("e%d", kk))
		body = append(body,
			idecl(nm("p%d", kk), icast(at("sptr", e))),
			idecl(nm("m%d", kk), ibin("-", ibin("-", icast(at("sptr", ibin("+", e, ci(1)))), v(nm("p%d", kk))), ci(1))))
		ncell = append(ncell, v(nm("m%d", kk)))
	}
	// The cell's intervals uK, its SIvl rows wK and its active count a.
	var cell []kernel.Stmt
	rest := kernel.Expr(v("t"))
	var acts []kernel.Expr
	for kk := range d {
		u := nm("u%d", kk)
		if kk == d-1 {
			cell = append(cell, idecl(u, rest))
		} else {
			cell = append(cell, idecl(u, ibin("%", rest, v(nm("m%d", kk)))))
			rest = ibin("/", rest, v(nm("m%d", kk)))
		}
		w := nm("w%d", kk)
		cell = append(cell,
			idecl(w, ibin("*", ibin("+", ibin("-", v(nm("p%d", kk)), v(nm("e%d", kk))), v(u)), ci(ivlStride))),
			idecl(nm("c%d", kk), icast(at("sivl", v(w)))))
		acts = append(acts, v(nm("c%d", kk)))
	}
	cell = append(cell, idecl("a", prod(acts...)))
	// Per direction and count v: the patch's intervals with v active,
	// those of the indices before its own, all, and those before the
	// cell's interval in the patch.
	last := func(kk int) kernel.Expr { return ibin("-", ibin("*", ci(kk+1), v(PerDir)), ci(1)) }
	n := func(kk, vv int) kernel.Expr { return cnt(v(nm("e%d", kk)), vv-1) }
	pre := func(kk, vv int) kernel.Expr { return cnt(v(nm("e%d", kk)), 3+vv-1) }
	tot := func(kk, vv int) kernel.Expr { return ibin("+", cnt(last(kk), vv-1), cnt(last(kk), 3+vv-1)) }
	ipre := func(kk, vv int) kernel.Expr {
		return icast(at("sivl", ibin("+", v(nm("w%d", kk)), ci(ivlPre+vv-1))))
	}
	sset := func(kk, field int) kernel.Expr { // SSet's field of the cell's interval along kk
		return icast(at("sset", ibin("+", ibin("*", ibin("/", v(nm("w%d", kk)), ci(ivlStride)), ci(setStride)), ci(field))))
	}
	is := func(kk, vv int) kernel.Expr { // 1 where the cell's interval along kk has vv active
		return kernel.Select{Cond: ibin("==", v(nm("c%d", kk)), ci(vv)), Then: ci(1), Else: ci(0)}
	}
	// rowptr's closed form over a grid of counts per direction: the
	// entries before an index (z slowest), where in(k) counts direction
	// k's entries at the index, bef(k) those before it and all(k) all.
	before := func(in, bef, all func(kk int) kernel.Expr) kernel.Expr {
		var terms []kernel.Expr
		for kk := range d {
			var f []kernel.Expr
			for k2 := kk + 1; k2 < d; k2++ {
				f = append(f, in(k2))
			}
			f = append(f, bef(kk))
			for k2 := range kk {
				f = append(f, all(k2))
			}
			terms = append(terms, prod(f...))
		}
		return sum(terms...)
	}
	for _, a := range bins {
		var terms []kernel.Expr
		for c := range pow(3, d) {
			vs := make([]int, d)
			prodv := 1
			for kk, q := 0, c; kk < d; kk, q = kk+1, q/3 {
				vs[kk] = q%3 + 1
				prodv *= vs[kk]
			}
			if prodv != a {
				continue
			}
			if set { // the bin's cells in the sets before the cell's
				terms = append(terms, before(func(kk int) kernel.Expr { return ibin("*", is(kk, vs[kk]), sset(kk, 0)) },
					func(kk int) kernel.Expr { return sset(kk, setBefore+vs[kk]-1) }, func(kk int) kernel.Expr { return tot(kk, vs[kk]) }))
				continue
			}
			// The bin's cells in the patches before i, then in patch i
			// before the cell.
			terms = append(terms,
				before(func(kk int) kernel.Expr { return n(kk, vs[kk]) }, func(kk int) kernel.Expr { return pre(kk, vs[kk]) }, func(kk int) kernel.Expr { return tot(kk, vs[kk]) }),
				before(func(kk int) kernel.Expr { return is(kk, vs[kk]) }, func(kk int) kernel.Expr { return ipre(kk, vs[kk]) }, func(kk int) kernel.Expr { return n(kk, vs[kk]) }))
		}
		if set { // and its rank in the set, x fastest
			var rank []kernel.Expr
			for kk := range d {
				f := []kernel.Expr{sset(kk, 1)}
				for k2 := range kk {
					f = append(f, sset(k2, 0))
				}
				rank = append(rank, prod(f...))
			}
			terms = append(terms, rank...)
		}
		st := append([]kernel.Stmt{idecl("slot", sum(terms...))}, s.store(a)...)
		cell = append(cell, kernel.If{Cond: ibin("==", v("a"), ci(a)), Then: st})
	}
	k.Body = append(body, kernel.If{Cond: ibin("<", v("t"), prod(ncell...)), Then: cell})
	return k, kernel.Validate(k)
}

// binParams checks a fill kernel's bins and returns their buffers and
// their part of the kernel's name.
func (s DecompSpec) binParams(bins []int) ([]kernel.Param, string, error) {
	if err := s.Check(); err != nil {
		return nil, "", err
	}
	for j, a := range bins {
		if a < 1 || a > MaxActive || (j > 0 && a <= bins[j-1]) {
			return nil, "", fmt.Errorf("kernel/pum: fill kernel bins %v: want active counts in 1…MaxActive = %d, ascending, each once", bins, MaxActive)
		}
	}
	if len(bins) == 0 {
		return nil, "", fmt.Errorf("kernel/pum: a fill kernel needs a bin")
	}
	var names []string
	params := []kernel.Param{buf("spt", kernel.Real, true, "split points")}
	for _, a := range bins {
		names = append(names, nm("%d", a))
		params = append(params,
			buf(nm("lo%d", a), kernel.Real, false, nm("lower corners of the cells with %d active patches, cell × d", a)),
			buf(nm("hi%d", a), kernel.Real, false, "upper corners"),
			buf(nm("act%d", a), kernel.Int32, false, nm("active patches, cell × %d", a)))
	}
	return params, strings.Join(names, "_"), nil
}

// store writes the cell (cells' uK, wK) into bin a's arrays at slot: its
// corners and its active patches, ascending.
func (s DecompSpec) store(a int) []kernel.Stmt {
	d := s.Dim
	var st []kernel.Stmt
	for kk := range d {
		pt := ibin("+", v(nm("p%d", kk)), v(nm("u%d", kk)))
		ix := ibin("+", ibin("*", v("slot"), ci(d)), ci(kk))
		st = append(st,
			kernel.Put(nm("lo%d", a), at("spt", pt), ix),
			kernel.Put(nm("hi%d", a), at("spt", ibin("+", pt, ci(1))), ix))
	}
	var idx []kernel.Expr
	for kk := range d {
		idx = append(idx, ibin("*", icast(at("sivl", ibin("+", v(nm("w%d", kk)), ibin("+", ci(1), v(nm("r%d", kk)))))), v(nm("st%d", kk))))
	}
	inner := []kernel.Stmt{
		kernel.Put(nm("act%d", a), kernel.Cast{To: kernel.Int32, X: sum(idx...)}, ibin("+", ibin("*", v("slot"), ci(a)), v("q"))),
		kernel.Assign{Name: "q", Value: ibin("+", v("q"), ci(1))},
	}
	for kk := range d {
		inner = []kernel.Stmt{loop(nm("r%d", kk), ci(0), icast(at("sivl", v(nm("w%d", kk)))), inner...)}
	}
	st = append(st, idecl("q", ci(0)))
	return append(st, inner...)
}

// BinData is a device bin with its arrays as downloaded.
type BinData struct {
	DeviceBin
	Lo, Hi []float64 // cell × d
	Act    []int32   // cell × Active
}

// CompareDevice reports the first difference between a device
// decomposition's bins and pl, or nil: the same bins with the same
// cells, the same colour group boundaries, and the same (lo, hi, act)
// records: with colour (ColourOrder) in every group as multisets (a
// device orders a group's cells as its tickets fall), without
// (PatchOrder) cell for cell. Corners are compared exactly, the host's
// rounded to dt as the device holds them: both are the same split points.
func (pl *Plan) CompareDevice(dt kernel.DType, bins []BinData) error {
	if len(bins) != len(pl.Bins) {
		return fmt.Errorf("kernel/pum: %d device bins, %d host bins", len(bins), len(pl.Bins))
	}
	d := pl.Dec.Cover.Dim
	for bi, hb := range pl.Bins {
		db := bins[bi]
		a, n := hb.Active, len(hb.Cells)
		switch {
		case db.Active != a || db.Cells != n:
			return fmt.Errorf("kernel/pum: bin %d: device %d cells with %d active, host %d with %d", bi, db.Cells, db.Active, n, a)
		case !slices.Equal(db.Groups, hb.Groups):
			return fmt.Errorf("kernel/pum: bin %d (%d active): device colour groups %v, host %v", bi, a, db.Groups, hb.Groups)
		case len(db.Lo) != n*d || len(db.Hi) != n*d || len(db.Act) != n*a:
			return fmt.Errorf("kernel/pum: bin %d: device arrays of %d, %d and %d entries for %d cells", bi, len(db.Lo), len(db.Hi), len(db.Act), n)
		}
		type rec struct {
			lo, hi []float64
			act    []int32
		}
		cmp := func(x, y rec) int {
			if c := slices.Compare(x.lo, y.lo); c != 0 {
				return c
			}
			if c := slices.Compare(x.hi, y.hi); c != 0 {
				return c
			}
			return slices.Compare(x.act, y.act)
		}
		round := func(x []float64) []float64 {
			out := make([]float64, len(x))
			for i, v := range x {
				out[i] = dt.Rounded(v)
			}
			return out
		}
		groups := hb.Groups
		ordered := groups == nil
		if ordered {
			groups = []int32{0, int32(n)}
		}
		for g := range len(groups) - 1 {
			g0, g1 := int(groups[g]), int(groups[g+1])
			var hr, dr []rec
			for t := g0; t < g1; t++ {
				hr = append(hr, rec{round(hb.Lo[t*d : t*d+d]), round(hb.Hi[t*d : t*d+d]), hb.Act[t*a : t*a+a]})
				dr = append(dr, rec{db.Lo[t*d : t*d+d], db.Hi[t*d : t*d+d], db.Act[t*a : t*a+a]})
			}
			how := "in sorted order"
			if ordered {
				how = "in the bin's order"
			} else {
				slices.SortFunc(hr, cmp)
				slices.SortFunc(dr, cmp)
			}
			for j := range hr {
				if cmp(hr[j], dr[j]) != 0 {
					return fmt.Errorf("kernel/pum: bin %d (%d active), colour group %d: device cell lo %v hi %v act %v, host lo %v hi %v act %v (%s, record %d)",
						bi, a, g, dr[j].lo, dr[j].hi, dr[j].act, hr[j].lo, hr[j].hi, hr[j].act, how, j)
				}
			}
		}
	}
	return nil
}
