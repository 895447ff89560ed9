package tensor_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/emit"
	"github.com/bespoke-hpc/bespoke/fem"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/tensor"
	"github.com/bespoke-hpc/bespoke/verify"
)

var vecLayouts = []string{"cpu-vec/e4", "cpu-vec/e8"}

// vecCases are the vectorised layouts of op at order n over e elements,
// in fp64 on the perturbed mesh.
func vecCases(t *testing.T, rng *rand.Rand, op fem.Kernel, n, e int) []verify.Case {
	t.Helper()
	p, err := tensor.New(op, n, 0.7, kernel.F64)
	if err != nil {
		t.Fatal(err)
	}
	ins, err := p.Checks(e)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := verify.Cases(rng, ins, cpu, vecLayouts)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != len(vecLayouts) {
		t.Fatalf("%s N=%d E=%d: %d cases", op, n, e, len(cs))
	}
	return cs
}

// Batches of every length against a whole number of lanes: one element,
// fewer than a batch, exactly one or two batches, and a short last batch
// (its spare lanes repeat the last element and must write nothing else).
func TestCPUVecBatches(t *testing.T) {
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	rng := rand.New(rand.NewPCG(41, 3))
	tests := []struct {
		op fem.Kernel
		n  int
		es []int
	}{
		{fem.BK1, 2, []int{1, 3, 8, 16, 29}},
		{fem.BK3, 3, []int{1, 4, 9, 24}},
		{fem.BK5, 5, []int{2, 8, 13, 32}},
	}
	var cs []verify.Case
	for _, tc := range tests {
		for _, e := range tc.es {
			cs = append(cs, vecCases(t, rng, tc.op, tc.n, e)...)
		}
	}
	for i, o := range verify.RunBatch(dev, cs) {
		if o.Err != nil || !o.Result.OK() {
			t.Errorf("%s %s: %+v, %v", cs[i].Label, cs[i].Kernel.Variant, o.Result, o.Err)
		}
	}
}

// laneLoop matches the loop over the lanes in the emitted C.
var laneLoop = regexp.MustCompile(`for \(int64_t l = 0; l < (\d+); l\+\+\)`)

// gcc vectorises every loop over the lanes: it reports each as
// vectorised (-fopt-info-vec-optimized), with 64-byte vectors at 8
// lanes where the host builds wide kernels with AVX-512.
func TestCPUVecVectorised(t *testing.T) {
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	argv, short := dev.Compiler()
	if !strings.HasPrefix(short, "gcc") {
		t.Skipf("compiler %s: the check reads gcc's reports", short)
	}
	dir := t.TempDir()
	for _, op := range fem.Kernels {
		for _, name := range vecLayouts {
			t.Run(fmt.Sprintf("%s/%s", op, name), func(t *testing.T) {
				p, err := tensor.New(op, 4, 1, kernel.F64)
				if err != nil {
					t.Fatal(err)
				}
				in, err := p.Timed(100)
				if err != nil {
					t.Fatal(err)
				}
				c, err := in.Variant(name)
				if err != nil {
					t.Fatal(err)
				}
				k, err := in.Build(c)
				if err != nil {
					t.Fatal(err)
				}
				src, err := emit.Render(emit.C, k)
				if err != nil {
					t.Fatal(err)
				}
				flags := dev.Flags()
				want := "loop vectorized"
				if k.Hints.WideVectors && dev.Info().WideVectorBits != 512 {
					t.Skip("8 lanes are built for AVX-512, which this host lacks")
				}
				if k.Hints.WideVectors {
					flags = slices.DeleteFunc(flags, func(f string) bool { return f == "-mno-avx512f" })
					flags = append(flags, "-mprefer-vector-width=512")
					want = "loop vectorized using 64 byte vectors"
				}
				file := filepath.Join(dir, strings.ReplaceAll(name, "/", "_")+string(op)+".c")
				if err := os.WriteFile(file, []byte(src.Text), 0o644); err != nil {
					t.Fatal(err)
				}
				args := append(append(append([]string{}, argv[1:]...), flags...), "-fopt-info-vec-optimized", "-o", file+".so", file)
				out, err := exec.Command(argv[0], args...).CombinedOutput()
				if err != nil {
					t.Fatalf("%v: %s", err, out)
				}
				done := map[int]bool{}
				for _, line := range strings.Split(string(out), "\n") {
					var at int
					if i := strings.Index(line, ".c:"); i >= 0 && strings.Contains(line, want) {
						fmt.Sscanf(line[i+3:], "%d", &at)
						done[at] = true
					}
				}
				lines := strings.Split(src.Text, "\n")
				loops := 0
				for i, line := range lines {
					if m := laneLoop.FindStringSubmatch(line); m != nil {
						loops++
						if m[1] != strings.TrimPrefix(name, "cpu-vec/e") {
							t.Errorf("line %d: %s lanes, want %s", i+1, m[1], name)
						}
						// gcc reports a loop at its body's first line.
						if !done[i+2] {
							t.Errorf("line %d, %q: not reported as %q", i+1, strings.TrimSpace(line), want)
						}
					}
				}
				if loops < 5 {
					t.Errorf("%d loops over the lanes, want at least 5", loops)
				}
			})
		}
	}
}

