// Package host is the C backend: it compiles emit.C sources with the system C
// compiler (OpenMP) into shared objects, loads them with purego and calls the
// entry points directly. It needs no cgo, so it works with CGO_ENABLED=0.
//
// # Calling convention
//
// Every entry point of the generated C is
//
//	void NAME(int64_t grid_x, <kernel params in order>);
//
// and runs blocks 0..grid_x-1 itself, typically with an
// "#pragma omp parallel for" over the block index. Kernel.Launch passes
// Launch.Grid[0] as grid_x (Grid[1] and Grid[2] must be 0 or 1; Block and
// SharedBytes are ignored), followed by the arguments: a *Buffer as its base
// address (a pointer), an int32 as a C int, an int64 (or int) as a C
// int64_t. Floating-point arguments are not supported. At most 31 kernel
// parameters. Launch is synchronous.
//
// # Compilation and cache
//
// Build compiles the source into the "c" store of internal/cache as
// <key>.so, where key is the sha256 of the compiler's identity (path and
// --version), the flags, the host CPU (model and feature flags, since
// -march=native is used) and the source. A later Build of the same source
// loads <key>.so without calling the compiler, after checking it against
// the checksum recorded when it was written (a damaged object is compiled
// again). BESPOKE_NO_CACHE=1 compiles in a temporary directory every time.
// The compiler is $CC (which may carry arguments; a CC that names no
// compiler is an error), else the first of cc, gcc, clang in PATH; flags
// are
//
//	-O3 -march=native -fopenmp -fPIC -shared -std=gnu11
//
// plus, for gcc, -mno-avx512f when the compiler accepts it (see gccFlags). Objects are written under a temporary name and renamed,
// so concurrent builds, in one process or several, are safe.
package host

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"github.com/bespoke-hpc/bespoke/internal/cache"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/emit"
	"github.com/ebitengine/purego"
)

// BaseFlags are the flags every compilation uses.
var BaseFlags = []string{"-O3", "-march=native", "-fopenmp", "-fPIC", "-shared", "-std=gnu11"}

// gccFlags are added for gcc when accepted. With AVX-512 enabled gcc 12
// took ten times as long to compile a fully unrolled 2,300-line kernel as
// with AVX2, and the kernels are
// memory-bound, so the wider vectors buy nothing. The emitter keeps each
// column loop well under gcc's 1000-data-reference vectorisation limit
// (see emit.segments), so that limit is not raised: raising it made one
// 125×375 kernel take 30 s to compile.
var gccFlags = []string{"-mno-avx512f"}

// largeFlags are added for gcc to sources over largeSource bytes: they turn
// off the passes (PRE, GCSE, 3- and 4-insn combining, the second scheduling
// pass) that grow fastest with the size of a fully unrolled loop body.
// With gcc 12.2 the largest unrolled kernels compile in half the time and
// run as fast (docs/rationale.md#gcc-large-flags).
var largeFlags = []string{"-fno-tree-pre", "-fno-gcse", "--param", "max-combine-insns=2", "-fno-schedule-insns2"}

const largeSource = 128 << 10

// maxLogLines is how many lines of compiler output an error carries.
const maxLogLines = 40

// Device is the host CPU with a C compiler.
type Device struct {
	cc      []string // compiler command and its leading arguments
	ccPath  string
	version string // full --version output
	kind    string // "gcc", "clang" or "cc"
	short   string // e.g. "gcc-12.2.0"
	flags   []string
	cpuKey  string // CPU model and feature flags, for the cache key
	info    device.Info

	compiles atomic.Int64 // compiler invocations (for tests)
}

var (
	_ device.Device  = (*Device)(nil)
	_ device.Program = (*Program)(nil)
	_ device.Kernel  = (*Kernel)(nil)
	_ device.Buffer  = (*Buffer)(nil)
)

// Open finds the C compiler, checks which optional flags it accepts and
// describes the host. It fails when no compiler is found.
func Open() (*Device, error) {
	d := &Device{}
	if err := d.findCompiler(); err != nil {
		return nil, err
	}
	d.probeFlags()
	d.cpuKey = cpuKey()
	d.info = hostInfo(d.short, firstLine(d.version))
	if slices.Contains(d.flags, "-mno-avx512f") && d.avx512() {
		d.info.WideVectorBits = 512 // see srcFlags
	}
	return d, nil
}

