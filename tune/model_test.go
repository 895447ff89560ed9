package tune_test

import (
	"math"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/emit"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/cost"
	"github.com/bespoke-hpc/bespoke/kernel/kerneltest"
	"github.com/bespoke-hpc/bespoke/tune"
)

func TestPrune(t *testing.T) {
	ps := []tune.Prediction{{Seconds: 1}, {Seconds: 1.1}, {Seconds: 1.3}, {Seconds: 0}, {Seconds: math.NaN()}, {Seconds: 2}}
	tests := []struct {
		factor float64
		want   []bool
	}{
		{1.2, []bool{true, true, false, true, true, false}},
		{1.5, []bool{true, true, true, true, true, false}},
		{0, []bool{true, true, true, true, true, true}},
		{math.NaN(), []bool{true, true, true, true, true, true}},
	}
	for _, tc := range tests {
		got := tune.Prune(ps, tc.factor)
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("factor %g: keep %v, want %v", tc.factor, got, tc.want)
				break
			}
		}
	}
}

// A GPU readmits a pruned candidate as soon as the kept ones ran slower
// than it was predicted to; a CPU only past its pruning margin.
func TestMachineReadmit(t *testing.T) {
	for _, tc := range []struct {
		info device.Info
		want float64 // 0: the machine's Prune
	}{
		{device.Info{Backend: "cuda", Name: "gpu", GPU: true, ComputeUnits: 132}, 1},
		{device.Info{Backend: "opencl", Name: "gpu", GPU: true, ComputeUnits: 32}, 1},
		{device.Info{Backend: "c", Name: "cpu", ComputeUnits: 2}, 0},
	} {
		m := tune.MachineOf(tc.info, 100)
		want := tc.want
		if want == 0 {
			want = m.Prune
		}
		if m.Readmit != want || !(m.Prune > 1) {
			t.Errorf("%s: readmit margin %g, prune %g; want margin %g", tc.info.Backend, m.Readmit, m.Prune, want)
		}
	}
}

func TestPredict(t *testing.T) {
	gpu := tune.Machine{GPU: true, RoofGBs: 1000, CacheFactor: 4, SharedFactor: 10, IssueRate: 1e12, Registers: 255, SpillWeight: 10}
	k := &kernel.Kernel{DType: kernel.F64, Launch: kernel.Launch{Block: [3]int{128, 1, 1}}}
	bound := &kernel.Kernel{DType: kernel.F64, Launch: kernel.Launch{Block: [3]int{128, 1, 1}}, Hints: kernel.Hints{MinBlocksPerUnit: 4}}
	once := &kernel.Kernel{DType: kernel.F64, Launch: kernel.Launch{Block: [3]int{128, 1, 1}}, Hints: kernel.Hints{SpillOnce: true}}
	const ideal = 1e9 // bytes: 1 ms at the roof
	tests := []struct {
		name    string
		k       *kernel.Kernel
		c       cost.Counts
		seconds float64
		bound   string
	}{
		{"streaming", k, cost.Counts{Threads: 1e6, LoadBytes: 1e9, RealOps: 1e8, LiveReals: 8}, 1e-3, "dram"},
		{"re-reads", k, cost.Counts{Threads: 1e6, LoadBytes: 8e9, RealOps: 1e8, LiveReals: 8}, 2e-3, "cache"},
		// 5e8 doubles from shared memory at 10 TB/s plus 4e9 bytes
		// at 4 TB/s: the two share one pipe, so their times add.
		{"shared", k, cost.Counts{Threads: 1e6, LoadBytes: 4e9, Shared: 5e8, LiveReals: 8}, 1.4e-3, "cache"},
		{"shared under the roof", k, cost.Counts{Threads: 1e6, LoadBytes: 1e9, Shared: 5e8, LiveReals: 8}, 1e-3, "dram"},
		{"arithmetic", k, cost.Counts{Threads: 1e6, LoadBytes: 1e9, RealOps: 3e9, LiveReals: 8}, 3e-3, "issue"},
		// 200 doubles are 416 registers: 161 over 255, spilled by each
		// of 1e6 threads, stored and reloaded 10 times over.
		{"spills", k, cost.Counts{Threads: 1e6, LoadBytes: 1e9, LiveReals: 200}, 1e-3 + 10*2*161*4*1e6/(1000e9*4), "dram+spill"},
		// Four blocks of 128 threads per unit leave 128 registers each.
		{"occupancy hint", bound, cost.Counts{Threads: 1e6, LoadBytes: 1e9, LiveReals: 60}, 1e-3 + 10*2*8*4*1e6/(1000e9*4), "dram+spill"},
		// Straight-line code: the same spills, stored and reloaded once.
		{"spilled once", once, cost.Counts{Threads: 1e6, LoadBytes: 1e9, LiveReals: 200}, 1e-3 + 2*161*4*1e6/(1000e9*4), "dram+spill"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := tune.Predict(gpu, tc.k, tc.c, ideal)
			if math.Abs(p.Seconds-tc.seconds) > 1e-9*tc.seconds || p.Bound != tc.bound {
				t.Errorf("predicted %s, want %.4g s (%s)", p.Describe(), tc.seconds, tc.bound)
			}
		})
	}
}

