// Package device defines what every run-time backend (CUDA, OpenCL, host C)
// provides: memory, program building, kernel launch and timing.
//
// It must not import the backends (device/cuda, device/opencl, device/host);
// they import it. Vendor libraries are opened at run time, so a build with
// CGO_ENABLED=0 works everywhere and a missing library is an error value.
package device

import (
	"fmt"
	"time"

	"github.com/bespoke-hpc/bespoke/emit"
	"github.com/bespoke-hpc/bespoke/kernel"
)

// Launch is a resolved launch geometry.
type Launch struct {
	Grid        [3]int // blocks (work-groups) per dimension
	Block       [3]int // threads (work-items) per block
	SharedBytes int    // dynamic shared (local) memory per block; 0 when static
}

// Info describes a device for reports and for choosing kernel parameters.
type Info struct {
	Backend      string `json:"backend"` // "cuda", "opencl" or "c"
	ID           string `json:"id"`      // selector for --device: CUDA ordinal, OpenCL "P:D", "" for the host
	Name         string `json:"name"`
	Platform     string `json:"platform,omitempty"` // OpenCL platform, CUDA driver version …
	Arch         string `json:"arch,omitempty"`     // "sm_90", "x86-64 avx2" …
	ComputeUnits int    `json:"compute_units"`      // SMs, OpenCL compute units, or CPU threads
	MemoryBytes  int64  `json:"memory_bytes"`
	L2Bytes      int64  `json:"l2_bytes,omitempty"`
	// LastCacheBytes is the last-level cache (a CPU's L3, a GPU's L2):
	// timed working sets must be several times larger.
	LastCacheBytes int64   `json:"last_cache_bytes,omitempty"`
	SharedPerBlock int     `json:"shared_per_block,omitempty"`
	MaxBlock       int     `json:"max_block,omitempty"` // most threads per block
	FP64           bool    `json:"fp64"`
	GPU            bool    `json:"gpu,omitempty"`      // a GPU (CUDA, or an OpenCL GPU device)
	CopyGBs        float64 `json:"copy_gbs,omitempty"` // measured copy bandwidth, when known
	// WideVectorBits is the vector width a C device builds kernels that
	// ask for kernel.Hints.WideVectors with (512 on an AVX-512 host),
	// 0 where they get the usual build.
	WideVectorBits int `json:"wide_vector_bits,omitempty"`
}

// Resources are what the compiler reports for one kernel.
type Resources struct {
	Registers   int `json:"registers,omitempty"`
	SpillBytes  int `json:"spill_bytes,omitempty"` // local-memory spill stores
	SharedBytes int `json:"shared_bytes,omitempty"`
	LocalBytes  int `json:"local_bytes,omitempty"`
}

// Buffer is device memory. Transfers are whole-prefix: Upload writes
// len(src) bytes at offset 0, Download reads len(dst) bytes from offset 0.
type Buffer interface {
	Size() int64
	Upload(src []byte) error
	Download(dst []byte) error
	Free() error
}

// Slicer is implemented by devices whose buffers can be viewed in part,
// so that a run can take its many buffers from one allocation (an
// allocation costs tens of µs on a GPU). Slice returns bytes [off,
// off+n) of b, which must be one of the device's own allocations, as a
// Buffer that kernels, Upload and Download take like any other; it is
// valid while b is, and its Free does nothing. off must be a multiple of
// SliceAlign.
type Slicer interface {
	Slice(b Buffer, off, n int64) (Buffer, error)
}

// SliceAlign is the alignment of a Slice's offset (CUDA's allocation
// granule for global-memory accesses; more than any element needs).
const SliceAlign = 256

// Kernel is one compiled entry point.
type Kernel interface {
	Name() string
	// Launch runs the kernel asynchronously where the backend allows.
	// Args follow the kernel's parameter list in order; each is a Buffer,
	// an int32 or an int64.
	Launch(l Launch, args ...any) error
	Resources() Resources
}

