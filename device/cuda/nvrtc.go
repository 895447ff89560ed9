package cuda

import (
	"fmt"
	"strings"
	"sync"

	"github.com/bespoke-hpc/bespoke/internal/dl"
)

// nvrtc is the NVRTC binding table, filled once by loadNVRTC.
var nvrtc struct {
	version           func(major, minor *int32) int32
	createProgram     func(prog *uintptr, src string, name string, numHeaders int32, headers, includeNames **byte) int32
	compileProgram    func(prog uintptr, numOptions int32, options **byte) int32
	getProgramLogSize func(prog uintptr, size *uint64) int32
	getProgramLog     func(prog uintptr, log *byte) int32
	getCUBINSize      func(prog uintptr, size *uint64) int32
	getCUBIN          func(prog uintptr, cubin *byte) int32
	getPTXSize        func(prog uintptr, size *uint64) int32
	getPTX            func(prog uintptr, ptx *byte) int32
	destroyProgram    func(prog *uintptr) int32
	getErrorString    func(r int32) uintptr
	major, minor      int
	cubin             bool // nvrtcGetCUBIN is available
}

var (
	nvrtcOnce sync.Once
	nvrtcErr  error
)

const (
	nvrtcErrInvalidOption = 5
	nvrtcErrCompilation   = 6
)

func loadNVRTC() error {
	nvrtcOnce.Do(func() { nvrtcErr = doLoadNVRTC() })
	return nvrtcErr
}

func doLoadNVRTC() error {
	lib, err := OpenLibrary("nvrtc", "BESPOKE_NVRTC_LIBRARY",
		[]string{"nvidia/cuda_nvrtc/lib", "nvidia/cu13/lib", "nvidia/cu12/lib"},
		"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so")
	if err != nil {
		return err
	}
	n := &nvrtc
	err = dl.Bind(lib, []dl.Func{
		{Ptr: &n.version, Name: "nvrtcVersion"},
		{Ptr: &n.createProgram, Name: "nvrtcCreateProgram"},
		{Ptr: &n.compileProgram, Name: "nvrtcCompileProgram"},
		{Ptr: &n.getProgramLogSize, Name: "nvrtcGetProgramLogSize"},
		{Ptr: &n.getProgramLog, Name: "nvrtcGetProgramLog"},
		{Ptr: &n.getCUBINSize, Name: "nvrtcGetCUBINSize", Optional: true},
		{Ptr: &n.getCUBIN, Name: "nvrtcGetCUBIN", Optional: true},
		{Ptr: &n.getPTXSize, Name: "nvrtcGetPTXSize"},
		{Ptr: &n.getPTX, Name: "nvrtcGetPTX"},
		{Ptr: &n.destroyProgram, Name: "nvrtcDestroyProgram"},
		{Ptr: &n.getErrorString, Name: "nvrtcGetErrorString"},
	})
	if err != nil {
		return fmt.Errorf("cuda: nvrtc: %w", err)
	}
	n.cubin = n.getCUBINSize != nil && n.getCUBIN != nil
	var major, minor int32
	if r := n.version(&major, &minor); r != 0 {
		return fmt.Errorf("cuda: nvrtcVersion: %s", nvrtcError(r))
	}
	n.major, n.minor = int(major), int(minor)
	return nil
}

// NVRTCVersion returns NVRTC's version, loading it if needed.
func NVRTCVersion() (major, minor int, err error) {
	if err := loadNVRTC(); err != nil {
		return 0, 0, err
	}
	return nvrtc.major, nvrtc.minor, nil
}

func nvrtcError(r int32) string {
	s := ""
	if nvrtc.getErrorString != nil {
		s = dl.GoString(nvrtc.getErrorString(r))
	}
	if s == "" {
		s = "NVRTC_ERROR"
	}
	return fmt.Sprintf("%s (%d)", s, r)
}

// CompileError is a failed NVRTC compile; Log is NVRTC's whole log.
type CompileError struct {
	Code int32
	Log  string
}

func (e *CompileError) Error() string {
	lines := strings.Split(strings.TrimRight(e.Log, "\n\x00 "), "\n")
	more := ""
	if len(lines) > 40 {
		more = fmt.Sprintf("\n… (%d more lines)", len(lines)-40)
		lines = lines[:40]
	}
	return fmt.Sprintf("nvrtcCompileProgram: %s\n%s%s", nvrtcError(e.Code), strings.Join(lines, "\n"), more)
}

// compiled is NVRTC's output for one source.
type compiled struct {
	image []byte // CUBIN, or NUL-terminated PTX
	log   string
}

// nvrtcCompile compiles src with options; cubin selects nvrtcGetCUBIN over
// nvrtcGetPTX. It touches no CUDA context, so it may run on any goroutine.
func nvrtcCompile(src string, options []string, cubin bool) (compiled, error) {
	var prog uintptr
	if r := nvrtc.createProgram(&prog, src, "bespoke.cu", 0, nil, nil); r != 0 {
		return compiled{}, fmt.Errorf("nvrtcCreateProgram: %s", nvrtcError(r))
	}
	defer nvrtc.destroyProgram(&prog)
	var arena dl.Arena
	defer arena.Free()
	opts := arena.CStrings(options)
	r := nvrtc.compileProgram(prog, int32(len(options)), opts)
	dl.FixSignals() // NVRTC's compiler may have installed handlers of its own
	log := programLog(prog)
	if r != 0 {
		return compiled{log: log}, &CompileError{Code: r, Log: log}
	}
	var size uint64
	var out []byte
	if cubin {
		if r := nvrtc.getCUBINSize(prog, &size); r != 0 {
			return compiled{}, fmt.Errorf("nvrtcGetCUBINSize: %s", nvrtcError(r))
		}
		out = make([]byte, max(size, 1))
		if r := nvrtc.getCUBIN(prog, &out[0]); r != 0 {
			return compiled{}, fmt.Errorf("nvrtcGetCUBIN: %s", nvrtcError(r))
		}
	} else {
		if r := nvrtc.getPTXSize(prog, &size); r != 0 {
			return compiled{}, fmt.Errorf("nvrtcGetPTXSize: %s", nvrtcError(r))
		}
		out = make([]byte, size+1) // size counts the NUL; keep one spare
		if r := nvrtc.getPTX(prog, &out[0]); r != 0 {
			return compiled{}, fmt.Errorf("nvrtcGetPTX: %s", nvrtcError(r))
		}
	}
	return compiled{image: out[:size], log: log}, nil
}

func programLog(prog uintptr) string {
	var n uint64
	if nvrtc.getProgramLogSize(prog, &n) != 0 || n <= 1 {
		return ""
	}
	b := make([]byte, n)
	if nvrtc.getProgramLog(prog, &b[0]) != 0 {
		return ""
	}
	return cString(b)
}
