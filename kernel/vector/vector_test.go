package vector

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/emit"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/interp"
	"github.com/bespoke-hpc/bespoke/kernel/pass"
)

// shapes: a GPU block, a CPU loop, and odd ones (a span that divides no
// size used, a one-thread block of few elements).
var shapes = []Shape{{256, 4}, {1, 4096}, {32, 3}, {1, 7}, {2, 1}}

// run interprets k as written and as lowered for the host, on copies of
// the arguments, and returns the lowered run's (after checking that both
// agree to the bit: same order of additions).
func run(t *testing.T, k *kernel.Kernel, err error, sizes map[string]int64, args map[string]any) map[string]any {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	grid, err := k.Launch.Blocks(sizes)
	if err != nil {
		t.Fatal(err)
	}
	h, err := pass.HostLoops(k)
	if err != nil {
		t.Fatal(err)
	}
	var outs []map[string]any
	for _, kk := range []*kernel.Kernel{k, h} {
		a := map[string]any{}
		for name, x := range args {
			switch x := x.(type) {
			case []float64:
				a[name] = append([]float64(nil), x...)
			case []int64:
				a[name] = append([]int64(nil), x...)
			default:
				a[name] = x
			}
		}
		for name, n := range sizes {
			a[name] = n
		}
		if err := interp.Run(kk, grid, a); err != nil {
			t.Fatalf("%s: %v", kk.Name, err)
		}
		outs = append(outs, a)
	}
	for name, x := range outs[0] {
		if r, ok := x.([]float64); ok {
			l := outs[1][name].([]float64)
			for i := range r {
				if r[i] != l[i] && !(math.IsNaN(r[i]) && math.IsNaN(l[i])) {
					t.Fatalf("%s: %s[%d] = %g as written, %g lowered", k.Name, name, i, r[i], l[i])
				}
			}
		}
	}
	return outs[1]
}

func randoms(rng *rand.Rand, n int) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = rng.Float64() - 0.5
	}
	return x
}

func near(a, b, scale float64) bool { return math.Abs(a-b) <= 1e-13*scale }

// checkPartials checks that partial holds the sums of term over each
// block's span, and returns their total.
func checkPartials(t *testing.T, what string, s Shape, n int, partial []float64, term func(i int) float64) float64 {
	t.Helper()
	if len(partial) != s.Blocks(n) {
		t.Fatalf("%s: %d partials for %d elements, want %d", what, len(partial), n, s.Blocks(n))
	}
	total := 0.0
	for b := range partial {
		want, scale := 0.0, 0.0
		for i := b * s.Span(); i < min(n, (b+1)*s.Span()); i++ {
			want += term(i)
			scale += math.Abs(term(i))
		}
		if !near(partial[b], want, scale) {
			t.Fatalf("%s %+v: partial[%d] = %.17g, want %.17g", what, s, b, partial[b], want)
		}
		total += partial[b]
	}
	return total
}

func TestDotAndSum(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, s := range shapes {
		for _, n := range []int{1, 1000, 5000} {
			a, b := randoms(rng, n), randoms(rng, n)
			k, err := Dot(kernel.F64, s)
			partial := make([]float64, s.Blocks(n))
			out := run(t, k, err, map[string]int64{Nodes: int64(n)}, map[string]any{"a": a, "b": b, "partial": partial})
			total := checkPartials(t, "dot", s, n, out["partial"].([]float64), func(i int) float64 { return a[i] * b[i] })
			k, err = Sum(kernel.F64, s)
			sc := []float64{7, 8, 9}
			out = run(t, k, err, map[string]int64{Partials: int64(len(partial))},
				map[string]any{"partial": out["partial"], Slot: 1, "sc": sc})
			got := out["sc"].([]float64)
			if got[0] != 7 || got[2] != 9 || !near(got[1], total, float64(n)) {
				t.Fatalf("sum %+v n=%d: sc = %v, want [7 %g 9]", s, n, got, total)
			}
		}
	}
}

func TestGatherScatter(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, s := range shapes[:3] {
		const nodes, entries = 300, 1100
		index := make([]int64, entries)
		for j := range index {
			index[j] = int64(rng.IntN(nodes))
		}
		free := make([]int64, nodes)
		for g := range free {
			free[g] = int64(rng.IntN(4)/3 ^ 1) // a quarter fixed
		}
		// Transposed index, entries of a node in increasing order.
		offsets := make([]int64, nodes+1)
		for _, g := range index {
			offsets[g+1]++
		}
		for g := range nodes {
			offsets[g+1] += offsets[g]
		}
		list, next := make([]int64, entries), append([]int64(nil), offsets...)
		for j, g := range index {
			list[next[g]] = int64(j)
			next[g]++
		}
		l := randoms(rng, nodes)
		k, err := Gather(kernel.F64, s)
		out := run(t, k, err, map[string]int64{Entries: entries}, map[string]any{"l": l, "node": index, "e": make([]float64, entries)})
		e := out["e"].([]float64)
		for j := range e {
			if e[j] != l[index[j]] {
				t.Fatalf("gather %+v: e[%d] = %g, want %g", s, j, e[j], l[index[j]])
			}
		}
		want := make([]float64, nodes)
		for j, g := range index {
			if free[g] != 0 {
				want[g] += e[j]
			}
		}
		p := randoms(rng, nodes)
		k, err = ScatterDot(kernel.F64, s)
		out = run(t, k, err, map[string]int64{Nodes: nodes}, map[string]any{
			"offsets": offsets, "list": list, "mask": free, "e": e, "p": p,
			"q": make([]float64, nodes), "partial": make([]float64, s.Blocks(nodes))})
		q := out["q"].([]float64)
		for g := range q {
			if !near(q[g], want[g], 8) {
				t.Fatalf("scatter %+v: q[%d] = %g, want %g", s, g, q[g], want[g])
			}
		}
		checkPartials(t, "scatter_dot", s, nodes, out["partial"].([]float64), func(i int) float64 { return p[i] * q[i] })
		k, err = Zero(kernel.F64, s)
		out = run(t, k, err, map[string]int64{Nodes: nodes}, map[string]any{"l": randoms(rng, nodes)})
		k, err = ScatterAtomic(kernel.F64, s)
		out = run(t, k, err, map[string]int64{Entries: entries}, map[string]any{"e": e, "node": index, "mask": free, "l": out["l"]})
		for g, x := range out["l"].([]float64) {
			if !near(x, want[g], 8) {
				t.Fatalf("atomic scatter %+v: l[%d] = %g, want %g", s, g, x, want[g])
			}
		}
	}
}

