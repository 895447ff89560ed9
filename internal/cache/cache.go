// Package cache is bespoke's one on-disk cache: compiled kernels of every
// backend, measured copy roofs, and later tuning results. Entries are kept
// by content key, written atomically (a temporary file renamed into
// place), and carry a header — format version, kind, length and sha256 of
// the payload — that is checked on every read: a damaged entry (truncated,
// overwritten, from another version) is deleted and reported absent, so the
// caller rebuilds it.
//
// Every store honours BESPOKE_CACHE_DIR (where) and BESPOKE_NO_CACHE (off:
// a private temporary folder per process, removed by Cleanup, which a
// program calls as it ends). A folder
// that cannot be written also falls back to a private temporary one, with
// one warning.
//
// It must not import any other bespoke package.
package cache

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// magic opens every header; Version changes with the format.
const (
	magic   = "bespoke-cache"
	Version = 1
)

// Warn reports a store that fell back to a temporary folder; by default it
// writes one line to standard error. Tests may replace it.
var Warn = func(msg string) { fmt.Fprintln(os.Stderr, "bespoke: warning:", msg) }

// Root is the cache folder: $BESPOKE_CACHE_DIR, else
// os.UserCacheDir()/bespoke, else a folder under os.TempDir().
func Root() string {
	if dir := os.Getenv("BESPOKE_CACHE_DIR"); dir != "" {
		return dir
	}
	if dir, err := os.UserCacheDir(); err == nil && dir != "" {
		return filepath.Join(dir, "bespoke")
	}
	return filepath.Join(os.TempDir(), "bespoke-cache")
}

// Disabled reports whether BESPOKE_NO_CACHE is set to anything but
// "", "0" or "false".
func Disabled() bool {
	v := os.Getenv("BESPOKE_NO_CACHE")
	return v != "" && v != "0" && !strings.EqualFold(v, "false")
}

