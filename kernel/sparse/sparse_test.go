package sparse

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/operator"
	"github.com/bespoke-hpc/bespoke/operator/load"
)

func mustOp(t *testing.T, m, k int, data []float64) *operator.Operator {
	t.Helper()
	op, err := operator.New("t", m, k, data)
	if err != nil {
		t.Fatal(err)
	}
	return op
}

func TestParseVariant(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		bad      bool
	}{
		{in: "cstream", want: "cstream/x128"},
		{in: "bstream/x64-w2", want: "bstream/x64-w2"},
		{in: "bstream-msplit", want: "bstream-msplit/x64-y4-c16"},
		{in: "cstream-ksplit/x32-y4-c8", want: "cstream-ksplit/x32-y4-c8"},
		{in: "cstream/x128-w2-b4", want: "cstream/x128-w2-b4"},
		{in: "cstream-msplit", want: "cstream-msplit/x64-y2"},
		{in: "cstream-msplit/x32-y4", want: "cstream-msplit/x32-y4"},
		{in: "cstream-msplit/x32-y4-c8", bad: true},
		{in: "cstream-msplit/x32-y1", bad: true},
		// Counts whose products wrap to 0 (they passed the checks and
		// panicked in make).
		{in: "cstream-msplit/x16-y1152921504606846976", bad: true},
		{in: "bstream-msplit/x16-y1152921504606846976-c1", bad: true},
		{in: "bstream-msplit/x16-y4-c1152921504606846976", bad: true},
		{in: "blocks/x16-y1152921504606846976", bad: true},
		{in: "blocks/x1152921504606846976-y16", bad: true},
		{in: "dense/x8-r4-w4611686018427387904", bad: true},
		{in: "dmma/m8n8k4-r4-w4611686018427387904-x1-c8-t16", bad: true},
		{in: "cstream-msplit/x32-y4-w2", want: "cstream-msplit/x32-y4-w2"},
		{in: "cstream-msplit/x64-y8-g-w2", want: "cstream-msplit/x64-y8-g-w2"},
		{in: "cstream-msplit/x32-y8-w2-g", bad: true},
		{in: "cstream/x128-g", bad: true},
		{in: "bstream-msplit/x64-y4-c16-g", bad: true},
		{in: "cstream-ksplit/x32-y4", bad: true},
		{in: "cstream/x128-b64", bad: true},
		{in: "cstream/x128-y2-c4", bad: true},
		{in: "bstream-msplit/x64", bad: true},
		{in: "bstream-msplit/x32-y4", want: "bstream-msplit/x32-y4"},
		{in: "bstream-msplit/x32-y4-c0", bad: true},
		{in: "bstream-msplit/x32-y4-w2", bad: true},
		{in: "cstream-ksplit/x32-y4-c0", bad: true},
		{in: "bstream/x2000", bad: true},
		{in: "bstream/x128-w3", bad: true},
		{in: "gemm", bad: true},
		{in: "", bad: true},
		{in: "cstream/", bad: true},
		{in: "cstream/x0128", want: "cstream/x128"},
		// A split on a one-thread-a-column family, even of 0 y threads.
		{in: "cstream/x64-y0", bad: true},
		{in: "bstream/x64-y2", bad: true},
		{in: "cstream-ksplit/x64-c16", bad: true}, // -c without -y
		{in: "cstream-ksplit/x64-y2-c16-w1", want: "cstream-ksplit/x64-y2-c16"},
		{in: "cstream-ksplit/x64-y2-c16-w2", bad: true},
		{in: "dense/x8-r8-w4-c8-pf", bad: true},
		{in: "dense/x8-r8-w4-pf", want: "dense/x8-r8-w4-pf"},
		{in: "blocks/x16-y16-a1", bad: true},
		{in: "blocks/x16-y16-t2-a2-l-b2", want: "blocks/x16-y16-t2-a2-l-b2"},
		{in: "dmma/m16n8k4-r2-w4-x2-c28-t16-a3-p3", bad: true},
		{in: "tmma/m16n8k8-r2-w4-x2-c32-t16-p3-s", want: "tmma/m16n8k8-r2-w4-x2-c32-t16-p3-s"},
		{in: "dmma/m16n8-r2-w4-x2-c28", bad: true},
		{in: "wgmma/x2-c8-t16-a4-y0", bad: true},
		{in: "wgmma/x2-c8-t16-a4-y2-o-w-b1", want: "wgmma/x2-c8-t16-a4-y2-o-w-b1"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			v, err := ParseVariant(tc.in)
			if tc.bad {
				if err == nil {
					t.Fatalf("ParseVariant(%q) = %v, want an error", tc.in, v)
				}
				return
			}
			if err != nil || v.Name() != tc.want {
				t.Fatalf("ParseVariant(%q) = %v, %v; want %s", tc.in, v.Name(), err, tc.want)
			}
		})
	}
}