func (d *Device) findCompiler() error {
	if cc := strings.Fields(os.Getenv("CC")); len(cc) > 0 {
		// A compiler asked for by name is used or reported, never
		// replaced by another one behind the user's back.
		p, err := exec.LookPath(cc[0])
		if err != nil {
			return fmt.Errorf("host: CC=%q: no such compiler (%v); set CC to a C compiler, or unset it to use cc, gcc or clang from PATH", os.Getenv("CC"), errors.Unwrap(err))
		}
		d.cc, d.ccPath = cc, p
	} else {
		var tried []string
		for _, name := range []string{"cc", "gcc", "clang"} {
			tried = append(tried, name)
			if p, err := exec.LookPath(name); err == nil {
				d.cc, d.ccPath = []string{name}, p
				break
			}
		}
		if d.cc == nil {
			return fmt.Errorf("host: no C compiler found (looked for %s in PATH); install gcc or set CC", strings.Join(tried, ", "))
		}
	}
	out, err := Run(d.command("--version"))
	if err != nil {
		return fmt.Errorf("host: %s --version: %v: %s", strings.Join(d.cc, " "), err, bytes.TrimSpace(out))
	}
	d.version = string(out)
	low := strings.ToLower(d.version)
	switch {
	case strings.Contains(low, "clang"):
		d.kind = "clang"
	case strings.Contains(low, "gcc") || strings.Contains(low, "free software foundation"):
		d.kind = "gcc"
	default:
		d.kind = "cc"
	}
	ver := ""
	for _, arg := range []string{"-dumpfullversion", "-dumpversion"} {
		if out, err := Run(d.command(arg)); err == nil {
			if v := strings.TrimSpace(string(out)); v != "" {
				ver = v
				break
			}
		}
	}
	d.short = d.kind
	if ver != "" {
		d.short += "-" + ver
	}
	return nil
}

func (d *Device) command(args ...string) *exec.Cmd {
	argv := append(append([]string{}, d.cc[1:]...), args...)
	return exec.Command(d.ccPath, argv...)
}

// probeFlags drops -march=native when the compiler rejects it and adds the
// gcc-only flags the compiler accepts.
func (d *Device) probeFlags() {
	accepts := func(flag string) bool {
		cmd := d.command("-Werror", flag, "-x", "c", "-c", "-o", os.DevNull, "-")
		cmd.Stdin = strings.NewReader("int bespoke_probe;\n")
		_, err := Run(cmd)
		return err == nil
	}
	for _, f := range BaseFlags {
		if f == "-march=native" && !accepts(f) {
			continue
		}
		d.flags = append(d.flags, f)
	}
	for _, f := range gccFlags {
		if d.kind == "gcc" && accepts(f) {
			d.flags = append(d.flags, f)
		}
	}
}

// Compiler returns the compiler command and its short name (e.g. "gcc-12.2.0").
func (d *Device) Compiler() (argv []string, short string) {
	return append([]string{d.ccPath}, d.cc[1:]...), d.short
}

// sizeFlags are the flags added for a source of this size.
func (d *Device) sizeFlags(text string) []string {
	if d.kind == "gcc" && len(text) > largeSource {
		return largeFlags
	}
	return nil
}

// srcFlags are the flags src is compiled with: the device's, less
// -mno-avx512f for a source that asks for wide vectors on a CPU that has
// AVX-512 (a straight-line integration kernel ran 2× faster with its 32
// vector registers and 512-bit vectors), plus the size flags.
func (d *Device) srcFlags(src emit.Source) []string {
	var fs []string
	wide := false
	for _, f := range d.flags {
		if src.Wide && f == "-mno-avx512f" && d.avx512() {
			wide = true
			continue
		}
		fs = append(fs, f)
	}
	if wide {
		// gcc otherwise keeps to 256-bit vectors on most AVX-512 parts.
		fs = append(fs, "-mprefer-vector-width=512")
	}
	return append(fs, d.sizeFlags(src.Text)...)
}

