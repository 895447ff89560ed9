package solve_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/device/cuda"
	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/device/opencl"
	"github.com/bespoke-hpc/bespoke/emit"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/vector"
	"github.com/bespoke-hpc/bespoke/pum"
	"github.com/bespoke-hpc/bespoke/solve"
)

// ringBSR is an SPD block matrix of n block rows of b×b blocks with
// PUM-like structure: the sum of random SPD "element" matrices MᵀM
// coupling block rows i and i+1 (mod n) and i and i+2, plus shift·I.
// Its diagonal blocks are SPD; block Jacobi leaves a few tens of
// iterations.
func ringBSR(rng *rand.Rand, n, b int, shift float64) *pum.BSR {
	nbr := func(i int) []int {
		set := map[int]bool{}
		for _, d := range []int{-2, -1, 0, 1, 2} {
			set[(i+d+n)%n] = true
		}
		var js []int
		for j := range n {
			if set[j] {
				js = append(js, j)
			}
		}
		return js
	}
	a := &pum.BSR{N: n, B: b, RowPtr: []int32{0}}
	for i := range n {
		for _, j := range nbr(i) {
			a.Col = append(a.Col, int32(j))
		}
		a.RowPtr = append(a.RowPtr, int32(len(a.Col)))
	}
	a.Val = make([]float64, len(a.Col)*b*b)
	for i := range n {
		for _, d := range []int{1, 2} {
			pair := []int{i, (i + d) % n}
			nf := 2 * b
			m := make([]float64, nf*nf)
			for k := range m {
				m[k] = rng.Float64() - 0.5
			}
			for ia, gi := range pair {
				for ib, gj := range pair {
					k := a.Block(gi, gj)
					for r := range b {
						for c := range b {
							s := 0.0
							for t := range nf {
								s += m[t*nf+ia*b+r] * m[t*nf+ib*b+c]
							}
							a.Val[k*b*b+r*b+c] += s
						}
					}
				}
			}
		}
	}
	for i := range n {
		k := a.Block(i, i)
		for r := range b {
			a.Val[k*b*b+r*b+r] += shift
		}
	}
	return a
}

// upload puts a's arrays and f on dev in precision dt.
func upload(t *testing.T, dev device.Device, a *pum.BSR, f []float64, dt kernel.DType) (solve.BSR, device.Buffer, func()) {
	t.Helper()
	var bufs []device.Buffer
	free := func() {
		for _, b := range bufs {
			b.Free()
		}
	}
	put := func(raw []byte) device.Buffer {
		b, err := dev.Alloc(int64(max(len(raw), 8)))
		if err != nil {
			free()
			t.Fatal(err)
		}
		bufs = append(bufs, b)
		if err := b.Upload(raw); err != nil {
			free()
			t.Fatal(err)
		}
		return b
	}
	ints := func(x []int32) []byte {
		w := make([]int64, len(x))
		for i, v := range x {
			w[i] = int64(v)
		}
		return kernel.EncodeInts(4, w)
	}
	m := solve.BSR{N: a.N, B: a.B, Blocks: int64(len(a.Col)), RowPtr: put(ints(a.RowPtr)), Col: put(ints(a.Col)), Val: put(dt.Encode(a.Val))}
	return m, put(dt.Encode(f)), free
}

func norm(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v * v
	}
	return math.Sqrt(s)
}

func relDiff(got, want []float64) float64 {
	d2, w2 := 0.0, 0.0
	for i, w := range want {
		d2 += (got[i] - w) * (got[i] - w)
		w2 += w * w
	}
	return math.Sqrt(d2 / w2)
}

