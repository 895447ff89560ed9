package cache

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func store(t *testing.T, kind string) *Store {
	t.Helper()
	t.Setenv("BESPOKE_CACHE_DIR", t.TempDir())
	t.Setenv("BESPOKE_NO_CACHE", "")
	return Open(kind)
}

func TestGetPut(t *testing.T) {
	s := store(t, "test")
	if _, ok := s.Get("k"); ok {
		t.Fatal("an empty store has an entry")
	}
	want := []byte("payload\nwith lines\x00and a zero")
	if err := s.Put("k", want); err != nil {
		t.Fatal(err)
	}
	got, ok := s.Get("k")
	if !ok || !bytes.Equal(got, want) {
		t.Fatalf("Get = %q, %v", got, ok)
	}
	if Open("test") != s || Open("other") == s {
		t.Error("stores are one per kind and folder")
	}
	if filepath.Dir(s.Dir()) != os.Getenv("BESPOKE_CACHE_DIR") || s.Temporary() {
		t.Errorf("store in %s (temporary %v), want under BESPOKE_CACHE_DIR", s.Dir(), s.Temporary())
	}
}

// Every kind of damage makes the entry absent, and removes it.
func TestDamage(t *testing.T) {
	s := store(t, "test")
	payload := []byte("0123456789abcdef")
	path := filepath.Join(s.Dir(), "k.entry")
	for _, tc := range []struct {
		name   string
		damage func(b []byte) []byte
	}{
		{"truncated", func(b []byte) []byte { return b[:len(b)-3] }},
		{"empty", func(b []byte) []byte { return nil }},
		{"flipped byte", func(b []byte) []byte { b[len(b)-1] ^= 1; return b }},
		{"no header", func(b []byte) []byte { return payload }},
		{"other version", func(b []byte) []byte {
			return bytes.Replace(b, []byte(fmt.Sprintf("%s %d", magic, Version)), []byte(magic+" 999"), 1)
		}},
		{"other kind", func(b []byte) []byte { return bytes.Replace(b, []byte(" test "), []byte(" tset "), 1) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := s.Put("k", payload); err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(path)
			os.WriteFile(path, tc.damage(b), 0o644)
			if got, ok := s.Get("k"); ok {
				t.Fatalf("damaged entry read as %q", got)
			}
			if _, err := os.Stat(path); err == nil {
				t.Error("damaged entry left in place")
			}
		})
	}
}

func TestFile(t *testing.T) {
	s := store(t, "test")
	if _, ok := s.File("obj", ".so"); ok {
		t.Fatal("an empty store has a file")
	}
	content := []byte("\x7fELF pretend object")
	path, err := s.PutFile("obj", ".so", func(tmp string) error { return os.WriteFile(tmp, content, 0o644) })
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := s.File("obj", ".so"); !ok || got != path {
		t.Fatalf("File = %s, %v; want %s", got, ok, path)
	}
	// A producer that fails leaves nothing behind.
	if _, err := s.PutFile("bad", ".so", func(string) error { return fmt.Errorf("compiler failed") }); err == nil {
		t.Error("a failed producer succeeded")
	}
	left, _ := filepath.Glob(filepath.Join(s.Dir(), "*.tmp"))
	if len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
	// Truncation (a crash mid-copy, a full disk) is caught by the sum.
	os.Truncate(path, 4)
	if _, ok := s.File("obj", ".so"); ok {
		t.Error("a truncated file passed")
	}
	if _, err := os.Stat(path); err == nil {
		t.Error("a truncated file was left in place")
	}
}

// Writers racing on one key, in one process or several, never leave a
// torn entry: every read sees one writer's whole payload.
func TestConcurrent(t *testing.T) {
	s := store(t, "test")
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			want := bytes.Repeat([]byte{byte('a' + w)}, 1<<16)
			for i := 0; i < 20; i++ {
				if err := s.Put("shared", want); err != nil {
					errs <- err
					return
				}
				got, ok := s.Get("shared")
				if ok && (len(got) != 1<<16 || bytes.Count(got, got[:1]) != 1<<16) {
					errs <- fmt.Errorf("torn entry of %d bytes", len(got))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// BESPOKE_NO_CACHE and an unwritable folder both give a private folder.
func TestPrivate(t *testing.T) {
	t.Setenv("BESPOKE_CACHE_DIR", t.TempDir())
	t.Setenv("BESPOKE_NO_CACHE", "1")
	s := Open("test")
	if !s.Temporary() || strings.HasPrefix(s.Dir(), os.Getenv("BESPOKE_CACHE_DIR")) {
		t.Errorf("BESPOKE_NO_CACHE: store in %s, temporary %v", s.Dir(), s.Temporary())
	}
	if err := s.Put("k", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Get("k"); !ok {
		t.Error("a private store forgot its entry within the process")
	}
	Cleanup()
	if _, err := os.Stat(s.Dir()); err == nil {
		t.Error("Cleanup left the private folder")
	}

	// A regular file where the folder should be: not writable, whoever
	// runs the test (root ignores permission bits).
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "test"), nil, 0o644)
	t.Setenv("BESPOKE_CACHE_DIR", root)
	t.Setenv("BESPOKE_NO_CACHE", "")
	var warned []string
	old := Warn
	Warn = func(s string) { warned = append(warned, s) }
	defer func() { Warn = old }()
	s = Open("test")
	if !s.Temporary() || len(warned) != 1 || !strings.Contains(warned[0], "cannot be written") {
		t.Errorf("unwritable folder: store in %s, temporary %v, warnings %q", s.Dir(), s.Temporary(), warned)
	}
	if err := s.Put("k", []byte("x")); err != nil {
		t.Errorf("the fallback store cannot be written: %v", err)
	}
	Open("test") // the same store again: no second warning
	if len(warned) != 1 {
		t.Errorf("%d warnings for one folder", len(warned))
	}
	Cleanup()
}

// A process that ends in the middle of writing entries (an interrupt)
// leaves no temporary file in the cache: Cleanup removes those still being
// written, but keeps a file its writer chose to keep.
func TestCleanupRemovesPartialWrites(t *testing.T) {
	s := store(t, "test")
	kept, keep, err := s.TempFile("kept.*.c", []byte("int x;"))
	if err != nil {
		t.Fatal(err)
	}
	keep(true)
	_, err = s.PutFile("obj", ".so", func(tmp string) error {
		src, _, err := s.TempFile("obj.*.c", []byte("int y;"))
		if err != nil {
			return err
		}
		Cleanup() // as an interrupt does, while the compiler runs
		for _, p := range []string{tmp, src} {
			if _, err := os.Stat(p); err == nil {
				t.Errorf("%s left after Cleanup", filepath.Base(p))
			}
		}
		return fmt.Errorf("interrupted")
	})
	if err == nil {
		t.Fatal("PutFile succeeded")
	}
	if _, err := os.Stat(kept); err != nil {
		t.Errorf("Cleanup removed a kept file: %v", err)
	}
}