// avx512 reports whether the host CPU has AVX-512F.
func (d *Device) avx512() bool {
	return strings.Contains(" "+strings.ReplaceAll(d.cpuKey, "|", " ")+" ", " avx512f ")
}

// Flags returns the flags Build passes to the compiler.
func (d *Device) Flags() []string { return append([]string(nil), d.flags...) }

// Info describes the host.
func (d *Device) Info() device.Info { return d.info }

// Dialect is emit.C.
func (d *Device) Dialect() emit.Dialect { return emit.C }

// Sync does nothing: launches are synchronous.
func (d *Device) Sync() error { return nil }

// Close does nothing; programs and buffers are released on their own.
func (d *Device) Close() error { return nil }

// Elapsed runs f and returns the monotonic time it took (launches are
// synchronous on the host).
func (d *Device) Elapsed(f func() error) (time.Duration, error) {
	start := time.Now()
	err := f()
	el := time.Since(start)
	if err != nil {
		return 0, err
	}
	return el, nil
}

func (d *Device) key(src emit.Source) string {
	return cache.Key("bespoke-c-v3", d.ccPath, strings.Join(d.cc, " "), d.version,
		strings.Join(d.srcFlags(src), " "), d.cpuKey, src.Text)
}

// buildLocks serialises the builds of one cache key within the process,
// across devices: two devices compiling the same source at once wrote
// different objects (each names its own temporary source), and the
// second's checksum, found beside the first's object, deleted the entry
// that the first was about to load.
var buildLocks sync.Map // cache key → *sync.Mutex

// Build compiles src (or loads it from the cache) and resolves its entries.
func (d *Device) Build(src emit.Source) (device.Program, error) {
	if src.Dialect != emit.C && src.Dialect != "" {
		return nil, fmt.Errorf("host: cannot build %q source, want %q", src.Dialect, emit.C)
	}
	st := cache.Open("c")
	key := d.key(src)
	mu, _ := buildLocks.LoadOrStore(key, new(sync.Mutex))
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	p, err := d.build(st, key, src)
	if errors.Is(err, fs.ErrNotExist) {
		// Another process replaced or dropped the entry between our
		// writing and loading it: once more.
		p, err = d.build(st, key, src)
	}
	return p, err
}

func (d *Device) build(st *cache.Store, key string, src emit.Source) (device.Program, error) {
	if path, ok := st.File(key, ".so"); ok {
		if p, err := load(path, src.Entries); err == nil {
			return p, nil
		}
		// Checked, yet it does not load (another C library, a stale
		// runtime): compile it again.
	}
	path, err := st.PutFile(key, ".so", func(tmp string) error { return d.compile(st, key, src, tmp) })
	if err != nil {
		return nil, err
	}
	// dlopen's error does not say the file is gone; Stat's does, so that
	// Build retries (fs.ErrNotExist) rather than failing.
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	p, err := load(path, src.Entries)
	if st.Temporary() { // the loaded object stays mapped
		os.Remove(path)
		os.Remove(path + ".sum")
	}
	return p, err
}

// compile compiles src into the shared object out. The source is written
// beside it for the compiler, and kept there only when compiling fails, so
// that the error can point at it.
func (d *Device) compile(st *cache.Store, key string, src emit.Source, out string) error {
	cfile, remove, err := st.TempFile(key+".*.c", []byte(src.Text))
	if err != nil {
		return fmt.Errorf("host: %w", err)
	}
	defer Temporary(cfile, out)()
	dir := filepath.Dir(cfile)
	// Relative names keep the compiler's messages short; cmd.Dir is dir.
	// -lm after the source: kernels may call C's maths functions.
	args := append(d.srcFlags(src), "-o", filepath.Base(out), filepath.Base(cfile), "-lm")
	cmd := d.command(args...)
	cmd.Dir = dir
	d.compiles.Add(1)
	log, err := Run(cmd)
	if err != nil && !errors.Is(err, ErrAborted) {
		remove(true)
		return &CompileError{Compiler: d.short, Command: strings.Join(cmd.Args, " "), Dir: dir,
			Entries: src.Entries, Err: err, Log: headLines(string(log), maxLogLines)}
	}
	remove(false)
	return err
}

