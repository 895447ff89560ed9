package run

import (
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/emit"
	"github.com/bespoke-hpc/bespoke/internal/cache"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/kernel"
	kpum "github.com/bespoke-hpc/bespoke/kernel/pum"
)

// buildLog is the C device counting its builds by source; with fail set,
// every build fails without compiling.
type buildLog struct {
	*host.Device
	fail   error
	mu     sync.Mutex
	builds map[string]int
	names  map[string]string // a source's kernels, for messages
}

func (d *buildLog) Build(src emit.Source) (device.Program, error) {
	d.mu.Lock()
	d.builds[src.Text]++
	d.names[src.Text] = strings.Join(src.Entries, " ")
	d.mu.Unlock()
	if d.fail != nil {
		return nil, d.fail
	}
	return d.Device.Build(src)
}

// take returns the builds so far and forgets them.
func (d *buildLog) take() map[string]int {
	d.mu.Lock()
	defer d.mu.Unlock()
	b := d.builds
	d.builds = map[string]int{}
	return b
}

func openLog(t *testing.T) *buildLog {
	t.Helper()
	hd, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	return &buildLog{Device: hd, builds: map[string]int{}, names: map[string]string{}}
}

// objects counts the C backend's compiled objects in the cache.
func objects(t *testing.T) int {
	t.Helper()
	so, err := filepath.Glob(filepath.Join(cache.Open("c").Dir(), "*.so"))
	if err != nil {
		t.Fatal(err)
	}
	return len(so)
}

func smallConfig(strategy, decompose string, perCell bool) Config {
	return Config{Dim: 2, Level: 2, Degree: 1, Coeff: kpum.Coefficients{Name: kpum.CoeffSmooth, K: 1, R: 1}, DType: kernel.F64,
		Strategy: strategy, Decompose: decompose, PerCell: perCell}
}

// Prebuild compiles each distinct program once, programs of the same
// kernels once; OnDevice's runs of the same configs then build the same
// sources and compile nothing: every program comes from the cache.
func TestPrebuildThenRunsHitTheCache(t *testing.T) {
	t.Setenv("BESPOKE_CACHE_DIR", t.TempDir())
	t.Setenv("BESPOKE_NO_CACHE", "")
	dev := openLog(t)
	cfgs := []Config{
		smallConfig(Atomic, DecompDevice, false),
		smallConfig(Fused, "", false),
		smallConfig(Atomic, DecompDevice, false), // the first's kernels again
	}
	if !testing.Short() {
		cfgs = append(cfgs, smallConfig(Colour, DecompHost, false), smallConfig(Fused, DecompDevice, true))
	}
	ks, errs := Kernels(dev, cfgs...)
	for i, err := range errs {
		if err != nil || len(ks[i]) == 0 {
			t.Fatalf("config %d: %d kernels, %v", i, len(ks[i]), err)
		}
	}
	for i, err := range Prebuild(dev, ks, nil) {
		if err != nil {
			t.Fatalf("config %d: %v", i, err)
		}
	}
	ahead := dev.take()
	for src, n := range ahead {
		if n != 1 {
			t.Errorf("a source built %d times ahead: %s", n, dev.names[src])
		}
	}
	if got, want := len(ahead), len(cfgs)-1; got != want {
		t.Errorf("%d sources built ahead for %d distinct programs", got, want)
	}
	if got := objects(t); got != len(ahead) {
		t.Errorf("%d objects in the cache after building %d sources", got, len(ahead))
	}
	for i, cfg := range cfgs {
		if _, err := OnDevice(dev, cfg); err != nil {
			t.Fatalf("config %d: %v", i, err)
		}
	}
	for src := range dev.take() {
		if ahead[src] == 0 {
			t.Errorf("a run built a source not built ahead: %s", dev.names[src])
		}
	}
	if got := objects(t); got != len(ahead) {
		t.Errorf("%d objects in the cache after the runs, %d before: a run compiled", got, len(ahead))
	}
}

// Kernels refuses what OnDevice refuses, with its error.
func TestKernelsErrors(t *testing.T) {
	dev := openLog(t)
	for _, tc := range []struct {
		name string
		edit func(*Config)
	}{
		{"strategy", func(c *Config) { c.Strategy = "tree" }},
		{"integrator", func(c *Config) { c.Integrator = "warp" }},
		{"decomposition", func(c *Config) { c.Decompose = "gpu" }},
		{"fused thread kernel", func(c *Config) { c.Strategy, c.Integrator = Fused, Thread }},
		{"tensor cores on a CPU", func(c *Config) { c.Integrator, c.MMA = Group, 16 }},
		{"level", func(c *Config) { c.Level = -1 }},
	} {
		cfg := smallConfig(Atomic, DecompDevice, false)
		tc.edit(&cfg)
		_, want := OnDevice(dev, cfg)
		ks, errs := Kernels(dev, smallConfig(Atomic, DecompDevice, false), cfg)
		if errs[0] != nil || len(ks[0]) == 0 {
			t.Errorf("%s: the good config beside it: %d kernels, %v", tc.name, len(ks[0]), errs[0])
		}
		if want == nil || errs[1] == nil || errs[1].Error() != want.Error() || ks[1] != nil {
			t.Errorf("%s: Kernels %v (%d kernels), OnDevice %v", tc.name, errs[1], len(ks[1]), want)
		}
	}
	if n := len(dev.take()); n != 0 {
		t.Errorf("%d builds for configs that cannot run", n)
	}
}

// A build error is its program's (and its duplicates'), naming the
// kernel; a program not begun when stop closed has ErrStopped; nothing is
// built with caching off; a nil program is no error.
func TestPrebuildErrors(t *testing.T) {
	t.Setenv("BESPOKE_CACHE_DIR", t.TempDir())
	dev := openLog(t)
	ks, errs := Kernels(dev, smallConfig(Atomic, DecompDevice, false), smallConfig(Fused, DecompDevice, false))
	if errs[0] != nil || errs[1] != nil {
		t.Fatal(errs)
	}
	progs := [][]*kernel.Kernel{ks[0], nil, ks[1], ks[0]}
	closed := make(chan struct{})
	close(closed)
	bad := errors.New("no compiler today")
	for _, tc := range []struct {
		name     string
		noCache  string
		stop     <-chan struct{}
		want     error // of the non-nil programs
		wantSome bool  // builds
	}{
		{"build error", "", nil, bad, true},
		{"stopped", "", closed, ErrStopped, false},
		{"caching off", "1", nil, nil, false},
	} {
		t.Setenv("BESPOKE_NO_CACHE", tc.noCache)
		dev.fail = bad
		got := Prebuild(dev, progs, tc.stop)
		for i, err := range got {
			if want := tc.want; progs[i] == nil && err != nil || progs[i] != nil && !errors.Is(err, want) {
				t.Errorf("%s: program %d: %v, want %v", tc.name, i, err, want)
			}
			if tc.want == bad && progs[i] != nil && !strings.Contains(err.Error(), "build: kernel bespoke_pum_") {
				t.Errorf("%s: program %d: %v names no kernel", tc.name, i, err)
			}
		}
		if n := len(dev.take()); (n > 0) != tc.wantSome {
			t.Errorf("%s: %d sources built", tc.name, n)
		}
	}
}
