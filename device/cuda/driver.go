package cuda

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/bespoke-hpc/bespoke/internal/dl"
)

// Result is a CUDA driver API status code (CUresult).
type Result int32

// Driver status codes used by this package (cuda.h).
const (
	Success              Result = 0
	ErrorInvalidValue    Result = 1
	ErrorOutOfMemory     Result = 2
	ErrorNotInitialized  Result = 3
	ErrorNoDevice        Result = 100
	ErrorInvalidDevice   Result = 101
	ErrorInvalidImage    Result = 200
	ErrorInvalidContext  Result = 201
	ErrorNotFound        Result = 500
	ErrorLaunchResources Result = 701
	ErrorLaunchFailed    Result = 719
)

var resultNames = map[Result]string{
	Success:              "CUDA_SUCCESS",
	ErrorInvalidValue:    "CUDA_ERROR_INVALID_VALUE",
	ErrorOutOfMemory:     "CUDA_ERROR_OUT_OF_MEMORY",
	ErrorNotInitialized:  "CUDA_ERROR_NOT_INITIALIZED",
	ErrorNoDevice:        "CUDA_ERROR_NO_DEVICE",
	ErrorInvalidDevice:   "CUDA_ERROR_INVALID_DEVICE",
	ErrorInvalidImage:    "CUDA_ERROR_INVALID_IMAGE",
	ErrorInvalidContext:  "CUDA_ERROR_INVALID_CONTEXT",
	ErrorNotFound:        "CUDA_ERROR_NOT_FOUND",
	ErrorLaunchResources: "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
	ErrorLaunchFailed:    "CUDA_ERROR_LAUNCH_FAILED",
}

// Name is the driver's name for r (cuGetErrorName), e.g.
// "CUDA_ERROR_INVALID_IMAGE".
func (r Result) Name() string {
	if drv.cuGetErrorName != nil {
		var p uintptr
		if drv.cuGetErrorName(r, &p) == Success && p != 0 {
			return dl.GoString(p)
		}
	}
	if s, ok := resultNames[r]; ok {
		return s
	}
	return "CUDA_ERROR_UNKNOWN"
}

func (r Result) String() string { return fmt.Sprintf("%s (%d)", r.Name(), int32(r)) }

// Error is a failed driver call.
type Error struct {
	Func string
	Code Result
}

func (e *Error) Error() string { return e.Func + ": " + e.Code.String() }

func check(fn string, r Result) error {
	if r == Success {
		return nil
	}
	return &Error{Func: fn, Code: r}
}

// Device attributes (CUdevice_attribute).
const (
	attrMaxThreadsPerBlock    = 1
	attrMaxSharedPerBlock     = 8
	attrMultiprocessorCount   = 16
	attrL2CacheSize           = 38
	attrComputeCapMajor       = 75
	attrComputeCapMinor       = 76
	attrMaxSharedPerBlockOptn = 97
)

// Function attributes (CUfunction_attribute).
const (
	funcMaxThreadsPerBlock  = 0
	funcSharedSizeBytes     = 1
	funcLocalSizeBytes      = 3
	funcNumRegs             = 4
	funcMaxDynamicSharedMem = 8
)

// drv is the driver binding table, filled once by loadDriver.
var drv struct {
	cuInit                    func(flags uint32) Result
	cuDriverGetVersion        func(v *int32) Result
	cuDeviceGetCount          func(n *int32) Result
	cuDeviceGet               func(dev *int32, ordinal int32) Result
	cuDeviceGetName           func(name *byte, n int32, dev int32) Result
	cuDeviceGetAttribute      func(v *int32, attr int32, dev int32) Result
	cuDeviceTotalMem          func(bytes *uint64, dev int32) Result
	cuDevicePrimaryCtxRetain  func(ctx *uintptr, dev int32) Result
	cuDevicePrimaryCtxRelease func(dev int32) Result
	cuCtxSetCurrent           func(ctx uintptr) Result
	cuCtxSynchronize          func() Result
	cuMemAlloc                func(p *uint64, size uint64) Result
	cuMemFree                 func(p uint64) Result
	cuMemcpyHtoD              func(dst uint64, src unsafe.Pointer, n uint64) Result
	cuMemcpyDtoH              func(dst unsafe.Pointer, src uint64, n uint64) Result
	cuMemsetD8                func(dst uint64, v uint8, n uint64) Result
	cuModuleLoadData          func(mod *uintptr, image unsafe.Pointer) Result
	cuModuleGetFunction       func(fn *uintptr, mod uintptr, name string) Result
	cuModuleUnload            func(mod uintptr) Result
	cuFuncGetAttribute        func(v *int32, attr int32, fn uintptr) Result
	cuFuncSetAttribute        func(fn uintptr, attr int32, v int32) Result
	cuLaunchKernel            func(f uintptr, gx, gy, gz, bx, by, bz, shared uint32, stream uintptr, params unsafe.Pointer, extra unsafe.Pointer) Result
	cuEventCreate             func(ev *uintptr, flags uint32) Result
	cuEventRecord             func(ev uintptr, stream uintptr) Result
	cuEventSynchronize        func(ev uintptr) Result
	cuEventElapsedTime        func(ms *float32, start, end uintptr) Result
	cuEventDestroy            func(ev uintptr) Result
	cuGetErrorName            func(r Result, s *uintptr) Result

	// fallbacks for symbols renamed across driver versions
	cuEventElapsedTimeV1        func(ms *float32, start, end uintptr) Result
	cuEventDestroyV1            func(ev uintptr) Result
	cuDevicePrimaryCtxReleaseV1 func(dev int32) Result

	version int // cuDriverGetVersion, e.g. 13000
}

