package dl

import (
	"errors"
	"os"
	"strings"
	"testing"
)

func libc(t *testing.T) uintptr {
	t.Helper()
	lib, err := Open("libc", "", "libc.so.6", "libc.so")
	if err != nil {
		t.Skipf("no libc to test with: %v", err)
	}
	return lib
}

func TestBindAndStrings(t *testing.T) {
	lib := libc(t)
	var strlen func(s *byte) uintptr
	var strlenS func(s string) uintptr
	var getenv func(name string) uintptr
	var absent func()
	err := Bind(lib, []Func{
		{Ptr: &strlen, Name: "strlen"},
		{Ptr: &strlenS, Name: "strlen"},
		{Ptr: &getenv, Name: "getenv"},
		{Ptr: &absent, Name: "bespoke_no_such_symbol", Optional: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	if absent != nil {
		t.Fatal("optional missing symbol was bound")
	}
	var a Arena
	defer a.Free()
	if n := strlen(a.CString("hello")); n != 5 {
		t.Fatalf("strlen = %d", n)
	}
	if n := strlenS("hello, world"); n != 12 {
		t.Fatalf("strlen(string) = %d", n)
	}
	arr := a.CStrings([]string{"a", "bc", "def"})
	_ = arr
	t.Setenv("BESPOKE_DL_TEST", "value 42")
	if s := GoString(getenv("BESPOKE_DL_TEST")); s != "value 42" {
		t.Fatalf("GoString(getenv) = %q", s)
	}
	if s := GoString(0); s != "" {
		t.Fatalf("GoString(0) = %q", s)
	}
	if s := GoStringN([]byte("abc\x00def")); s != "abc" {
		t.Fatalf("GoStringN = %q", s)
	}
}

func TestBindMissing(t *testing.T) {
	lib := libc(t)
	var f, g func() int32
	var notFunc int
	err := Bind(lib, []Func{
		{Ptr: &f, Name: "bespoke_missing_one"},
		{Ptr: &g, Name: "bespoke_missing_two"},
		{Ptr: &notFunc, Name: "strlen"},
	})
	if err == nil {
		t.Fatal("no error for missing symbols")
	}
	for _, want := range []string{"bespoke_missing_one", "bespoke_missing_two", "Ptr must be a pointer to a func"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	// An unsupported signature is an error, not a panic.
	var bad func(m map[string]int)
	if err := Bind(lib, []Func{{Ptr: &bad, Name: "strlen"}}); err == nil {
		t.Error("no error for unsupported signature")
	}
}

func TestOpenError(t *testing.T) {
	t.Setenv("BESPOKE_DL_TEST_LIB", "/nonexistent/libfoo.so")
	_, err := OpenWithHint("foo", "BESPOKE_DL_TEST_LIB", "install libfoo1",
		"libbespoke_nonexistent.so.1", "libbespoke_nonexistent.so")
	if err == nil {
		t.Fatal("loaded a nonexistent library")
	}
	want := "foo: cannot load libbespoke_nonexistent.so.1 or libbespoke_nonexistent.so (set BESPOKE_DL_TEST_LIB, or install libfoo1)"
	if !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("error %q\nwant prefix %q", err, want)
	}
	if !strings.Contains(err.Error(), "/nonexistent/libfoo.so") {
		t.Errorf("error %q does not mention the env path", err)
	}
	var le *LoadError
	if !errors.As(err, &le) || len(le.Tried) != 3 {
		t.Fatalf("not a LoadError with 3 tries: %#v", err)
	}
}

func TestOpenEnvFirst(t *testing.T) {
	if _, err := os.Stat("/lib/x86_64-linux-gnu/libc.so.6"); err != nil {
		t.Skip("no /lib/x86_64-linux-gnu/libc.so.6")
	}
	t.Setenv("BESPOKE_DL_TEST_LIB", "/lib/x86_64-linux-gnu/libc.so.6")
	if _, err := Open("libc", "BESPOKE_DL_TEST_LIB", "libbespoke_nonexistent.so"); err != nil {
		t.Fatal(err)
	}
}
