package tune

import (
	"fmt"
	"math"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/emit"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/cost"
)

// The cost model predicts a candidate's time from its static counts
// (kernel/cost) before it is compiled, so that candidates that cannot come
// near the predicted best are never built. It is a roofline with three
// roofs and a spill term:
//
//   - DRAM: the ideal bytes at the run's measured roof;
//   - on-chip: every global access (including those a cache serves, as in
//     kernels that split a column's rows among threads that each re-read
//     B) at CacheFactor times the roof, plus every shared-memory access at
//     SharedFactor times the roof (one load/store pipe serves both, so
//     the two times add);
//   - issue: every operation, load and store of every thread at IssueRate;
//   - spills: the values over the register budget are stored and reloaded
//     through the on-chip path, SpillWeight times over (a spill sits in a
//     thread's dependent chain, so it costs more than its bytes).
//
// The constants were fitted on full searches (every candidate timed) of
// the 120 PyFR operators on a GPU and of a subset on a CPU
// (docs/rationale.md#cost-model); bench reports how often the pruned list
// still held the winner of a full search.
type Machine struct {
	GPU         bool
	RoofGBs     float64 // DRAM bandwidth: the run's measured roof
	CacheFactor float64 // on-chip bandwidth of global accesses over RoofGBs
	// SharedFactor is shared memory's bandwidth over RoofGBs (0: as
	// CacheFactor).
	SharedFactor float64
	IssueRate    float64 // lane operations per second, the whole device
	// Registers is the 32-bit registers a thread holds before spilling
	// (on a CPU: vector registers × lanes of a 32-bit value, per lane).
	Registers   int
	SpillWeight float64
	// Prune is the factor over the best prediction beyond which a
	// candidate is not built (the model's margin on this kind of device).
	Prune float64
	// Readmit is the factor by which the kept candidates' best time must
	// exceed a pruned candidate's prediction for it to be built after
	// all (bench's readmit): 1 on GPUs, where builds are quick and the
	// model misprices whole families, blocks kernels faster and large
	// unrolled ones slower than predicted (docs/rationale.md#readmit);
	// Prune on CPUs, whose kernels routinely run well over their
	// predictions and whose builds are slow.
	Readmit float64
	// Wide multiplies IssueRate for kernels that ask for wide vectors
	// (kernel.Hints.WideVectors) on a CPU that builds them so: 2 where
	// they get 512-bit vectors, twice the lanes of the AVX2 builds the
	// CPU constants were fitted on (0 or 1: no change).
	Wide float64
}

// GPU model constants (see Machine).
const (
	gpuCacheFactor = 3
	// Shared memory is an order of magnitude faster than DRAM (128 B a
	// clock a multiprocessor): priced as cache traffic, the sum-factorised
	// blocks kernels were predicted slower than the unrolled ones they beat,
	// and pruned (docs/rationale.md#cost-model).
	gpuSharedFactor = 10
	gpuIssuePerCU   = 1.5e11 // lane operations per second per multiprocessor
	gpuRegisters    = 255
	gpuRegsBase     = 16 // addresses, indices and loop state
	gpuSpillWeight  = 16
	gpuRegisterFile = 65536
	// On the data the model was fitted on, every problem's fastest
	// candidate was within 1.2× of its predicted best, and 12–15 % of the
	// candidates were not.
	gpuPrune = 1.2
)

// CPU model constants (see Machine): the C backend's kernels, after the
// work-group lowering, vectorised across a block's threads. Fitted on a
// full search of 25 operators (docs/rationale.md#cost-model): the spill
// term did not help
// (compilers keep a vector loop's values in cache, not registers), and a
// margin of 2 kept every winner while skipping half the candidates (all
// the split variants, which run 2–10× slower there).
const (
	cpuCacheFactor  = 3
	cpuIssuePerCore = 3.2e10 // lane operations per second per core
	cpuRegisters    = 256
	cpuSpillWeight  = 4
	cpuPrune        = 2
)

// MachineOf describes dev for the model, with the roof measured in the run
// (GB/s; when 0, the device's recorded copy bandwidth or a guess).
func MachineOf(info device.Info, roofGBs float64) Machine {
	if roofGBs <= 0 {
		roofGBs = info.CopyGBs
	}
	cu := float64(max(info.ComputeUnits, 1))
	if info.GPU {
		if roofGBs <= 0 {
			roofGBs = 1000
		}
		return Machine{GPU: true, RoofGBs: roofGBs, CacheFactor: gpuCacheFactor, SharedFactor: gpuSharedFactor, IssueRate: cu * gpuIssuePerCU,
			Registers: gpuRegisters, SpillWeight: gpuSpillWeight, Prune: gpuPrune, Readmit: 1}
	}
	if roofGBs <= 0 {
		roofGBs = 20
	}
	m := Machine{RoofGBs: roofGBs, CacheFactor: cpuCacheFactor, IssueRate: cu * cpuIssuePerCore,
		Registers: cpuRegisters, SpillWeight: cpuSpillWeight, Prune: cpuPrune, Readmit: cpuPrune}
	if info.WideVectorBits > 256 {
		m.Wide = float64(info.WideVectorBits) / 256
	}
	return m
}