// CompileError is a failed compilation; Log holds the first lines of the
// compiler's output.
type CompileError struct {
	Compiler string
	Command  string
	Dir      string // where the command ran and the source lies
	Entries  []string
	Err      error
	Log      string
}

func (e *CompileError) Error() string {
	return fmt.Sprintf("host: %s failed to compile (entries %s): %v\n%s\ncommand (in %s): %s",
		e.Compiler, strings.Join(e.Entries, ", "), e.Err, e.Log, e.Dir, e.Command)
}

func (e *CompileError) Unwrap() error { return e.Err }

func headLines(s string, n int) string {
	lines := strings.SplitAfter(strings.TrimRight(s, "\n"), "\n")
	if len(lines) <= n {
		return strings.TrimRight(s, "\n")
	}
	return strings.Join(lines[:n], "") + fmt.Sprintf("... (%d more lines)", len(lines)-n)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return strings.TrimSpace(s)
}

// Program is a loaded shared object.
type Program struct {
	path    string
	mu      sync.Mutex
	handle  uintptr
	kernels map[string]*Kernel
}

func load(path string, entries []string) (*Program, error) {
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return nil, fmt.Errorf("host: loading %s: %w", path, err)
	}
	pinRuntimes()
	p := &Program{path: path, handle: h, kernels: map[string]*Kernel{}}
	var missing []string
	for _, e := range entries {
		if _, err := p.lookup(e); err != nil {
			missing = append(missing, e)
		}
	}
	if len(missing) > 0 {
		purego.Dlclose(h)
		return nil, fmt.Errorf("host: %s does not define %s", path, strings.Join(missing, ", "))
	}
	return p, nil
}

// glibc dlopen flags that purego does not name.
const (
	rtldNoload   = 0x00004
	rtldNodelete = 0x01000
)

// openmpRuntimes are the OpenMP runtimes compiled objects may pull in.
var openmpRuntimes = []string{"libgomp.so.1", "libomp.so", "libomp.so.5", "libiomp5.so"}

var pinned sync.Map // runtime soname → true once marked RTLD_NODELETE

// pinRuntimes marks the OpenMP runtimes that are loaded as never to be
// unloaded: dlclose of the last program using libgomp would otherwise unmap
// it under its idle worker threads and crash the process.
func pinRuntimes() {
	for _, name := range openmpRuntimes {
		if _, ok := pinned.Load(name); ok {
			continue
		}
		if _, err := purego.Dlopen(name, purego.RTLD_LAZY|rtldNoload|rtldNodelete); err == nil {
			pinned.Store(name, true)
		}
	}
}

func (p *Program) lookup(entry string) (*Kernel, error) {
	if k, ok := p.kernels[entry]; ok {
		return k, nil
	}
	fn, err := purego.Dlsym(p.handle, entry)
	if err != nil || fn == 0 {
		return nil, fmt.Errorf("host: no entry %q in %s", entry, p.path)
	}
	k := &Kernel{name: entry, fn: fn, prog: p}
	p.kernels[entry] = k
	return k, nil
}

// Kernel returns the entry point named entry.
func (p *Program) Kernel(entry string) (device.Kernel, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.handle == 0 {
		return nil, errors.New("host: program is closed")
	}
	return p.lookup(entry)
}

// Path is the shared object the program was loaded from.
func (p *Program) Path() string { return p.path }

// Close unloads the object (dlclose). Its kernels must not be launched
// afterwards.
func (p *Program) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.handle == 0 {
		return nil
	}
	h := p.handle
	p.handle = 0
	for _, k := range p.kernels {
		k.fn = 0
	}
	return purego.Dlclose(h)
}

// Kernel is one C entry point.
type Kernel struct {
	name string
	fn   uintptr
	prog *Program
}

// Name is the entry point's symbol.
func (k *Kernel) Name() string { return k.name }

// Resources is empty on the host.
func (k *Kernel) Resources() device.Resources { return device.Resources{} }