func TestContiguousRows(t *testing.T) {
	nz := func(counts ...int) [][]int {
		rows := make([][]int, len(counts))
		for i, c := range counts {
			rows[i] = make([]int, c)
		}
		return rows
	}
	for _, tc := range []struct {
		name string
		rows [][]int
		ways int
		want [][]int
	}{
		{"even", nz(1, 1, 1, 1), 2, [][]int{{0, 1}, {2, 3}}},
		{"heavy first", nz(9, 1, 1, 1), 2, [][]int{{0}, {1, 2, 3}}},
		{"heavy last", nz(1, 1, 1, 9), 2, [][]int{{0, 1, 2}, {3}}},
		{"zero rows count", nz(0, 0, 0, 0, 0, 0), 3, [][]int{{0, 1}, {2, 3}, {4, 5}}},
		{"one row each", nz(5, 5, 5), 3, [][]int{{0}, {1}, {2}}},
		{"more ways than rows", nz(2, 2), 4, [][]int{{0}, {1}, nil, nil}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := contiguousRows(tc.rows, tc.ways)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("contiguousRows = %v, want %v", got, tc.want)
			}
		})
	}
}

// supportRows puts rows that read the same rows of B in one group and cuts
// between supports while the balance allows.
func TestSupportRows(t *testing.T) {
	for _, tc := range []struct {
		name string
		rows [][]int
		ways int
		want [][]int
	}{
		{"interleaved lines", [][]int{{0, 1}, {2, 3}, {0, 1}, {2, 3}}, 2, [][]int{{0, 2}, {1, 3}}},
		{"three lines, two ways", [][]int{{4}, {0}, {2}, {4}, {0}, {2}}, 2, [][]int{{1, 4, 2, 5}, {0, 3}}},
		{"one support cut for balance", [][]int{{0}, {0}, {0}, {0}}, 2, [][]int{{0, 1, 2}, {3}}},
		{"zero rows first", [][]int{{0}, nil, {0}, nil}, 2, [][]int{{1, 3, 0}, {2}}},
		{"more ways than rows", [][]int{{0}, {1}}, 3, [][]int{{0}, {1}, nil}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := supportRows(tc.rows, tc.ways)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("supportRows = %v, want %v", got, tc.want)
			}
		})
	}
}

// Index arithmetic must widen to 64 bits exactly when an offset can reach
// 2³¹, and a run-time leading dimension is always 64-bit.
func TestIndex64(t *testing.T) {
	op := mustOp(t, 3, 4, []float64{1, 0, 0, 2, 0, 0, 0, 0, 3, 0, 4, 0})
	for _, tc := range []struct {
		name        string
		n, ldb, ldc int
		want        bool
	}{
		{"small", 1000, 1000, 1000, false},
		{"B reaches 2^31", 1 << 20, 1 << 30, 1 << 20, true},  // (k-1)·ldb = 3·2³⁰ > 2³¹
		{"C reaches 2^31", 1 << 20, 1 << 20, 1 << 30, true},  // (m-1)·ldc = 2³¹
		{"just below", 1 << 20, 700_000_000, 1 << 20, false}, // 3·7e8 + 2²⁰ < 2³¹
		{"run time", 0, 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pb := Problem{Op: op, DType: kernel.F64, Alpha: 1, N: tc.n, LDB: tc.ldb, LDC: tc.ldc}
			k, err := Build(pb, Defaults(CStream))
			if err != nil {
				t.Fatal(err)
			}
			if k.Index64 != tc.want {
				t.Fatalf("Index64 = %v, want %v", k.Index64, tc.want)
			}
		})
	}
}

