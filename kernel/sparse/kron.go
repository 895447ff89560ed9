package sparse

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/bespoke-hpc/bespoke/operator"
)

// Structure found in any operator, whatever its element and its order of
// rows and columns.
//
// The operators of tensor-product-like elements are, up to an order of
// their rows and columns, stacks of Kronecker products with a repeating
// factor, or sums of them whose terms read different rows of B (a
// divergence): a prism's gradient stacks I_line ⊗ D_ξ and I_line ⊗ D_η
// (the triangle's derivatives, once a level of the line) on D_line ⊗
// I_tri. (A sum whose terms share rows and columns, I ⊗ T + S ⊗ I, mixes
// both factors in every row and is not found.) Grouping the lines of A by their support (groupBySupport) finds
// the copies of the repeating factor in any order of rows and columns:
// each copy is a dense block, its lines × their support. Two things kept
// the blocks family from the prisms:
//
//   - copies larger than a tile: a p5 prism's two triangle derivatives
//     share their support, 42 rows × 21 columns, over blocksMaxTile.
//     pieces cuts such blocks into equal pieces (identical copies into
//     identical pieces), which planBlocks takes when the whole blocks
//     give no plan;
//   - copies whose rows or columns lie in different orders are different
//     classes of a plan (blockClass compares offsets and values), so the
//     plan has as many loops as copies and BlocksCandidates saw no reuse.
//     MeasureStructure compares copies up to an order of their rows and
//     columns: a repeating factor is found in a permuted operator too.
//
// The candidate rules read the measured structure, never the element:
// BlocksCandidates offers the blocks family where a factor repeats
// (Structure.Repeats), and mmaPays offers the tensor-core families where
// the dense product stays near the memory roof and the SIMT kernels have
// much work per value moved.

// Structure is what the sparse family measures in an operator.
type Structure struct {
	Rows, Cols int
	NNZ        int
	Density    float64 // NNZ / (Rows·Cols)
	// By is how the dense blocks were found: "rows" (rows grouped by
	// their support) or "cols" (columns by the rows they touch).
	By string
	// Blocks is the dense blocks found (pieces of those over a tile's
	// bounds), Classes how many of them differ up to an order of their
	// rows and columns, and Area their entries together.
	Blocks, Classes, Area int
	// MaxRank is the largest numerical rank of a class's block.
	MaxRank int
}

// Fill is the share of the blocks' entries that are non-zero.
func (s Structure) Fill() float64 {
	if s.Area == 0 {
		return 0
	}
	return float64(s.NNZ) / float64(s.Area)
}

// Repeats says whether a factor repeats: at least blocksMinReuse copies
// of each class on average, as BlocksCandidates asks of a plan's loops.
func (s Structure) Repeats() bool {
	return s.Classes > 0 && s.Blocks >= blocksMinReuse*s.Classes
}

func (s Structure) String() string {
	return fmt.Sprintf("%d×%d, %d non-zeros (%.1f %%): %d blocks by %s in %d classes, fill %.2f, rank ≤ %d",
		s.Rows, s.Cols, s.NNZ, 100*s.Density, s.Blocks, s.By, s.Classes, s.Fill(), s.MaxRank)
}

// MeasureStructure groups A's lines by their support both ways, cuts the
// blocks over a tile's bounds into pieces, and keeps the way with fewer
// classes (then more blocks).
func MeasureStructure(op *operator.Operator) Structure {
	g := newGen(Problem{Op: op, Alpha: 1}, Defaults(Blocks))
	st := operator.Analyze(op)
	best := Structure{Rows: op.Rows, Cols: op.Cols, NNZ: st.NNZ, Density: st.Density}
	for _, by := range []string{"rows", "cols"} {
		tasks := g.pieces(g.supportTasks(by), by == "cols")
		s := best
		s.By, s.Blocks, s.Classes, s.Area, s.MaxRank = by, len(tasks), 0, 0, 0
		seen := map[string]bool{}
		for _, t := range tasks {
			s.Area += len(t.rows) * len(t.cols)
			key, tile := g.canonicalTile(t)
			if !seen[key] {
				seen[key] = true
				s.Classes++
				s.MaxRank = max(s.MaxRank, rank(tile, len(t.rows), len(t.cols)))
			}
		}
		if best.By == "" || s.Classes < best.Classes || (s.Classes == best.Classes && s.Blocks > best.Blocks) {
			best = s
		}
	}
	return best
}

