// Package cuda is the CUDA backend of bespoke: it drives the GPU through the
// CUDA driver API (libcuda.so.1) and compiles kernels with NVRTC, both opened
// at run time through purego, so it builds with CGO_ENABLED=0 and a missing
// driver or NVRTC is an error value.
//
// A CUDA context is current per OS thread. Every public entry point that
// touches the driver locks its goroutine to its OS thread and makes the
// device's primary context current there (see Device.Do); the primary context
// is the one the CUDA runtime uses, so cuBLAS and cuSPARSE handles created
// inside Do share memory and the default stream with this package's kernels.
// All work is enqueued on the legacy default stream (0), so kernels, copies and
// library calls run in issue order.
package cuda

import (
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/emit"
)

// Device is one CUDA device with its retained primary context.
type Device struct {
	ordinal int
	dev     int32
	ctx     uintptr
	info    device.Info
	major   int
	minor   int

	mu     sync.Mutex
	closed bool
}

var _ device.Device = (*Device)(nil)
var _ device.Compiler = (*Device)(nil)

// List describes every CUDA device without creating contexts.
func List() ([]device.Info, error) {
	if err := loadDriver(); err != nil {
		return nil, err
	}
	var n int32
	if err := check("cuDeviceGetCount", drv.cuDeviceGetCount(&n)); err != nil {
		return nil, fmt.Errorf("cuda: %w", err)
	}
	infos := make([]device.Info, 0, n)
	for i := 0; i < int(n); i++ {
		var dev int32
		if err := check("cuDeviceGet", drv.cuDeviceGet(&dev, int32(i))); err != nil {
			return nil, fmt.Errorf("cuda: device %d: %w", i, err)
		}
		info, _, _, err := describe(dev)
		if err != nil {
			return nil, fmt.Errorf("cuda: device %d: %w", i, err)
		}
		info.ID = strconv.Itoa(i)
		infos = append(infos, info)
	}
	return infos, nil
}

// ErrNoDevice is returned by Open when the driver loads but reports no device
// of that ordinal.
var ErrNoDevice = errors.New("cuda: no such CUDA device")

// Open retains the primary context of device ordinal.
func Open(ordinal int) (*Device, error) {
	if err := loadDriver(); err != nil {
		return nil, err
	}
	var n int32
	if err := check("cuDeviceGetCount", drv.cuDeviceGetCount(&n)); err != nil {
		return nil, fmt.Errorf("cuda: %w", err)
	}
	if ordinal < 0 || ordinal >= int(n) {
		return nil, fmt.Errorf("%w: ordinal %d, %d device(s)", ErrNoDevice, ordinal, n)
	}
	d := &Device{ordinal: ordinal}
	if err := check("cuDeviceGet", drv.cuDeviceGet(&d.dev, int32(ordinal))); err != nil {
		return nil, fmt.Errorf("cuda: %w", err)
	}
	var err error
	d.info, d.major, d.minor, err = describe(d.dev)
	if err != nil {
		return nil, fmt.Errorf("cuda: %w", err)
	}
	d.info.ID = strconv.Itoa(ordinal)
	if err := check("cuDevicePrimaryCtxRetain", drv.cuDevicePrimaryCtxRetain(&d.ctx, d.dev)); err != nil {
		return nil, fmt.Errorf("cuda: %w", err)
	}
	return d, nil
}

func describe(dev int32) (info device.Info, major, minor int, err error) {
	attr := func(a int32) int {
		var v int32
		if r := drv.cuDeviceGetAttribute(&v, a, dev); r != Success && err == nil {
			err = check("cuDeviceGetAttribute", r)
		}
		return int(v)
	}
	var name [256]byte
	if e := check("cuDeviceGetName", drv.cuDeviceGetName(&name[0], int32(len(name)), dev)); e != nil {
		return info, 0, 0, e
	}
	var mem uint64
	if e := check("cuDeviceTotalMem_v2", drv.cuDeviceTotalMem(&mem, dev)); e != nil {
		return info, 0, 0, e
	}
	major, minor = attr(attrComputeCapMajor), attr(attrComputeCapMinor)
	shared := attr(attrMaxSharedPerBlockOptn)
	if shared == 0 {
		shared = attr(attrMaxSharedPerBlock)
	}
	info = device.Info{
		GPU:            true,
		Backend:        "cuda",
		Name:           cString(name[:]),
		Platform:       "CUDA driver " + versionString(drv.version),
		Arch:           fmt.Sprintf("sm_%d%d", major, minor),
		ComputeUnits:   attr(attrMultiprocessorCount),
		MemoryBytes:    int64(mem),
		L2Bytes:        int64(attr(attrL2CacheSize)),
		LastCacheBytes: int64(attr(attrL2CacheSize)),
		SharedPerBlock: shared,
		MaxBlock:       attr(attrMaxThreadsPerBlock),
		FP64:           true,
	}
	return info, major, minor, err
}

