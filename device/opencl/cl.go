package opencl

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/bespoke-hpc/bespoke/internal/dl"
)

// OpenCL constants used here (from CL/cl.h).
const (
	clSuccess = 0

	clPlatformVersion = 0x0901
	clPlatformName    = 0x0902
	clPlatformVendor  = 0x0903

	clDeviceTypeCPU = 1 << 1
	clDeviceTypeGPU = 1 << 2
	clDeviceTypeAll = 0xFFFFFFFF

	clDeviceType                = 0x1000
	clDeviceMaxComputeUnits     = 0x1002
	clDeviceMaxWorkGroupSize    = 0x1004
	clDeviceGlobalMemCacheSize  = 0x101E
	clDeviceGlobalMemSize       = 0x101F
	clDeviceLocalMemSize        = 0x1023
	clDeviceName                = 0x102B
	clDeviceVendor              = 0x102C
	clDriverVersion             = 0x102D
	clDeviceVersion             = 0x102F
	clDeviceExtensions          = 0x1030
	clDeviceDoubleFPConfig      = 0x1032
	clContextPlatform           = 0x1084
	clQueueProfilingEnable      = 1 << 1
	clMemReadWrite              = 1 << 0
	clProgramNumDevices         = 0x1162
	clProgramBinarySizes        = 0x1165
	clProgramBinaries           = 0x1166
	clProgramBuildStatus        = 0x1181
	clProgramBuildLog           = 0x1183
	clKernelWorkGroupSize       = 0x11B0
	clKernelLocalMemSize        = 0x11B2
	clKernelPrivateMemSize      = 0x11B4
	clProfilingCommandEnd       = 0x1283
	clProfilingCommandStart     = 0x1282
	clTrue                      = 1
	clBuildProgramFailureCode   = -11
	clPlatformNotFoundKHRCode   = -1001
	clProfilingInfoNotAvailable = -7
)

var errorNames = map[int32]string{
	0: "CL_SUCCESS", -1: "CL_DEVICE_NOT_FOUND", -2: "CL_DEVICE_NOT_AVAILABLE",
	-3: "CL_COMPILER_NOT_AVAILABLE", -4: "CL_MEM_OBJECT_ALLOCATION_FAILURE",
	-5: "CL_OUT_OF_RESOURCES", -6: "CL_OUT_OF_HOST_MEMORY",
	-7: "CL_PROFILING_INFO_NOT_AVAILABLE", -8: "CL_MEM_COPY_OVERLAP",
	-9: "CL_IMAGE_FORMAT_MISMATCH", -10: "CL_IMAGE_FORMAT_NOT_SUPPORTED",
	-11: "CL_BUILD_PROGRAM_FAILURE", -12: "CL_MAP_FAILURE",
	-13: "CL_MISALIGNED_SUB_BUFFER_OFFSET", -14: "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST",
	-15: "CL_COMPILE_PROGRAM_FAILURE", -16: "CL_LINKER_NOT_AVAILABLE",
	-17: "CL_LINK_PROGRAM_FAILURE", -18: "CL_DEVICE_PARTITION_FAILED",
	-19: "CL_KERNEL_ARG_INFO_NOT_AVAILABLE",
	-30: "CL_INVALID_VALUE", -31: "CL_INVALID_DEVICE_TYPE", -32: "CL_INVALID_PLATFORM",
	-33: "CL_INVALID_DEVICE", -34: "CL_INVALID_CONTEXT", -35: "CL_INVALID_QUEUE_PROPERTIES",
	-36: "CL_INVALID_COMMAND_QUEUE", -37: "CL_INVALID_HOST_PTR", -38: "CL_INVALID_MEM_OBJECT",
	-39: "CL_INVALID_IMAGE_FORMAT_DESCRIPTOR", -40: "CL_INVALID_IMAGE_SIZE",
	-41: "CL_INVALID_SAMPLER", -42: "CL_INVALID_BINARY", -43: "CL_INVALID_BUILD_OPTIONS",
	-44: "CL_INVALID_PROGRAM", -45: "CL_INVALID_PROGRAM_EXECUTABLE",
	-46: "CL_INVALID_KERNEL_NAME", -47: "CL_INVALID_KERNEL_DEFINITION",
	-48: "CL_INVALID_KERNEL", -49: "CL_INVALID_ARG_INDEX", -50: "CL_INVALID_ARG_VALUE",
	-51: "CL_INVALID_ARG_SIZE", -52: "CL_INVALID_KERNEL_ARGS", -53: "CL_INVALID_WORK_DIMENSION",
	-54: "CL_INVALID_WORK_GROUP_SIZE", -55: "CL_INVALID_WORK_ITEM_SIZE",
	-56: "CL_INVALID_GLOBAL_OFFSET", -57: "CL_INVALID_EVENT_WAIT_LIST", -58: "CL_INVALID_EVENT",
	-59: "CL_INVALID_OPERATION", -60: "CL_INVALID_GL_OBJECT", -61: "CL_INVALID_BUFFER_SIZE",
	-62: "CL_INVALID_MIP_LEVEL", -63: "CL_INVALID_GLOBAL_WORK_SIZE", -64: "CL_INVALID_PROPERTY",
	-65: "CL_INVALID_IMAGE_DESCRIPTOR", -66: "CL_INVALID_COMPILER_OPTIONS",
	-67: "CL_INVALID_LINKER_OPTIONS", -68: "CL_INVALID_DEVICE_PARTITION_COUNT",
	-69: "CL_INVALID_PIPE_SIZE", -70: "CL_INVALID_DEVICE_QUEUE", -71: "CL_INVALID_SPEC_ID",
	-72:   "CL_MAX_SIZE_RESTRICTION_EXCEEDED",
	-1001: "CL_PLATFORM_NOT_FOUND_KHR",
}

