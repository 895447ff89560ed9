// Package paths guards a command's output files: before any work, that no
// output names an input or another output (compared as files, not as
// spellings) and that each can be written; while writing, that an
// interrupted or failed write never leaves a half-written file over an
// old one.
package paths

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
)

// File is a path a command reads or writes, and the flag that named it
// ("input" for an argument).
type File struct {
	Flag, Path string
	// Dir marks an output folder (files are written into it).
	Dir bool
}

func (f File) String() string { return f.Flag + " " + f.Path }

// skipped reports whether a path names no file to check: none given, or
// standard output.
func skipped(p string) bool { return p == "" || p == "-" }

// Check refuses, before any work, an output that names an input or another
// output, and an output that cannot be written (a folder where a file is
// wanted, a folder that cannot be created or written, a device that fails
// writes such as /dev/full).
func Check(inputs, outputs []File) error {
	for i, o := range outputs {
		if skipped(o.Path) {
			continue
		}
		for _, in := range inputs {
			if !skipped(in.Path) && Same(in.Path, o.Path) {
				return fmt.Errorf("%s would overwrite the input %s: an output must not name an input", o, in)
			}
		}
		for _, p := range outputs[:i] {
			if !skipped(p.Path) && Same(p.Path, o.Path) {
				return fmt.Errorf("%s and %s name the same file: each output needs its own", p, o)
			}
		}
	}
	for _, o := range outputs {
		if skipped(o.Path) {
			continue
		}
		if err := writable(o); err != nil {
			return err
		}
	}
	return nil
}

// Same reports whether two paths name one file: the same inode when both
// exist (through symbolic and hard links), else the same resolved path.
func Same(a, b string) bool {
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	if errA == nil && errB == nil {
		return os.SameFile(sa, sb)
	}
	return Resolve(a) == Resolve(b)
}

// Resolve is the absolute path a write to p would reach: symbolic links
// followed, dangling ones too, along the longest existing prefix.
func Resolve(p string) string { return resolve(p, 0) }

func resolve(p string, depth int) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	rest := ""
	for dir := abs; ; {
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(r, rest)
		}
		if target, err := os.Readlink(dir); err == nil && depth < 40 {
			// A dangling link: a write creates what it names.
			if !filepath.IsAbs(target) {
				target = filepath.Join(filepath.Dir(dir), target)
			}
			return resolve(filepath.Join(target, rest), depth+1)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return abs
		}
		rest = filepath.Join(filepath.Base(dir), rest)
		dir = parent
	}
}

// writable checks that an output can be written, creating nothing that
// stays.
func writable(o File) error {
	st, err := os.Stat(o.Path)
	switch {
	case err == nil && o.Dir && !st.IsDir():
		return fmt.Errorf("%s: not a folder", o)
	case err == nil && o.Dir:
		return probe(o, o.Path)
	case err == nil && st.IsDir():
		return fmt.Errorf("%s: is a folder, not a file", o)
	case err == nil && st.Mode()&fs.ModeCharDevice != 0:
		// A device: an empty write finds one that refuses writes
		// (/dev/full) and writes nothing to one that takes them.
		f, err := os.OpenFile(o.Path, os.O_WRONLY, 0)
		if err != nil {
			return fmt.Errorf("%s: %v", o, unwrap(err))
		}
		_, err = f.Write(nil)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: cannot be written: %v", o, unwrap(err))
		}
		return nil
	case err == nil && !st.Mode().IsRegular():
		return nil // a pipe or socket: written directly at the end
	}
	// A regular file (replaced by a rename), or none yet: the folder
	// that will hold it must take a new file.
	dir := filepath.Dir(Resolve(o.Path))
	if o.Dir {
		dir = Resolve(o.Path)
	}
	for {
		st, err := os.Stat(dir)
		if err == nil && !st.IsDir() {
			return fmt.Errorf("%s: %s is not a folder", o, dir)
		}
		if err == nil {
			return probe(o, dir)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return fmt.Errorf("%s: %v", o, unwrap(err))
		}
		dir = parent // created when the output is written
	}
}

