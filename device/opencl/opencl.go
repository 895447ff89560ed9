// Package opencl is the OpenCL backend. It loads the ICD loader
// (libOpenCL.so.1, or the path in $BESPOKE_OPENCL_LIBRARY) at run time
// through purego, so it builds with CGO_ENABLED=0 and a machine without
// OpenCL gets an error value, not a link failure.
//
// Programs are built from OpenCL C 1.2 source (emit.OpenCL) with the options
// "-cl-std=CL1.2" (plus $BESPOKE_OPENCL_OPTIONS) and no fast-math flags. Built binaries are kept in
// $BESPOKE_CACHE_DIR/opencl (default os.UserCacheDir()/bespoke/opencl),
// keyed by the sha256 of platform, device, driver version, options and
// source, and reused when the driver accepts them back;
// BESPOKE_NO_CACHE=1 disables that.
//
// Kernel arguments: a *Buffer of this device (passed as its cl_mem), int32
// (4 bytes, a kernel "int"), int64 or int (8 bytes, a kernel "long"),
// float32 and float64. Launch geometry: global size Grid[i]*Block[i], local
// size Block[i], in as many dimensions as are needed (a zero in Grid[1:]
// or Block counts as 1; Grid[0] == 0 launches nothing). Launch.SharedBytes is
// ignored: kernels declare their __local memory statically.
//
// Go memory that OpenCL reads through a pointer during a call (argument
// values, size arrays, strings) is pinned with runtime.Pinner for the call.
package opencl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/emit"
	"github.com/bespoke-hpc/bespoke/internal/cache"
	"github.com/bespoke-hpc/bespoke/internal/dl"
)

// BuildOptions are passed to clBuildProgram.
const BuildOptions = "-cl-std=CL1.2"

// maxLogLines is how many lines of the build log an error carries.
const maxLogLines = 40

var (
	_ device.Device  = (*Device)(nil)
	_ device.Program = (*Program)(nil)
	_ device.Kernel  = (*Kernel)(nil)
	_ device.Buffer  = (*Buffer)(nil)

	_ device.Compiler = (*Device)(nil)
)

type entry struct {
	platform, device uintptr
	info             device.Info
	platformVersion  string
	driver           string
}

func describe(p, d uintptr) (entry, error) {
	e := entry{platform: p, device: d}
	var err error
	str := func(param uint32) string {
		s, e2 := deviceString(d, param)
		if e2 != nil && err == nil {
			err = e2
		}
		return strings.TrimSpace(s)
	}
	num := func(param uint32, size uintptr) uint64 {
		v, e2 := deviceUint(d, param, size)
		if e2 != nil && err == nil {
			err = e2
		}
		return v
	}
	pname, perr := platformString(p, clPlatformName)
	if perr != nil {
		return e, perr
	}
	e.platformVersion, _ = platformString(p, clPlatformVersion)
	e.info = device.Info{
		Backend:        "opencl",
		Platform:       strings.TrimSpace(pname),
		Name:           str(clDeviceName),
		Arch:           str(clDeviceVersion),
		ComputeUnits:   int(num(clDeviceMaxComputeUnits, 4)),
		MemoryBytes:    int64(num(clDeviceGlobalMemSize, 8)),
		L2Bytes:        int64(num(clDeviceGlobalMemCacheSize, 8)),
		LastCacheBytes: int64(num(clDeviceGlobalMemCacheSize, 8)),
		SharedPerBlock: int(num(clDeviceLocalMemSize, 8)),
		MaxBlock:       int(num(clDeviceMaxWorkGroupSize, unsafe.Sizeof(uintptr(0)))),
	}
	e.driver = str(clDriverVersion)
	e.info.GPU = num(clDeviceType, 8)&clDeviceTypeGPU != 0
	ext := str(clDeviceExtensions)
	fp, fpErr := deviceUint(d, clDeviceDoubleFPConfig, 8)
	e.info.FP64 = strings.Contains(ext, "cl_khr_fp64") || (fpErr == nil && fp != 0)
	return e, err
}

func enumerate() ([]entry, error) {
	if err := load(); err != nil {
		return nil, err
	}
	ps, err := platforms()
	if err != nil {
		return nil, err
	}
	var all []entry
	for pi, p := range ps {
		ds, err := devices(p)
		if err != nil {
			return nil, err
		}
		for di, d := range ds {
			e, err := describe(p, d)
			if err != nil {
				return nil, err
			}
			e.info.ID = fmt.Sprintf("%d:%d", pi, di)
			all = append(all, e)
		}
	}
	return all, nil
}

