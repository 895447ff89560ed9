package conformance

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/fem"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/kernel/tensor"
	"github.com/bespoke-hpc/bespoke/verify"
)

// The tensor-product family's part of the suite: BK1, BK3 and BK5 on a
// real perturbed mesh against fem's float64 reference — loops over layers
// with barriers inside, whole elements in shared memory, several elements
// per block, the 1-D matrices from shared memory or as literals.

// tensorOrders are the orders checked on GPUs: the smallest, an even and
// an odd one, and the largest whose slab (Q = 9) is not a power of two;
// cpuTensorOrders those whose GPU layouts CPU backends check, and
// cpuLayoutOrders those of their own layout (their compilers take seconds
// a kernel: kernel/tensor's tests check the GPU layouts on C at N = 1, 3,
// 7, the CPU layout at N = 1–8, and the interpreter every layout).
var (
	tensorOrders    = []int{1, 2, 5, 8}
	cpuTensorOrders = []int{2}
	cpuLayoutOrders = []int{1, 3, 8}
)

// RunTensor checks every variant of each operator at tensorOrders in both
// precisions on a batch of 37 elements (no multi-element block count
// divides it).
func RunTensor(t *testing.T, dev device.Device) {
	rng := testenv.Rand(t)
	gpu := dev.Info().GPU
	type pass struct {
		orders []int
		target family.Target
		dts    []kernel.DType
	}
	passes := []pass{{tensorOrders, family.Target{GPU: true}, DTypes}}
	if testing.Short() {
		passes[0].orders = []int{1, 5}
	}
	if !gpu {
		passes = []pass{
			{cpuTensorOrders, family.Target{GPU: true}, DTypes},
			{cpuLayoutOrders, family.Target{}, []kernel.DType{kernel.F64}},
		}
		if testing.Short() {
			passes[0].dts = []kernel.DType{kernel.F32}
			passes[1].orders = []int{1, 3}
		}
	}
	shortNote(t, "fewer orders (GPUs: 1 and 5; CPUs: the GPU layouts at 2 in f32, their own at 1 and 3), stored factors only")
	var cases []verify.Case
	for _, ps := range passes {
		for _, op := range fem.Kernels {
			for _, n := range ps.orders {
				for _, dt := range ps.dts {
					p, err := tensor.New(op, n, 0.5, dt)
					if err != nil {
						t.Fatal(err)
					}
					ins, err := p.Checks(37)
					if err != nil {
						t.Fatal(err)
					}
					cs, err := verify.Cases(rng, ins, ps.target, nil)
					if err != nil {
						t.Fatal(fmt.Errorf("%s: %w", p.Label(), err))
					}
					for _, c := range cs {
						// Under -short the computed-geometry variants are left
						// to kernel/tensor's geometry tests.
						if testing.Short() && (strings.HasSuffix(c.Kernel.Variant, "/tri") || strings.HasSuffix(c.Kernel.Variant, "/aff")) {
							continue
						}
						cases = append(cases, c)
					}
				}
			}
		}
	}
	total := Check(t, dev, cases)
	t.Logf("%d tensor-product kernels verified on %s%s", total, dev.Info().Name, shardNote())
}