// The generated code must load only used rows of B, never read C when
// β = 0, and write all-zero rows of A for every β.
func TestStructure(t *testing.T) {
	// Row 1 and column 2 of A are zero.
	op := mustOp(t, 3, 3, []float64{1, 2, 0, 0, 0, 0, 4, 5, 0})
	for _, f := range Families {
		for _, beta := range []float64{0, 1, 0.5} {
			pb := Problem{Op: op, DType: kernel.F64, Alpha: 2, Beta: beta, N: 100, LDB: 100, LDC: 100}
			k, err := Build(pb, Defaults(f))
			if err != nil {
				t.Fatal(err)
			}
			loads, stores := map[string]int{}, map[string]int{}
			var walk func([]kernel.Stmt)
			var expr func(kernel.Expr)
			expr = func(e kernel.Expr) {
				switch e := e.(type) {
				case kernel.Load:
					loads[e.Buf+":"+indexKey(e.Index[0])]++
				case kernel.Bin:
					expr(e.L)
					expr(e.R)
				}
			}
			walk = func(ss []kernel.Stmt) {
				for _, s := range ss {
					switch s := s.(type) {
					case kernel.Decl:
						if s.Init != nil {
							expr(s.Init)
						}
					case kernel.Assign:
						expr(s.Value)
					case kernel.Store:
						stores[s.Buf+":"+indexKey(s.Index[0])]++
						expr(s.Value)
					case kernel.If:
						walk(s.Then)
						walk(s.Else)
					}
				}
			}
			walk(k.Body)
			name := string(f) + "/beta=" + strconv.FormatFloat(beta, 'g', -1, 64)
			for key := range loads {
				if key == "b:200" { // row 2 of B: column 2 of A is all zero
					t.Errorf("%s: loads an unused row of B", name)
				}
				if beta == 0 && strings.HasPrefix(key, "c:") {
					t.Errorf("%s: reads C with β = 0", name)
				}
			}
			_, zeroRowStored := stores["c:100"]
			if want := beta != 1; zeroRowStored != want {
				t.Errorf("%s: zero row stored = %v, want %v", name, zeroRowStored, want)
			}
		}
	}
}

// indexKey reduces an index expression to its constant offset.
func indexKey(e kernel.Expr) string {
	switch e := e.(type) {
	case kernel.Bin:
		if l, ok := e.L.(kernel.Int); ok {
			return strconv.FormatInt(l.V, 10)
		}
	case kernel.Var:
		return "0"
	}
	return "?"
}

// TestGPUCandidates checks that the GPU-only variants come after the plain
// candidates, that wide variants are left to small operators and that every
// GPU candidate builds.
func TestGPUCandidates(t *testing.T) {
	dir := testenv.PyFRMats(t)
	for _, name := range []string{"p1/quad/m0", "p3/hex/m6", "p5/hex/m460", "p5/hex/m132", "p4/tet/m460"} {
		t.Run(name, func(t *testing.T) {
			op, err := load.File(filepath.Join(dir, name+"-sp.mtx"))
			if err != nil {
				t.Fatal(err)
			}
			pb := Problem{Op: op, DType: kernel.F64, Alpha: 1, LDB: 1088, LDC: 1088}
			plain, gpu := Candidates(pb), GPUCandidates(pb)
			// Grouping by support pays for operators whose rows share B
			// along lines in several directions (m460, m6), not for the
			// divergence-like m132 (its rows come in line order already),
			// a dense operator (every row reads all of B) or one too
			// small to split unevenly.
			grouped := slices.ContainsFunc(gpu, func(v Variant) bool { ms, ok := v.(MSplitParams); return ok && ms.Grouped })
			if want := name == "p3/hex/m6" || name == "p5/hex/m460"; grouped != want {
				t.Errorf("grouped variants offered: %v, want %v", grouped, want)
			}
			if len(gpu) <= len(plain) {
				t.Errorf("%d candidates, %d for GPUs", len(plain), len(gpu))
			}
			// Wide variants only on small operators: p5/hex and p4/tet have
			// over 2,500 non-zeros.
			small := name == "p1/quad/m0" || name == "p3/hex/m6"
			if wide := slices.ContainsFunc(gpu, wide); wide != small {
				t.Errorf("wide variants offered: %v, want %v", wide, small)
			}
			pb32 := pb
			pb32.DType = kernel.F32
			if wide := slices.ContainsFunc(GPUCandidates(pb32), wide); wide != small {
				t.Errorf("fp32: wide variants offered: %v, want %v", wide, small)
			}
			// p4/tet/m460 (105 rows, nearly dense): no split into 5 groups
			// of 21, which a sparse operator of 105 rows would get.
			if name == "p4/tet/m460" && slices.ContainsFunc(gpu, func(v Variant) bool {
				ms, ok := v.(MSplitParams)
				return ok && ms.Kind == CStreamMSplit && ms.Split == 5
			}) {
				t.Error("exact row split offered to a nearly dense operator")
			}
			seenGPUOnly := false
			for i, v := range gpu {
				ms, split := v.(MSplitParams)
				gpuOnly := v.launch().occupancy != 0 || (split && ms.rowSplit()) || v.Family() == Blocks
				if seenGPUOnly && !gpuOnly || !gpuOnly && !slices.Contains(plain, v) {
					t.Errorf("%s at %d: plain variant out of place", v, i)
				}
				seenGPUOnly = seenGPUOnly || gpuOnly
				if _, err := Build(pb, v); err != nil {
					t.Errorf("%s: %v", v, err)
				}
			}
		})
	}
}

