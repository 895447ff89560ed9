package tuned

import (
	"strings"
	"testing"
	"time"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/emit"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/pum/run"
	"github.com/bespoke-hpc/bespoke/tune"
)

// slowDevice is the C device with every launch of a kernel whose name
// holds slow taking delay longer: a device where those kernels are slow;
// with skip, those launches do nothing at all (a wrong kernel).
type slowDevice struct {
	*host.Device
	slow  string
	delay time.Duration
	skip  bool
}

func (d *slowDevice) Build(src emit.Source) (device.Program, error) {
	p, err := d.Device.Build(src)
	if err != nil {
		return nil, err
	}
	return &slowProgram{Program: p, d: d}, nil
}

type slowProgram struct {
	device.Program
	d *slowDevice
}

func (p *slowProgram) Kernel(entry string) (device.Kernel, error) {
	k, err := p.Program.Kernel(entry)
	if err != nil || !strings.Contains(entry, p.d.slow) {
		return k, err
	}
	return &slowKernel{Kernel: k, delay: p.d.delay, skip: p.d.skip}, nil
}

type slowKernel struct {
	device.Kernel
	delay time.Duration
	skip  bool
}

func (k *slowKernel) Launch(l device.Launch, args ...any) error {
	if k.skip {
		return nil
	}
	time.Sleep(k.delay)
	return k.Kernel.Launch(l, args...)
}

// The choice follows what the device measures: where the assembly
// kernels are slow the fused strategy (which has none) wins, and where
// the fused integration kernel is slow another strategy does.
func TestChooseFollowsTheDevice(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds and times six pipelines")
	}
	t.Setenv("BESPOKE_NO_CACHE", "")
	hd, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer hd.Close()
	in := Instance{Config: problem(2, 2, 1, kernel.F64), Fixed: Free}
	for _, tc := range []struct {
		slow      string
		fused     bool
		whatSlows string
	}{
		{"bespoke_pum_assemble_", true, "assembly kernels"},
		{"bespoke_pum_integrate_fused_", false, "fused integration kernels"},
	} {
		// A store of its own: the slowed device has the C device's facts,
		// so it would read the other's winner.
		t.Setenv("BESPOKE_CACHE_DIR", t.TempDir())
		dev := &slowDevice{Device: hd, slow: tc.slow, delay: 5 * time.Millisecond}
		ch, err := Choose(dev, in, tune.Open())
		if err != nil {
			t.Fatal(err)
		}
		if ch.Source != Measured || (ch.Candidate.Strategy == run.Fused) != tc.fused {
			t.Errorf("slow %s: %s chose %s (%+v)", tc.whatSlows, ch.Source, ch.Candidate.Name(), ch.Times)
		}
	}
}

// A candidate that computes a wrong system never wins, however fast: on
// a device whose assembly kernels do nothing, the atomic and colour
// strategies are quick and wrong, and the fused one is chosen.
func TestChooseVerifies(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds and checks six pipelines")
	}
	t.Setenv("BESPOKE_NO_CACHE", "")
	t.Setenv("BESPOKE_CACHE_DIR", t.TempDir())
	hd, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer hd.Close()
	dev := &slowDevice{Device: hd, slow: "bespoke_pum_assemble_", skip: true}
	ch, err := Choose(dev, Instance{Config: problem(2, 2, 1, kernel.F64), Fixed: Free}, tune.Open())
	if err != nil {
		t.Fatal(err)
	}
	if ch.Candidate.Strategy != run.Fused {
		t.Errorf("chose %s (%+v), want the fused candidate", ch.Candidate.Name(), ch.Times)
	}
	for _, tm := range ch.Times {
		if wrong := tm.Name != ch.Candidate.Name(); wrong != strings.Contains(tm.Err, "wrong system") || tm.Verified == wrong {
			t.Errorf("%s: verified %v, error %q", tm.Name, tm.Verified, tm.Err)
		}
	}
	// Every candidate wrong: the choice fails with the first one's reason.
	dev.slow = "bespoke_pum_integrate_"
	if _, err := Choose(dev, Instance{Config: problem(2, 2, 1, kernel.F64), Fixed: Free}, nil); err == nil || !strings.Contains(err.Error(), "wrong system") {
		t.Errorf("every candidate wrong: %v", err)
	}
}
