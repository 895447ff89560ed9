package vector

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/emit"
	"github.com/bespoke-hpc/bespoke/kernel"
)

// randomBSR is an n×n block matrix of b×b blocks: a diagonal block in
// every row (SPD: a random MᵀM plus b·I) and about three random others.
func randomBSR(rng *rand.Rand, n, b int) (rowptr, col []int64, val []float64) {
	rowptr = []int64{0}
	for i := range n {
		for j := range n {
			if j != i && rng.IntN(n) >= 3 {
				continue
			}
			col = append(col, int64(j))
			blk := randoms(rng, b*b)
			if j == i {
				m := blk
				blk = make([]float64, b*b)
				for r := range b {
					for c := range b {
						for k := range b {
							blk[r*b+c] += m[k*b+r] * m[k*b+c]
						}
					}
					blk[r*b+r] += float64(b)
				}
			}
			val = append(val, blk...)
		}
		rowptr = append(rowptr, int64(len(col)))
	}
	return rowptr, col, val
}

// poisoned is n NaNs: an output the kernel leaves unwritten shows.
func poisoned(n int) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = math.NaN()
	}
	return x
}

// The BSR kernels against plain Go, in the interpreter (as written and
// lowered for the host), in both precisions.
func TestBSRKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, dt := range []kernel.DType{kernel.F64, kernel.F32} {
		tol := map[kernel.DType]float64{kernel.F64: 1e-12, kernel.F32: 1e-4}[dt]
		for _, s := range shapes[:3] {
			for _, b := range []int{1, 3, 6} {
				const n = 9
				rowptr, col, val := randomBSR(rng, n, b)
				rows := n * b
				p := randoms(rng, rows)
				k, err := BSRMulDot(dt, s, b)
				out := run(t, k, err, map[string]int64{Rows: int64(rows)}, map[string]any{
					"rowptr": rowptr, "col": col, "val": val, "p": p, "q": poisoned(rows), "partial": poisoned(s.Blocks(rows))})
				q := out["q"].([]float64)
				for r := range rows {
					want, scale := 0.0, 0.0
					i, a := r/b, r%b
					for k := rowptr[i]; k < rowptr[i+1]; k++ {
						for c := range b {
							x := val[(int(k)*b+a)*b+c] * p[int(col[k])*b+c]
							want += x
							scale += math.Abs(x)
						}
					}
					if math.Abs(q[r]-want) > tol*scale {
						t.Fatalf("%s %+v b=%d: q[%d] = %g, want %g", dt, s, b, r, q[r], want)
					}
				}
				pq, want, scale := 0.0, 0.0, 0.0
				for _, x := range out["partial"].([]float64) {
					pq += x
				}
				for r := range rows {
					want += p[r] * q[r]
					scale += math.Abs(p[r] * q[r])
				}
				if math.Abs(pq-want) > tol*scale {
					t.Fatalf("%s %+v b=%d: Σ partials = %g, want pᵀq = %g", dt, s, b, pq, want)
				}

				k, err = BlockCholesky(dt, s, b)
				out = run(t, k, err, map[string]int64{BlockRows: n}, map[string]any{
					"rowptr": rowptr, "col": col, "val": val, "l": poisoned(n * b * b), "fail": []int64{0}})
				if f := out["fail"].([]int64)[0]; f != 0 {
					t.Fatalf("%s %+v b=%d: fail = %d on SPD blocks", dt, s, b, f)
				}
				l := out["l"].([]float64)
				for i := range n {
					d := -1
					for k := rowptr[i]; k < rowptr[i+1]; k++ {
						if col[k] == int64(i) {
							d = int(k)
						}
					}
					L, A := l[i*b*b:(i+1)*b*b], val[d*b*b:(d+1)*b*b]
					for r := range b {
						for c := range b {
							if c > r && L[r*b+c] != 0 {
								t.Fatalf("%s %+v b=%d: block %d L[%d][%d] = %g above the diagonal", dt, s, b, i, r, c, L[r*b+c])
							}
							llt := 0.0
							for k := range b {
								llt += L[r*b+k] * L[c*b+k]
							}
							if math.Abs(llt-A[r*b+c]) > tol*float64(b)*A[r*b+r] {
								t.Fatalf("%s %+v b=%d: block %d (L·Lᵀ)[%d][%d] = %g, want %g", dt, s, b, i, r, c, llt, A[r*b+c])
							}
						}
					}
				}

				r := randoms(rng, rows)
				k, err = BlockJacobiDot(dt, s, b)
				out = run(t, k, err, map[string]int64{BlockRows: n}, map[string]any{
					"l": l, "r": r, "z": poisoned(rows), "partial": poisoned(s.Blocks(n))})
				z := out["z"].([]float64)
				rz, wantRZ, scaleRZ := 0.0, 0.0, 0.0
				for i := range n {
					// L·Lᵀ·z must give back r.
					L := l[i*b*b : (i+1)*b*b]
					y := make([]float64, b)
					for m := range b {
						for k := m; k < b; k++ {
							y[m] += L[k*b+m] * z[i*b+k]
						}
					}
					for m := range b {
						got, scale := 0.0, 0.0
						for k := 0; k <= m; k++ {
							got += L[m*b+k] * y[k]
							scale += math.Abs(L[m*b+k] * y[k])
						}
						if math.Abs(got-r[i*b+m]) > 10*tol*scale {
							t.Fatalf("%s %+v b=%d: block %d (L·Lᵀ·z)[%d] = %g, want r = %g", dt, s, b, i, m, got, r[i*b+m])
						}
						wantRZ += r[i*b+m] * z[i*b+m]
						scaleRZ += math.Abs(r[i*b+m] * z[i*b+m])
					}
				}
				for _, x := range out["partial"].([]float64) {
					rz += x
				}
				if math.Abs(rz-wantRZ) > tol*scaleRZ {
					t.Fatalf("%s %+v b=%d: Σ partials = %g, want rᵀz = %g", dt, s, b, rz, wantRZ)
				}
			}
		}
	}
}

