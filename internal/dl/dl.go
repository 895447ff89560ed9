// Package dl loads C shared libraries at run time through purego, so that
// backends work in a build with CGO_ENABLED=0 (purego then uses its internal
// fakecgo) and a missing vendor library is an ordinary error value.
//
// A backend describes its library with a list of sonames and an environment
// variable that overrides them, and its entry points with a table of Func:
//
//	var clFinish func(queue uintptr) int32
//	lib, err := dl.OpenWithHint("opencl", "BESPOKE_OPENCL_LIBRARY",
//		"install ocl-icd-libopencl1 and a driver such as pocl-opencl-icd",
//		"libOpenCL.so.1", "libOpenCL.so")
//	if err != nil { return err }
//	err = dl.Bind(lib, []dl.Func{{Ptr: &clFinish, Name: "clFinish"}})
//
// Go memory handed to C by pointer (arrays of size_t, handles, strings,
// arrays of char*) must stay put while C reads it; Arena pins it with a
// runtime.Pinner and builds NUL-terminated strings and char** arrays.
// Purego copies a Go string passed directly as a string argument, so
// simple const char* parameters may be declared as string in the Go
// signature.
package dl

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"strings"
	"unsafe"

	"github.com/ebitengine/purego"
)

// LoadError reports that no candidate of a library could be loaded.
type LoadError struct {
	What   string   // short name for messages, e.g. "opencl"
	EnvVar string   // environment variable that names the library, if any
	Names  []string // sonames tried, in order
	Hint   string   // how to install the library, e.g. "install ocl-icd-libopencl1"
	Tried  []error  // one error per path tried (dlerror text)
}

func (e *LoadError) Error() string {
	var b strings.Builder
	b.WriteString(e.What)
	b.WriteString(": cannot load ")
	switch len(e.Names) {
	case 0:
		b.WriteString("library")
	case 1:
		b.WriteString(e.Names[0])
	default:
		b.WriteString(strings.Join(e.Names[:len(e.Names)-1], ", "))
		b.WriteString(" or ")
		b.WriteString(e.Names[len(e.Names)-1])
	}
	var hints []string
	if e.EnvVar != "" {
		hints = append(hints, "set "+e.EnvVar)
	}
	if e.Hint != "" {
		hints = append(hints, e.Hint)
	}
	if len(hints) > 0 {
		b.WriteString(" (")
		b.WriteString(strings.Join(hints, ", or "))
		b.WriteString(")")
	}
	if e.EnvVar != "" {
		if p := os.Getenv(e.EnvVar); p != "" && len(e.Tried) > 0 {
			fmt.Fprintf(&b, "; %s=%s: %v", e.EnvVar, p, e.Tried[0])
		}
	}
	return b.String()
}

// Unwrap returns the individual dlopen errors.
func (e *LoadError) Unwrap() []error { return e.Tried }

// Open loads a shared library with RTLD_NOW|RTLD_LOCAL. It tries the path in
// the environment variable envVar first (when envVar is not empty and the
// variable is set), then each of names in order, and returns the first
// handle that loads. On failure the error is a *LoadError naming what and
// everything tried, e.g.
//
//	opencl: cannot load libOpenCL.so.1 or libOpenCL.so (set BESPOKE_OPENCL_LIBRARY)
func Open(what string, envVar string, names ...string) (uintptr, error) {
	return OpenWithHint(what, envVar, "", names...)
}

// OpenWithHint is Open with an installation hint appended to the error
// message, e.g. "install ocl-icd-libopencl1 and a driver such as
// pocl-opencl-icd".
func OpenWithHint(what, envVar, hint string, names ...string) (uintptr, error) {
	return OpenMode(what, envVar, hint, purego.RTLD_NOW|purego.RTLD_LOCAL, names...)
}

// OpenMode is OpenWithHint with explicit dlopen flags (purego.RTLD_*).
func OpenMode(what, envVar, hint string, mode int, names ...string) (uintptr, error) {
	e := &LoadError{What: what, EnvVar: envVar, Names: names, Hint: hint}
	var paths []string
	if envVar != "" {
		if p := os.Getenv(envVar); p != "" {
			paths = append(paths, p)
		}
	}
	paths = append(paths, names...)
	for _, p := range paths {
		h, err := purego.Dlopen(p, mode)
		if err == nil && h != 0 {
			FixSignals() // handlers its constructors installed
			return h, nil
		}
		if err == nil {
			err = errors.New("dlopen returned NULL")
		}
		e.Tried = append(e.Tried, fmt.Errorf("%s: %w", p, err))
	}
	return 0, e
}

// Close unloads a library opened with Open (dlclose). Functions bound from it
// must not be called afterwards.
func Close(lib uintptr) error { return purego.Dlclose(lib) }