// Error is a failed OpenCL call: Call is the function, Code the cl_int.
type Error struct {
	Call string
	Code int32
}

// CodeName is the CL_* name of an error code, or "CL_ERROR" when unknown.
func CodeName(code int32) string {
	if n, ok := errorNames[code]; ok {
		return n
	}
	return "CL_ERROR"
}

func (e *Error) Error() string {
	return fmt.Sprintf("opencl: %s: %s (%d)", e.Call, CodeName(e.Code), e.Code)
}

func check(call string, code int32) error {
	if code == clSuccess {
		return nil
	}
	return &Error{Call: call, Code: code}
}

// The bound entry points of libOpenCL. Handles (cl_platform_id, cl_mem …)
// are uintptr; size_t is uintptr; cl_uint is uint32; cl_bitfield is uint64.
var cl struct {
	GetPlatformIDs          func(num uint32, platforms *uintptr, numPlatforms *uint32) int32
	GetPlatformInfo         func(p uintptr, param uint32, size uintptr, value unsafe.Pointer, sizeRet *uintptr) int32
	GetDeviceIDs            func(p uintptr, typ uint64, num uint32, devices *uintptr, numDevices *uint32) int32
	GetDeviceInfo           func(d uintptr, param uint32, size uintptr, value unsafe.Pointer, sizeRet *uintptr) int32
	CreateContext           func(props *uintptr, num uint32, devices *uintptr, notify uintptr, user uintptr, errcode *int32) uintptr
	CreateCommandQueue      func(ctx, dev uintptr, props uint64, errcode *int32) uintptr
	CreateBuffer            func(ctx uintptr, flags uint64, size uintptr, host unsafe.Pointer, errcode *int32) uintptr
	EnqueueWriteBuffer      func(q, mem uintptr, blocking uint32, offset, size uintptr, ptr unsafe.Pointer, nEvents uint32, events *uintptr, event *uintptr) int32
	EnqueueReadBuffer       func(q, mem uintptr, blocking uint32, offset, size uintptr, ptr unsafe.Pointer, nEvents uint32, events *uintptr, event *uintptr) int32
	CreateProgramWithSource func(ctx uintptr, count uint32, strings **byte, lengths *uintptr, errcode *int32) uintptr
	CreateProgramWithBinary func(ctx uintptr, num uint32, devices *uintptr, lengths *uintptr, binaries **byte, status *int32, errcode *int32) uintptr
	BuildProgram            func(prog uintptr, num uint32, devices *uintptr, options *byte, notify uintptr, user uintptr) int32
	GetProgramInfo          func(prog uintptr, param uint32, size uintptr, value unsafe.Pointer, sizeRet *uintptr) int32
	GetProgramBuildInfo     func(prog, dev uintptr, param uint32, size uintptr, value unsafe.Pointer, sizeRet *uintptr) int32
	CreateKernel            func(prog uintptr, name *byte, errcode *int32) uintptr
	SetKernelArg            func(k uintptr, index uint32, size uintptr, value unsafe.Pointer) int32
	GetKernelWorkGroupInfo  func(k, dev uintptr, param uint32, size uintptr, value unsafe.Pointer, sizeRet *uintptr) int32
	EnqueueNDRangeKernel    func(q, k uintptr, dim uint32, offset, global, local *uintptr, nEvents uint32, events *uintptr, event *uintptr) int32
	EnqueueMarkerWithWait   func(q uintptr, nEvents uint32, events *uintptr, event *uintptr) int32
	GetEventProfilingInfo   func(e uintptr, param uint32, size uintptr, value unsafe.Pointer, sizeRet *uintptr) int32
	WaitForEvents           func(n uint32, events *uintptr) int32
	Finish                  func(q uintptr) int32
	ReleaseMemObject        func(h uintptr) int32
	ReleaseKernel           func(h uintptr) int32
	ReleaseProgram          func(h uintptr) int32
	ReleaseCommandQueue     func(h uintptr) int32
	ReleaseContext          func(h uintptr) int32
	ReleaseEvent            func(h uintptr) int32
}