// The BSR kernels on the C backend against plain Go float64, in f64 and
// f32: the outputs poisoned with NaN before, relative errors after.
func TestBSRKernelsHost(t *testing.T) {
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	rng := rand.New(rand.NewPCG(21, 22))
	for _, dt := range []kernel.DType{kernel.F64, kernel.F32} {
		tol := map[kernel.DType]float64{kernel.F64: 1e-13, kernel.F32: 1e-5}[dt]
		for _, b := range []int{3, 21} {
			for _, s := range []vector.Shape{{Threads: 1, PerThread: 4096}, {Threads: 64, PerThread: 2}} {
				name := fmt.Sprintf("%s b=%d %+v", dt, b, s)
				const n = 37
				a := ringBSR(rng, n, b, 0.1)
				rows := n * b
				p := make([]float64, rows)
				r := make([]float64, rows)
				for i := range p {
					p[i], r[i] = rng.Float64()-0.5, rng.Float64()-0.5
				}
				// Inputs as the device sees them (f32 rounds).
				round := func(x []float64) []float64 { return dt.Decode(dt.Encode(x)) }
				val, p, r := round(a.Val), round(p), round(r)

				spmv, err1 := vector.BSRMulDot(dt, s, b)
				chol, err2 := vector.BlockCholesky(dt, s, b)
				jac, err3 := vector.BlockJacobiDot(dt, s, b)
				if err := errorsJoin(err1, err2, err3); err != nil {
					t.Fatal(err)
				}
				src, err := emit.Render(dev.Dialect(), spmv, chol, jac)
				if err != nil {
					t.Fatal(err)
				}
				prog, err := dev.Build(src)
				if err != nil {
					t.Fatal(err)
				}
				m, _, free := upload(t, dev, a, nil, dt)
				bufs := map[string]device.Buffer{"rowptr": m.RowPtr, "col": m.Col, "val": m.Val}
				nan := make([]float64, max(rows, n*b*b))
				for i := range nan {
					nan[i] = math.NaN()
				}
				for name, x := range map[string][]float64{"p": p, "r": r, "q": nan[:rows], "z": nan[:rows], "l": nan[:n*b*b], "partial": nan[:max(s.Blocks(rows), s.Blocks(n))]} {
					buf, err := dev.Alloc(int64(len(x) * dt.Bytes()))
					if err != nil {
						t.Fatal(err)
					}
					defer buf.Free()
					if err := buf.Upload(dt.Encode(x)); err != nil {
						t.Fatal(err)
					}
					bufs[name] = buf
				}
				fail, err := dev.Alloc(4)
				if err != nil {
					t.Fatal(err)
				}
				defer fail.Free()
				if err := fail.Upload(kernel.EncodeInts(4, []int64{0})); err != nil {
					t.Fatal(err)
				}
				bufs["fail"] = fail
				run := func(k *kernel.Kernel, values map[string]int64) {
					t.Helper()
					dk, err := prog.Kernel(k.Name)
					if err != nil {
						t.Fatal(err)
					}
					bs := map[string]device.Buffer{}
					for _, prm := range k.Params {
						if prm.Kind == kernel.BufferParam {
							bs[prm.Name] = bufs[prm.Name]
						}
					}
					l, args, err := device.Bind(k, values, bs)
					if err != nil {
						t.Fatal(err)
					}
					if err := dk.Launch(l, args...); err != nil {
						t.Fatal(err)
					}
				}
				read := func(name string, cnt int) []float64 {
					raw := make([]byte, cnt*dt.Bytes())
					if err := bufs[name].Download(raw); err != nil {
						t.Fatal(err)
					}
					return dt.Decode(raw)
				}
				sumPartials := func(cnt int) float64 {
					tot := 0.0
					for _, x := range read("partial", cnt) {
						tot += x
					}
					return tot
				}

				// q = A·p and pᵀq.
				run(spmv, map[string]int64{vector.Rows: int64(rows)})
				q := read("q", rows)
				wantQ := make([]float64, rows)
				worst := 0.0
				for row := range rows {
					i, ra := row/b, row%b
					scale := 0.0
					for k := a.RowPtr[i]; k < a.RowPtr[i+1]; k++ {
						for c := range b {
							x := val[(int(k)*b+ra)*b+c] * p[int(a.Col[k])*b+c]
							wantQ[row] += x
							scale += math.Abs(x)
						}
					}
					worst = max(worst, math.Abs(q[row]-wantQ[row])/scale)
				}
				pq, wantPQ, scalePQ := sumPartials(s.Blocks(rows)), 0.0, 0.0
				for i := range rows {
					wantPQ += p[i] * wantQ[i]
					scalePQ += math.Abs(p[i] * wantQ[i])
				}
				if worst > tol || math.Abs(pq-wantPQ) > tol*scalePQ {
					t.Errorf("%s: A·p off by %.3g relative (per row), pᵀq = %g, want %g", name, worst, pq, wantPQ)
				}

				// The factors: L lower triangular, L·Lᵀ the diagonal block.
				run(chol, map[string]int64{vector.BlockRows: n})
				raw := make([]byte, 4)
				if err := fail.Download(raw); err != nil {
					t.Fatal(err)
				}
				if bad := kernel.DecodeInts(4, raw)[0]; bad != 0 {
					t.Errorf("%s: %d blocks reported not positive definite", name, bad)
				}
				l := read("l", n*b*b)
				worst = 0
				for i := range n {
					L, A := l[i*b*b:(i+1)*b*b], val[a.Block(i, i)*b*b:]
					for rr := range b {
						for c := range b {
							if c > rr && L[rr*b+c] != 0 {
								t.Fatalf("%s: block %d L[%d][%d] = %g above the diagonal", name, i, rr, c, L[rr*b+c])
							}
							llt, scale := 0.0, 0.0
							for k := range b {
								llt += L[rr*b+k] * L[c*b+k]
								scale += math.Abs(L[rr*b+k] * L[c*b+k])
							}
							worst = max(worst, math.Abs(llt-A[rr*b+c])/scale)
						}
					}
				}
				if worst > 10*tol {
					t.Errorf("%s: L·Lᵀ off the diagonal blocks by %.3g relative", name, worst)
				}

				// z = (L·Lᵀ)⁻¹ r against Go's substitutions with the
				// device's factors in float64, and rᵀz.
				run(jac, map[string]int64{vector.BlockRows: n})
				z := read("z", rows)
				wantZ := make([]float64, rows)
				for i := range n {
					L := l[i*b*b : (i+1)*b*b]
					y := wantZ[i*b : (i+1)*b]
					for m := range b {
						s := r[i*b+m]
						for k := range m {
							s -= L[m*b+k] * y[k]
						}
						y[m] = s / L[m*b+m]
					}
					for m := b - 1; m >= 0; m-- {
						s := y[m]
						for k := m + 1; k < b; k++ {
							s -= L[k*b+m] * y[k]
						}
						y[m] = s / L[m*b+m]
					}
				}
				rz, wantRZ, scaleRZ := sumPartials(s.Blocks(n)), 0.0, 0.0
				for i := range rows {
					wantRZ += r[i] * wantZ[i]
					scaleRZ += math.Abs(r[i] * wantZ[i])
				}
				// The triangular solves amplify rounding by the factors'
				// condition (shift 0.1 keeps it modest).
				if e := relDiff(z, wantZ); e > 10*tol || math.Abs(rz-wantRZ) > 10*tol*scaleRZ {
					t.Errorf("%s: z off by %.3g relative, rᵀz = %g, want %g", name, e, rz, wantRZ)
				}
				free()
				prog.Close()
			}
		}
	}
}

