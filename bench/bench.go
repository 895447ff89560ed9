package bench

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/emit"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/sparse"
	"github.com/bespoke-hpc/bespoke/operator"
	"github.com/bespoke-hpc/bespoke/verify"
)

// Config says what to time and how.
type Config struct {
	N int // columns of B and C (the least, with MinLaunchBytes)
	// MinLaunchBytes, when positive, raises n for an operator until one
	// launch moves at least this many ideal bytes (up to MaxN columns), so
	// that small operators are timed where bandwidth, not launch latency
	// and the tail of the grid, bounds them.
	MinLaunchBytes int64
	MaxN           int
	DType          kernel.DType //
	Alpha          float64      // 1 when zero
	Beta           func(op *operator.Operator) float64
	Warmup         int               // untimed launches before timing
	Reps           int               // timed launches; the median is reported
	WorkingSet     int64             // bytes each timed launch should touch across rotated sets
	MaxMemory      int64             // most device memory to allocate at once
	Variants       []sparse.Variant  // nil: sparse.Candidates
	Samples        int               // columns verified per candidate
	Baselines      []Baseline        // vendor libraries timed side by side
	Progress       func(step string) // each step of the timing loop, from one goroutine
	// Notes, when set, hears about background work (builds over 10 s); it
	// may be called from several goroutines at once.
	Notes func(note string)
	// Stop, when closed, ends the run after the operator in progress; the
	// report then holds the operators done so far (Report.Interrupted).
	Stop <-chan struct{}
}

// Baseline is a library implementation timed beside the generated kernels.
type Baseline interface {
	Name() string
	// Setup prepares C ← α·A·B + β·C for one operator; the returned
	// function runs it on a B and C with leading dimension ld.
	Setup(op *operator.Operator, dt kernel.DType, alpha, beta float64, n, ld int) (run func(b, c device.Buffer) error, err error)
}

func (c *Config) defaults() {
	if c.Alpha == 0 {
		c.Alpha = 1
	}
	if c.Beta == nil {
		c.Beta = func(*operator.Operator) float64 { return 0 }
	}
	if c.Warmup <= 0 {
		c.Warmup = 3
	}
	if c.Reps <= 0 {
		c.Reps = 20
	}
	if c.Samples <= 0 {
		c.Samples = 1024
	}
	if c.WorkingSet <= 0 {
		c.WorkingSet = 1 << 30
	}
	if c.MaxMemory <= 0 {
		c.MaxMemory = 8 << 30
	}
	if c.Progress == nil {
		c.Progress = func(string) {}
	}
	if c.Notes == nil {
		c.Notes = func(string) {}
	}
}

// table sizes for the device-side fill: primes, so the pattern does not
// line up with rows of any leading dimension.
const (
	periodB = 4093
	periodC = 4091
)

// Runner holds a device and the helper kernels for one precision.
type Runner struct {
	dev       device.Device
	cfg       Config
	aux       device.Program
	fillB     device.Kernel
	fillC     device.Kernel
	fillNaN   device.Kernel
	copyK     device.Kernel
	tabB      device.Buffer
	tabC      device.Buffer
	tabNaN    device.Buffer
	hostB     []float64
	hostC     []float64
	auxKernel map[string]*kernel.Kernel
}