func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// Ordinal is the device's index in List.
func (d *Device) Ordinal() int { return d.ordinal }

// ComputeCapability returns the major and minor compute capability.
func (d *Device) ComputeCapability() (major, minor int) { return d.major, d.minor }

// Info describes the device.
func (d *Device) Info() device.Info { return d.info }

// Dialect is emit.CUDA.
func (d *Device) Dialect() emit.Dialect { return emit.CUDA }

// Do runs f with the calling goroutine locked to its OS thread and the
// device's primary context current on it. Call driver or CUDA library
// functions (cuBLAS, cuSPARSE …) that belong to this device only inside Do.
// Do nests: f may call Device methods.
func (d *Device) Do(f func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	d.mu.Lock()
	closed := d.closed
	d.mu.Unlock()
	if closed {
		return errors.New("cuda: device is closed")
	}
	if err := check("cuCtxSetCurrent", drv.cuCtxSetCurrent(d.ctx)); err != nil {
		return fmt.Errorf("cuda: %w", err)
	}
	return f()
}

// Sync waits for all enqueued work (cuCtxSynchronize).
func (d *Device) Sync() error {
	return d.Do(func() error { return check("cuCtxSynchronize", drv.cuCtxSynchronize()) })
}

// Elapsed records an event on the default stream, runs f (which enqueues
// work), records a second event, waits for it and returns the time between
// the two events.
func (d *Device) Elapsed(f func() error) (time.Duration, error) {
	var start, stop uintptr
	err := d.Do(func() error {
		if err := check("cuEventCreate", drv.cuEventCreate(&start, 0)); err != nil {
			return err
		}
		if err := check("cuEventCreate", drv.cuEventCreate(&stop, 0)); err != nil {
			drv.cuEventDestroy(start)
			return err
		}
		return check("cuEventRecord", drv.cuEventRecord(start, 0))
	})
	if err != nil {
		return 0, err
	}
	var ms float32
	ferr := f()
	err = d.Do(func() error {
		defer drv.cuEventDestroy(start)
		defer drv.cuEventDestroy(stop)
		if err := check("cuEventRecord", drv.cuEventRecord(stop, 0)); err != nil {
			return err
		}
		if err := check("cuEventSynchronize", drv.cuEventSynchronize(stop)); err != nil {
			return err
		}
		return check("cuEventElapsedTime", drv.cuEventElapsedTime(&ms, start, stop))
	})
	if ferr != nil {
		return 0, ferr
	}
	if err != nil {
		return 0, err
	}
	return time.Duration(float64(ms) * 1e6), nil
}

