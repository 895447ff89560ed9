package pum

import (
	"fmt"
	"math"
	"sort"
)

// Limits. Each bounds memory or a fixed-size array that a device kernel
// would also need to size statically.
const (
	MaxLevel2D       = 10      // 2^20 patches, 16.8M cells
	MaxLevel3D       = 6       // 2^18 patches, 16.8M cells
	MaxDegree2D      = 5       // B = 21
	MaxDegree3D      = 3       // B = 20
	MaxPatches       = 1 << 20 // patches in a cover
	MaxNeighbours    = 64      // patches overlapping one patch (a uint64 slot mask)
	MaxCellsPerPatch = 4096    // integration cells in one patch
	MaxCells         = 1 << 25 // integration cells in a decomposition
	MaxQuadPoints    = 12      // Gauss points per direction in a cell
	MaxMatrixEntries = 1 << 30 // stored scalars of the assembled matrix (8 GiB in float64: 2-D level 9, p = 5 needs 1.04e9)
)

// Cover is a set of rectangular patches covering [0,1]^d (see the package
// comment for the geometry and numbering).
type Cover struct {
	Dim      int
	Alpha    float64 // stretch factor α of the supports, 1 < α < 2
	Periodic bool
	Adaptive bool
	Level    int // uniform: the level; adaptive: the finest level
	PerDir   int // uniform: patches per direction 2^Level; 0 if adaptive
	N        int // patches
	Centre   []float64
	Half     []float64 // basic half-widths; the support half-width is α·Half
	NbrPtr   []int32
	Nbr      []int32
}

func checkDimLevel(dim, level int) error {
	switch dim {
	case 2:
		if level < 0 || level > MaxLevel2D {
			return fmt.Errorf("pum: 2-D level %d outside 0…MaxLevel2D = %d", level, MaxLevel2D)
		}
	case 3:
		if level < 0 || level > MaxLevel3D {
			return fmt.Errorf("pum: 3-D level %d outside 0…MaxLevel3D = %d", level, MaxLevel3D)
		}
	default:
		return fmt.Errorf("pum: dimension %d not supported (2 or 3)", dim)
	}
	return nil
}

// checkUniform checks the arguments of a uniform cover.
func checkUniform(dim, level int, alpha float64, periodic bool) error {
	if err := checkDimLevel(dim, level); err != nil {
		return err
	}
	if err := checkAlpha(alpha); err != nil {
		return err
	}
	if periodic && level < 2 {
		return fmt.Errorf("pum: periodic cover needs level ≥ 2, got %d", level)
	}
	return nil
}

func checkAlpha(alpha float64) error {
	if !(alpha > 1 && alpha < 2) {
		return fmt.Errorf("pum: stretch α = %v outside the open interval (1,2)", alpha)
	}
	return nil
}

// UniformCover returns the uniform cover of [0,1]^dim at the given level:
// 2^level patches per direction. A periodic cover needs level ≥ 2, so that
// a patch's left and right neighbours are different patches.
func UniformCover(dim, level int, alpha float64, periodic bool) (*Cover, error) {
	if err := checkUniform(dim, level, alpha, periodic); err != nil {
		return nil, err
	}
	n := 1 << level
	np := 1
	for range dim {
		np *= n
	}
	if np > MaxPatches {
		return nil, fmt.Errorf("pum: %d patches exceed MaxPatches = %d", np, MaxPatches)
	}
	c := &Cover{Dim: dim, Alpha: alpha, Periodic: periodic, Level: level, PerDir: n, N: np,
		Centre: make([]float64, np*dim), Half: make([]float64, np*dim)}
	h := 1 / float64(n)
	var idx [3]int
	for i := range np {
		unflat(i, n, dim, &idx)
		for k := range dim {
			c.Centre[i*dim+k] = (float64(idx[k]) + 0.5) * h
			c.Half[i*dim+k] = h / 2
		}
	}
	// Neighbours by index arithmetic: α < 2 means exactly the patches at
	// offsets −1…1 per direction overlap (clipped, or wrapped if periodic).
	nb := 1
	for range dim {
		nb *= 3
	}
	c.NbrPtr = make([]int32, np+1)
	c.Nbr = make([]int32, 0, np*nb)
	list := make([]int32, 0, nb)
	var j [3]int
	for i := range np {
		unflat(i, n, dim, &idx)
		list = list[:0]
		for o := range nb {
			ok := true
			q := o
			for k := range dim {
				v := idx[k] + q%3 - 1
				q /= 3
				if v < 0 || v >= n {
					if !periodic {
						ok = false
						break
					}
					v = (v + n) % n
				}
				j[k] = v
			}
			if ok {
				list = append(list, int32(flat(j, n, dim)))
			}
		}
		sort.Slice(list, func(a, b int) bool { return list[a] < list[b] })
		c.Nbr = append(c.Nbr, list...)
		c.NbrPtr[i+1] = int32(len(c.Nbr))
	}
	return c, nil
}

func unflat(i, n, dim int, idx *[3]int) {
	for k := range dim {
		idx[k] = i % n
		i /= n
	}
}