// Available reports whether libOpenCL loads and lists at least one device;
// the error says why not.
func Available() error {
	all, err := enumerate()
	if err != nil {
		return err
	}
	if len(all) == 0 {
		return errors.New("opencl: no OpenCL platform with a device (is a driver such as pocl-opencl-icd installed?)")
	}
	return nil
}

// List describes every device of every platform (Platform is the platform's
// name). It is an error when libOpenCL cannot be loaded, and an empty list
// when no platform or device exists.
func List() ([]device.Info, error) {
	all, err := enumerate()
	if err != nil {
		return nil, err
	}
	infos := make([]device.Info, len(all))
	for i, e := range all {
		infos[i] = e.info
	}
	return infos, nil
}

// Open creates a context and a profiling command queue on one device.
// selector "" picks the first GPU, else the first device; "P:D" picks device
// D of platform P (both 0-based); anything else is a case-insensitive
// substring of the platform or device name ("pocl", "nvidia").
func Open(selector string) (*Device, error) {
	all, err := enumerate()
	if err != nil {
		return nil, err
	}
	if len(all) == 0 {
		return nil, errors.New("opencl: no OpenCL platform with a device (is a driver such as pocl-opencl-icd installed?)")
	}
	e, err := choose(all, selector)
	if err != nil {
		return nil, err
	}
	d := &Device{platform: e.platform, dev: e.device, info: e.info, driver: e.driver, platformVersion: e.platformVersion, options: baseOptions()}
	var a dl.Arena
	defer a.Free()
	var code int32
	props := a.Uintptrs(clContextPlatform, e.platform, 0)
	d.ctx = cl.CreateContext(props, 1, a.Uintptrs(e.device), 0, 0, &code)
	if err := check("clCreateContext", code); err != nil {
		return nil, err
	}
	d.queue = cl.CreateCommandQueue(d.ctx, e.device, clQueueProfilingEnable, &code)
	if err := check("clCreateCommandQueue", code); err != nil {
		cl.ReleaseContext(d.ctx)
		return nil, err
	}
	return d, nil
}

func choose(all []entry, sel string) (entry, error) {
	sel = strings.TrimSpace(sel)
	if sel == "" {
		for _, e := range all {
			if e.info.GPU {
				return e, nil
			}
		}
		return all[0], nil
	}
	if ps, ds, ok := strings.Cut(sel, ":"); ok {
		pi, err1 := strconv.Atoi(ps)
		di, err2 := strconv.Atoi(ds)
		if err1 == nil && err2 == nil {
			// Platform indices follow enumeration order.
			var plats []uintptr
			for _, e := range all {
				if len(plats) == 0 || plats[len(plats)-1] != e.platform {
					plats = append(plats, e.platform)
				}
			}
			if pi >= 0 && pi < len(plats) {
				n := 0
				for _, e := range all {
					if e.platform == plats[pi] {
						if n == di {
							return e, nil
						}
						n++
					}
				}
			}
			return entry{}, fmt.Errorf("opencl: no device %s; have %s", sel, names(all))
		}
	}
	low := strings.ToLower(sel)
	if low == "pocl" { // PoCL's platform calls itself by its long name
		low = "portable computing language"
	}
	for _, e := range all {
		if strings.Contains(strings.ToLower(e.info.Platform), low) || strings.Contains(strings.ToLower(e.info.Name), low) {
			return e, nil
		}
	}
	return entry{}, fmt.Errorf("opencl: no device matches %q; have %s", sel, names(all))
}

func names(all []entry) string {
	var s []string
	pi, last := -1, uintptr(0)
	di := 0
	for _, e := range all {
		if pi < 0 || e.platform != last {
			pi, last, di = pi+1, e.platform, 0
		}
		s = append(s, fmt.Sprintf("%d:%d %s / %s", pi, di, e.info.Platform, e.info.Name))
		di++
	}
	return strings.Join(s, "; ")
}

// Device is one OpenCL device with its own context and in-order profiling
// queue.
type Device struct {
	platform, dev, ctx, queue uintptr
	info                      device.Info
	driver                    string
	platformVersion           string
	options                   string // BuildOptions plus SetExtraOptions

	mu          sync.Mutex
	noMarkers   bool // marker profiling failed once: time with the host clock
	binaryHits  int  // programs loaded from the binary cache (for tests)
	sourceBuild int  // programs built from source (for tests)
	// programs built by Builder in another process (for tests)
	outOfProcess int
}

// Info describes the device.
func (d *Device) Info() device.Info { return d.info }

// ownCache: the platform caches compiled programs itself (PoCL), so bespoke
// keeps no binaries: asking PoCL for one (CL_PROGRAM_BINARIES) compiles
// every kernel a second time, for any work-group size, which doubled its
// build times (p6/tet/m132 cstream: 72 s instead of 29 s).
func (d *Device) ownCache() bool { return isPoCL(d.info.Platform) }

