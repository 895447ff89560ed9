package verify

import (
	"fmt"
	"math/rand/v2"

	"github.com/bespoke-hpc/bespoke/build"
	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/kernel/interp"
)

// Case is a kernel with the data to check it on.
type Case struct {
	Kernel *kernel.Kernel
	Data   *family.Data
	// Label names the instance the kernel was built for, in messages.
	Label string
}

// Outcome is a case's verdict.
type Outcome struct {
	Case
	family.Result
	Resources device.Resources
	Err       error // build or run failure
}

// Passed reports whether the case built, ran and matched.
func (o Outcome) Passed() bool { return o.Err == nil && o.OK() }

// Cases builds, for each instance, the kernel of every candidate (those
// named in only, when given, that apply; else every candidate for the
// target) with data drawn for that instance.
func Cases(rng *rand.Rand, instances []family.Instance, t family.Target, only []string) ([]Case, error) {
	var cases []Case
	for _, in := range instances {
		cs, err := family.Choose(in, t, only)
		if err != nil {
			return nil, err
		}
		if len(cs) == 0 {
			continue
		}
		d, err := in.Data(rng)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", in.Name(), err)
		}
		for _, c := range cs {
			k, err := in.Build(c)
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %w", in.Name(), c.Name(), err)
			}
			cases = append(cases, Case{Kernel: k, Data: d, Label: in.Name()})
		}
	}
	return cases, nil
}

// RunBatch builds every case's kernel (see build.Batch) and runs each case.
func RunBatch(dev device.Device, cases []Case) []Outcome {
	ks := make([]*kernel.Kernel, len(cases))
	for i, c := range cases {
		ks[i] = c.Kernel
	}
	built, closeAll := build.Batch(dev, ks)
	defer closeAll()
	out := make([]Outcome, len(cases))
	for i, c := range cases {
		out[i].Case = c
		if built[i].Err != nil {
			out[i].Err = built[i].Err
			continue
		}
		out[i].Resources = built[i].Kernel.Resources()
		got, err := Launch(dev, built[i].Kernel, c.Kernel, c.Data)
		if err == nil {
			out[i].Result, err = c.Data.Compare(got)
		}
		out[i].Err = err
	}
	return out
}

// Apply builds k on dev as a program of its own (build.Program), runs it
// once over d and returns every array as the device left it: an apply
// command's one launch on a user's data.
func Apply(dev device.Device, k *kernel.Kernel, d *family.Data) (map[string][]float64, error) {
	prog, err := build.NewProgram(dev, k)
	if err != nil {
		return nil, err
	}
	defer prog.Close()
	return Launch(dev, prog.Kernel(k.Name), k, d)
}

// Launch uploads the data, runs the kernel once and returns every array as
// the device left it.
func Launch(dev device.Device, kern device.Kernel, k *kernel.Kernel, d *family.Data) (map[string][]float64, error) {
	bufs := map[string]device.Buffer{}
	defer func() {
		for _, b := range bufs {
			b.Free()
		}
	}()
	for _, p := range k.Params {
		if p.Kind != kernel.BufferParam {
			continue
		}
		a, ok := d.Arrays[p.Name]
		if !ok {
			return nil, fmt.Errorf("%s: no data for buffer %q", k.Variant, p.Name)
		}
		raw := encode(k, a)
		b, err := dev.Alloc(int64(len(raw)))
		if err != nil {
			return nil, err
		}
		bufs[p.Name] = b
		if err := b.Upload(raw); err != nil {
			return nil, err
		}
	}
	l, args, err := device.Bind(k, d.Values, bufs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", k.Variant, err)
	}
	if err := kern.Launch(l, args...); err != nil {
		return nil, fmt.Errorf("%s: %w", k.Variant, err)
	}
	if err := dev.Sync(); err != nil {
		return nil, err
	}
	got := map[string][]float64{}
	for name, b := range bufs {
		raw := make([]byte, b.Size())
		if err := b.Download(raw); err != nil {
			return nil, err
		}
		got[name] = decode(k, d.Arrays[name], raw)
	}
	return got, nil
}

// encode packs an array as kernel k holds its elements.
func encode(k *kernel.Kernel, a *family.Array) []byte {
	if a.Type == kernel.Real {
		return k.DType.Encode(a.Init)
	}
	ints := make([]int64, len(a.Init))
	for i, x := range a.Init {
		ints[i] = int64(x)
	}
	return kernel.EncodeInts(k.ScalarBytes(a.Type), ints)
}

// decode unpacks what encode packed.
func decode(k *kernel.Kernel, a *family.Array, raw []byte) []float64 {
	if a.Type == kernel.Real {
		return k.DType.Decode(raw)
	}
	ints := kernel.DecodeInts(k.ScalarBytes(a.Type), raw)
	out := make([]float64, len(ints))
	for i, x := range ints {
		out[i] = float64(x)
	}
	return out
}

// Interpret runs a case in the Go interpreter instead of on a device, with
// the arrays in the kernel's precision, and judges the result: the oracle
// for a family's kernels and for the printer's dialects alike.
func Interpret(c Case) (family.Result, error) {
	k, d := c.Kernel, c.Data
	args := map[string]any{}
	for name, v := range d.Values {
		args[name] = v
	}
	got := map[string][]float64{}
	for name, a := range d.Arrays {
		if a.Type == kernel.Real {
			x := make([]float64, len(a.Init))
			for i, v := range a.Init {
				x[i] = k.DType.Rounded(v)
			}
			got[name], args[name] = x, x
			continue
		}
		x := make([]int64, len(a.Init))
		for i, v := range a.Init {
			x[i] = int64(v)
		}
		args[name] = x
	}
	grid, err := k.Launch.Blocks(d.Values)
	if err != nil {
		return family.Result{}, err
	}
	if err := interp.Run(k, grid, args); err != nil {
		return family.Result{}, err
	}
	for name, a := range d.Arrays {
		if a.Type != kernel.Real {
			x := args[name].([]int64)
			back := make([]float64, len(x))
			for i, v := range x {
				back[i] = float64(v)
			}
			got[name] = back
		}
	}
	return d.Compare(got)
}