// probe creates and removes a file in dir.
func probe(o File, dir string) error {
	f, err := createTemp(dir, ".bespoke-probe")
	if err != nil {
		return fmt.Errorf("%s: cannot write in %s: %v", o, dir, unwrap(err))
	}
	f.Close()
	os.Remove(f.Name())
	return nil
}

// unwrap drops the operation and path of an *fs.PathError (the message
// names the file already).
func unwrap(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

var tempSeq atomic.Uint64

// createTemp creates a new file named prefix.N.tmp in dir with mode 0666
// less the umask, as os.Create would.
func createTemp(dir, prefix string) (*os.File, error) {
	for {
		n := tempSeq.Add(1)
		name := filepath.Join(dir, prefix+"."+strconv.Itoa(os.Getpid())+"-"+strconv.FormatUint(n, 10)+".tmp")
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, err
	}
}

// Writer writes a file atomically: into a temporary file in the same
// folder, renamed over the target by Commit. A target that is not a
// regular file (a device, a pipe) is written directly.
type Writer struct {
	f      *os.File
	target string
	direct bool
	err    error
}

// Create starts writing path, creating its folder if need be.
func Create(path string) (*Writer, error) {
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		if st.IsDir() {
			return nil, fmt.Errorf("%s: is a folder, not a file", path)
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			return nil, err
		}
		return &Writer{f: f, target: path, direct: true}, nil
	}
	// Through a symbolic link, the file it names is replaced.
	target := Resolve(path)
	if err := os.MkdirAll(filepath.Dir(target), 0o777); err != nil {
		return nil, err
	}
	f, err := createTemp(filepath.Dir(target), "."+filepath.Base(target))
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(target); err == nil {
		f.Chmod(st.Mode().Perm()) // keep the replaced file's mode
	}
	pending.Store(f.Name(), struct{}{})
	return &Writer{f: f, target: target}, nil
}

// pending holds the temporary files being written, for Cleanup.
var pending sync.Map

// Cleanup removes the temporary files of writes still in progress: an
// interrupted program calls it before it exits, so that no half-written
// file is left beside its target.
func Cleanup() {
	pending.Range(func(name, _ any) bool {
		os.Remove(name.(string))
		pending.Delete(name)
		return true
	})
}

// Write writes to the temporary file; the first error sticks.
func (w *Writer) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	n, err := w.f.Write(p)
	if err != nil {
		w.err = fmt.Errorf("%s: %v", w.target, unwrap(err))
	}
	return n, w.err
}

// Commit closes the file and puts it in place of the target; on an
// earlier write error it aborts and returns that error.
func (w *Writer) Commit() error {
	if w.err != nil {
		w.Abort()
		return w.err
	}
	if err := w.f.Close(); err != nil {
		w.Abort()
		return fmt.Errorf("%s: %v", w.target, unwrap(err))
	}
	if w.direct {
		return nil
	}
	defer pending.Delete(w.f.Name())
	if err := os.Rename(w.f.Name(), w.target); err != nil {
		os.Remove(w.f.Name())
		return err
	}
	return nil
}

// Abort closes and removes the temporary file, leaving the target as it
// was.
func (w *Writer) Abort() {
	w.f.Close()
	if !w.direct {
		os.Remove(w.f.Name())
		pending.Delete(w.f.Name())
	}
}

// Write writes path atomically with fn.
func Write(path string, fn func(io.Writer) error) error {
	w, err := Create(path)
	if err != nil {
		return err
	}
	if err := fn(w); err != nil {
		w.Abort()
		return err
	}
	return w.Commit()
}

// WriteFile writes data to path atomically.
func WriteFile(path string, data []byte) error {
	return Write(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}