var (
	loadOnce sync.Once
	loadErr  error
)

// LibraryEnv names the environment variable that overrides the library path.
const LibraryEnv = "BESPOKE_OPENCL_LIBRARY"

// load opens libOpenCL and binds the table once per process.
func load() error {
	loadOnce.Do(func() {
		lib, err := dl.OpenWithHint("opencl", LibraryEnv,
			"install ocl-icd-libopencl1 and a driver such as pocl-opencl-icd",
			"libOpenCL.so.1", "libOpenCL.so")
		if err != nil {
			loadErr = err
			return
		}
		loadErr = dl.Bind(lib, []dl.Func{
			{Ptr: &cl.GetPlatformIDs, Name: "clGetPlatformIDs"},
			{Ptr: &cl.GetPlatformInfo, Name: "clGetPlatformInfo"},
			{Ptr: &cl.GetDeviceIDs, Name: "clGetDeviceIDs"},
			{Ptr: &cl.GetDeviceInfo, Name: "clGetDeviceInfo"},
			{Ptr: &cl.CreateContext, Name: "clCreateContext"},
			{Ptr: &cl.CreateCommandQueue, Name: "clCreateCommandQueue"},
			{Ptr: &cl.CreateBuffer, Name: "clCreateBuffer"},
			{Ptr: &cl.EnqueueWriteBuffer, Name: "clEnqueueWriteBuffer"},
			{Ptr: &cl.EnqueueReadBuffer, Name: "clEnqueueReadBuffer"},
			{Ptr: &cl.CreateProgramWithSource, Name: "clCreateProgramWithSource"},
			{Ptr: &cl.CreateProgramWithBinary, Name: "clCreateProgramWithBinary", Optional: true},
			{Ptr: &cl.BuildProgram, Name: "clBuildProgram"},
			{Ptr: &cl.GetProgramInfo, Name: "clGetProgramInfo", Optional: true},
			{Ptr: &cl.GetProgramBuildInfo, Name: "clGetProgramBuildInfo"},
			{Ptr: &cl.CreateKernel, Name: "clCreateKernel"},
			{Ptr: &cl.SetKernelArg, Name: "clSetKernelArg"},
			{Ptr: &cl.GetKernelWorkGroupInfo, Name: "clGetKernelWorkGroupInfo"},
			{Ptr: &cl.EnqueueNDRangeKernel, Name: "clEnqueueNDRangeKernel"},
			{Ptr: &cl.EnqueueMarkerWithWait, Name: "clEnqueueMarkerWithWaitList", Optional: true},
			{Ptr: &cl.GetEventProfilingInfo, Name: "clGetEventProfilingInfo"},
			{Ptr: &cl.WaitForEvents, Name: "clWaitForEvents"},
			{Ptr: &cl.Finish, Name: "clFinish"},
			{Ptr: &cl.ReleaseMemObject, Name: "clReleaseMemObject"},
			{Ptr: &cl.ReleaseKernel, Name: "clReleaseKernel"},
			{Ptr: &cl.ReleaseProgram, Name: "clReleaseProgram"},
			{Ptr: &cl.ReleaseCommandQueue, Name: "clReleaseCommandQueue"},
			{Ptr: &cl.ReleaseContext, Name: "clReleaseContext"},
			{Ptr: &cl.ReleaseEvent, Name: "clReleaseEvent"},
		})
		if loadErr != nil {
			loadErr = fmt.Errorf("opencl: %w", loadErr)
		}
	})
	return loadErr
}

