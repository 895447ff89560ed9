package build

import (
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/kernel"
)

// Program is a program of kernels on one device: the kernels, built in
// one go by Batch (and so through the device's cache), launched by name
// with buffers and integer values bound by parameter name. A step binds
// a kernel once (Bind) and may be launched any number of times, alone or
// in a sequence (Run), which is how an iteration body is written; Time
// runs a sequence timing each launch. Close frees what the program
// allocated and closes its kernels.
//
// A Program is not safe for concurrent use.
type Program struct {
	dev     device.Device
	ks      map[string]*kernel.Kernel
	order   []string // kernel names as first given, for Timings
	built   map[string]device.Kernel
	closeKs func()
	bufs    map[string]device.Buffer
	owned   []device.Buffer
	values  map[string]int64
	timings map[string]*Timing
}

// Timing is what a program's launches of one kernel came to: how often
// it was launched, and the device time of those launches that Time timed.
type Timing struct {
	Kernel   string
	Launches int           // every launch: Run, Launch and Time
	Timed    int           // launches Time timed
	Total    time.Duration // their device time
}

// With binds one step beyond the program's own names. By default a buffer
// parameter takes the program's buffer of its name and an integer
// parameter or launch size the value Set gave its name.
type With struct {
	// Values gives integer parameters and launch sizes, over Set's;
	// each must be one of the kernel's (a typo is an error), so sizes
	// shared by several kernels go to Set.
	Values map[string]int64
	// Buffers renames: buffer parameter → the program buffer it takes.
	Buffers map[string]string
	// Use gives buffer parameters buffers the program does not name (a
	// caller's per-call views); it wins over Buffers.
	Use map[string]device.Buffer
}

// Step is a bound launch of one of a program's kernels.
type Step struct {
	kernel string
	dk     device.Kernel
	l      device.Launch
	args   []any
	t      *Timing
}

// Kernel is the name of the step's kernel.
func (s *Step) Kernel() string { return s.kernel }

func (s *Step) launch() error {
	s.t.Launches++
	if err := s.dk.Launch(s.l, s.args...); err != nil {
		return fmt.Errorf("build: launching %s: %w", s.kernel, err)
	}
	return nil
}

// NewProgram builds ks on dev in one go (Batch). Kernels of one name must
// be the same kernel; each is built once. An error names the kernel that
// failed to build.
func NewProgram(dev device.Device, ks ...*kernel.Kernel) (*Program, error) {
	p := &Program{dev: dev, ks: map[string]*kernel.Kernel{}, built: map[string]device.Kernel{},
		bufs: map[string]device.Buffer{}, values: map[string]int64{}, timings: map[string]*Timing{}}
	var distinct []*kernel.Kernel
	for _, k := range ks {
		if k == nil {
			return nil, fmt.Errorf("build: program: a nil kernel")
		}
		if old, ok := p.ks[k.Name]; ok {
			if old != k && !reflect.DeepEqual(old, k) {
				return nil, fmt.Errorf("build: program: two different kernels named %s", k.Name)
			}
			continue
		}
		p.ks[k.Name] = k
		p.order = append(p.order, k.Name)
		p.timings[k.Name] = &Timing{Kernel: k.Name}
		distinct = append(distinct, k)
	}
	out, closeKs := Batch(dev, distinct)
	p.closeKs = closeKs
	for i, b := range out {
		if b.Err != nil {
			closeKs()
			return nil, fmt.Errorf("build: kernel %s: %w", distinct[i].Name, b.Err)
		}
		p.built[distinct[i].Name] = b.Kernel
	}
	return p, nil
}

// Device is the device the program runs on.
func (p *Program) Device() device.Device { return p.dev }

// Kernel returns the built kernel of that name, nil if there is none (for
// its Resources).
func (p *Program) Kernel(name string) device.Kernel { return p.built[name] }

// Alloc allocates a buffer of at least bytes (8 at least: no device
// takes an empty allocation) under name; Close frees it.
func (p *Program) Alloc(name string, bytes int64) (device.Buffer, error) {
	if _, ok := p.bufs[name]; ok {
		return nil, fmt.Errorf("build: program: a second buffer named %q", name)
	}
	b, err := p.dev.Alloc(max(bytes, 8))
	if err != nil {
		return nil, fmt.Errorf("build: program: buffer %q of %d bytes: %w", name, bytes, err)
	}
	p.owned = append(p.owned, b)
	p.bufs[name] = b
	return b, nil
}

// Upload allocates a buffer under name (Alloc) and copies data into it.
func (p *Program) Upload(name string, data []byte) (device.Buffer, error) {
	b, err := p.Alloc(name, int64(len(data)))
	if err != nil {
		return nil, err
	}
	if err := b.Upload(data); err != nil {
		return nil, fmt.Errorf("build: program: uploading %q: %w", name, err)
	}
	return b, nil
}

// Use names a buffer the caller owns (Close leaves it alone).
func (p *Program) Use(name string, b device.Buffer) error {
	if _, ok := p.bufs[name]; ok {
		return fmt.Errorf("build: program: a second buffer named %q", name)
	}
	if b == nil {
		return fmt.Errorf("build: program: buffer %q is nil", name)
	}
	p.bufs[name] = b
	return nil
}

