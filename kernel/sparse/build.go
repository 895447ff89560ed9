package sparse

import (
	"fmt"

	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/operator"
)

// Build returns the kernel for variant v, named by Problem.EntryName.
func Build(pb Problem, v Variant) (*kernel.Kernel, error) {
	if v == nil {
		return nil, fmt.Errorf("sparse: no variant")
	}
	if err := pb.Check(v); err != nil {
		return nil, err
	}
	g := newGen(pb, v)
	g.kern.Name = pb.EntryName(v)
	if err := v.build(g); err != nil {
		return nil, err
	}
	return g.kern, nil
}

// Columns names the launch size of every GEMM kernel: the columns n of B
// and C (grid.x = ⌈n / columns per block⌉).
const Columns = "n"

// gen holds the state of one kernel under construction.
type gen struct {
	pb   Problem
	v    Variant
	a    []float64 // α·A, row-major
	m, k int
	kern *kernel.Kernel

	rowNZ, colNZ [][]int // structure(), once computed
	used         []int

	blocks    *blockPlan // plan(), once computed
	blocksErr error
	below     float64 // sig: the least magnitude that counts (0: any non-zero)
}

func newGen(pb Problem, v Variant) *gen {
	op := pb.Op
	a := make([]float64, len(op.Data))
	for i, x := range op.Data {
		a[i] = pb.Alpha * x
	}
	st := operator.Analyze(op)
	ls := v.launch()
	// The kernel's name (Problem.EntryName, a digest of the whole operator)
	// is set by Build alone: checks plan kernels without naming them.
	k := &kernel.Kernel{
		Variant: v.Name(),
		DType:   pb.DType,
		Index64: pb.index64(),
		Launch: kernel.Launch{
			Block:       [3]int{ls.x, max(ls.y, 1), 1},
			Grid:        [3]kernel.Axis{kernel.Over(Columns, ls.x*ls.width)},
			SharedBytes: v.sharedBytes(pb),
		},
		Hints: kernel.Hints{MinBlocksPerUnit: ls.occupancy},
		Meta: map[string]any{
			"m": op.Rows, "k": op.Cols, "nnz": st.NNZ, "k_used": st.UsedCols,
			"alpha": pb.Alpha, "beta": pb.Beta, "n": runtimeOr(pb.N), "ldb": runtimeOr(pb.LDB), "ldc": runtimeOr(pb.LDC),
			"operator": op.Name,
		},
	}
	k.Doc = fmt.Sprintf("C <- %g*A*B + %g*C for a constant %d×%d operator A with %d non-zeros (%s).\n"+
		"B is k×n and C is m×n, row-major with leading dimensions ldb and ldc; one thread per %d column(s).\n"+
		"for each column j < n: C[i*ldc+j] = sum_r alpha*A[i][r]*B[r*ldb+j] + beta*C[i*ldc+j]",
		pb.Alpha, pb.Beta, op.Rows, op.Cols, st.NNZ, v.Name(), ls.width)
	k.Params = params(pb)
	return &gen{pb: pb, v: v, a: a, m: op.Rows, k: op.Cols, kern: k}
}

func runtimeOr(v int) any {
	if v > 0 {
		return v
	}
	return "runtime"
}

// params lists (n, b, ldb, c, ldc), leaving out what is baked in.
func params(pb Problem) []kernel.Param {
	var ps []kernel.Param
	scalar := func(name, doc string) {
		ps = append(ps, kernel.Param{Name: name, Kind: kernel.ScalarParam, Type: kernel.Index, Doc: doc})
	}
	if pb.N == 0 {
		scalar("n", "columns of B and C")
	}
	ps = append(ps, kernel.Param{Name: "b", Kind: kernel.BufferParam, Type: kernel.Real, Const: true, Doc: "B, k×n row-major"})
	if pb.LDB == 0 {
		scalar("ldb", "leading dimension of B in elements")
	}
	ps = append(ps, kernel.Param{Name: "c", Kind: kernel.BufferParam, Type: kernel.Real, Doc: "C, m×n row-major"})
	if pb.LDC == 0 {
		scalar("ldc", "leading dimension of C in elements")
	}
	return ps
}

// nExpr, ldbExpr and ldcExpr are baked literals or parameter names.
func (g *gen) nExpr() kernel.Expr   { return intOrVar(g.pb.N, "n") }
func (g *gen) ldbExpr() kernel.Expr { return intOrVar(g.pb.LDB, "ldb") }
func (g *gen) ldcExpr() kernel.Expr { return intOrVar(g.pb.LDC, "ldc") }

func intOrVar(v int, name string) kernel.Expr {
	if v > 0 {
		return kernel.Const(v)
	}
	return kernel.Ref(name)
}

// at returns α·A[i][r].
func (g *gen) at(i, r int) float64 { return g.a[i*g.k+r] }

// rowNZ[i] lists the columns of row i's non-zeros; colNZ[r] the rows of
// column r's non-zeros; used the columns with any.
// They are computed once per kernel and must not be changed.
func (g *gen) structure() (rowNZ, colNZ [][]int, used []int) {
	if g.rowNZ != nil {
		return g.rowNZ, g.colNZ, g.used
	}
	defer func() { g.rowNZ, g.colNZ, g.used = rowNZ, colNZ, used }()
	rowNZ, colNZ = make([][]int, g.m), make([][]int, g.k)
	for i := 0; i < g.m; i++ {
		for r := 0; r < g.k; r++ {
			if g.pb.Op.At(i, r) != 0 {
				rowNZ[i] = append(rowNZ[i], r)
				colNZ[r] = append(colNZ[r], i)
			}
		}
	}
	for r := range colNZ {
		if len(colNZ[r]) > 0 {
			used = append(used, r)
		}
	}
	return
}