func errorsJoin(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// checkPCG solves a ring matrix on dev against pum.Solve (the same
// recurrence in float64 Go): the iterations within two, the solution to
// 1e-8 relative in f64; f32 to a looser tolerance.
func checkPCG(t *testing.T, dev device.Device, shapes []vector.Shape) {
	rng := rand.New(rand.NewPCG(31, 32))
	for _, b := range []int{1, 6, 21} {
		a := ringBSR(rng, 60, b, 1e-3)
		f := make([]float64, a.N*b)
		for i := range f {
			f[i] = rng.Float64() - 0.5
		}
		ref, rres, err := pum.Solve(a, f, 1e-12, 5000)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range shapes {
			for _, dt := range []kernel.DType{kernel.F64, kernel.F32} {
				name := fmt.Sprintf("b=%d %+v %s", b, s, dt)
				tol := map[kernel.DType]float64{kernel.F64: 1e-12, kernel.F32: 1e-4}[dt]
				m, fb, free := upload(t, dev, a, f, dt)
				got, err := solve.PCG(dev, m, fb, solve.PCGOptions{DType: dt, Tol: tol, MaxIter: 5000, Shape: s})
				free()
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if !got.Converged || got.Residual > tol {
					t.Errorf("%s: not converged: residual %.3g after %d iterations", name, got.Residual, got.Iterations)
				}
				// The true residual of the device's solution, in float64.
				ax := make([]float64, len(f))
				a.MulVec(ax, got.X)
				for i := range ax {
					ax[i] -= f[i]
				}
				trueRes := norm(ax) / norm(f)
				diff := relDiff(got.X, ref)
				if dt == kernel.F64 {
					if abs(got.Iterations-rres.Iterations) > 2 || diff > 1e-8 || trueRes > 1e-11 {
						t.Errorf("%s: %d iterations (pum.Solve %d), solution off by %.3g relative, true residual %.3g", name, got.Iterations, rres.Iterations, diff, trueRes)
					}
				} else if diff > 1e-2 || trueRes > 1e-3 {
					t.Errorf("%s: solution off by %.3g relative, true residual %.3g", name, diff, trueRes)
				}
				t.Logf("%s: %d iterations (pum.Solve %d to 1e-12), residual %.2g (true %.2g), off by %.2g; set-up %v, iterations %v",
					name, got.Iterations, rres.Iterations, got.Residual, trueRes, diff, got.Setup, got.Time)
			}
		}
	}
}

func TestPCGHost(t *testing.T) {
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	checkPCG(t, dev, []vector.Shape{{}, {Threads: 64, PerThread: 3}})
}

func TestPCGOpenCL(t *testing.T) {
	if os.Getenv("POCL_WORK_GROUP_METHOD") == "" {
		os.Setenv("POCL_WORK_GROUP_METHOD", "auto")
	}
	dev, err := opencl.Open(os.Getenv("BESPOKE_OPENCL_DEVICE"))
	if err != nil {
		testenv.Unavailable(t, "opencl", err)
	}
	defer dev.Close()
	checkPCG(t, dev, []vector.Shape{{Threads: 256, PerThread: 4}})
}

func TestPCGCUDA(t *testing.T) {
	dev, err := cuda.Open(0)
	if err != nil {
		testenv.Unavailable(t, "cuda", err)
	}
	defer dev.Close()
	checkPCG(t, dev, []vector.Shape{{}, {Threads: 128, PerThread: 1}})
}

func TestPCGErrors(t *testing.T) {
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	rng := rand.New(rand.NewPCG(41, 42))
	a := ringBSR(rng, 10, 3, 0.1)
	f := make([]float64, 30)
	f[0] = 1
	o := solve.PCGOptions{DType: kernel.F64, Tol: 1e-10, MaxIter: 100}
	try := func(name string, a *pum.BSR, mod func(*solve.BSR, *solve.PCGOptions), msg string) {
		t.Helper()
		m, fb, free := upload(t, dev, a, f, kernel.F64)
		defer free()
		oo := o
		mod(&m, &oo)
		if _, err := solve.PCG(dev, m, fb, oo); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v, want an error with %q", name, err, msg)
		}
	}
	try("tol", a, func(_ *solve.BSR, o *solve.PCGOptions) { o.Tol = 0 }, "0 < tol < 1")
	try("block", a, func(m *solve.BSR, _ *solve.PCGOptions) { m.B, m.N = 33, 1 }, "MaxBlock")
	try("small values", a, func(m *solve.BSR, _ *solve.PCGOptions) { m.Val = m.RowPtr }, "values buffer holds 44 bytes, want 3600")
	try("no rows", a, func(m *solve.BSR, _ *solve.PCGOptions) { m.N = 0 }, "want a diagonal block")
	// An indefinite diagonal block: block Jacobi refuses it.
	bad := *a
	bad.Val = append([]float64(nil), a.Val...)
	k := bad.Block(4, 4)
	bad.Val[k*9] = -1
	try("indefinite", &bad, func(*solve.BSR, *solve.PCGOptions) {}, "1 of the 10 diagonal 3×3 blocks are missing or not positive definite")
	// Too few iterations: a result, not converged.
	m, fb, free := upload(t, dev, a, f, kernel.F64)
	defer free()
	res, err := solve.PCG(dev, m, fb, solve.PCGOptions{DType: kernel.F64, Tol: 1e-12, MaxIter: 2})
	if err != nil || res.Converged || res.Iterations != 2 || !(res.Residual > 1e-12) {
		t.Errorf("two iterations: %+v, %v", res, err)
	}
}