// A block that is not positive definite, and a block row without its
// diagonal block, each count once in fail.
func TestBlockCholeskyFails(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	const n, b = 5, 3
	rowptr, col, val := randomBSR(rng, n, b)
	// Block row 1's diagonal block negated: indefinite.
	for k := rowptr[1]; k < rowptr[2]; k++ {
		if col[k] == 1 {
			for e := range b * b {
				val[int(k)*b*b+e] = -val[int(k)*b*b+e]
			}
		}
	}
	// Block row 3's diagonal block moved off the diagonal.
	for k := rowptr[3]; k < rowptr[4]; k++ {
		if col[k] == 3 {
			col[k] = -1 // not a real column: the SpMV never runs here
		}
	}
	s := Shape{32, 3}
	k, err := BlockCholesky(kernel.F64, s, b)
	out := run(t, k, err, map[string]int64{BlockRows: n}, map[string]any{
		"rowptr": rowptr, "col": col, "val": val, "l": poisoned(n * b * b), "fail": []int64{0}})
	if f := out["fail"].([]int64)[0]; f != 2 {
		t.Errorf("fail = %d, want 2 (one indefinite block, one missing)", f)
	}
}

func TestBSRBlockBound(t *testing.T) {
	for _, b := range []int{0, MaxBlock + 1} {
		for _, build := range []func(kernel.DType, Shape, int) (*kernel.Kernel, error){BSRMulDot, BlockCholesky, BlockJacobiDot} {
			if _, err := build(kernel.F64, Shape{256, 4}, b); err == nil || !strings.Contains(err.Error(), "MaxBlock") {
				t.Errorf("b = %d: %v, want an error naming MaxBlock", b, err)
			}
		}
	}
	for _, b := range []int{1, 21, MaxBlock} {
		if _, err := BlockCholesky(kernel.F32, Shape{1, 4096}, b); err != nil {
			t.Errorf("b = %d: %v", b, err)
		}
	}
}

// The BSR kernels render in every dialect, with names distinct by
// precision, shape and block size.
func TestBSRRender(t *testing.T) {
	for _, d := range emit.Dialects() {
		var ks []*kernel.Kernel
		seen := map[string]bool{}
		for _, dt := range []kernel.DType{kernel.F64, kernel.F32} {
			for _, s := range []Shape{{256, 4}, {1, 4096}} {
				for _, b := range []int{6, 21} {
					for _, build := range []func(kernel.DType, Shape, int) (*kernel.Kernel, error){BSRMulDot, BlockCholesky, BlockJacobiDot} {
						k, err := build(dt, s, b)
						if err != nil {
							t.Fatal(err)
						}
						if !seen[k.Name] {
							seen[k.Name] = true
							ks = append(ks, k)
						}
					}
				}
				k, err := Copy(dt, s)
				if err != nil {
					t.Fatal(err)
				}
				if !seen[k.Name] {
					seen[k.Name] = true
					ks = append(ks, k)
				}
			}
		}
		// 2 precisions × (2 shapes × 2 sizes × SpMV and apply, 2 sizes ×
		// Cholesky (elementwise: one CPU and one GPU block of 256), copy).
		if len(ks) != 2*(2*2*2+2+1) {
			t.Errorf("%s: %d distinct kernels", d, len(ks))
		}
		src, err := emit.Render(d, ks...)
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		if len(src.Entries) != len(ks) {
			t.Errorf("%s: %d entries for %d kernels", d, len(src.Entries), len(ks))
		}
	}
}
