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

func sub(l, r kernel.Expr) kernel.Expr { return bin("-", l, r) }

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
				kernel.Decl{Type: kernel.Index, Name: "ib", Init: bin("/", i, lit(b))},
				kernel.Decl{Type: kernel.Index, Name: "ia", Init: sub(i, mul(v("ib"), lit(b)))},
				kernel.Decl{Type: kernel.Real, Name: "s", Init: kernel.Lit{V: 0}},
				kernel.For{Var: "bk", From: at("rowptr", v("ib")), To: at("rowptr", add(v("ib"), lit(1))), Body: []kernel.Stmt{
					kernel.Decl{Type: kernel.Index, Name: "v0", Init: mul(add(mul(v("bk"), lit(b)), v("ia")), lit(b))},
					kernel.Decl{Type: kernel.Index, Name: "x0", Init: mul(at("col", v("bk")), lit(b))},
					kernel.For{Var: "bc", From: lit(0), To: lit(b), Body: []kernel.Stmt{
						kernel.Assign{Name: "s", Value: add(v("s"), mul(at("val", add(v("v0"), v("bc"))), at("p", add(v("x0"), v("bc")))))},
					}},
				}},
				kernel.Put("q", v("s"), i),
				kernel.Assign{Name: "acc", Value: add(v("acc"), mul(at("p", i), v("s")))},
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
	li := func(r, c kernel.Expr) kernel.Expr { return add(v("l0"), add(mul(r, lit(b)), c)) }
	return elementwise(fmt.Sprintf("bsr_cholesky_b%d", b), dt, s, BlockRows, params,
		fmt.Sprintf("l[i] = the lower Cholesky factor of A's block (i,i), %d×%d, for i < blockrows; fail[0] += 1 where it is not positive definite", b, b),
		kernel.Decl{Type: kernel.Index, Name: "d", Init: kernel.Int{V: -1}},
		kernel.For{Var: "bk", From: at("rowptr", v("i")), To: at("rowptr", add(v("i"), lit(1))), Body: []kernel.Stmt{
			kernel.If{Cond: bin("==", at("col", v("bk")), v("i")), Then: []kernel.Stmt{kernel.Assign{Name: "d", Value: v("bk")}}},
		}},
		kernel.Decl{Type: kernel.Index, Name: "ok", Init: bin(">=", v("d"), lit(0))},
		// A missing block reads block 0 (in bounds) and is reported.
		kernel.Decl{Type: kernel.Index, Name: "a0", Init: mul(kernel.Call{Fn: kernel.Max, Args: []kernel.Expr{v("d"), lit(0)}}, lit(bb))},
		kernel.Decl{Type: kernel.Index, Name: "l0", Init: mul(v("i"), lit(bb))},
		kernel.For{Var: "br", From: lit(0), To: lit(b), Body: []kernel.Stmt{
			kernel.For{Var: "bc", From: lit(0), To: add(v("br"), lit(1)), Body: []kernel.Stmt{
				kernel.Decl{Type: kernel.Real, Name: "s", Init: at("val", add(v("a0"), add(mul(v("br"), lit(b)), v("bc"))))},
				kernel.For{Var: "bm", From: lit(0), To: v("bc"), Body: []kernel.Stmt{
					kernel.Assign{Name: "s", Value: sub(v("s"), mul(at("l", li(v("br"), v("bm"))), at("l", li(v("bc"), v("bm")))))},
				}},
				kernel.If{Cond: bin("==", v("bc"), v("br")), Then: []kernel.Stmt{
					// !(s > 0) catches NaN too; s = 1 keeps the rest finite.
					kernel.If{Cond: kernel.Unary{Op: "!", X: bin(">", v("s"), kernel.Lit{V: 0})}, Then: []kernel.Stmt{
						kernel.Assign{Name: "ok", Value: lit(0)},
						kernel.Assign{Name: "s", Value: kernel.Lit{V: 1}},
					}},
					kernel.Put("l", kernel.Call{Fn: kernel.Sqrt, Args: []kernel.Expr{v("s")}}, li(v("br"), v("br"))),
				}, Else: []kernel.Stmt{
					kernel.Put("l", bin("/", v("s"), at("l", li(v("bc"), v("bc")))), li(v("br"), v("bc"))),
				}},
			}},
			kernel.For{Var: "bu", From: add(v("br"), lit(1)), To: lit(b), Body: []kernel.Stmt{
				kernel.Put("l", kernel.Lit{V: 0}, li(v("br"), v("bu"))),
			}},
		}},
		kernel.If{Cond: bin("==", v("ok"), lit(0)), Then: []kernel.Stmt{
			kernel.AtomicFetchAdd{Buf: "fail", Index: []kernel.Expr{lit(0)}, Value: lit(1)},
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
	li := func(r, c kernel.Expr) kernel.Expr { return add(v("l0"), add(mul(r, lit(b)), c)) }
	zi := func(m kernel.Expr) kernel.Expr { return add(v("z0"), m) }
	return reduction(fmt.Sprintf("bsr_jacobi_dot_b%d", b), dt, s, BlockRows, []kernel.Param{
		size(BlockRows, "block rows"),
		buf("l", kernel.Real, true, "Cholesky factors of the diagonal blocks (BlockCholesky)"),
		buf("r", kernel.Real, true, "residual"),
		buf("z", kernel.Real, false, "preconditioned residual"),
	}, fmt.Sprintf("z[i·%d:(i+1)·%d] = (L_i L_iᵀ)⁻¹ r[i·%d:(i+1)·%d], and Σ r·z over the block, over i < blockrows", b, b, b, b),
		func(i kernel.Expr) []kernel.Stmt {
			return []kernel.Stmt{
				kernel.Decl{Type: kernel.Index, Name: "l0", Init: mul(i, lit(bb))},
				kernel.Decl{Type: kernel.Index, Name: "z0", Init: mul(i, lit(b))},
				// L y = r, y into z.
				kernel.For{Var: "bf", From: lit(0), To: lit(b), Body: []kernel.Stmt{
					kernel.Decl{Type: kernel.Real, Name: "s", Init: at("r", zi(v("bf")))},
					kernel.For{Var: "bk", From: lit(0), To: v("bf"), Body: []kernel.Stmt{
						kernel.Assign{Name: "s", Value: sub(v("s"), mul(at("l", li(v("bf"), v("bk"))), at("z", zi(v("bk")))))},
					}},
					kernel.Put("z", bin("/", v("s"), at("l", li(v("bf"), v("bf")))), zi(v("bf"))),
				}},
				// Lᵀ z = y, from the last row up.
				kernel.For{Var: "bg", From: lit(0), To: lit(b), Body: []kernel.Stmt{
					kernel.Decl{Type: kernel.Index, Name: "bm", Init: sub(lit(b-1), v("bg"))},
					kernel.Decl{Type: kernel.Real, Name: "t", Init: at("z", zi(v("bm")))},
					kernel.For{Var: "bk", From: add(v("bm"), lit(1)), To: lit(b), Body: []kernel.Stmt{
						kernel.Assign{Name: "t", Value: sub(v("t"), mul(at("l", li(v("bk"), v("bm"))), at("z", zi(v("bk")))))},
					}},
					kernel.Put("z", bin("/", v("t"), at("l", li(v("bm"), v("bm")))), zi(v("bm"))),
				}},
				kernel.For{Var: "bd", From: lit(0), To: lit(b), Body: []kernel.Stmt{
					kernel.Assign{Name: "acc", Value: add(v("acc"), mul(at("r", zi(v("bd"))), at("z", zi(v("bd")))))},
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
		kernel.Put("dst", at("src", v("i")), v("i")))
}
