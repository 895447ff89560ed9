package vector

import (
	"fmt"

	"github.com/bespoke-hpc/bespoke/kernel"
)

// Kernels of a CG solve preconditioned by block Jacobi on a block-sparse
// (BSR) matrix of B×B blocks: block k of block row i is block column
// col[k], rowptr[i] ≤ k < rowptr[i+1], and its entry (a,b) is
// val[(k·B + a)·B + b] (pum.BSR's layout). B is a constant of the kernel:
// the inner loops have a known trip count.

// Launch sizes of the BSR kernels, by name.
const (
	Rows      = "rows"      // scalar rows, BlockRows·B
	BlockRows = "blockrows" // block rows
)

// MaxBlock bounds B: one thread factors a whole diagonal block (B³/6
// multiply-adds in series) and solves with it; the PUM spaces need at
// most 21 (2-D p = 5; 3-D p = 3 has 20).
const MaxBlock = 32

func checkBlock(b int) error {
	if b < 1 || b > MaxBlock {
		return fmt.Errorf("vector: block size %d: want 1..%d (MaxBlock: one thread factors a block)", b, MaxBlock)
	}
	return nil
}

// bsrParams are the matrix's buffers.
func bsrParams() []kernel.Param {
	return []kernel.Param{
		buf("rowptr", kernel.Int32, true, "block row i's blocks are rowptr[i] ≤ k < rowptr[i+1]"),
		buf("col", kernel.Int32, true, "block column of each block"),
		buf("val", kernel.Real, true, "blocks, row-major, B×B each"),
	}
}

// BSRMulDot is q = A·p for a BSR matrix of b×b blocks, one thread per
// scalar row r = i·b + a (it sums over block row i's blocks and their b
// columns), fused with the partial sums of p[r]·q[r] (CG's pᵀAp), over
// r < rows.
func BSRMulDot(dt kernel.DType, s Shape, b int) (*kernel.Kernel, error) {
	if err := checkBlock(b); err != nil {
		return nil, err
	}
	params := append([]kernel.Param{size(Rows, "scalar rows (block rows × B)")}, bsrParams()...)
	params = append(params,
		buf("p", kernel.Real, true, "vector multiplied"),
		buf("q", kernel.Real, false, "A·p"))
	return reduction(fmt.Sprintf("bsr_mul_dot_b%d", b), dt, s, Rows, params,
		fmt.Sprintf("q[r] = Σ_{rowptr[r/%d] ≤ k < rowptr[r/%d+1]} Σ_{c<%d} val[(k·%d + r%%%d)·%d + c]·p[col[k]·%d + c], and Σ p[r]·q[r], over r < rows", b, b, b, b, b, b, b),
		func(i kernel.Expr) []kernel.Stmt {
			return []kernel.Stmt{
				kernel.DeclIndex("ib", kernel.Div(i, kernel.Const(b))),
				kernel.DeclIndex("ia", kernel.Sub(i, kernel.Mul(kernel.Ref("ib"), kernel.Const(b)))),
				kernel.DeclReal("s", kernel.Float(0)),
				kernel.For{Var: "bk", From: kernel.At("rowptr", kernel.Ref("ib")), To: kernel.At("rowptr", kernel.Add(kernel.Ref("ib"), kernel.Const(1))), Body: []kernel.Stmt{
					kernel.DeclIndex("v0", kernel.Mul(kernel.Add(kernel.Mul(kernel.Ref("bk"), kernel.Const(b)), kernel.Ref("ia")), kernel.Const(b))),
					kernel.DeclIndex("x0", kernel.Mul(kernel.At("col", kernel.Ref("bk")), kernel.Const(b))),
					kernel.For{Var: "bc", From: kernel.Const(0), To: kernel.Const(b), Body: []kernel.Stmt{
						kernel.Set("s", kernel.Add(kernel.Ref("s"), kernel.Mul(kernel.At("val", kernel.Add(kernel.Ref("v0"), kernel.Ref("bc"))), kernel.At("p", kernel.Add(kernel.Ref("x0"), kernel.Ref("bc")))))),
					}},
				}},
				kernel.Put("q", kernel.Ref("s"), i),
				kernel.Set("acc", kernel.Add(kernel.Ref("acc"), kernel.Mul(kernel.At("p", i), kernel.Ref("s")))),
			}
		})
}