var (
	drvOnce sync.Once
	drvErr  error
)

// loadDriver opens libcuda (env BESPOKE_CUDA_LIBRARY), binds the table and
// calls cuInit. It is safe to call from any goroutine; only the first call
// does the work.
func loadDriver() error {
	drvOnce.Do(func() { drvErr = doLoadDriver() })
	return drvErr
}

func doLoadDriver() error {
	lib, err := dl.OpenWithHint("cuda", "BESPOKE_CUDA_LIBRARY",
		"install the NVIDIA driver (libcuda.so.1)", "libcuda.so.1", "libcuda.so")
	if err != nil {
		return err
	}
	d := &drv
	err = dl.Bind(lib, []dl.Func{
		{Ptr: &d.cuInit, Name: "cuInit"},
		{Ptr: &d.cuDriverGetVersion, Name: "cuDriverGetVersion"},
		{Ptr: &d.cuDeviceGetCount, Name: "cuDeviceGetCount"},
		{Ptr: &d.cuDeviceGet, Name: "cuDeviceGet"},
		{Ptr: &d.cuDeviceGetName, Name: "cuDeviceGetName"},
		{Ptr: &d.cuDeviceGetAttribute, Name: "cuDeviceGetAttribute"},
		{Ptr: &d.cuDeviceTotalMem, Name: "cuDeviceTotalMem_v2"},
		{Ptr: &d.cuDevicePrimaryCtxRetain, Name: "cuDevicePrimaryCtxRetain"},
		{Ptr: &d.cuDevicePrimaryCtxRelease, Name: "cuDevicePrimaryCtxRelease_v2", Optional: true},
		{Ptr: &d.cuDevicePrimaryCtxReleaseV1, Name: "cuDevicePrimaryCtxRelease", Optional: true},
		{Ptr: &d.cuCtxSetCurrent, Name: "cuCtxSetCurrent"},
		{Ptr: &d.cuCtxSynchronize, Name: "cuCtxSynchronize"},
		{Ptr: &d.cuMemAlloc, Name: "cuMemAlloc_v2"},
		{Ptr: &d.cuMemFree, Name: "cuMemFree_v2"},
		{Ptr: &d.cuMemcpyHtoD, Name: "cuMemcpyHtoD_v2"},
		{Ptr: &d.cuMemcpyDtoH, Name: "cuMemcpyDtoH_v2"},
		{Ptr: &d.cuMemsetD8, Name: "cuMemsetD8_v2"},
		{Ptr: &d.cuModuleLoadData, Name: "cuModuleLoadData"},
		{Ptr: &d.cuModuleGetFunction, Name: "cuModuleGetFunction"},
		{Ptr: &d.cuModuleUnload, Name: "cuModuleUnload"},
		{Ptr: &d.cuFuncGetAttribute, Name: "cuFuncGetAttribute"},
		{Ptr: &d.cuFuncSetAttribute, Name: "cuFuncSetAttribute"},
		{Ptr: &d.cuLaunchKernel, Name: "cuLaunchKernel"},
		{Ptr: &d.cuEventCreate, Name: "cuEventCreate"},
		{Ptr: &d.cuEventRecord, Name: "cuEventRecord"},
		{Ptr: &d.cuEventSynchronize, Name: "cuEventSynchronize"},
		{Ptr: &d.cuEventElapsedTime, Name: "cuEventElapsedTime_v2", Optional: true},
		{Ptr: &d.cuEventElapsedTimeV1, Name: "cuEventElapsedTime", Optional: true},
		{Ptr: &d.cuEventDestroy, Name: "cuEventDestroy_v2", Optional: true},
		{Ptr: &d.cuEventDestroyV1, Name: "cuEventDestroy", Optional: true},
		{Ptr: &d.cuGetErrorName, Name: "cuGetErrorName", Optional: true},
	})
	if err != nil {
		return fmt.Errorf("cuda: libcuda: %w", err)
	}
	if d.cuDevicePrimaryCtxRelease == nil {
		d.cuDevicePrimaryCtxRelease = d.cuDevicePrimaryCtxReleaseV1
	}
	if d.cuEventElapsedTime == nil {
		d.cuEventElapsedTime = d.cuEventElapsedTimeV1
	}
	if d.cuEventDestroy == nil {
		d.cuEventDestroy = d.cuEventDestroyV1
	}
	for _, m := range []struct {
		ok   bool
		name string
	}{
		{d.cuDevicePrimaryCtxRelease != nil, "cuDevicePrimaryCtxRelease"},
		{d.cuEventElapsedTime != nil, "cuEventElapsedTime"},
		{d.cuEventDestroy != nil, "cuEventDestroy"},
	} {
		if !m.ok {
			return fmt.Errorf("cuda: libcuda: missing symbol %s (and its _v2)", m.name)
		}
	}
	if err := check("cuInit", d.cuInit(0)); err != nil {
		return fmt.Errorf("cuda: %w", err)
	}
	var v int32
	if err := check("cuDriverGetVersion", d.cuDriverGetVersion(&v)); err != nil {
		return fmt.Errorf("cuda: %w", err)
	}
	d.version = int(v)
	return nil
}

// DriverVersion returns the CUDA driver API version (e.g. 13000 for 13.0),
// loading the driver if needed.
func DriverVersion() (int, error) {
	if err := loadDriver(); err != nil {
		return 0, err
	}
	return drv.version, nil
}

func versionString(v int) string { return fmt.Sprintf("%d.%d", v/1000, v%1000/10) }
