package tuned

import (
	"errors"
	"fmt"
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
	"github.com/bespoke-hpc/bespoke/pum/run"
	"github.com/bespoke-hpc/bespoke/tune"
)

// buildLog is the C device recording its builds by source: those of
// programs closed without a launch (Choose's prebuild) apart from those
// of programs launched (the runs that verify and time), a failed build by
// whether anything had been launched, and the cache's compiled objects at
// the first launch; the build of a source holding fail fails.
type buildLog struct {
	*host.Device
	fail string

	mu          sync.Mutex
	launched    bool
	objects     int
	ahead, runs map[string]int
	names       map[string]string // a source's kernels, for messages
}

var errInjected = errors.New("injected build failure")

func (d *buildLog) Build(src emit.Source) (device.Program, error) {
	d.mu.Lock()
	d.names[src.Text] = strings.Join(src.Entries, " ")
	if d.fail != "" && strings.Contains(src.Text, d.fail) {
		if d.launched {
			d.runs[src.Text]++
		} else {
			d.ahead[src.Text]++
		}
		d.mu.Unlock()
		return nil, errInjected
	}
	d.mu.Unlock()
	p, err := d.Device.Build(src)
	if err != nil {
		return nil, err
	}
	return &logProgram{Program: p, d: d, src: src.Text}, nil
}

type logProgram struct {
	device.Program
	d        *buildLog
	src      string
	launched bool // under d.mu
}

func (p *logProgram) Kernel(entry string) (device.Kernel, error) {
	k, err := p.Program.Kernel(entry)
	if err != nil {
		return nil, err
	}
	return &logKernel{Kernel: k, p: p}, nil
}

func (p *logProgram) Close() error {
	p.d.mu.Lock()
	if p.launched {
		p.d.runs[p.src]++
	} else {
		p.d.ahead[p.src]++
	}
	p.d.mu.Unlock()
	return p.Program.Close()
}

type logKernel struct {
	device.Kernel
	p *logProgram
}

func (k *logKernel) Launch(l device.Launch, args ...any) error {
	d := k.p.d
	d.mu.Lock()
	if !d.launched {
		d.launched = true
		d.objects = cachedObjects()
	}
	k.p.launched = true
	d.mu.Unlock()
	return k.Kernel.Launch(l, args...)
}

// cachedObjects counts the C backend's compiled objects in the cache.
func cachedObjects() int {
	so, _ := filepath.Glob(filepath.Join(cache.Open("c").Dir(), "*.so"))
	return len(so)
}

// Choose builds every candidate's kernels (at the check level and at
// the timed level) before it runs any, each source once; the runs that
// verify and time the candidates then compile nothing: their programs
// come from the cache. A candidate whose kernels fail to build is
// reported with the build's error, never run, and the others are chosen
// among.
func TestChooseBuildsAhead(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds and times three pipelines")
	}
	t.Setenv("BESPOKE_NO_CACHE", "")
	hd, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer hd.Close()
	for _, tc := range []struct {
		name string
		fail string // a kernel whose build fails
	}{
		{"every candidate builds", ""},
		{"the fused candidate fails to build", "bespoke_pum_integrate_fused_"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("BESPOKE_CACHE_DIR", t.TempDir())
			dev := &buildLog{Device: hd, fail: tc.fail, ahead: map[string]int{}, runs: map[string]int{}, names: map[string]string{}}
			// Timed at level 4, verified at VerifyLevel 3: two sizes.
			in := Instance{Config: problem(2, VerifyLevel+1, 1, kernel.F64), Fixed: Free}
			ch, err := Choose(dev, in, nil)
			if err != nil {
				t.Fatal(err)
			}
			if ch.Source != Measured || len(ch.Times) != 3 {
				t.Fatalf("%s of %d candidates (%+v), want all three measured", ch.Source, len(ch.Times), ch.Times)
			}
			for _, tm := range ch.Times {
				c, _ := Parse(tm.Name)
				broken := tc.fail != "" && c.Strategy == run.Fused
				if tm.Verified == broken || broken != strings.Contains(tm.Err, errInjected.Error()) {
					t.Errorf("%s: verified %v, error %q", tm.Name, tm.Verified, tm.Err)
				}
				if broken && !strings.Contains(tm.Err, "build: kernel "+tc.fail) {
					t.Errorf("%s: %q does not name the kernel", tm.Name, tm.Err)
				}
			}
			if tc.fail != "" && ch.Candidate.Strategy == run.Fused {
				t.Errorf("chose %s, which does not build", ch.Candidate.Name())
			}
			if len(dev.ahead) == 0 || len(dev.runs) == 0 {
				t.Fatalf("%d sources built ahead, %d by the runs", len(dev.ahead), len(dev.runs))
			}
			for src, n := range dev.ahead {
				if n != 1 && tc.fail == "" {
					t.Errorf("a source built %d times ahead: %s", n, dev.names[src])
				}
			}
			for src := range dev.runs {
				if dev.ahead[src] == 0 {
					t.Errorf("a run built a source not built ahead: %s", dev.names[src])
				}
				if tc.fail != "" && strings.Contains(src, tc.fail) {
					t.Errorf("a run built the failing kernel again: %s", dev.names[src])
				}
			}
			if got := cachedObjects(); got != dev.objects {
				t.Errorf("%d objects in the cache after the choice, %d at the first launch: a run compiled", got, dev.objects)
			}
		})
	}
}

// gpuLog is buildLog taken for a GPU: Choose's progress lines are for
// GPUs.
type gpuLog struct{ *buildLog }

func (d gpuLog) Info() device.Info {
	i := d.buildLog.Info()
	i.GPU = true
	return i
}

// A choice stopped before it builds builds nothing and says it stopped;
// on a GPU it first says, in one line, how many kernels of how many
// candidates it builds.
func TestChooseStops(t *testing.T) {
	hd, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer hd.Close()
	stop := make(chan struct{})
	close(stop)
	for _, gpu := range []bool{false, true} {
		log := &buildLog{Device: hd, ahead: map[string]int{}, runs: map[string]int{}, names: map[string]string{}}
		var dev device.Device = log
		if gpu {
			dev = gpuLog{log}
		}
		var progress strings.Builder
		in := Instance{Config: problem(2, 3, 1, kernel.F64), Fixed: Free, Progress: &progress, Stop: stop}
		ch, err := Choose(dev, in, nil)
		if !errors.Is(err, run.ErrStopped) || ch != nil {
			t.Errorf("gpu %v: %+v, %v; want stopped", gpu, ch, err)
		}
		if n := len(log.ahead) + len(log.runs); n != 0 {
			t.Errorf("gpu %v: %d sources built after the stop", gpu, n)
		}
		t.Logf("gpu %v: progress %q", gpu, progress.String())
		lines := strings.Split(strings.TrimSpace(progress.String()), "\n")
		var kernels, candidates int
		_, scanErr := fmt.Sscanf(lines[0], "pum: building %d kernels of %d candidates", &kernels, &candidates)
		switch {
		case !gpu && progress.Len() != 0:
			t.Errorf("cpu: progress %q, want none", progress.String())
		case gpu && (len(lines) != 1 || scanErr != nil || kernels < candidates || candidates != len(in.Candidates(tune.Target(dev)))):
			t.Errorf("gpu: progress %q (%v), want one line of the kernels of every candidate", progress.String(), scanErr)
		}
	}
}