func flat(idx [3]int, n, dim int) int {
	i := 0
	for k := dim - 1; k >= 0; k-- {
		i = i*n + idx[k]
	}
	return i
}

// AdaptiveCover returns a cover refined towards the centre of the domain:
// the uniform grid of cells at baseLevel, then every cell whose closure
// contains the centre point is split into 2^dim children, down to
// maxLevel. Each leaf cell is a patch's basic extent. Neighbouring leaves
// differ by at most one level, and the decomposition treats the cover as
// general (no index arithmetic). Not periodic.
func AdaptiveCover(dim, baseLevel, maxLevel int, alpha float64) (*Cover, error) {
	if err := checkDimLevel(dim, maxLevel); err != nil {
		return nil, err
	}
	if err := checkAlpha(alpha); err != nil {
		return nil, err
	}
	if baseLevel < 1 || baseLevel > maxLevel {
		return nil, fmt.Errorf("pum: adaptive base level %d outside 1…maxLevel = %d", baseLevel, maxLevel)
	}
	type leaf struct {
		lo [3]float64
		w  float64
	}
	var leaves []leaf
	var rec func(lo [3]float64, w float64, level int) error
	rec = func(lo [3]float64, w float64, level int) error {
		touches := true
		for k := range dim {
			if lo[k] > 0.5 || lo[k]+w < 0.5 {
				touches = false
			}
		}
		if level < baseLevel || (level < maxLevel && touches) {
			for ch := range 1 << dim {
				var l [3]float64
				for k := range dim {
					l[k] = lo[k] + float64(ch>>k&1)*w/2
				}
				if err := rec(l, w/2, level+1); err != nil {
					return err
				}
			}
			return nil
		}
		if len(leaves) >= MaxPatches {
			return fmt.Errorf("pum: adaptive cover exceeds MaxPatches = %d", MaxPatches)
		}
		leaves = append(leaves, leaf{lo, w})
		return nil
	}
	if err := rec([3]float64{}, 1, 0); err != nil {
		return nil, err
	}
	// x-fastest numbering: sort by z, then y, then x of the centre.
	sort.Slice(leaves, func(a, b int) bool {
		for k := dim - 1; k >= 0; k-- {
			ca, cb := leaves[a].lo[k]+leaves[a].w/2, leaves[b].lo[k]+leaves[b].w/2
			if ca != cb {
				return ca < cb
			}
		}
		return false
	})
	np := len(leaves)
	c := &Cover{Dim: dim, Alpha: alpha, Adaptive: true, Level: maxLevel, N: np,
		Centre: make([]float64, np*dim), Half: make([]float64, np*dim)}
	for i, l := range leaves {
		for k := range dim {
			c.Centre[i*dim+k] = l.lo[k] + l.w/2
			c.Half[i*dim+k] = l.w / 2
		}
	}
	if err := c.sweepNeighbours(); err != nil {
		return nil, err
	}
	return c, nil
}

// sweepNeighbours finds overlapping supports by a sweep over the supports
// sorted by their lower x bound (general covers).
func (c *Cover) sweepNeighbours() error {
	d := c.Dim
	order := make([]int, c.N)
	for i := range order {
		order[i] = i
	}
	lo := func(i, k int) float64 { return c.Centre[i*d+k] - c.Alpha*c.Half[i*d+k] }
	hi := func(i, k int) float64 { return c.Centre[i*d+k] + c.Alpha*c.Half[i*d+k] }
	sort.Slice(order, func(a, b int) bool { return lo(order[a], 0) < lo(order[b], 0) })
	lists := make([][]int32, c.N)
	for a, i := range order {
		lists[i] = append(lists[i], int32(i))
		for _, j := range order[a+1:] {
			if lo(j, 0) >= hi(i, 0)-overlapTol {
				break
			}
			ok := true
			for k := range d {
				if lo(j, k) >= hi(i, k)-overlapTol || lo(i, k) >= hi(j, k)-overlapTol {
					ok = false
					break
				}
			}
			if ok {
				lists[i] = append(lists[i], int32(j))
				lists[j] = append(lists[j], int32(i))
			}
		}
	}
	c.NbrPtr = make([]int32, c.N+1)
	for i, l := range lists {
		if len(l) > MaxNeighbours {
			return fmt.Errorf("pum: patch %d overlaps %d patches, more than MaxNeighbours = %d", i, len(l), MaxNeighbours)
		}
		sort.Slice(l, func(a, b int) bool { return l[a] < l[b] })
		c.Nbr = append(c.Nbr, l...)
		c.NbrPtr[i+1] = int32(len(c.Nbr))
	}
	return nil
}

// overlapTol: supports touching within this distance do not overlap
// (coordinates are O(1) and built from exact binary fractions times α).
const overlapTol = 1e-12

// Neighbours returns the patches whose supports overlap patch i's
// (ascending, i included).
func (c *Cover) Neighbours(i int) []int32 { return c.Nbr[c.NbrPtr[i]:c.NbrPtr[i+1]] }

// MinHalf returns the smallest basic half-width (h/2 on a uniform cover).
func (c *Cover) MinHalf() float64 {
	m := math.Inf(1)
	for _, v := range c.Half {
		m = math.Min(m, v)
	}
	return m
}
