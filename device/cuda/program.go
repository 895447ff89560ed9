package cuda

import (
	"bufio"
	"errors"
	"fmt"
	"github.com/bespoke-hpc/bespoke/internal/cache"
	"math"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/emit"
	"github.com/bespoke-hpc/bespoke/internal/dl"
)

// ptxasVerbose asks ptxas for per-kernel spill statistics in the NVRTC log.
const ptxasVerbose = "--ptxas-options=-v"

// Options returns the NVRTC options Build uses for this device, and whether
// the output is CUBIN (otherwise PTX, JIT-compiled by the driver).
func (d *Device) Options() (opts []string, cubin bool, err error) {
	if err := loadNVRTC(); err != nil {
		return nil, false, err
	}
	cubin = nvrtc.cubin
	arch := fmt.Sprintf("-arch=sm_%d%d", d.major, d.minor)
	if !cubin {
		arch = fmt.Sprintf("-arch=compute_%d%d", d.major, d.minor)
	}
	opts = []string{arch, "-default-device", "-std=c++17"}
	if cubin {
		opts = append(opts, ptxasVerbose)
	}
	return opts, cubin, nil
}

// compile returns the image of src for d, from the cache when present. hit
// reports a cache hit. Safe on any goroutine.
func (d *Device) compile(src emit.Source) (c compiled, hit bool, err error) {
	if src.Dialect != emit.CUDA {
		return c, false, fmt.Errorf("cuda: cannot build %q source", src.Dialect)
	}
	if cc := 10*d.major + d.minor; src.MinArch > cc {
		return c, false, fmt.Errorf("cuda: the kernels need sm_%d (tensor-core mma), this device is sm_%d", src.MinArch, cc)
	}
	opts, cubin, err := d.Options()
	if err != nil {
		return c, false, err
	}
	if src.ArchSpecific {
		// sm_90a's instructions (wgmma) run on sm_90 only, built for
		// the arch-specific target.
		if cc := 10*d.major + d.minor; cc != src.MinArch {
			return c, false, fmt.Errorf("cuda: the kernels use sm_%da instructions (wgmma), which run on sm_%d only; this device is sm_%d", src.MinArch, src.MinArch, cc)
		}
		opts = append(slices.Clone(opts[:1]), opts[1:]...)
		opts[0] += "a"
	}
	key := cache.Key("bespoke-cuda-v2", src.Text, strings.Join(opts, "\x01"), fmt.Sprintf("sm_%d%d", d.major, d.minor),
		fmt.Sprintf("driver %d", drv.version), fmt.Sprintf("nvrtc %d.%d", nvrtc.major, nvrtc.minor), fmt.Sprintf("cubin %v", cubin))
	// The image (CUBIN or PTX) and NVRTC's log (ptxas's spill counts) are
	// two entries; an image without its log is compiled again.
	st := cache.Open("cuda")
	if img, ok := st.Get(key); ok && len(img) > 0 {
		if log, ok := st.Get(key + "-log"); ok {
			return compiled{image: img, log: string(log)}, true, nil
		}
	}
	c, err = nvrtcCompile(src.Text, opts, cubin)
	var ce *CompileError
	if err != nil && errors.As(err, &ce) && ce.Code == nvrtcErrInvalidOption && cubin {
		// An NVRTC that does not take --ptxas-options: build without it.
		c, err = nvrtcCompile(src.Text, opts[:len(opts)-1], cubin)
	}
	if err != nil {
		return c, false, fmt.Errorf("cuda: %w", err)
	}
	// Best effort: an image that cannot be cached is no error.
	_ = st.Put(key+"-log", []byte(c.log))
	_ = st.Put(key, c.image)
	return c, false, nil
}

// Program is a loaded CUDA module.
type Program struct {
	d       *Device
	mod     uintptr
	log     string
	cached  bool
	kernels map[string]*Kernel
	spills  map[string]int
}

var _ device.Program = (*Program)(nil)

// Compile compiles src with NVRTC into the CUBIN cache without loading it
// (device.Compiler). Safe on any goroutine.
func (d *Device) Compile(src emit.Source) error {
	_, _, err := d.compile(src)
	return err
}