// On a CPU that builds wide-vector kernels with 512-bit vectors, their
// arithmetic is priced at twice the lanes; other kernels, and GPUs, are
// not.
func TestPredictWideVectors(t *testing.T) {
	cpu := tune.Machine{RoofGBs: 50, CacheFactor: 3, IssueRate: 1e11, Registers: 256, SpillWeight: 4, Wide: 2}
	plain := &kernel.Kernel{DType: kernel.F64, Launch: kernel.Launch{Block: [3]int{8, 1, 1}}}
	wide := &kernel.Kernel{DType: kernel.F64, Launch: kernel.Launch{Block: [3]int{8, 1, 1}}, Hints: kernel.Hints{WideVectors: true}}
	c := cost.Counts{Threads: 1e5, LoadBytes: 1e8, RealOps: 1e10, LiveReals: 8} // 0.1 s of issue at 1e11
	for _, tc := range []struct {
		name string
		m    tune.Machine
		k    *kernel.Kernel
		want float64
	}{
		{"plain kernel", cpu, plain, 0.1},
		{"wide kernel", cpu, wide, 0.05},
		{"wide kernel, AVX2 host", func() tune.Machine { m := cpu; m.Wide = 0; return m }(), wide, 0.1},
		{"wide kernel on a GPU", func() tune.Machine { m := cpu; m.GPU, m.Registers = true, 255; return m }(), wide, 0.1},
	} {
		if p := tune.Predict(tc.m, tc.k, c, 1e6); math.Abs(p.Seconds-tc.want) > 1e-9 || p.Bound != "issue" {
			t.Errorf("%s: %s, want %g s (issue)", tc.name, p.Describe(), tc.want)
		}
	}
}

// The model ranks a kernel that re-reads its input twice as slower than
// one that streams it, through the counts of real kernels.
func TestEstimateRanks(t *testing.T) {
	m := tune.Machine{RoofGBs: 20, CacheFactor: 3, IssueRate: 1e10, Registers: 32, SpillWeight: 4}
	mk := func(reads int) *kernel.Kernel {
		v := kernel.Expr(kernel.Lit{V: 0})
		for r := 0; r < reads; r++ {
			v = kernel.Bin{Op: "+", L: v, R: kernel.At("x", kernel.Var{Name: "g"})}
		}
		return &kernel.Kernel{Name: "reads", Variant: "test", DType: kernel.F64, Doc: "model test",
			Params: []kernel.Param{{Name: "n", Kind: kernel.ScalarParam, Type: kernel.Index},
				{Name: "x", Kind: kernel.BufferParam, Type: kernel.Real, Const: true},
				{Name: "y", Kind: kernel.BufferParam, Type: kernel.Real}},
			Launch: kernel.Launch{Block: [3]int{64, 1, 1}, Grid: [3]kernel.Axis{kernel.Over("n", 64)}},
			Body: []kernel.Stmt{
				kernel.Decl{Type: kernel.Index, Name: "g", Init: kernel.Bin{Op: "+", L: kernel.Bin{Op: "*", L: kernel.Special{Kind: kernel.GroupID}, R: kernel.Int{V: 64}}, R: kernel.Special{Kind: kernel.LocalID}}},
				kernel.Put("y", v, kernel.Var{Name: "g"}),
			}}
	}
	sizes := map[string]int64{"n": 1 << 20}
	const ideal = 16 << 20
	var last float64
	for _, reads := range []int{1, 8, 32} {
		c, err := cost.Count(mk(reads), sizes)
		if err != nil {
			t.Fatal(err)
		}
		p := tune.Predict(m, mk(reads), c, ideal)
		if p.Seconds < last || (reads > 8 && p.Seconds <= last) || !strings.HasPrefix(p.Bound, "dram") && reads == 1 {
			t.Errorf("%d reads: %s after %.3g s", reads, p.Describe(), last)
		}
		last = p.Seconds
	}
}

// Tensor-core kernels go unpredicted (so never pruned); SIMT ones are
// estimated.
func TestEstimateTensorCores(t *testing.T) {
	m := tune.Machine{RoofGBs: 20, CacheFactor: 3, IssueRate: 1e10, Registers: 32, SpillWeight: 4, GPU: true}
	sizes := map[string]int64{"tiles": 8, "n": 1024}
	if _, err := tune.Estimate(m, emit.CUDA, kerneltest.MMA(kernel.M8N8K4), sizes, 1<<20); err == nil || !strings.Contains(err.Error(), "not modelled") {
		t.Errorf("mma kernel estimated: %v", err)
	}
	if _, err := tune.Estimate(m, emit.CUDA, kerneltest.Misc(kernel.F64), sizes, 1<<20); err != nil {
		t.Errorf("SIMT kernel: %v", err)
	}
}