// Info queries. Each returns the value or an *Error.

func platformString(p uintptr, param uint32) (string, error) {
	var n uintptr
	if err := check("clGetPlatformInfo", cl.GetPlatformInfo(p, param, 0, nil, &n)); err != nil {
		return "", err
	}
	var a dl.Arena
	defer a.Free()
	b := a.Bytes(int(n))
	if err := check("clGetPlatformInfo", cl.GetPlatformInfo(p, param, n, unsafe.Pointer(unsafe.SliceData(b)), nil)); err != nil {
		return "", err
	}
	return dl.GoStringN(b), nil
}

func deviceString(d uintptr, param uint32) (string, error) {
	var n uintptr
	if err := check("clGetDeviceInfo", cl.GetDeviceInfo(d, param, 0, nil, &n)); err != nil {
		return "", err
	}
	var a dl.Arena
	defer a.Free()
	b := a.Bytes(int(n))
	if err := check("clGetDeviceInfo", cl.GetDeviceInfo(d, param, n, unsafe.Pointer(unsafe.SliceData(b)), nil)); err != nil {
		return "", err
	}
	return dl.GoStringN(b), nil
}

// deviceUint reads a numeric device parameter of size bytes (4 or 8).
func deviceUint(d uintptr, param uint32, size uintptr) (uint64, error) {
	var a dl.Arena
	defer a.Free()
	v := new(uint64)
	a.Pin(v)
	if err := check("clGetDeviceInfo", cl.GetDeviceInfo(d, param, size, unsafe.Pointer(v), nil)); err != nil {
		return 0, err
	}
	if size == 4 {
		return uint64(uint32(*v)), nil // little-endian
	}
	return *v, nil
}

func platforms() ([]uintptr, error) {
	var n uint32
	code := cl.GetPlatformIDs(0, nil, &n)
	if code == clPlatformNotFoundKHRCode || n == 0 {
		return nil, nil
	}
	if err := check("clGetPlatformIDs", code); err != nil {
		return nil, err
	}
	ids := make([]uintptr, n)
	var a dl.Arena
	defer a.Free()
	a.Pin(&ids[0])
	if err := check("clGetPlatformIDs", cl.GetPlatformIDs(n, &ids[0], nil)); err != nil {
		return nil, err
	}
	return ids, nil
}

func devices(p uintptr) ([]uintptr, error) {
	var n uint32
	code := cl.GetDeviceIDs(p, clDeviceTypeAll, 0, nil, &n)
	if code == -1 || n == 0 { // CL_DEVICE_NOT_FOUND
		return nil, nil
	}
	if err := check("clGetDeviceIDs", code); err != nil {
		return nil, err
	}
	ids := make([]uintptr, n)
	var a dl.Arena
	defer a.Free()
	a.Pin(&ids[0])
	if err := check("clGetDeviceIDs", cl.GetDeviceIDs(p, clDeviceTypeAll, n, &ids[0], nil)); err != nil {
		return nil, err
	}
	return ids, nil
}