// supportTasks groups A's rows (by "rows") or columns (by "cols") by
// their support, as planBlocks does.
func (g *gen) supportTasks(by string) []blockTask {
	rowNZ, colNZ, _ := g.structure()
	if by == "rows" {
		return groupBySupport(rowNZ, false)
	}
	return groupBySupport(colNZ, true)
}

// planPieces is planBlocks' second try: the blocks over a tile's bounds
// cut into pieces, both ways, the plan with fewer loops (then fewer
// loads) kept.
func (g *gen) planPieces() (*blockPlan, error) {
	var best *blockPlan
	var errs []string
	for _, by := range []string{"rows", "cols"} {
		p, err := g.planTasks(by, g.pieces(g.supportTasks(by), by == "cols"))
		if err != nil {
			errs = append(errs, fmt.Sprintf("in pieces by %s: %v", by, err))
			continue
		}
		if best == nil || p.loops() < best.loops() || (p.loops() == best.loops() && p.loads() < best.loads()) {
			best = p
		}
	}
	if best == nil {
		return nil, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return best, nil
}

// pieces cuts every block over a tile's bounds (blocksMaxRows,
// blocksMaxCols, blocksMaxTile) into pieces of near-equal size: first
// both ways into the fewest pieces within the row and column bounds, then
// along its lines (its rows when grouped by rows, its columns when
// transposed) until a piece's tile fits. Each piece keeps only its rows
// and columns with a non-zero inside it. Identical blocks are cut alike.
func (g *gen) pieces(tasks []blockTask, transposed bool) []blockTask {
	return g.cutPieces(tasks, !transposed)
}

// cutPieces is pieces, cutting a block's rows first where rowsFirst, else
// its columns.
func (g *gen) cutPieces(tasks []blockTask, rowsFirst bool) []blockTask {
	var out []blockTask
	for _, t := range tasks {
		r, c := len(t.rows), len(t.cols)
		nr, nc := ceilDiv(r, blocksMaxRows), ceilDiv(c, blocksMaxCols)
		for ceilDiv(r, nr)*ceilDiv(c, nc) > blocksMaxTile {
			if (rowsFirst && ceilDiv(r, nr) > 1) || ceilDiv(c, nc) == 1 {
				nr++
			} else {
				nc++
			}
		}
		for _, rows := range cutEven(t.rows, nr) {
			for _, cols := range cutEven(t.cols, nc) {
				if p, ok := g.trim(rows, cols); ok {
					out = append(out, p)
				}
			}
		}
	}
	return out
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// cutEven cuts xs into n runs in order, the first len(xs) mod n one
// longer than the rest.
func cutEven(xs []int, n int) [][]int {
	var out [][]int
	for i, lo := 0, 0; i < n; i++ {
		size := len(xs) / n
		if i < len(xs)%n {
			size++
		}
		out = append(out, xs[lo:lo+size])
		lo += size
	}
	return out
}

// trim keeps the rows and columns of a piece with a non-zero inside it
// (false: none); one that counts in the supports (sig).
func (g *gen) trim(rows, cols []int) (blockTask, bool) {
	var t blockTask
	for _, i := range rows {
		if slices.ContainsFunc(cols, func(r int) bool { return g.sig(i, r) }) {
			t.rows = append(t.rows, i)
		}
	}
	for _, r := range cols {
		if slices.ContainsFunc(rows, func(i int) bool { return g.sig(i, r) }) {
			t.cols = append(t.cols, r)
		}
	}
	return t, len(t.rows) > 0
}

// canonicalTile returns a key that two blocks share when one's values are
// the other's with its rows and columns reordered (for blocks whose rows,
// and whose columns, hold distinct multisets of values; others may get
// two keys, which only undercounts a repeat), and the block's values in
// that order.
func (g *gen) canonicalTile(t blockTask) (string, []float64) {
	sig := func(vals []float64) string {
		s := slices.Clone(vals)
		slices.Sort(s)
		var b strings.Builder
		for _, x := range s {
			b.WriteString(strconv.FormatUint(math.Float64bits(x), 36))
			b.WriteByte(',')
		}
		return b.String()
	}
	order := func(lines []int, values func(x int) []float64) []int {
		keys := map[int]string{}
		for _, x := range lines {
			keys[x] = sig(values(x))
		}
		out := slices.Clone(lines)
		slices.SortStableFunc(out, func(a, b int) int { return cmp.Compare(keys[a], keys[b]) })
		return out
	}
	rows := order(t.rows, func(i int) []float64 {
		v := make([]float64, len(t.cols))
		for j, r := range t.cols {
			v[j] = g.at(i, r)
		}
		return v
	})
	cols := order(t.cols, func(r int) []float64 {
		v := make([]float64, len(t.rows))
		for j, i := range t.rows {
			v[j] = g.at(i, r)
		}
		return v
	})
	tile := make([]float64, 0, len(rows)*len(cols))
	var key strings.Builder
	fmt.Fprintf(&key, "%d×%d:", len(rows), len(cols))
	for _, i := range rows {
		for _, r := range cols {
			tile = append(tile, g.at(i, r))
			key.WriteString(strconv.FormatUint(math.Float64bits(g.at(i, r)), 36))
			key.WriteByte(',')
		}
	}
	return key.String(), tile
}

// rank is the numerical rank of the r×c row-major matrix a: Gaussian
// elimination with complete pivoting, pivots under 1e-12·max|a|·max(r, c)
// counted as zero.
func rank(a []float64, r, c int) int {
	a = slices.Clone(a)
	big := 0.0
	for _, x := range a {
		big = max(big, math.Abs(x))
	}
	tol := 1e-12 * big * float64(max(r, c))
	n := 0
	for ; n < min(r, c); n++ {
		pi, pj, pv := -1, -1, tol
		for i := n; i < r; i++ {
			for j := n; j < c; j++ {
				if v := math.Abs(a[i*c+j]); v > pv {
					pi, pj, pv = i, j, v
				}
			}
		}
		if pi < 0 {
			break
		}
		for j := 0; j < c; j++ {
			a[n*c+j], a[pi*c+j] = a[pi*c+j], a[n*c+j]
		}
		for i := 0; i < r; i++ {
			a[i*c+n], a[i*c+pj] = a[i*c+pj], a[i*c+n]
		}
		for i := n + 1; i < r; i++ {
			f := a[i*c+n] / a[n*c+n]
			for j := n; j < c; j++ {
				a[i*c+j] -= f * a[n*c+j]
			}
		}
	}
	return n
}

// Bounds of mmaPays, in flops per value moved (a used row of B read and a
// row of C written, per column). Unrolled SIMT kernels stay near the
// memory roof up to about 10 flops a value and fall well below it past
// 20; a dense product at 2·m·k/(m+k) ≤ 256 flops a value (32 flop/byte in
// fp64) is at most twice a current GPU's fp64 tensor-core balance (about
// 16 flop/byte), so a tensor-core kernel can reach half the roof or more.
// The figures behind both bounds are in docs/rationale.md#partial-kronecker.
const (
	mmaMinSparseWork = 16
	mmaMaxDenseWork  = 256
)

// mmaPays says whether the tensor-core families (dmma, tmma, wgmma) are
// offered for A, from its measured structure: where it is dense enough
// (denseMinDensity), or where the SIMT kernels have much work per value
// moved (mmaMinSparseWork) and the dense product little enough
// (mmaMaxDenseWork) for the tensor cores to stay near the memory roof.
func mmaPays(op *operator.Operator, st operator.Stats) bool {
	if st.Density >= denseMinDensity {
		return true
	}
	moved := float64(st.UsedCols + op.Rows - st.ZeroRows)
	if moved == 0 {
		return false
	}
	return 2*float64(st.NNZ)/moved >= mmaMinSparseWork && 2*float64(op.Rows)*float64(op.Cols)/moved <= mmaMaxDenseWork
}

// repeatsLarge says whether an operator of more than smallOperatorNNZ
// non-zeros repeats a factor (Structure.Repeats): the blocks family is
// then offered even where its plan's loops do not reuse their code (the
// copies lie in different orders). Small operators are left to the
// unrolled kernels, as before.
func repeatsLarge(op *operator.Operator) bool {
	return op.NNZ() > smallOperatorNNZ && MeasureStructure(op).Repeats()
}