// Sym returns the address of symbol name in lib, or an error naming it.
func Sym(lib uintptr, name string) (uintptr, error) {
	p, err := purego.Dlsym(lib, name)
	if err != nil {
		return 0, fmt.Errorf("symbol %s: %w", name, err)
	}
	if p == 0 {
		return 0, fmt.Errorf("symbol %s: address is NULL", name)
	}
	return p, nil
}

// Func is one entry of a binding table: Ptr points to a Go func variable
// whose signature mirrors the C function (see purego.RegisterFunc for the
// type mapping), Name is the C symbol. An Optional function that is missing
// leaves *Ptr nil; callers check for nil before use.
type Func struct {
	Ptr      any
	Name     string
	Optional bool
}

// Bind resolves every Func of table in lib and sets its Ptr. It looks each
// symbol up with dlsym first, so a missing required symbol is an error (all
// missing names are reported together), never a panic; a Ptr that is not a
// pointer to a func variable is reported as an error too.
func Bind(lib uintptr, table []Func) error {
	var missing []string
	var errs []error
	for _, f := range table {
		if f.Ptr == nil || reflect.TypeOf(f.Ptr).Kind() != reflect.Pointer ||
			reflect.TypeOf(f.Ptr).Elem().Kind() != reflect.Func {
			errs = append(errs, fmt.Errorf("dl: %s: Ptr must be a pointer to a func variable, got %T", f.Name, f.Ptr))
			continue
		}
		p, err := purego.Dlsym(lib, f.Name)
		if err != nil || p == 0 {
			if !f.Optional {
				missing = append(missing, f.Name)
			}
			continue
		}
		if err := register(f.Ptr, p); err != nil {
			errs = append(errs, fmt.Errorf("dl: %s: %w", f.Name, err))
		}
	}
	if len(missing) > 0 {
		errs = append([]error{fmt.Errorf("dl: missing symbols: %s", strings.Join(missing, ", "))}, errs...)
	}
	return errors.Join(errs...)
}

// register calls purego.RegisterFunc, turning its panics (unsupported
// argument types, too many arguments) into errors.
func register(fptr any, cfn uintptr) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	purego.RegisterFunc(fptr, cfn)
	return nil
}

// Arena keeps Go memory that is handed to C in place: everything it makes
// or is given is pinned (runtime.Pinner) until Free. Use one Arena per C
// call (or sequence of calls) and defer Free. The zero Arena is ready to use;
// an Arena must not be copied after first use.
type Arena struct {
	p runtime.Pinner
}

// CString returns a pinned NUL-terminated copy of s.
func (a *Arena) CString(s string) *byte {
	b := make([]byte, len(s)+1)
	copy(b, s)
	a.p.Pin(&b[0])
	return &b[0]
}

// CStrings returns a pinned char** array holding a pinned copy of each
// string, followed by a NULL entry (so it works both with a count and as a
// NULL-terminated list).
func (a *Arena) CStrings(ss []string) **byte {
	arr := make([]*byte, len(ss)+1)
	for i, s := range ss {
		arr[i] = a.CString(s)
	}
	a.p.Pin(&arr[0])
	return &arr[0]
}

// Bytes returns a pinned zeroed buffer of n bytes (at least one byte is
// allocated so that the pointer is valid when n is 0).
func (a *Arena) Bytes(n int) []byte {
	b := make([]byte, max(n, 1))
	a.p.Pin(&b[0])
	return b[:n]
}

// Uintptrs returns a pinned copy of vs (for size_t and handle arrays) and a
// pointer to its first element (nil when vs is empty).
func (a *Arena) Uintptrs(vs ...uintptr) *uintptr {
	if len(vs) == 0 {
		return nil
	}
	c := make([]uintptr, len(vs))
	copy(c, vs)
	a.p.Pin(&c[0])
	return &c[0]
}

// Pin pins ptr, which must be a pointer (or unsafe.Pointer) to Go memory,
// until Free. For a slice pin &s[0].
func (a *Arena) Pin(ptr any) { a.p.Pin(ptr) }

// Free unpins everything pinned by the Arena. The Arena can be reused.
func (a *Arena) Free() { a.p.Unpin() }

// GoString copies the NUL-terminated C string at p; p == 0 gives "".
func GoString(p uintptr) string {
	if p == 0 {
		return ""
	}
	ptr := *(*unsafe.Pointer)(unsafe.Pointer(&p)) // avoid go vet's uintptr→Pointer warning
	n := 0
	for *(*byte)(unsafe.Add(ptr, n)) != 0 {
		n++
	}
	return string(unsafe.Slice((*byte)(ptr), n))
}

// GoStringN returns b up to its first NUL byte (or all of b), as a string;
// for info queries that fill a char buffer.
func GoStringN(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}