// SerialBuilds reports a platform that builds one program at a time per
// process (PoCL), so that callers do not tie up threads waiting on it.
func (d *Device) SerialBuilds() bool { return isPoCL(d.info.Platform) }

// NVIDIA's OpenCL compiler needs about a minute for a large unrolled
// kernel (p6 hex m132, 7,056 non-zeros, whatever the ptxas optimisation
// level; NVRTC builds it in seconds), and its builds run in
// parallel. bespoke builds on all but two host cores there (the timing
// loop runs beside them), largest kernels of each problem first.
func nvidiaBuilds() int { return max(runtime.NumCPU()-2, 1) }

// MaxBuilds is 1 on PoCL (its builds take a process-wide lock), all but
// two host cores on NVIDIA's platform, else 0 (no limit but the
// builder's); $BESPOKE_OPENCL_BUILDS overrides it.
func (d *Device) MaxBuilds() int {
	if n, err := strconv.Atoi(os.Getenv("BESPOKE_OPENCL_BUILDS")); err == nil && n > 0 {
		return n
	}
	switch {
	case isPoCL(d.info.Platform):
		return 1
	case strings.Contains(strings.ToUpper(d.info.Platform), "NVIDIA"):
		return nvidiaBuilds()
	}
	return 0
}

// OptionsEnv names extra clBuildProgram options appended to BuildOptions
// for every program (e.g. NVIDIA's "-cl-nv-opt-level=1"); they are part
// of the binary cache's key.
const OptionsEnv = "BESPOKE_OPENCL_OPTIONS"

// SetExtraOptions appends opts to BuildOptions for the programs built
// after it (e.g. "-cl-opt-disable"); "" restores the usual options.
func (d *Device) SetExtraOptions(opts string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.options = strings.TrimSpace(baseOptions() + " " + opts)
}

// baseOptions is BuildOptions plus $BESPOKE_OPENCL_OPTIONS.
func baseOptions() string {
	return strings.TrimSpace(BuildOptions + " " + os.Getenv(OptionsEnv))
}

func (d *Device) buildOptions() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.options
}

// srcOptions are the options src is built with. A register cap
// (emit.Source.MaxRegisters, from CUDA-style launch bounds, which OpenCL C
// cannot spell) is not among them: NVIDIA's compiler (CUDA 13 driver)
// rejects "-cl-nv-maxrregcount N" and silently ignores
// "-cl-nv-maxrregcount=N" (prism CDR in f32 ran the same with a cap of 64
// as without one), so the cap goes into the program's PTX instead (see
// capRegisters).
func (d *Device) srcOptions(src emit.Source) string { return d.buildOptions() }

// regCap is the register cap to write into src's PTX: on NVIDIA's
// platform, whose program binaries are PTX, 0 elsewhere.
func (d *Device) regCap(src emit.Source) int {
	if src.MaxRegisters > 0 && strings.Contains(strings.ToLower(d.info.Platform), "nvidia") {
		return src.MaxRegisters
	}
	return 0
}

// capRegisters adds a ".maxnreg n" directive to every entry of a PTX
// program (ptxas, which compiles NVIDIA's OpenCL binaries when they are
// loaded, honours it as nvcc's launch bounds), replacing any there. A
// binary that is not PTX text comes back unchanged, as does every binary
// when n ≤ 0.
func capRegisters(bin []byte, n int) []byte {
	text := string(bin)
	if n <= 0 || !strings.Contains(text, ".version") || !strings.Contains(text, ".entry") {
		return bin
	}
	var b strings.Builder
	for {
		i := strings.Index(text, ".entry")
		if i < 0 {
			break
		}
		// The body starts at the first "{" after the parameter list;
		// performance directives sit between the two.
		params := strings.Index(text[i:], ")")
		if params < 0 {
			break
		}
		brace := strings.Index(text[i+params:], "{")
		if brace < 0 {
			break
		}
		body := i + params + brace
		head := text[:body]
		if j := strings.LastIndex(head, ".maxnreg"); j > i {
			end := strings.IndexByte(head[j:], '\n') + 1 // the line with its newline
			if end <= 0 {
				end = len(head) - j
			}
			head = head[:j] + head[j+end:]
		}
		b.WriteString(head)
		fmt.Fprintf(&b, ".maxnreg %d\n{", n)
		text = text[body+1:]
	}
	b.WriteString(text)
	return []byte(b.String())
}

// Dialect is emit.OpenCL.
func (d *Device) Dialect() emit.Dialect { return emit.OpenCL }