// ElapsedSeries calls f(0) … f(n) back to back on the default stream with
// an event recorded after each, and returns the time between consecutive
// events from f(1) on (device.SeriesTimer).
func (d *Device) ElapsedSeries(n int, f func(i int) error) ([]time.Duration, error) {
	if n < 0 {
		return nil, fmt.Errorf("cuda: %d timed launches", n)
	}
	events := make([]uintptr, 0, n+1)
	defer func() {
		_ = d.Do(func() error {
			for _, ev := range events {
				drv.cuEventDestroy(ev)
			}
			return nil
		})
	}()
	ds := make([]time.Duration, n)
	err := d.Do(func() error {
		// Created before the first launch, so that the loop only enqueues.
		for range n + 1 {
			var ev uintptr
			if err := check("cuEventCreate", drv.cuEventCreate(&ev, 0)); err != nil {
				return err
			}
			events = append(events, ev)
		}
		for i, ev := range events {
			if err := f(i); err != nil {
				return err
			}
			if err := check("cuEventRecord", drv.cuEventRecord(ev, 0)); err != nil {
				return err
			}
		}
		if err := check("cuEventSynchronize", drv.cuEventSynchronize(events[n])); err != nil {
			return err
		}
		for i := range ds {
			var ms float32
			if err := check("cuEventElapsedTime", drv.cuEventElapsedTime(&ms, events[i], events[i+1])); err != nil {
				return err
			}
			ds[i] = time.Duration(float64(ms) * 1e6)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ds, nil
}

// Close releases the primary context. Buffers and programs of the device must
// be freed first. Close is idempotent.
func (d *Device) Close() error {
	var err error
	_ = d.Do(func() error {
		err = check("cuCtxSynchronize", drv.cuCtxSynchronize())
		return nil
	})
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	if e := check("cuDevicePrimaryCtxRelease", drv.cuDevicePrimaryCtxRelease(d.dev)); e != nil && err == nil {
		err = e
	}
	return err
}

// Buffer is device memory (cuMemAlloc), or a view of part of one
// (Slice).
type Buffer struct {
	d    *Device
	ptr  uint64
	size int64
	view bool // a Slice: Free leaves the memory to its allocation
}

var _ device.Buffer = (*Buffer)(nil)
var _ device.Slicer = (*Device)(nil)

// Slice is bytes [off, off+n) of b, an allocation of d's (device.Slicer).
func (d *Device) Slice(b device.Buffer, off, n int64) (device.Buffer, error) {
	cb, ok := b.(*Buffer)
	switch {
	case !ok || cb.d != d || cb.view:
		return nil, fmt.Errorf("cuda: Slice of %T, not an allocation of this device", b)
	case cb.ptr == 0:
		return nil, errors.New("cuda: Slice of a freed buffer")
	case off < 0 || n < 0 || off+n > cb.size || off%device.SliceAlign != 0:
		return nil, fmt.Errorf("cuda: Slice [%d, %d) of a buffer of %d bytes (offsets multiples of %d)", off, off+n, cb.size, device.SliceAlign)
	}
	return &Buffer{d: d, ptr: cb.ptr + uint64(off), size: n, view: true}, nil
}

// Alloc allocates bytes of device memory (uninitialised).
func (d *Device) Alloc(bytes int64) (device.Buffer, error) { return d.AllocBuffer(bytes) }

// AllocBuffer is Alloc returning the concrete type.
func (d *Device) AllocBuffer(bytes int64) (*Buffer, error) {
	if bytes < 0 {
		return nil, fmt.Errorf("cuda: Alloc(%d): negative size", bytes)
	}
	b := &Buffer{d: d, size: bytes}
	if bytes == 0 {
		return b, nil
	}
	err := d.Do(func() error { return check("cuMemAlloc_v2", drv.cuMemAlloc(&b.ptr, uint64(bytes))) })
	if err != nil {
		return nil, fmt.Errorf("cuda: Alloc(%d): %w", bytes, err)
	}
	return b, nil
}

// Ptr is the buffer's device address (CUdeviceptr).
func (b *Buffer) Ptr() uintptr { return uintptr(b.ptr) }

// Size is the buffer's size in bytes.
func (b *Buffer) Size() int64 { return b.size }

// Device is the buffer's device.
func (b *Buffer) Device() *Device { return b.d }

// Upload copies src to the start of the buffer (synchronous).
func (b *Buffer) Upload(src []byte) error {
	if int64(len(src)) > b.size {
		return fmt.Errorf("cuda: Upload of %d bytes into a buffer of %d", len(src), b.size)
	}
	if len(src) == 0 {
		return nil
	}
	return b.d.Do(func() error {
		return check("cuMemcpyHtoD_v2", drv.cuMemcpyHtoD(b.ptr, unsafe.Pointer(&src[0]), uint64(len(src))))
	})
}

// Download copies the start of the buffer to dst (synchronous; waits for
// work enqueued before it on the default stream).
func (b *Buffer) Download(dst []byte) error {
	if int64(len(dst)) > b.size {
		return fmt.Errorf("cuda: Download of %d bytes from a buffer of %d", len(dst), b.size)
	}
	if len(dst) == 0 {
		return nil
	}
	return b.d.Do(func() error {
		return check("cuMemcpyDtoH_v2", drv.cuMemcpyDtoH(unsafe.Pointer(&dst[0]), b.ptr, uint64(len(dst))))
	})
}

// Fill sets every byte of the buffer to v (cuMemsetD8).
func (b *Buffer) Fill(v byte) error {
	if b.size == 0 {
		return nil
	}
	return b.d.Do(func() error { return check("cuMemsetD8_v2", drv.cuMemsetD8(b.ptr, v, uint64(b.size))) })
}

// Free releases the memory; a second Free does nothing, nor does a
// view's.
func (b *Buffer) Free() error {
	if b.ptr == 0 || b.view {
		b.ptr = 0
		return nil
	}
	p := b.ptr
	b.ptr = 0
	return b.d.Do(func() error { return check("cuMemFree_v2", drv.cuMemFree(p)) })
}