// maxParams is how many kernel arguments fit after grid_x (purego's limit).
const maxParams = 31

// Launch calls the entry point with grid_x = l.Grid[0] and args, and returns
// when it is done.
func (k *Kernel) Launch(l device.Launch, args ...any) error {
	if k.fn == 0 {
		return fmt.Errorf("host: %s: program is closed", k.name)
	}
	if l.Grid[0] < 0 || l.Grid[1] > 1 || l.Grid[2] > 1 {
		return fmt.Errorf("host: %s: grid %v: the C convention runs a 1-D grid of grid_x >= 0 blocks", k.name, l.Grid)
	}
	if len(args) > maxParams {
		return fmt.Errorf("host: %s: %d arguments, at most %d", k.name, len(args), maxParams)
	}
	var buf [maxParams + 1]uintptr
	cargs := buf[:len(args)+1]
	cargs[0] = uintptr(int64(l.Grid[0]))
	for i, a := range args {
		v, err := argValue(a)
		if err != nil {
			return fmt.Errorf("host: %s: argument %d: %w", k.name, i, err)
		}
		cargs[i+1] = v
	}
	purego.SyscallN(k.fn, cargs...)
	return nil
}

func argValue(a any) (uintptr, error) {
	switch v := a.(type) {
	case *Buffer:
		if v == nil || v.mem == nil {
			return 0, errors.New("buffer is nil or freed")
		}
		return v.addr(), nil
	case device.Buffer:
		return 0, fmt.Errorf("buffer %T does not belong to the host backend", a)
	case int32:
		return uintptr(int64(v)), nil
	case int64:
		return uintptr(v), nil
	case int:
		return uintptr(int64(v)), nil
	case uint32:
		return uintptr(v), nil
	case uint64:
		return uintptr(v), nil
	default:
		return 0, fmt.Errorf("unsupported type %T (want a Buffer, int32 or int64)", a)
	}
}

// Buffer is host memory from an anonymous mmap, page-aligned and outside the
// Go heap.
type Buffer struct {
	mem  []byte // the whole mapping (a view: its part); nil once freed
	size int64
	view bool // a Slice: Free leaves the mapping to its allocation
}

var _ device.Slicer = (*Device)(nil)

// Slice is bytes [off, off+n) of b, an allocation of the host device's
// (device.Slicer).
func (d *Device) Slice(b device.Buffer, off, n int64) (device.Buffer, error) {
	hb, ok := b.(*Buffer)
	switch {
	case !ok || hb.view:
		return nil, fmt.Errorf("host: Slice of %T, not an allocation of the host backend", b)
	case hb.mem == nil:
		return nil, errors.New("host: Slice of a freed buffer")
	case off < 0 || n < 0 || off+n > hb.size || off%device.SliceAlign != 0:
		return nil, fmt.Errorf("host: Slice [%d, %d) of a buffer of %d bytes (offsets multiples of %d)", off, off+n, hb.size, device.SliceAlign)
	}
	// A byte of the mapping where one is left, so that a view of 0
	// bytes still has an address (as Alloc's buffers do).
	end := off + n
	if n == 0 && end < int64(len(hb.mem)) {
		end++
	}
	return &Buffer{mem: hb.mem[off:end:end], size: n, view: true}, nil
}

// Alloc maps bytes of zeroed, page-aligned memory.
func (d *Device) Alloc(bytes int64) (device.Buffer, error) {
	if bytes < 0 {
		return nil, fmt.Errorf("host: alloc of %d bytes", bytes)
	}
	page := int64(os.Getpagesize())
	n := max((bytes+page-1)/page*page, page)
	if n != int64(int(n)) {
		return nil, fmt.Errorf("host: alloc of %d bytes is too large", bytes)
	}
	mem, err := syscall.Mmap(-1, 0, int(n), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("host: mmap of %d bytes: %w", n, err)
	}
	return &Buffer{mem: mem, size: bytes}, nil
}

func (b *Buffer) addr() uintptr {
	return uintptr(unsafePointer(b.mem))
}

// Size is the requested size in bytes.
func (b *Buffer) Size() int64 { return b.size }

