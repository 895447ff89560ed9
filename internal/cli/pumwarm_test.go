package cli

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

// pum bench times no kernel's first launch: on a driver that compiles
// there, a cold cache counted the build in the integration time (issue 37:
// 1.07 s against 4.6 ms warm on PoCL).
func TestPUMBenchWarmsUp(t *testing.T) {
	hd, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	const delay = 300 * time.Millisecond
	dev := &lazyDevice{Device: hd, delay: delay, launched: map[string]bool{}}
	cfg := pumConfig{dim: 2, level: 2, degree: 1, coeff: kpum.Coefficients{Name: kpum.CoeffConst, K: 1, R: 1}, dt: kernel.F64,
		solve: &pumSolve{tol: 1e-10, maxIter: 100}}
	var outs []*pumOutcome
	run := func(_, _, strategy string, f func() (*pumOutcome, error)) error {
		out, err := f()
		outs = append(outs, out)
		return err
	}
	sts := []string{pumAtomic, pumFused}
	if err := benchPUMOnDevice(dev, cfg, sts, run); err != nil {
		t.Fatal(err)
	}
	if len(outs) != len(sts) {
		t.Fatalf("%d timed runs, want %d", len(outs), len(sts))
	}
	for i, out := range outs {
		tm := out.tm
		// Each phase is well under a millisecond here: a first launch
		// in any of them adds the whole delay.
		for name, d := range map[string]time.Duration{"set-up": tm.Setup, "decomposition": tm.Decompose, "integration": tm.Integrate,
			"assembly": tm.Assemble, "solve set-up": out.solved.Setup, "solve": out.solved.Time} {
			if d >= delay {
				t.Errorf("%s: %s took %v: a kernel's first launch was timed", sts[i], name, d)
			}
		}
	}
}