// Handles returns the raw cl_platform_id, cl_device_id, cl_context and
// cl_command_queue, for callers that need to go beyond this package.
func (d *Device) Handles() (platform, dev, ctx, queue uintptr) {
	return d.platform, d.dev, d.ctx, d.queue
}

// Sync waits for all enqueued work (clFinish).
func (d *Device) Sync() error { return check("clFinish", cl.Finish(d.queue)) }

// Close finishes the queue and releases it and the context. Buffers and
// programs should be released first.
func (d *Device) Close() error {
	if d.queue == 0 {
		return nil
	}
	err := check("clFinish", cl.Finish(d.queue))
	err = errors.Join(err, check("clReleaseCommandQueue", cl.ReleaseCommandQueue(d.queue)))
	err = errors.Join(err, check("clReleaseContext", cl.ReleaseContext(d.ctx)))
	d.queue, d.ctx = 0, 0
	return err
}

// Elapsed runs f and returns the device time of what it enqueued: the time
// between the end of a marker enqueued before f and one enqueued after it.
// Where marker profiling is unavailable, it falls back to clFinish and the
// host's monotonic clock.
func (d *Device) Elapsed(f func() error) (time.Duration, error) {
	d.mu.Lock()
	useMarkers := !d.noMarkers && cl.EnqueueMarkerWithWait != nil
	d.mu.Unlock()
	if useMarkers {
		ev := new([2]uintptr)
		var a dl.Arena
		defer a.Free()
		a.Pin(ev)
		if cl.EnqueueMarkerWithWait(d.queue, 0, nil, &ev[0]) == clSuccess {
			defer cl.ReleaseEvent(ev[0])
			start := time.Now()
			ferr := f()
			if err := check("clEnqueueMarkerWithWaitList", cl.EnqueueMarkerWithWait(d.queue, 0, nil, &ev[1])); err != nil {
				return 0, errors.Join(ferr, err)
			}
			defer cl.ReleaseEvent(ev[1])
			if err := check("clWaitForEvents", cl.WaitForEvents(2, &ev[0])); err != nil {
				return 0, errors.Join(ferr, err)
			}
			wall := time.Since(start)
			if ferr != nil {
				return 0, ferr
			}
			t0, err0 := profile(ev[0], clProfilingCommandEnd)
			t1, err1 := profile(ev[1], clProfilingCommandEnd)
			if err0 == nil && err1 == nil && t1 >= t0 && t0 > 0 {
				return time.Duration(t1 - t0), nil
			}
			d.mu.Lock()
			d.noMarkers = true
			d.mu.Unlock()
			return wall, nil
		}
		d.mu.Lock()
		d.noMarkers = true
		d.mu.Unlock()
	}
	if err := d.Sync(); err != nil {
		return 0, err
	}
	start := time.Now()
	if err := f(); err != nil {
		return 0, err
	}
	if err := d.Sync(); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// ElapsedSeries calls f(0) … f(n) back to back with a marker enqueued
// after each, and returns the time between the ends of consecutive
// markers from f(1) on (device.SeriesTimer). Where marker profiling is
// unavailable it times each call with Elapsed (device.ElapsedEach); where
// it fails after the series ran, f is called again for that.
func (d *Device) ElapsedSeries(n int, f func(i int) error) ([]time.Duration, error) {
	if n < 0 {
		return nil, fmt.Errorf("opencl: %d timed launches", n)
	}
	d.mu.Lock()
	useMarkers := !d.noMarkers && cl.EnqueueMarkerWithWait != nil
	d.mu.Unlock()
	if !useMarkers {
		return device.ElapsedEach(d, n, f)
	}
	events := make([]uintptr, n+1)
	var a dl.Arena
	defer a.Free()
	a.Pin(&events[0])
	enqueued := 0
	defer func() {
		for _, ev := range events[:enqueued] {
			cl.ReleaseEvent(ev)
		}
	}()
	for i := 0; i <= n; i++ {
		if err := f(i); err != nil {
			return nil, err
		}
		if err := check("clEnqueueMarkerWithWaitList", cl.EnqueueMarkerWithWait(d.queue, 0, nil, &events[i])); err != nil {
			return nil, err
		}
		enqueued++
	}
	if err := check("clWaitForEvents", cl.WaitForEvents(uint32(n+1), &events[0])); err != nil {
		return nil, err
	}
	ends := make([]uint64, n+1)
	for i, ev := range events {
		t, err := profile(ev, clProfilingCommandEnd)
		if err != nil || t == 0 || (i > 0 && t < ends[i-1]) {
			d.mu.Lock()
			d.noMarkers = true
			d.mu.Unlock()
			return device.ElapsedEach(d, n, f)
		}
		ends[i] = t
	}
	ds := make([]time.Duration, n)
	for i := range ds {
		ds[i] = time.Duration(ends[i+1] - ends[i])
	}
	return ds, nil
}

func profile(ev uintptr, param uint32) (uint64, error) {
	var a dl.Arena
	defer a.Free()
	v := new(uint64)
	a.Pin(v)
	if err := check("clGetEventProfilingInfo", cl.GetEventProfilingInfo(ev, param, 8, unsafe.Pointer(v), nil)); err != nil {
		return 0, err
	}
	return *v, nil
}

// Buffer is a cl_mem of the device's context.
type Buffer struct {
	d    *Device
	mem  uintptr
	size int64
}

// Alloc creates a read-write buffer of bytes bytes.
func (d *Device) Alloc(bytes int64) (device.Buffer, error) {
	if bytes < 0 {
		return nil, fmt.Errorf("opencl: alloc of %d bytes", bytes)
	}
	var code int32
	mem := cl.CreateBuffer(d.ctx, clMemReadWrite, uintptr(max(bytes, 1)), nil, &code)
	if err := check("clCreateBuffer", code); err != nil {
		return nil, fmt.Errorf("%w (%d bytes)", err, bytes)
	}
	return &Buffer{d: d, mem: mem, size: bytes}, nil
}

// Size is the requested size in bytes.
func (b *Buffer) Size() int64 { return b.size }

// Mem is the cl_mem handle (0 once freed).
func (b *Buffer) Mem() uintptr { return b.mem }

// Upload copies src to the start of the buffer (blocking).
func (b *Buffer) Upload(src []byte) error {
	if b.mem == 0 {
		return errors.New("opencl: upload to a freed buffer")
	}
	if int64(len(src)) > b.size {
		return fmt.Errorf("opencl: upload of %d bytes into a buffer of %d", len(src), b.size)
	}
	if len(src) == 0 {
		return nil
	}
	var a dl.Arena
	defer a.Free()
	a.Pin(&src[0])
	return check("clEnqueueWriteBuffer", cl.EnqueueWriteBuffer(b.d.queue, b.mem, clTrue, 0, uintptr(len(src)),
		unsafe.Pointer(&src[0]), 0, nil, nil))
}

// Download copies the start of the buffer to dst (blocking; it waits for
// the kernels enqueued before it).
func (b *Buffer) Download(dst []byte) error {
	if b.mem == 0 {
		return errors.New("opencl: download from a freed buffer")
	}
	if int64(len(dst)) > b.size {
		return fmt.Errorf("opencl: download of %d bytes from a buffer of %d", len(dst), b.size)
	}
	if len(dst) == 0 {
		return nil
	}
	var a dl.Arena
	defer a.Free()
	a.Pin(&dst[0])
	return check("clEnqueueReadBuffer", cl.EnqueueReadBuffer(b.d.queue, b.mem, clTrue, 0, uintptr(len(dst)),
		unsafe.Pointer(&dst[0]), 0, nil, nil))
}

// Free releases the buffer. Freeing twice is a no-op.
func (b *Buffer) Free() error {
	if b.mem == 0 {
		return nil
	}
	m := b.mem
	b.mem = 0
	return check("clReleaseMemObject", cl.ReleaseMemObject(m))
}

// BuildError is a failed clBuildProgram; Log holds the first lines of the
// build log.
type BuildError struct {
	Device  string
	Entries []string
	Err     error
	Log     string
}

func (e *BuildError) Error() string {
	return fmt.Sprintf("%v (device %s, entries %s); build log:\n%s", e.Err, e.Device, strings.Join(e.Entries, ", "), e.Log)
}

func (e *BuildError) Unwrap() error { return e.Err }

// isPoCL reports PoCL, which keeps compiled programs in a cache of its own
// ($POCL_CACHE_DIR, ~/.cache/pocl) and builds one program at a time per
// process.
func isPoCL(platform string) bool {
	return strings.Contains(platform, "Portable Computing Language") || strings.EqualFold(platform, "pocl")
}

func (d *Device) key(src emit.Source) string {
	return cache.Key("bespoke-opencl-v1", d.info.Platform, d.platformVersion, d.info.Name,
		d.driver, d.info.Arch, d.srcOptions(src), src.Text)
}

// Build compiles all of src's entries in one program and creates a kernel
// for each. The build log is in the error when the build fails.
func (d *Device) Build(src emit.Source) (device.Program, error) {
	if src.Dialect != emit.OpenCL && src.Dialect != "" {
		return nil, fmt.Errorf("opencl: cannot build %q source, want %q", src.Dialect, emit.OpenCL)
	}
	var prog uintptr
	useCache := !cache.Disabled() && !d.ownCache() && cl.CreateProgramWithBinary != nil && cl.GetProgramInfo != nil
	st, key := cache.Open("opencl"), d.key(src)
	if useCache {
		if bin, ok := st.Get(key); ok && len(bin) > 0 {
			prog = d.fromBinary(bin, src)
			if prog != 0 {
				d.mu.Lock()
				d.binaryHits++
				d.mu.Unlock()
			}
		}
	}
	if prog == 0 && useCache && Builder != nil && !d.SerialBuilds() {
		// Out of process: the driver's locks here stay free for the
		// timing loop, and an interrupt can kill the build.
		bin, err := Builder(d.info.ID, d.srcOptions(src), src.Text)
		if be := (*BuildError)(nil); errors.As(err, &be) {
			be.Device, be.Entries = d.info.Name, src.Entries
		}
		switch {
		case errors.Is(err, ErrNoBuilder):
			// The child could not build at all: build here.
		case err != nil:
			return nil, err
		default:
			prog = d.fromBinary(bin, src)
		}
		if prog != 0 {
			_ = st.Put(key, bin) // best effort
			d.mu.Lock()
			d.outOfProcess++
			d.mu.Unlock()
		}
	}
	if prog == 0 {
		var err error
		if prog, err = d.fromSource(src); err != nil {
			return nil, err
		}
		d.mu.Lock()
		d.sourceBuild++
		d.mu.Unlock()
		var bin []byte
		if useCache || d.regCap(src) > 0 {
			bin = d.binary(prog)
		}
		if useCache && bin != nil {
			_ = st.Put(key, bin) // best effort
		}
		if d.regCap(src) > 0 && bin != nil { // the cap goes into the PTX
			if capped := d.fromBinary(bin, src); capped != 0 {
				cl.ReleaseProgram(prog)
				prog = capped
			}
		}
	}
	p := &Program{d: d, prog: prog, kernels: map[string]*Kernel{}}
	for _, name := range src.Entries {
		if _, err := p.Kernel(name); err != nil {
			p.Close()
			return nil, err
		}
	}
	return p, nil
}

// Builder, when set, compiles OpenCL C source for the device with the
// given ID ("P:D", as Open takes it) and build options to a program binary
// in another process (bespoke sets it to run itself: see CompileBinary),
// returning a *BuildError for source the compiler rejects. Build uses it on
// a binary-cache miss on every platform but PoCL (which caches builds
// itself and builds one program at a time): NVIDIA's OpenCL held back the
// timing loop's calls while its compiler ran in the same process (a bench
// of hex p1–p6 timed nothing in 330 s), and only a process can be killed.
var Builder func(id, options, text string) ([]byte, error)

// ErrNoBuilder, wrapped in a Builder's error, says that the build process
// itself failed (it could not start or open the device), not the
// compiler: Build then builds in process.
var ErrNoBuilder = errors.New("opencl: the build process failed")

// Compile puts src's program binary in the cache without loading it here
// (device.Compiler), through Builder; without one, or on PoCL, it builds
// and releases the program.
func (d *Device) Compile(src emit.Source) error {
	st, key := cache.Open("opencl"), d.key(src)
	if cache.Disabled() || d.ownCache() || Builder == nil || cl.CreateProgramWithBinary == nil {
		p, err := d.Build(src)
		if err == nil {
			p.Close()
		}
		return err
	}
	if _, ok := st.Get(key); ok {
		return nil
	}
	bin, err := Builder(d.info.ID, d.srcOptions(src), src.Text)
	if errors.Is(err, ErrNoBuilder) {
		p, err := d.Build(src)
		if err == nil {
			p.Close()
		}
		return err
	}
	if err != nil {
		return err
	}
	d.mu.Lock()
	d.outOfProcess++
	d.mu.Unlock()
	return st.Put(key, bin)
}

// CompileBinary builds text from source in this process with the given
// options (in place of the device's) and returns the program binary: the
// work of a Builder's child process.
func (d *Device) CompileBinary(options, text string) ([]byte, error) {
	d.mu.Lock()
	d.options = options
	d.mu.Unlock()
	prog, err := d.fromSource(emit.Source{Dialect: emit.OpenCL, Text: text})
	if err != nil {
		return nil, err
	}
	defer cl.ReleaseProgram(prog)
	bin := d.binary(prog)
	if bin == nil {
		return nil, fmt.Errorf("opencl: %s gave no program binary", d.info.Name)
	}
	return bin, nil
}

func (d *Device) fromSource(src emit.Source) (uintptr, error) {
	var a dl.Arena
	defer a.Free()
	var code int32
	prog := cl.CreateProgramWithSource(d.ctx, 1, a.CStrings([]string{src.Text}), nil, &code)
	if err := check("clCreateProgramWithSource", code); err != nil {
		return 0, err
	}
	code = cl.BuildProgram(prog, 1, a.Uintptrs(d.dev), a.CString(d.srcOptions(src)), 0, 0)
	dl.FixSignals() // the platform's compiler may have installed handlers of its own
	if code != clSuccess {
		log := d.buildLog(prog)
		cl.ReleaseProgram(prog)
		return 0, &BuildError{Device: d.info.Name, Entries: src.Entries, Err: check("clBuildProgram", code),
			Log: headLines(log, maxLogLines)}
	}
	return prog, nil
}

// fromBinary rebuilds a cached binary of src (with src's register cap,
// see capRegisters); 0 when the driver refuses it.
func (d *Device) fromBinary(bin []byte, src emit.Source) uintptr {
	bin = capRegisters(bin, d.regCap(src))
	options := d.srcOptions(src)
	var a dl.Arena
	defer a.Free()
	a.Pin(&bin[0])
	ptrs := []*byte{&bin[0]}
	a.Pin(&ptrs[0])
	status := new(int32)
	a.Pin(status)
	var code int32
	prog := cl.CreateProgramWithBinary(d.ctx, 1, a.Uintptrs(d.dev), a.Uintptrs(uintptr(len(bin))), &ptrs[0], status, &code)
	if code != clSuccess || *status != clSuccess {
		if prog != 0 {
			cl.ReleaseProgram(prog)
		}
		return 0
	}
	if cl.BuildProgram(prog, 1, a.Uintptrs(d.dev), a.CString(options), 0, 0) != clSuccess {
		cl.ReleaseProgram(prog)
		return 0
	}
	return prog
}

// binary returns the program's binary for d's device, or nil.
func (d *Device) binary(prog uintptr) []byte {
	var a dl.Arena
	defer a.Free()
	ndev := new(uint32)
	a.Pin(ndev)
	if cl.GetProgramInfo(prog, clProgramNumDevices, 4, unsafe.Pointer(ndev), nil) != clSuccess || *ndev != 1 {
		return nil
	}
	size := new(uintptr)
	a.Pin(size)
	if cl.GetProgramInfo(prog, clProgramBinarySizes, unsafe.Sizeof(uintptr(0)), unsafe.Pointer(size), nil) != clSuccess || *size == 0 {
		return nil
	}
	bin := a.Bytes(int(*size))
	ptrs := []*byte{&bin[0]}
	a.Pin(&ptrs[0])
	if cl.GetProgramInfo(prog, clProgramBinaries, unsafe.Sizeof(uintptr(0)), unsafe.Pointer(&ptrs[0]), nil) != clSuccess {
		return nil
	}
	return append([]byte(nil), bin...) // bin is the arena's memory
}

func (d *Device) buildLog(prog uintptr) string {
	var n uintptr
	if cl.GetProgramBuildInfo(prog, d.dev, clProgramBuildLog, 0, nil, &n) != clSuccess || n == 0 {
		return "(no build log)"
	}
	var a dl.Arena
	defer a.Free()
	b := a.Bytes(int(n))
	if cl.GetProgramBuildInfo(prog, d.dev, clProgramBuildLog, n, unsafe.Pointer(&b[0]), nil) != clSuccess {
		return "(no build log)"
	}
	return strings.TrimSpace(dl.GoStringN(b))
}

func headLines(s string, n int) string {
	lines := strings.SplitAfter(strings.TrimRight(s, "\n"), "\n")
	if len(lines) <= n {
		return strings.TrimRight(s, "\n")
	}
	return strings.Join(lines[:n], "") + fmt.Sprintf("... (%d more lines)", len(lines)-n)
}

// Program is a built cl_program with its kernels.
type Program struct {
	d       *Device
	mu      sync.Mutex
	prog    uintptr
	kernels map[string]*Kernel
}

// Kernel returns (creating once) the kernel named entry.
func (p *Program) Kernel(entry string) (device.Kernel, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.prog == 0 {
		return nil, errors.New("opencl: program is closed")
	}
	if k, ok := p.kernels[entry]; ok {
		return k, nil
	}
	var a dl.Arena
	defer a.Free()
	var code int32
	h := cl.CreateKernel(p.prog, a.CString(entry), &code)
	if err := check("clCreateKernel", code); err != nil {
		return nil, fmt.Errorf("%w: %q", err, entry)
	}
	k := &Kernel{d: p.d, k: h, name: entry}
	k.res = k.resources()
	p.kernels[entry] = k
	return k, nil
}

// Close releases the kernels and the program.
func (p *Program) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.prog == 0 {
		return nil
	}
	var err error
	for _, k := range p.kernels {
		k.mu.Lock()
		err = errors.Join(err, check("clReleaseKernel", cl.ReleaseKernel(k.k)))
		k.k = 0
		k.mu.Unlock()
	}
	err = errors.Join(err, check("clReleaseProgram", cl.ReleaseProgram(p.prog)))
	p.prog = 0
	return err
}