// Prediction is the model's estimate for one candidate.
type Prediction struct {
	Seconds float64 `json:"seconds"`
	// Bound names the roof that set the time: "dram", "cache", "issue";
	// "+spill" when spills were added.
	Bound string `json:"bound"`
	// Registers is the predicted 32-bit registers a thread needs (GPU)
	// or values live per lane (CPU).
	Registers int `json:"registers"`
	// Keep: within the pruning factor of the problem's best prediction
	// (set by the caller; a full search records it too, to measure how
	// often pruning would have lost the winner).
	Keep bool `json:"keep"`
}

// Predict estimates the time of a launch of kernel k (as its family built
// it) from the counts c of the kernel as the device runs it, for a launch
// that moves ideal bytes at least.
func Predict(m Machine, k *kernel.Kernel, c cost.Counts, ideal int64) Prediction {
	bw := m.RoofGBs * 1e9
	eb := float64(k.DType.Bytes())
	sf := m.SharedFactor
	if !(sf > 0) {
		sf = m.CacheFactor
	}
	rate := m.IssueRate
	if !m.GPU && k.Hints.WideVectors && m.Wide > 1 {
		// AVX-512 builds: at the AVX2 rate the CPU dense form was
		// predicted 4× slower than it ran and pruned where it wins
		// (docs/rationale.md#cost-model).
		rate *= m.Wide
	}
	times := []struct {
		t    float64
		name string
	}{
		{float64(ideal) / bw, "dram"},
		{(c.LoadBytes+c.StoreBytes)/(bw*m.CacheFactor) + c.Shared*eb/(bw*sf), "cache"},
		{(c.RealOps + c.IntOps + c.Loads + c.Stores + c.Shared) / rate, "issue"},
	}
	best := times[0]
	for _, t := range times[1:] {
		if t.t > best.t {
			best = t
		}
	}
	p := Prediction{Seconds: best.t, Bound: best.name}
	words := int(math.Ceil(eb / 4))
	budget := m.Registers
	if m.GPU {
		p.Registers = c.LiveReals*words + gpuRegsBase
		if mb := k.Hints.MinBlocksPerUnit; mb > 0 {
			budget = min(budget, gpuRegisterFile/(mb*max(k.Launch.Threads(), 1)))
		}
	} else {
		// A vector register holds one value of every lane.
		p.Registers = c.LiveReals
	}
	if over := p.Registers - budget; over > 0 {
		var spilled float64
		if m.GPU {
			spilled = float64(over) * 4 * float64(c.Threads)
		} else {
			spilled = float64(over) * eb * float64(c.Threads) * float64(k.Launch.Threads())
		}
		weight := m.SpillWeight
		if k.Hints.SpillOnce {
			// Stored once and reloaded about once: at SpillWeight the
			// register-capped integration kernels that spill a little
			// were pruned, yet ran fastest
			// (docs/rationale.md#spill-once).
			weight = 1
		}
		p.Seconds += weight * 2 * spilled / (bw * m.CacheFactor)
		p.Bound += "+spill"
	}
	return p
}

// Prune reports which predictions to keep: those within factor of the
// fastest, and any without a time (factor ≤ 0 or NaN keeps all).
func Prune(ps []Prediction, factor float64) []bool {
	keep := make([]bool, len(ps))
	best := math.Inf(1)
	for _, p := range ps {
		if p.Seconds > 0 {
			best = min(best, p.Seconds)
		}
	}
	for i, p := range ps {
		keep[i] = !(factor > 0) || !(p.Seconds > 0) || p.Seconds <= factor*best
	}
	return keep
}

// Describe is a prediction for reports.
func (p Prediction) Describe() string {
	return fmt.Sprintf("%.3g s (%s, %d registers)", p.Seconds, p.Bound, p.Registers)
}

// Estimate predicts kernel k's time on a device of dialect d described by
// m, at the given sizes, for a launch that moves ideal bytes at least: the
// counts are those of k as the dialect runs it (emit.Lowered).
func Estimate(m Machine, d emit.Dialect, k *kernel.Kernel, sizes map[string]int64, ideal int64) (Prediction, error) {
	// The counts know nothing of tensor cores: a dmma kernel predicted
	// 1.6× slower than unrolled SIMT kernels ran 1.5× faster than them,
	// so such kernels go unpredicted (and are never pruned).
	if arch := kernel.NeedsArch(k.Body); arch > 0 {
		return Prediction{}, fmt.Errorf("tensor-core kernels (sm_%d) are not modelled", arch)
	}
	run, err := emit.Lowered(d, k)
	if err != nil {
		return Prediction{}, err
	}
	c, err := cost.Count(run, sizes)
	if err != nil {
		return Prediction{}, err
	}
	return Predict(m, k, c, ideal), nil
}