// In fp32 the wide variants stay for large operators whose rows sum two
// entries or fewer: p8/hex/m6 (4,374 non-zeros), not in fp64.
func TestGPUCandidatesWideF32(t *testing.T) {
	op := frOp(t, "hex", 8, "m6")
	for _, dt := range []kernel.DType{kernel.F64, kernel.F32} {
		pb := Problem{Op: op, DType: dt, Alpha: 1, Beta: 1, LDB: 1088, LDC: 1088}
		if wide := slices.ContainsFunc(GPUCandidates(pb), wide); wide != (dt == kernel.F32) {
			t.Errorf("p8/hex/m6 %s: wide variants offered: %v", dt, wide)
		}
	}
}

// Row splits into equal groups: p + 1 planes of a hexahedron's points,
// offered once each for x32, x64 and x64 grouped where grouping pays, and
// not again where the fixed splits have them.
func TestExactSplits(t *testing.T) {
	for _, c := range []struct {
		m    int
		want []int
	}{
		{729, []int{9}},           // p8 hex: 9 planes of 81
		{343, []int{7}},           // p6 hex
		{216, []int{6, 8, 9, 12}}, // p5 hex
		{486, []int{6, 9}},        // p8 hex faces, 6·81
		{125, []int{5}},           // p4 hex: 5 planes of 25
		{24, nil},                 // p1 hex faces: groups of 4 are too small
		{80, []int{5}},            // 5 is the smallest, 16 rows the fewest a group
		{1024, []int{8, 16}},
	} {
		if got := exactSplits(c.m); !slices.Equal(got, c.want) {
			t.Errorf("exactSplits(%d) = %v, want %v", c.m, got, c.want)
		}
	}
	for _, c := range []struct {
		p       int // a hexahedron's order
		op      string
		offered []string
		not     []string
	}{
		// The lifting: every plane reads most faces, so grouping
		// saves no loads and is not offered.
		{8, "m3", []string{"cstream-msplit/x32-y9", "cstream-msplit/x64-y9"}, []string{"cstream-msplit/x64-y9-g"}},
		{7, "m3", []string{"cstream-msplit/x32-y8", "cstream-msplit/x64-y8", "cstream-msplit/x64-y16"}, []string{"cstream-msplit/x64-y8-g"}},
		{8, "m0", []string{"cstream-msplit/x64-y6-g", "cstream-msplit/x64-y9-g"}, nil}, // 486 rows: 6 and 9
		{7, "m0", []string{"cstream-msplit/x64-y8-g", "cstream-msplit/x64-y12-g"}, nil},
	} {
		op := frOp(t, "hex", c.p, c.op)
		for _, dt := range []kernel.DType{kernel.F64, kernel.F32} {
			pb := Problem{Op: op, DType: dt, Alpha: 1, Beta: 1, LDB: 1088, LDC: 1088}
			cands := GPUCandidates(pb)
			has := func(name string) bool {
				return slices.ContainsFunc(cands, func(v Variant) bool { return v.Name() == name })
			}
			for _, name := range c.offered {
				if !has(name) {
					t.Errorf("p%d %s %s: %s not offered", c.p, c.op, dt, name)
				}
			}
			for _, name := range c.not {
				if has(name) {
					t.Errorf("p%d %s %s: %s offered", c.p, c.op, dt, name)
				}
			}
			seen := map[Variant]bool{}
			for _, v := range cands {
				if seen[v] {
					t.Errorf("p%d %s %s: %s offered twice", c.p, c.op, dt, v)
				}
				seen[v] = true
			}
		}
	}
}
