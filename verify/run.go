package verify

import (
	"fmt"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/emit"
	"github.com/bespoke-hpc/bespoke/kernel"
)

// Case is a kernel with the inputs to check it on. The kernel follows the
// GEMM parameter convention: any of n, b, ldb, c, ldc.
type Case struct {
	Kernel *kernel.Kernel
	In     *Inputs
}

// Outcome is a case's verdict.
type Outcome struct {
	Case
	Result
	Resources device.Resources
	Err       error // build or run failure
}

// Passed reports whether the case built, ran and matched.
func (o Outcome) Passed() bool { return o.Err == nil && o.OK() }

// RunBatch renders every case's kernel into one source, builds it with one
// compiler call and runs each case. If the batch fails to build, each
// kernel is built alone so that the failure is pinned on its kernel.
func RunBatch(dev device.Device, cases []Case) []Outcome {
	out := make([]Outcome, len(cases))
	for i, c := range cases {
		out[i].Case = c
	}
	prog, err := build(dev, cases)
	if err != nil && len(cases) > 1 {
		for i := range cases {
			out[i] = RunBatch(dev, cases[i:i+1])[0]
		}
		return out
	}
	if err != nil {
		out[0].Err = err
		return out
	}
	defer prog.Close()
	for i, c := range cases {
		kern, err := prog.Kernel(c.Kernel.Name)
		if err != nil {
			out[i].Err = err
			continue
		}
		out[i].Resources = kern.Resources()
		got, err := Launch(dev, kern, c.Kernel, c.In)
		if err != nil {
			out[i].Err = err
			continue
		}
		out[i].Result = c.In.Compare(got)
	}
	return out
}

func build(dev device.Device, cases []Case) (device.Program, error) {
	var ks []*kernel.Kernel
	seen := map[string]bool{}
	for _, c := range cases {
		if !seen[c.Kernel.Name] {
			seen[c.Kernel.Name] = true
			ks = append(ks, c.Kernel)
		}
	}
	src, err := emit.Render(dev.Dialect(), ks...)
	if err != nil {
		return nil, err
	}
	return dev.Build(src)
}

// Launch uploads the inputs, runs the kernel once and returns C.
func Launch(dev device.Device, kern device.Kernel, k *kernel.Kernel, in *Inputs) ([]float64, error) {
	b, c, err := Upload(dev, in)
	if err != nil {
		return nil, err
	}
	defer b.Free()
	defer c.Free()
	args, err := k.Args(map[string]any{"n": in.N, "ldb": in.LDB, "ldc": in.LDC, "b": b, "c": c})
	if err != nil {
		return nil, err
	}
	if err := kern.Launch(Geometry(k, in.N), args...); err != nil {
		return nil, fmt.Errorf("%s: %w", k.Variant, err)
	}
	if err := dev.Sync(); err != nil {
		return nil, err
	}
	raw := make([]byte, len(in.C0)*in.DType.Bytes())
	if err := c.Download(raw); err != nil {
		return nil, err
	}
	return Decode(in.DType, raw), nil
}

// Upload allocates B and C on the device and copies the inputs there.
func Upload(dev device.Device, in *Inputs) (b, c device.Buffer, err error) {
	w := int64(in.DType.Bytes())
	if b, err = dev.Alloc(int64(len(in.B)) * w); err != nil {
		return nil, nil, err
	}
	if c, err = dev.Alloc(int64(len(in.C0)) * w); err != nil {
		b.Free()
		return nil, nil, err
	}
	if err = b.Upload(Encode(in.DType, in.B)); err == nil {
		err = c.Upload(Encode(in.DType, in.C0))
	}
	if err != nil {
		b.Free()
		c.Free()
		return nil, nil, err
	}
	return b, c, nil
}

// Geometry resolves a kernel's launch for n columns.
func Geometry(k *kernel.Kernel, n int) device.Launch {
	return device.Launch{Grid: [3]int{k.Launch.Grid(n), 1, 1}, Block: k.Launch.Block}
}