// Kernel is one cl_kernel. Launch is safe for concurrent use.
type Kernel struct {
	d    *Device
	name string
	mu   sync.Mutex
	k    uintptr
	res  device.Resources
}

// Name is the kernel's name.
func (k *Kernel) Name() string { return k.name }

// Resources reports private (LocalBytes) and local (SharedBytes) memory from
// clGetKernelWorkGroupInfo.
func (k *Kernel) Resources() device.Resources { return k.res }

func (k *Kernel) resources() device.Resources {
	get := func(param uint32) int {
		var a dl.Arena
		defer a.Free()
		v := new(uint64)
		a.Pin(v)
		if cl.GetKernelWorkGroupInfo(k.k, k.d.dev, param, 8, unsafe.Pointer(v), nil) != clSuccess {
			return 0
		}
		return int(*v)
	}
	return device.Resources{LocalBytes: get(clKernelPrivateMemSize), SharedBytes: get(clKernelLocalMemSize)}
}

// Launch sets the arguments and enqueues the kernel (asynchronously).
func (k *Kernel) Launch(l device.Launch, args ...any) error {
	grid, block := l.Grid, l.Block
	if grid[0] == 0 {
		return nil
	}
	dim := 1
	for i := range 3 {
		if grid[i] < 0 || block[i] < 0 {
			return fmt.Errorf("opencl: %s: negative launch geometry %v × %v", k.name, grid, block)
		}
		if grid[i] == 0 {
			grid[i] = 1
		}
		if block[i] == 0 {
			block[i] = 1
		}
		if grid[i] > 1 || block[i] > 1 {
			dim = max(dim, i+1)
		}
	}
	var a dl.Arena
	defer a.Free()
	vals := a.Bytes(8 * len(args)) // pinned argument values, 8 bytes apart
	sizes := make([]uintptr, len(args))
	for i, arg := range args {
		v8 := vals[8*i : 8*i+8]
		switch v := arg.(type) {
		case *Buffer:
			if v == nil || v.mem == 0 {
				return fmt.Errorf("opencl: %s: argument %d: buffer is nil or freed", k.name, i)
			}
			if v.d.ctx != k.d.ctx {
				return fmt.Errorf("opencl: %s: argument %d: buffer of another device", k.name, i)
			}
			*(*uintptr)(unsafe.Pointer(&v8[0])) = v.mem
			sizes[i] = unsafe.Sizeof(uintptr(0))
		case device.Buffer:
			return fmt.Errorf("opencl: %s: argument %d: buffer %T does not belong to the OpenCL backend", k.name, i, arg)
		case int32:
			binary.NativeEndian.PutUint32(v8, uint32(v))
			sizes[i] = 4
		case int64:
			binary.NativeEndian.PutUint64(v8, uint64(v))
			sizes[i] = 8
		case int:
			binary.NativeEndian.PutUint64(v8, uint64(v))
			sizes[i] = 8
		case float32:
			binary.NativeEndian.PutUint32(v8, math.Float32bits(v))
			sizes[i] = 4
		case float64:
			binary.NativeEndian.PutUint64(v8, math.Float64bits(v))
			sizes[i] = 8
		default:
			return fmt.Errorf("opencl: %s: argument %d: unsupported type %T (want a Buffer, int32 or int64)", k.name, i, arg)
		}
	}
	var global, local [3]uintptr
	for i := range 3 {
		global[i] = uintptr(grid[i]) * uintptr(block[i])
		local[i] = uintptr(block[i])
	}
	gp, lp := a.Uintptrs(global[:]...), a.Uintptrs(local[:]...)
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.k == 0 {
		return fmt.Errorf("opencl: %s: program is closed", k.name)
	}
	for i := range args {
		if err := check("clSetKernelArg", cl.SetKernelArg(k.k, uint32(i), sizes[i], unsafe.Pointer(&vals[8*i]))); err != nil {
			return fmt.Errorf("%w: %s argument %d (%T)", err, k.name, i, args[i])
		}
	}
	if err := check("clEnqueueNDRangeKernel", cl.EnqueueNDRangeKernel(k.d.queue, k.k, uint32(dim), nil, gp, lp, 0, nil, nil)); err != nil {
		return fmt.Errorf("%w: %s global %v local %v", err, k.name, global[:dim], local[:dim])
	}
	return nil
}