// Build compiles src with NVRTC (or takes it from the cache) and loads it.
// Every entry of src.Entries must be an extern "C" __global__ function.
func (d *Device) Build(src emit.Source) (device.Program, error) {
	p, err := d.BuildProgram(src)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// BuildProgram is Build returning the concrete type.
func (d *Device) BuildProgram(src emit.Source) (*Program, error) {
	c, hit, err := d.compile(src)
	if err != nil {
		return nil, err
	}
	return d.load(src, c, hit)
}

// BuildAll compiles srcs in parallel goroutines (NVRTC is thread-safe) and
// loads the modules on the calling goroutine. progs[i] is nil where errs[i]
// is not.
func (d *Device) BuildAll(srcs []emit.Source) ([]device.Program, []error) {
	progs := make([]device.Program, len(srcs))
	errs := make([]error, len(srcs))
	comp := make([]compiled, len(srcs))
	hits := make([]bool, len(srcs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i := range srcs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			comp[i], hits[i], errs[i] = d.compile(srcs[i])
		}(i)
	}
	wg.Wait()
	for i := range srcs {
		if errs[i] != nil {
			continue
		}
		p, err := d.load(srcs[i], comp[i], hits[i])
		if err != nil {
			errs[i] = err
			continue
		}
		progs[i] = p
	}
	return progs, errs
}

func (d *Device) load(src emit.Source, c compiled, hit bool) (*Program, error) {
	p := &Program{d: d, log: c.log, cached: hit, kernels: map[string]*Kernel{}, spills: parseSpills(c.log)}
	err := d.Do(func() error {
		if err := check("cuModuleLoadData", drv.cuModuleLoadData(&p.mod, unsafe.Pointer(&c.image[0]))); err != nil {
			return err
		}
		for _, e := range src.Entries {
			k := &Kernel{p: p, name: e}
			if err := check("cuModuleGetFunction("+e+")", drv.cuModuleGetFunction(&k.fn, p.mod, e)); err != nil {
				drv.cuModuleUnload(p.mod)
				return err
			}
			attr := func(a int32) int {
				var v int32
				drv.cuFuncGetAttribute(&v, a, k.fn)
				return int(v)
			}
			k.res = device.Resources{
				Registers:   attr(funcNumRegs),
				SharedBytes: attr(funcSharedSizeBytes),
				LocalBytes:  attr(funcLocalSizeBytes),
			}
			if s, ok := p.spills[e]; ok {
				k.res.SpillBytes = s
			} else {
				k.res.SpillBytes = k.res.LocalBytes // upper bound when ptxas said nothing
			}
			k.maxThreads = attr(funcMaxThreadsPerBlock)
			p.kernels[e] = k
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cuda: %w", err)
	}
	return p, nil
}

var (
	reFuncProps = regexp.MustCompile(`Function properties for (\S+)`)
	reSpill     = regexp.MustCompile(`(\d+) bytes spill stores`)
)

// parseSpills reads "N bytes spill stores" per function from ptxas -v output.
func parseSpills(log string) map[string]int {
	m := map[string]int{}
	fn := ""
	sc := bufio.NewScanner(strings.NewReader(log))
	for sc.Scan() {
		line := sc.Text()
		if s := reFuncProps.FindStringSubmatch(line); s != nil {
			fn = strings.Trim(s[1], "'")
			continue
		}
		if s := reSpill.FindStringSubmatch(line); s != nil && fn != "" {
			n, _ := strconv.Atoi(s[1])
			m[fn] = n
			fn = ""
		}
	}
	return m
}

// Log is NVRTC's log for the build (ptxas statistics; warnings).
func (p *Program) Log() string { return p.log }

// Cached reports whether the image came from the on-disk cache.
func (p *Program) Cached() bool { return p.cached }

// Kernel returns the entry point named entry.
func (p *Program) Kernel(entry string) (device.Kernel, error) {
	k, ok := p.kernels[entry]
	if !ok {
		return nil, fmt.Errorf("cuda: program has no entry %q", entry)
	}
	return k, nil
}

// Close unloads the module; its kernels must not be launched afterwards.
func (p *Program) Close() error {
	if p.mod == 0 {
		return nil
	}
	mod := p.mod
	p.mod = 0
	return p.d.Do(func() error { return check("cuModuleUnload", drv.cuModuleUnload(mod)) })
}

// Kernel is one CUfunction of a Program.
type Kernel struct {
	p          *Program
	name       string
	fn         uintptr
	res        device.Resources
	maxThreads int

	mu        sync.Mutex
	maxShared int // dynamic shared bytes granted with cuFuncSetAttribute
}

var _ device.Kernel = (*Kernel)(nil)

// Name is the entry point's name.
func (k *Kernel) Name() string { return k.name }

// Resources reports registers, static shared memory and local memory per
// thread (cuFuncGetAttribute), and spill stores from ptxas.
func (k *Kernel) Resources() device.Resources { return k.res }

// MaxThreadsPerBlock is the most threads per block this kernel can launch
// with, given its register use.
func (k *Kernel) MaxThreadsPerBlock() int { return k.maxThreads }

// Launch enqueues the kernel on the default stream. Args are, in parameter
// order: a Buffer (any value with a Ptr() uintptr method, passed as a device
// pointer), int32, int64, uint32, uint64, float32 or float64. Zero grid or
// block dimensions count as 1. Dynamic shared memory over 48 KiB is opted in
// with cuFuncSetAttribute.
func (k *Kernel) Launch(l device.Launch, args ...any) error {
	var arena dl.Arena
	defer arena.Free()
	vals := make([]uint64, max(len(args), 1))
	arena.Pin(&vals[0])
	ptrs := make([]unsafe.Pointer, max(len(args), 1))
	for i, a := range args {
		switch v := a.(type) {
		case interface{ Ptr() uintptr }:
			vals[i] = uint64(v.Ptr())
		case int32:
			vals[i] = uint64(uint32(v))
		case uint32:
			vals[i] = uint64(v)
		case int64:
			vals[i] = uint64(v)
		case uint64:
			vals[i] = v
		case float32:
			vals[i] = uint64(math.Float32bits(v))
		case float64:
			vals[i] = math.Float64bits(v)
		default:
			return fmt.Errorf("cuda: %s: argument %d has unsupported type %T", k.name, i, a)
		}
		ptrs[i] = unsafe.Pointer(&vals[i])
	}
	arena.Pin(&ptrs[0])
	var dims [6]uint32
	for i := 0; i < 3; i++ {
		g, b := l.Grid[i], l.Block[i]
		if g < 0 || b < 0 || g > math.MaxUint32 || b > math.MaxUint32 {
			return fmt.Errorf("cuda: %s: bad launch grid %v block %v", k.name, l.Grid, l.Block)
		}
		dims[i], dims[3+i] = uint32(max(g, 1)), uint32(max(b, 1))
	}
	if l.SharedBytes < 0 {
		return fmt.Errorf("cuda: %s: negative shared bytes", k.name)
	}
	return k.p.d.Do(func() error {
		if l.SharedBytes > 48*1024 {
			k.mu.Lock()
			if l.SharedBytes > k.maxShared {
				if err := check("cuFuncSetAttribute", drv.cuFuncSetAttribute(k.fn, funcMaxDynamicSharedMem, int32(l.SharedBytes))); err != nil {
					k.mu.Unlock()
					return fmt.Errorf("cuda: %s: %w", k.name, err)
				}
				k.maxShared = l.SharedBytes
			}
			k.mu.Unlock()
		}
		var params unsafe.Pointer
		if len(args) > 0 {
			params = unsafe.Pointer(&ptrs[0])
		}
		r := drv.cuLaunchKernel(k.fn, dims[0], dims[1], dims[2], dims[3], dims[4], dims[5],
			uint32(l.SharedBytes), 0, params, nil)
		if err := check("cuLaunchKernel", r); err != nil {
			return fmt.Errorf("cuda: %s: %w", k.name, err)
		}
		return nil
	})
}