// The vectorised layout takes 4 or 8 elements a work-item, is offered on
// CPUs only, and runs one thread a block with no barrier or shared memory,
// over a grid of ⌈E/L⌉ blocks; 8 lanes ask for wide vectors.
func TestCPUVecCandidates(t *testing.T) {
	for _, op := range fem.Kernels {
		p, err := tensor.New(op, 3, 1, kernel.F64)
		if err != nil {
			t.Fatal(err)
		}
		in, err := p.Timed(21)
		if err != nil {
			t.Fatal(err)
		}
		var offered []string
		for _, c := range in.Candidates(cpu) {
			offered = append(offered, c.Name())
		}
		for _, name := range vecLayouts {
			if !slices.Contains(offered, name) {
				t.Errorf("%s: %s not offered on a CPU (%v)", op, name, offered)
			}
		}
		for _, c := range in.Candidates(gpu) {
			if strings.HasPrefix(c.Name(), "cpu-vec") {
				t.Errorf("%s: %s offered on a GPU", op, c.Name())
			}
		}
		tests := []struct {
			per int
			ok  bool
		}{{1, false}, {2, false}, {4, true}, {8, true}, {16, false}}
		for _, tc := range tests {
			v := tensor.Variant{Kind: "cpu-vec", PerBlock: tc.per}
			if err := in.Check(v); (err == nil) != tc.ok {
				t.Errorf("%s %s: check %v, want ok %v", op, v.Name(), err, tc.ok)
				continue
			}
			if !tc.ok {
				continue
			}
			k, err := in.Build(v)
			if err != nil {
				t.Fatal(err)
			}
			if k.Launch.Threads() != 1 || k.HasBarrier() || len(k.Shared) != 0 || k.Launch.Grid[0].Per != tc.per {
				t.Errorf("%s %s: block %v, grid %+v, barrier %v, shared %v", op, v.Name(), k.Launch.Block, k.Launch.Grid[0], k.HasBarrier(), k.Shared)
			}
			if k.Hints.WideVectors != (tc.per == 8) {
				t.Errorf("%s %s: wide vectors %v", op, v.Name(), k.Hints.WideVectors)
			}
		}
	}
}

// How the vectorised layout streams its elements: v is written along
// the elements (writeOut), u with 8 lanes read in along the elements
// (readIn), and the next batch prefetched where it takes at most 256
// KiB. (Gathers of u and scatters of v across 8 elements, and no
// prefetches, left the kernels at a third to a half of their in-cache
// speed on data streamed from memory.)
func TestCPUVecStreams(t *testing.T) {
	tests := []struct {
		op       fem.Kernel
		n, lanes int
		prefetch bool
	}{
		{fem.BK1, 5, 8, true},
		{fem.BK1, 5, 4, true},
		{fem.BK1, 8, 8, true},
		{fem.BK3, 4, 8, true},
		{fem.BK3, 7, 8, false}, // 390 KiB a batch
		{fem.BK3, 8, 4, false},
		{fem.BK5, 5, 8, true},
		{fem.BK5, 7, 8, false},
	}
	for _, tc := range tests {
		in := timedF64(t, tc.op, tc.n, 100)
		k, err := in.Build(tensor.Variant{Kind: "cpu-vec", PerBlock: tc.lanes})
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("%s N=%d e%d", tc.op, tc.n, tc.lanes)
		prefetched := map[string]bool{}
		// walk visits every statement with the loop variables around it.
		var walk func(ss []kernel.Stmt, loops []string)
		walk = func(ss []kernel.Stmt, loops []string) {
			for _, s := range ss {
				inCopy := slices.Contains(loops, "lo")
				switch s := s.(type) {
				case kernel.For:
					walk(s.Body, append(slices.Clone(loops), s.Var))
					continue
				case kernel.If:
					walk(s.Then, loops)
					walk(s.Else, loops)
					continue
				case kernel.Prefetch:
					prefetched[s.Buf] = true
				case kernel.Store:
					if s.Buf == "v" && !inCopy {
						t.Errorf("%s: v stored outside the copy out", name)
					}
				}
				kernel.StmtExprs(s, func(e kernel.Expr) {
					kernel.WalkExpr(e, func(e kernel.Expr) {
						if l, ok := e.(kernel.Load); ok && l.Buf == "u" && tc.lanes == 8 && !inCopy {
							t.Errorf("%s: u loaded outside the copy in", name)
						}
					})
				})
			}
		}
		walk(k.Body, nil)
		for _, buf := range []string{"u", "geo", "v"} {
			if prefetched[buf] != tc.prefetch {
				t.Errorf("%s: prefetch of %s %v, want %v", name, buf, prefetched[buf], tc.prefetch)
			}
		}
	}
}

// The prefetches of the next batch stay in the buffers (the interpreter
// checks their indices) with a whole, a short and no next batch.
func TestCPUVecPrefetchBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 5))
	var cs []verify.Case
	for _, e := range []int{4, 8, 9, 16, 17, 24} {
		cs = append(cs, vecCases(t, rng, fem.BK1, 2, e)...)
	}
	cs = append(cs, vecCases(t, rng, fem.BK5, 2, 20)...)
	for _, c := range cs {
		res, err := verify.Interpret(c)
		if err != nil || !res.OK() {
			t.Errorf("%s %s: %+v, %v", c.Label, c.Kernel.Variant, res, err)
		}
	}
}