// BlockCholesky is the set-up of block Jacobi: for each block row i <
// blockrows, l's block i = the lower Cholesky factor L of A's diagonal
// block (i,i) (b×b, row-major, zeros above the diagonal), one thread per
// block row. A block that is missing or not positive definite (a pivot
// ≤ 0 or NaN) adds 1 to fail[0] (its factor is then meaningless), so the
// host reads one integer to know the preconditioner is sound.
func BlockCholesky(dt kernel.DType, s Shape, b int) (*kernel.Kernel, error) {
	if err := checkBlock(b); err != nil {
		return nil, err
	}
	bb := b * b
	params := append([]kernel.Param{size(BlockRows, "block rows")}, bsrParams()...)
	params = append(params,
		buf("l", kernel.Real, false, "Cholesky factors of the diagonal blocks, B×B each"),
		buf("fail", kernel.Int32, false, "fail[0] counts the blocks not positive definite"))
	li := func(r, c kernel.Expr) kernel.Expr {
		return kernel.Add(kernel.Ref("l0"), kernel.Add(kernel.Mul(r, kernel.Const(b)), c))
	}
	return elementwise(fmt.Sprintf("bsr_cholesky_b%d", b), dt, s, BlockRows, params,
		fmt.Sprintf("l[i] = the lower Cholesky factor of A's block (i,i), %d×%d, for i < blockrows; fail[0] += 1 where it is not positive definite", b, b),
		kernel.Decl{Type: kernel.Index, Name: "d", Init: kernel.Int{V: -1}},
		kernel.For{Var: "bk", From: kernel.At("rowptr", kernel.Ref("i")), To: kernel.At("rowptr", kernel.Add(kernel.Ref("i"), kernel.Const(1))), Body: []kernel.Stmt{
			kernel.If{Cond: kernel.Eq(kernel.At("col", kernel.Ref("bk")), kernel.Ref("i")), Then: []kernel.Stmt{kernel.Set("d", kernel.Ref("bk"))}},
		}},
		kernel.DeclIndex("ok", kernel.Ge(kernel.Ref("d"), kernel.Const(0))),
		// A missing block reads block 0 (in bounds) and is reported.
		kernel.DeclIndex("a0", kernel.Mul(kernel.Apply(kernel.Max, kernel.Ref("d"), kernel.Const(0)), kernel.Const(bb))),
		kernel.DeclIndex("l0", kernel.Mul(kernel.Ref("i"), kernel.Const(bb))),
		kernel.For{Var: "br", From: kernel.Const(0), To: kernel.Const(b), Body: []kernel.Stmt{
			kernel.For{Var: "bc", From: kernel.Const(0), To: kernel.Add(kernel.Ref("br"), kernel.Const(1)), Body: []kernel.Stmt{
				kernel.DeclReal("s", kernel.At("val", kernel.Add(kernel.Ref("a0"), kernel.Add(kernel.Mul(kernel.Ref("br"), kernel.Const(b)), kernel.Ref("bc"))))),
				kernel.For{Var: "bm", From: kernel.Const(0), To: kernel.Ref("bc"), Body: []kernel.Stmt{
					kernel.Set("s", kernel.Sub(kernel.Ref("s"), kernel.Mul(kernel.At("l", li(kernel.Ref("br"), kernel.Ref("bm"))), kernel.At("l", li(kernel.Ref("bc"), kernel.Ref("bm")))))),
				}},
				kernel.If{Cond: kernel.Eq(kernel.Ref("bc"), kernel.Ref("br")), Then: []kernel.Stmt{
					// !(s > 0) catches NaN too; s = 1 keeps the rest finite.
					kernel.If{Cond: kernel.Not(kernel.Gt(kernel.Ref("s"), kernel.Float(0))), Then: []kernel.Stmt{
						kernel.Set("ok", kernel.Const(0)),
						kernel.Set("s", kernel.Float(1)),
					}},
					kernel.Put("l", kernel.Apply(kernel.Sqrt, kernel.Ref("s")), li(kernel.Ref("br"), kernel.Ref("br"))),
				}, Else: []kernel.Stmt{
					kernel.Put("l", kernel.Div(kernel.Ref("s"), kernel.At("l", li(kernel.Ref("bc"), kernel.Ref("bc")))), li(kernel.Ref("br"), kernel.Ref("bc"))),
				}},
			}},
			kernel.For{Var: "bu", From: kernel.Add(kernel.Ref("br"), kernel.Const(1)), To: kernel.Const(b), Body: []kernel.Stmt{
				kernel.Put("l", kernel.Float(0), li(kernel.Ref("br"), kernel.Ref("bu"))),
			}},
		}},
		kernel.If{Cond: kernel.Eq(kernel.Ref("ok"), kernel.Const(0)), Then: []kernel.Stmt{
			kernel.AtomicFetchAdd{Buf: "fail", Index: []kernel.Expr{kernel.Const(0)}, Value: kernel.Const(1)},
		}})
}