func TestUpdateDirection(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, s := range shapes {
		const n = 777
		p, q, x, r := randoms(rng, n), randoms(rng, n), randoms(rng, n), randoms(rng, n)
		sc := []float64{0.3, 1.7, 0.9}
		alpha := sc[2] / sc[1]
		// UpdateZero also clears q (the next fused scatter-add's start);
		// Update leaves it.
		for _, u := range []struct {
			build func(kernel.DType, Shape) (*kernel.Kernel, error)
			zero  bool
		}{{Update, false}, {UpdateZero, true}} {
			k, err := u.build(kernel.F64, s)
			out := run(t, k, err, map[string]int64{Nodes: n}, map[string]any{
				"sc": sc, Num: 2, Den: 1, "p": p, "q": q, "x": x, "r": r, "partial": make([]float64, s.Blocks(n))})
			xo, ro, qo := out["x"].([]float64), out["r"].([]float64), out["q"].([]float64)
			for i := range n {
				if !near(xo[i], x[i]+alpha*p[i], 1) || !near(ro[i], r[i]-alpha*q[i], 1) {
					t.Fatalf("%s %+v at %d: x %g r %g, want %g %g", k.Name, s, i, xo[i], ro[i], x[i]+alpha*p[i], r[i]-alpha*q[i])
				}
				if want := map[bool]float64{false: q[i], true: 0}[u.zero]; qo[i] != want {
					t.Fatalf("%s %+v: q[%d] = %g after, want %g", k.Name, s, i, qo[i], want)
				}
			}
			checkPartials(t, k.Name, s, n, out["partial"].([]float64), func(i int) float64 { return ro[i] * ro[i] })
		}
		k, err := Direction(kernel.F64, s)
		out := run(t, k, err, map[string]int64{Nodes: n}, map[string]any{"sc": sc, Num: 0, Den: 2, "r": r, "p": p})
		beta := sc[0] / sc[2]
		for i, y := range out["p"].([]float64) {
			if !near(y, r[i]+beta*p[i], 1) {
				t.Fatalf("direction %+v at %d: %g, want %g", s, i, y, r[i]+beta*p[i])
			}
		}
	}
}

// fp32: the interpreter rounds every operation; a dot product of 5000
// terms stays within a few ulps per term.
func TestF32(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	s := Shape{256, 4}
	const n = 5000
	a, b := randoms(rng, n), randoms(rng, n)
	k, err := Dot(kernel.F32, s)
	out := run(t, k, err, map[string]int64{Nodes: n}, map[string]any{"a": a, "b": b, "partial": make([]float64, s.Blocks(n))})
	got, want, scale := 0.0, 0.0, 0.0
	for _, x := range out["partial"].([]float64) {
		got += x
	}
	for i := range a {
		x := float64(float32(a[i])) * float64(float32(b[i]))
		want += x
		scale += math.Abs(x)
	}
	if math.Abs(got-want) > 1e-6*scale {
		t.Errorf("f32 dot: %g, want %g (scale %g)", got, want, scale)
	}
}

// Every kernel renders in every dialect, and names differ by precision
// and shape.
func TestRender(t *testing.T) {
	builders := map[string]func(kernel.DType, Shape) (*kernel.Kernel, error){
		"gather": Gather, "direction": Direction, "zero": Zero, "atomic": ScatterAtomic,
		"dot": Dot, "scatter_dot": ScatterDot, "update": Update, "update_zero": UpdateZero, "sum": Sum,
	}
	for _, d := range emit.Dialects() {
		var ks []*kernel.Kernel
		for _, dt := range []kernel.DType{kernel.F64, kernel.F32} {
			for _, b := range builders {
				for _, s := range []Shape{{256, 4}, {1, 4096}} {
					k, err := b(dt, s)
					if err != nil {
						t.Fatal(err)
					}
					ks = append(ks, k)
				}
			}
		}
		seen := map[string]bool{}
		var distinct []*kernel.Kernel
		for _, k := range ks {
			if !seen[k.Name] {
				seen[k.Name] = true
				distinct = append(distinct, k)
			}
		}
		src, err := emit.Render(d, distinct...)
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		if len(src.Entries) != len(distinct) {
			t.Errorf("%s: %d entries for %d kernels", d, len(src.Entries), len(distinct))
		}
	}
}

func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		s   Shape
		msg string
	}{
		{Shape{0, 4}, "power of two"},
		{Shape{48, 4}, "power of two"},
		{Shape{2048, 1}, "power of two ≤ 1024"},
		{Shape{256, 0}, "1..65536"},
		{Shape{1, 1 << 17}, "1..65536"},
	} {
		for _, b := range []func(kernel.DType, Shape) (*kernel.Kernel, error){Gather, Dot, Sum} {
			if _, err := b(kernel.F64, tc.s); err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("%+v: %v, want an error with %q", tc.s, err, tc.msg)
			}
		}
	}
}