// Key is a hex sha256 of the parts, each length-prefixed so that no two
// different lists hash alike.
func Key(parts ...string) string {
	h := sha256.New()
	for _, s := range parts {
		fmt.Fprintf(h, "%d:%s\x00", len(s), s)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Store is the entries of one kind ("c", "cuda", "opencl", "roof" …) in one
// folder.
type Store struct {
	kind string
	dir  string
	temp bool // a private folder (no cache, or a fallback)
}

var (
	storesMu sync.Mutex
	stores   = map[string]*Store{} // by kind, for the process
	temps    []string              // private folders to remove
	writing  = map[string]int{}    // temporary files being written (a count per path)
)

// track records a temporary file being written until the returned
// function is called, so that Cleanup can remove it when the process ends
// in the middle (an interrupt).
func track(path string) (done func()) {
	storesMu.Lock()
	writing[path]++
	storesMu.Unlock()
	return func() {
		storesMu.Lock()
		defer storesMu.Unlock()
		if writing[path]--; writing[path] <= 0 {
			delete(writing, path)
		}
	}
}

// Open returns the store of a kind: Root()/kind, or a private temporary
// folder when caching is off or that folder cannot be written.
func Open(kind string) *Store {
	storesMu.Lock()
	defer storesMu.Unlock()
	root, off := Root(), Disabled()
	id := kind + "\x00" + root + "\x00" + strconv.FormatBool(off)
	if s, ok := stores[id]; ok {
		return s
	}
	s := &Store{kind: kind, dir: filepath.Join(root, kind)}
	if off {
		s.private()
	} else if err := writable(s.dir); err != nil {
		Warn(fmt.Sprintf("cache folder %s cannot be written (%v); using a temporary one for this run", s.dir, err))
		s.private()
	}
	stores[id] = s
	return s
}

// private moves the store to a fresh temporary folder.
func (s *Store) private() {
	dir, err := os.MkdirTemp("", "bespoke-"+s.kind+"-")
	if err != nil {
		dir = filepath.Join(os.TempDir(), fmt.Sprintf("bespoke-%s-%d", s.kind, os.Getpid()))
		os.MkdirAll(dir, 0o700)
	}
	s.dir, s.temp = dir, true
	temps = append(temps, dir)
}

// writable makes dir and checks that a file can be created in it.
func writable(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".probe-*")
	if err != nil {
		return err
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// Cleanup removes the private folders of this process's stores and the
// temporary files still being written. It is for a process that is
// ending, at its exit or on an interrupt.
func Cleanup() {
	storesMu.Lock()
	defer storesMu.Unlock()
	for f := range writing {
		os.Remove(f)
	}
	for _, d := range temps {
		os.RemoveAll(d)
	}
	temps = nil
	for id, s := range stores {
		if s.temp {
			delete(stores, id)
		}
	}
}

// Dir is the store's folder.
func (s *Store) Dir() string { return s.dir }

// Temporary reports whether the store is a private folder that does not
// outlive the process.
func (s *Store) Temporary() bool { return s.temp }

// path is where an entry lives; a file entry keeps its own extension.
func (s *Store) path(key, ext string) string { return filepath.Join(s.dir, key+ext) }

// header is the first line of a byte entry and the whole of a file entry's
// sidecar: magic, version, kind, length and sha256 of the payload.
func (s *Store) header(payload []byte) []byte {
	sum := sha256.Sum256(payload)
	return []byte(fmt.Sprintf("%s %d %s %d %s\n", magic, Version, s.kind, len(payload), hex.EncodeToString(sum[:])))
}

// check parses a header and checks the payload against it.
func (s *Store) check(head, payload []byte) error {
	want := s.header(payload)
	if !bytes.Equal(head, want) {
		return fmt.Errorf("header %q does not match the entry (%q)", strings.TrimSpace(string(head)), strings.TrimSpace(string(want)))
	}
	return nil
}

// Get returns a byte entry, or false when there is none or it is damaged
// (a damaged entry is deleted).
func (s *Store) Get(key string) ([]byte, bool) {
	p := s.path(key, ".entry")
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, false
	}
	head, payload, ok := bytes.Cut(data, []byte("\n"))
	if !ok || s.check(append(head, '\n'), payload) != nil {
		os.Remove(p)
		return nil, false
	}
	return payload, true
}

// Remove deletes a byte entry (a missing one is no error).
func (s *Store) Remove(key string) { os.Remove(s.path(key, ".entry")) }

// Put stores a byte entry atomically.
func (s *Store) Put(key string, payload []byte) error {
	return writeAtomic(s.path(key, ".entry"), append(s.header(payload), payload...))
}

// File returns the path of a file entry (one that must be a plain file,
// such as a shared object to dlopen) after checking it against its
// sidecar, or false when there is none or it is damaged (then both are
// deleted).
func (s *Store) File(key, ext string) (string, bool) {
	p := s.path(key, ext)
	head, err := os.ReadFile(p + ".sum")
	if err != nil {
		return "", false
	}
	payload, err := os.ReadFile(p)
	if err != nil || s.check(head, payload) != nil {
		os.Remove(p)
		os.Remove(p + ".sum")
		return "", false
	}
	return p, true
}

// PutFile makes a file entry: produce writes the payload to the path it
// is given (a temporary name in the store's folder, removed on failure);
// the file is then checksummed and renamed into place. It returns the
// entry's path.
func (s *Store) PutFile(key, ext string, produce func(tmp string) error) (string, error) {
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(s.dir, key+".*"+ext+".tmp")
	if err != nil {
		return "", err
	}
	tmp := f.Name()
	defer track(tmp)()
	f.Close()
	defer os.Remove(tmp) // a no-op once renamed
	if err := produce(tmp); err != nil {
		return "", err
	}
	payload, err := os.ReadFile(tmp)
	if err != nil {
		return "", err
	}
	p := s.path(key, ext)
	// The sidecar first: a reader that finds the file finds its sum, and
	// a sum without its file is an absent entry.
	if err := writeAtomic(p+".sum", s.header(payload)); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, p); err != nil {
		return "", err
	}
	return p, nil
}

// TempFile is a temporary file in the store's folder for a producer that
// must write beside other files (a compiler's source). The returned
// function removes it, or with keep leaves it for good (a failed
// compilation's source, for its error message to point at); until then
// Cleanup removes it.
func (s *Store) TempFile(pattern string, data []byte) (string, func(keep bool), error) {
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return "", nil, err
	}
	f, err := os.CreateTemp(s.dir, pattern)
	if err != nil {
		return "", nil, err
	}
	untrack := track(f.Name())
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		untrack()
		return "", nil, err
	}
	return f.Name(), func(keep bool) {
		if !keep {
			os.Remove(f.Name())
		}
		untrack()
	}, nil
}

// writeAtomic writes data to a temporary file beside path and renames it
// into place, so that readers see the old file or the new, never a part.
func writeAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer track(f.Name())()
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// Clear removes every entry of the store (for --retune-style refreshes and
// tests).
func (s *Store) Clear() error {
	err := os.RemoveAll(s.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}
