package run

import (
	"sync"
	"testing"
	"time"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/emit"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/kernel"
	kpum "github.com/bespoke-hpc/bespoke/kernel/pum"
)

// lazyDevice is the C device with a driver that compiles each kernel at
// its first launch, as PoCL does: that launch takes delay longer.
type lazyDevice struct {
	*host.Device
	delay    time.Duration
	mu       sync.Mutex
	launched map[string]bool
}

func (d *lazyDevice) Build(src emit.Source) (device.Program, error) {
	p, err := d.Device.Build(src)
	if err != nil {
		return nil, err
	}
	return &lazyProgram{Program: p, d: d}, nil
}

type lazyProgram struct {
	device.Program
	d *lazyDevice
}

func (p *lazyProgram) Kernel(entry string) (device.Kernel, error) {
	k, err := p.Program.Kernel(entry)
	if err != nil {
		return nil, err
	}
	return &lazyKernel{Kernel: k, d: p.d}, nil
}

type lazyKernel struct {
	device.Kernel
	d *lazyDevice
}

func (k *lazyKernel) Launch(l device.Launch, args ...any) error {
	k.d.mu.Lock()
	first := !k.d.launched[k.Name()]
	k.d.launched[k.Name()] = true
	k.d.mu.Unlock()
	if first {
		time.Sleep(k.d.delay)
	}
	return k.Kernel.Launch(l, args...)
}

// Bench times no kernel's first launch: on a driver that compiles
// there, a cold cache would count the build in a phase's time.
func TestPUMBenchWarmsUp(t *testing.T) {
	hd, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	const delay = 300 * time.Millisecond
	dev := &lazyDevice{Device: hd, delay: delay, launched: map[string]bool{}}
	cfg := Config{Dim: 2, Level: 2, Degree: 1, Coeff: kpum.Coefficients{Name: kpum.CoeffConst, K: 1, R: 1}, DType: kernel.F64,
		Solve: &Solve{Tol: 1e-10, MaxIter: 100}}
	var outs []*Outcome
	sts := []string{Atomic, Fused}
	for _, st := range sts {
		c := cfg
		c.Strategy = st
		out, err := Bench(dev, c, 1)
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, out)
	}
	if len(outs) != len(sts) {
		t.Fatalf("%d timed runs, want %d", len(outs), len(sts))
	}
	for i, out := range outs {
		tm := out.Tm
		// Each phase is well under a millisecond here: a first launch
		// in any of them adds the whole delay.
		for name, d := range map[string]time.Duration{"set-up": tm.Setup, "decomposition": tm.Decompose, "integration": tm.Integrate,
			"assembly": tm.Assemble, "solve set-up": out.Solved.Setup, "solve": out.Solved.Time} {
			if d >= delay {
				t.Errorf("%s: %s took %v: a kernel's first launch was timed", sts[i], name, d)
			}
		}
	}
}