// BlockJacobiDot is block Jacobi's z = (L·Lᵀ)⁻¹ r on each block row i <
// blockrows (L the factor of BlockCholesky: a forward then a backward
// substitution, one thread per block row), fused with the partial sums
// of r·z over the block rows (PCG's rᵀz).
func BlockJacobiDot(dt kernel.DType, s Shape, b int) (*kernel.Kernel, error) {
	if err := checkBlock(b); err != nil {
		return nil, err
	}
	bb := b * b
	li := func(r, c kernel.Expr) kernel.Expr {
		return kernel.Add(kernel.Ref("l0"), kernel.Add(kernel.Mul(r, kernel.Const(b)), c))
	}
	zi := func(m kernel.Expr) kernel.Expr { return kernel.Add(kernel.Ref("z0"), m) }
	return reduction(fmt.Sprintf("bsr_jacobi_dot_b%d", b), dt, s, BlockRows, []kernel.Param{
		size(BlockRows, "block rows"),
		buf("l", kernel.Real, true, "Cholesky factors of the diagonal blocks (BlockCholesky)"),
		buf("r", kernel.Real, true, "residual"),
		buf("z", kernel.Real, false, "preconditioned residual"),
	}, fmt.Sprintf("z[i·%d:(i+1)·%d] = (L_i L_iᵀ)⁻¹ r[i·%d:(i+1)·%d], and Σ r·z over the block, over i < blockrows", b, b, b, b),
		func(i kernel.Expr) []kernel.Stmt {
			return []kernel.Stmt{
				kernel.DeclIndex("l0", kernel.Mul(i, kernel.Const(bb))),
				kernel.DeclIndex("z0", kernel.Mul(i, kernel.Const(b))),
				// L y = r, y into z.
				kernel.For{Var: "bf", From: kernel.Const(0), To: kernel.Const(b), Body: []kernel.Stmt{
					kernel.DeclReal("s", kernel.At("r", zi(kernel.Ref("bf")))),
					kernel.For{Var: "bk", From: kernel.Const(0), To: kernel.Ref("bf"), Body: []kernel.Stmt{
						kernel.Set("s", kernel.Sub(kernel.Ref("s"), kernel.Mul(kernel.At("l", li(kernel.Ref("bf"), kernel.Ref("bk"))), kernel.At("z", zi(kernel.Ref("bk")))))),
					}},
					kernel.Put("z", kernel.Div(kernel.Ref("s"), kernel.At("l", li(kernel.Ref("bf"), kernel.Ref("bf")))), zi(kernel.Ref("bf"))),
				}},
				// Lᵀ z = y, from the last row up.
				kernel.For{Var: "bg", From: kernel.Const(0), To: kernel.Const(b), Body: []kernel.Stmt{
					kernel.DeclIndex("bm", kernel.Sub(kernel.Const(b-1), kernel.Ref("bg"))),
					kernel.DeclReal("t", kernel.At("z", zi(kernel.Ref("bm")))),
					kernel.For{Var: "bk", From: kernel.Add(kernel.Ref("bm"), kernel.Const(1)), To: kernel.Const(b), Body: []kernel.Stmt{
						kernel.Set("t", kernel.Sub(kernel.Ref("t"), kernel.Mul(kernel.At("l", li(kernel.Ref("bk"), kernel.Ref("bm"))), kernel.At("z", zi(kernel.Ref("bk")))))),
					}},
					kernel.Put("z", kernel.Div(kernel.Ref("t"), kernel.At("l", li(kernel.Ref("bm"), kernel.Ref("bm")))), zi(kernel.Ref("bm"))),
				}},
				kernel.For{Var: "bd", From: kernel.Const(0), To: kernel.Const(b), Body: []kernel.Stmt{
					kernel.Set("acc", kernel.Add(kernel.Ref("acc"), kernel.Mul(kernel.At("r", zi(kernel.Ref("bd"))), kernel.At("z", zi(kernel.Ref("bd")))))),
				}},
			}
		})
}

// Copy is dst[i] = src[i] for i < nodes (PCG's r = f and p = z at the
// start).
func Copy(dt kernel.DType, s Shape) (*kernel.Kernel, error) {
	return elementwise("copy", dt, s, Nodes, []kernel.Param{
		size(Nodes, "vector length"),
		buf("src", kernel.Real, true, "source"),
		buf("dst", kernel.Real, false, "destination"),
	}, "dst[i] = src[i] for i < nodes",
		kernel.Put("dst", kernel.At("src", kernel.Ref("i")), kernel.Ref("i")))
}