// NewRunner builds the helper kernels and the fill tables.
func NewRunner(dev device.Device, cfg Config) (*Runner, error) {
	cfg.defaults()
	r := &Runner{dev: dev, cfg: cfg, auxKernel: map[string]*kernel.Kernel{}}
	dt := cfg.DType
	ks := []*kernel.Kernel{fillKernel(dt, periodB), fillKernel(dt, periodC), fillKernel(dt, 1), copyKernel(dt)}
	src, err := emit.Render(dev.Dialect(), ks...)
	if err != nil {
		return nil, err
	}
	if r.aux, err = dev.Build(src); err != nil {
		return nil, fmt.Errorf("building helper kernels: %w", err)
	}
	get := func(k *kernel.Kernel) device.Kernel {
		dk, e := r.aux.Kernel(k.Name)
		err = errors.Join(err, e)
		r.auxKernel[k.Name] = k
		return dk
	}
	r.fillB, r.fillC, r.fillNaN, r.copyK = get(ks[0]), get(ks[1]), get(ks[2]), get(ks[3])
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	draw := func(n int) []float64 {
		t := make([]float64, n)
		for i := range t {
			t[i] = verify.Rounded(dt, (0.5+rng.Float64())*float64(1-2*rng.IntN(2)))
		}
		return t
	}
	r.hostB, r.hostC = draw(periodB), draw(periodC)
	if r.tabB, err = r.upload(r.hostB); err == nil {
		if r.tabC, err = r.upload(r.hostC); err == nil {
			r.tabNaN, err = r.upload([]float64{math.NaN()})
		}
	}
	return r, err
}

func (r *Runner) upload(xs []float64) (device.Buffer, error) {
	b, err := r.dev.Alloc(int64(len(xs) * r.cfg.DType.Bytes()))
	if err != nil {
		return nil, err
	}
	return b, b.Upload(verify.Encode(r.cfg.DType, xs))
}

// Close frees the runner's buffers and programs.
func (r *Runner) Close() {
	for _, b := range []device.Buffer{r.tabB, r.tabC, r.tabNaN} {
		if b != nil {
			b.Free()
		}
	}
	if r.aux != nil {
		r.aux.Close()
	}
}

// fill writes n elements of x from a table (or NaN).
func (r *Runner) fill(k device.Kernel, tab, x device.Buffer, n int64) error {
	kk := r.auxKernel[k.Name()]
	return k.Launch(verify.Geometry(kk, int(n)), n, x, tab)
}

// Timing is the distribution of one candidate's launch times.
type Timing struct {
	Median time.Duration `json:"median_ns"`
	Min    time.Duration `json:"min_ns"`
	Max    time.Duration `json:"max_ns"`
	Reps   int           `json:"reps"`
}

// time runs launch(set) warmup times, then reps times rotating sets, and
// returns the distribution of the timed launches.
func (r *Runner) time(sets int, launch func(set int) error) (Timing, error) {
	for i := 0; i < r.cfg.Warmup; i++ {
		if err := launch(i % sets); err != nil {
			return Timing{}, err
		}
	}
	if err := r.dev.Sync(); err != nil {
		return Timing{}, err
	}
	ds := make([]time.Duration, r.cfg.Reps)
	for i := range ds {
		d, err := r.dev.Elapsed(func() error { return launch(i % sets) })
		if err != nil {
			return Timing{}, err
		}
		ds[i] = d
	}
	slices.Sort(ds)
	med := ds[len(ds)/2]
	if len(ds)%2 == 0 {
		med = (ds[len(ds)/2-1] + ds[len(ds)/2]) / 2
	}
	return Timing{Median: med, Min: ds[0], Max: ds[len(ds)-1], Reps: len(ds)}, nil
}

// Roof times the copy kernel over the configured working set and returns
// its bandwidth in GB/s (bytes read plus written, 10⁹ bytes per second).
func (r *Runner) Roof() (float64, Timing, error) {
	w := int64(r.cfg.DType.Bytes())
	n := r.cfg.WorkingSet / 2 / w
	n -= n % 2
	x, err := r.dev.Alloc(n * w)
	if err != nil {
		return 0, Timing{}, err
	}
	defer x.Free()
	y, err := r.dev.Alloc(n * w)
	if err != nil {
		return 0, Timing{}, err
	}
	defer y.Free()
	if err := r.fill(r.fillB, r.tabB, x, n); err != nil {
		return 0, Timing{}, err
	}
	ck := r.auxKernel[r.copyK.Name()]
	t, err := r.time(1, func(int) error { return r.copyK.Launch(verify.Geometry(ck, int(n)), n, x, y) })
	if err != nil {
		return 0, Timing{}, err
	}
	return float64(2*n*w) / t.Median.Seconds() / 1e9, t, nil
}