// Bytes is the buffer's memory itself (no copy); nil once freed.
func (b *Buffer) Bytes() []byte {
	if b.mem == nil {
		return nil
	}
	return b.mem[:b.size:b.size]
}

// Ptr is the buffer's base address (0 once freed).
func (b *Buffer) Ptr() uintptr {
	if b.mem == nil {
		return 0
	}
	return b.addr()
}

// Upload copies src to the start of the buffer.
func (b *Buffer) Upload(src []byte) error {
	if b.mem == nil {
		return errors.New("host: upload to a freed buffer")
	}
	if int64(len(src)) > b.size {
		return fmt.Errorf("host: upload of %d bytes into a buffer of %d", len(src), b.size)
	}
	copy(b.mem, src)
	return nil
}

// Download copies the start of the buffer to dst.
func (b *Buffer) Download(dst []byte) error {
	if b.mem == nil {
		return errors.New("host: download from a freed buffer")
	}
	if int64(len(dst)) > b.size {
		return fmt.Errorf("host: download of %d bytes from a buffer of %d", len(dst), b.size)
	}
	copy(dst, b.mem)
	return nil
}

// Free unmaps the memory. Freeing twice is a no-op.
func (b *Buffer) Free() error {
	if b.mem == nil || b.view {
		b.mem = nil
		return nil
	}
	mem := b.mem
	b.mem = nil
	return syscall.Munmap(mem)
}

// hostInfo describes the CPU.
func hostInfo(ccShort, platform string) device.Info {
	info := device.Info{Backend: "c", Platform: platform, FP64: true}
	info.Name = cpuField("model name")
	if info.Name == "" {
		info.Name = runtime.GOARCH + " CPU"
	}
	info.ComputeUnits = runtime.NumCPU()
	if s := os.Getenv("OMP_NUM_THREADS"); s != "" {
		s, _, _ = strings.Cut(s, ",")
		if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil && n > 0 {
			info.ComputeUnits = n
		}
	}
	info.MemoryBytes = memTotal()
	info.L2Bytes = l2Bytes()
	info.LastCacheBytes = max(cacheBytes(3), info.L2Bytes)
	arch := runtime.GOARCH
	if out, err := exec.Command("uname", "-m").Output(); err == nil && len(bytes.TrimSpace(out)) > 0 {
		arch = string(bytes.TrimSpace(out))
	}
	info.Arch = arch + " " + ccShort
	return info
}

// cpuField returns the first value of field in /proc/cpuinfo.
func cpuField(field string) string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == field {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// cpuKey identifies the CPU for the object cache (-march=native objects
// must not move to another CPU through a shared cache directory).
func cpuKey() string {
	return runtime.GOARCH + "|" + cpuField("model name") + "|" + cpuField("flags") + "|" + cpuField("Features")
}

func memTotal() int64 {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			fs := strings.Fields(rest)
			if len(fs) > 0 {
				if n, err := strconv.ParseInt(fs[0], 10, 64); err == nil {
					return n * 1024
				}
			}
		}
	}
	return 0
}

// l2Bytes reads CPU 0's level-2 cache size from sysfs (0 when unknown).
func l2Bytes() int64 { return cacheBytes(2) }

// cacheBytes reads the size of CPU 0's cache of the given level from sysfs
// (0 when unknown).
func cacheBytes(level int) int64 {
	dirs, _ := filepath.Glob("/sys/devices/system/cpu/cpu0/cache/index*")
	for _, dir := range dirs {
		lvl, err := os.ReadFile(filepath.Join(dir, "level"))
		if err != nil || strings.TrimSpace(string(lvl)) != strconv.Itoa(level) {
			continue
		}
		sz, err := os.ReadFile(filepath.Join(dir, "size"))
		if err != nil {
			continue
		}
		s := strings.TrimSpace(string(sz))
		mult := int64(1)
		switch {
		case strings.HasSuffix(s, "K"):
			mult, s = 1024, strings.TrimSuffix(s, "K")
		case strings.HasSuffix(s, "M"):
			mult, s = 1024*1024, strings.TrimSuffix(s, "M")
		}
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return n * mult
		}
	}
	return 0
}