// Buffer returns the buffer of that name, nil if there is none.
func (p *Program) Buffer(name string) device.Buffer { return p.bufs[name] }

// Set gives every step bound after it the integer value v for the
// parameter or launch size name (With.Values overrides it for a step).
func (p *Program) Set(name string, v int64) { p.values[name] = v }

// Bind binds kernel to the program's buffers and values and w's. An
// error names the kernel and the parameter: an unknown kernel, a
// parameter without a buffer or value, or a name in w the kernel lacks.
func (p *Program) Bind(kernelName string, w With) (*Step, error) {
	k, ok := p.ks[kernelName]
	if !ok {
		return nil, fmt.Errorf("build: program has no kernel %s", kernelName)
	}
	bufParam := map[string]bool{}
	for _, prm := range k.Params {
		bufParam[prm.Name] = prm.Kind == kernel.BufferParam
	}
	for name := range w.Values {
		if bufParam[name] {
			return nil, fmt.Errorf("build: kernel %s: parameter %q is a buffer, not an integer", kernelName, name)
		}
		if _, isParam := bufParam[name]; !isParam && !launchSize(k, name) {
			return nil, fmt.Errorf("build: kernel %s has no integer parameter or launch size %q", kernelName, name)
		}
	}
	for _, m := range []map[string]bool{keys(w.Buffers), keys(w.Use)} {
		for name := range m {
			if !bufParam[name] {
				return nil, fmt.Errorf("build: kernel %s has no buffer parameter %q", kernelName, name)
			}
		}
	}
	bs := map[string]device.Buffer{}
	for _, prm := range k.Params {
		if prm.Kind != kernel.BufferParam {
			continue
		}
		if b := w.Use[prm.Name]; b != nil {
			bs[prm.Name] = b
			continue
		}
		name := prm.Name
		if r, ok := w.Buffers[prm.Name]; ok {
			name = r
		}
		b := p.bufs[name]
		if b == nil {
			return nil, fmt.Errorf("build: kernel %s: no buffer %q for parameter %q", kernelName, name, prm.Name)
		}
		bs[prm.Name] = b
	}
	vals := p.values
	if len(w.Values) > 0 {
		vals = make(map[string]int64, len(p.values)+len(w.Values))
		for n, v := range p.values {
			vals[n] = v
		}
		for n, v := range w.Values {
			vals[n] = v
		}
	}
	l, args, err := device.Bind(k, vals, bs)
	if err != nil {
		return nil, fmt.Errorf("build: %w", err)
	}
	return &Step{kernel: kernelName, dk: p.built[kernelName], l: l, args: args, t: p.timings[kernelName]}, nil
}

// launchSize reports whether name sizes one of k's grid axes.
func launchSize(k *kernel.Kernel, name string) bool {
	for _, a := range k.Launch.Grid {
		if a.Size == name {
			return true
		}
	}
	return false
}

func keys[V any](m map[string]V) map[string]bool {
	s := make(map[string]bool, len(m))
	for k := range m {
		s[k] = true
	}
	return s
}

// Launch binds kernel as Bind does and launches it once (for launches
// whose values change from call to call).
func (p *Program) Launch(kernelName string, w With) error {
	s, err := p.Bind(kernelName, w)
	if err != nil {
		return err
	}
	return s.launch()
}

// Run launches the steps in order, without waiting for them (a step may
// appear more than once).
func (p *Program) Run(steps ...*Step) error {
	for _, s := range steps {
		if err := s.launch(); err != nil {
			return err
		}
	}
	return nil
}

// Time runs the steps in order and returns the device time of each:
// between events enqueued around each launch where the device offers a
// series of them (device.SeriesTimer), else each launch on its own on the
// host's clock after a sync. The times add to Timings. Nothing runs
// before the first step, so on an idle device its time may include the
// host's enqueueing; timing costs a wait at the end at least, so Run
// steps that need no timing.
func (p *Program) Time(steps ...*Step) ([]time.Duration, error) {
	ds, err := device.ElapsedSeries(p.dev, len(steps), func(i int) error {
		if i == 0 {
			return nil // the lead-in: nothing to wait behind
		}
		return steps[i-1].launch()
	})
	if err != nil {
		return nil, err
	}
	for i, d := range ds {
		steps[i].t.Timed++
		steps[i].t.Total += d
	}
	return ds, nil
}

// Elapsed runs f, which launches (Run), and returns its device time as
// the device measures a section (device.Device.Elapsed).
func (p *Program) Elapsed(f func() error) (time.Duration, error) { return p.dev.Elapsed(f) }

// Timings returns, for each kernel in the order first given, its launches
// and timed device time so far.
func (p *Program) Timings() []Timing {
	out := make([]Timing, 0, len(p.order))
	for _, n := range p.order {
		out = append(out, *p.timings[n])
	}
	return out
}

// Close frees the buffers the program allocated and closes its kernels;
// buffers given by Use stay. A second Close does nothing.
func (p *Program) Close() error {
	var first error
	for _, b := range slices.Backward(p.owned) {
		if err := b.Free(); err != nil && first == nil {
			first = err
		}
	}
	p.owned = nil
	clear(p.bufs)
	if p.closeKs != nil {
		p.closeKs()
		p.closeKs = nil
	}
	return first
}