// Program is a built Source.
type Program interface {
	Kernel(entry string) (Kernel, error)
	Close() error
}

// SerialBuilder is implemented by devices whose builds run one at a time
// within a process (PoCL compiles under a lock).
type SerialBuilder interface{ SerialBuilds() bool }

// BuildLimiter is implemented by devices whose driver compiles badly with
// many builds at once: MaxBuilds is the most worth running together in a
// process (0: no limit of the device's own).
type BuildLimiter interface{ MaxBuilds() int }

// Compiler is implemented by devices that can compile a source into their
// on-disk cache without loading it, so that builds can run beside timed
// launches without touching the device context.
type Compiler interface{ Compile(src emit.Source) error }

// Device is one backend device with a context of its own.
type Device interface {
	Info() Info
	Dialect() emit.Dialect
	Alloc(bytes int64) (Buffer, error)
	// Build compiles src (all its entries in one compiler call), using
	// an on-disk cache where the backend has one. Errors carry the
	// compiler's log.
	Build(src emit.Source) (Program, error)
	// Elapsed runs f, which enqueues work, and returns the device time it
	// took: events on GPUs, a monotonic clock around a synchronised run on
	// the host.
	Elapsed(f func() error) (time.Duration, error)
	// Sync waits for all enqueued work.
	Sync() error
	Close() error
}

// SeriesTimer is implemented by devices that can time launches enqueued
// back to back.
type SeriesTimer interface {
	// ElapsedSeries calls f(0), f(1), …, f(n) without waiting between them
	// and returns the device time of each of f(1) … f(n), measured between
	// events enqueued around each. f(0) is a lead-in and is not timed.
	ElapsedSeries(n int, f func(i int) error) ([]time.Duration, error)
}

// ElapsedSeries times f(1) … f(n) after an untimed lead-in f(0).
//
// Timing one launch between two events lets host time count as kernel
// time: on an idle device the start event completes at once, and the
// clock runs while the host binds arguments and enqueues the launch (a
// few microseconds, far more when the host is busy compiling other
// candidates). Enqueued behind the lead-in, each timed launch is already
// waiting when the device reaches its start event, so only device time
// is counted as long as the host enqueues faster than the device runs.
// Devices without SeriesTimer (the host, whose launches are synchronous)
// time each call on its own.
func ElapsedSeries(d Device, n int, f func(i int) error) ([]time.Duration, error) {
	if st, ok := d.(SeriesTimer); ok {
		return st.ElapsedSeries(n, f)
	}
	return ElapsedEach(d, n, f)
}

// ElapsedEach times f(1) … f(n) one call at a time with d.Elapsed, after
// an untimed f(0): ElapsedSeries for devices without a series of their
// own, or whose series timing failed.
func ElapsedEach(d Device, n int, f func(i int) error) ([]time.Duration, error) {
	if n < 0 {
		return nil, fmt.Errorf("device: %d timed launches", n)
	}
	if err := f(0); err != nil {
		return nil, err
	}
	ds := make([]time.Duration, n)
	for i := range ds {
		dt, err := d.Elapsed(func() error { return f(i + 1) })
		if err != nil {
			return nil, err
		}
		ds[i] = dt
	}
	return ds, nil
}

// Bind resolves a kernel's launch against named sizes and orders its
// arguments: integer values and buffers by parameter name.
func Bind(k *kernel.Kernel, values map[string]int64, bufs map[string]Buffer) (Launch, []any, error) {
	named := make(map[string]any, len(values)+len(bufs))
	for name, v := range values {
		named[name] = v
	}
	for name, b := range bufs {
		named[name] = b
	}
	args, err := k.Args(named)
	if err != nil {
		return Launch{}, nil, err
	}
	grid, err := k.Launch.Blocks(values)
	if err != nil {
		return Launch{}, nil, err
	}
	l := Launch{Grid: grid, Block: k.Launch.Block}
	if k.Launch.DynamicShared() {
		l.SharedBytes = k.Launch.SharedBytes
	}
	return l, args, nil
}
