package host

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Compilers run in process groups of their own, so that an interrupt can
// kill a compiler together with everything it started (cc1, as, ld) and
// leave nothing running; a compiler also dies with bespoke where the
// kernel allows (Pdeathsig). Each runs with a private TMPDIR, removed when
// it ends or is killed: a killed gcc leaves its cc*.s and cc*.o there.

// ErrAborted is the error of a compilation stopped by Abort, or started
// after it.
var ErrAborted = errors.New("host: compilation stopped: bespoke is ending")

var children struct {
	sync.Mutex
	pids    map[int]bool
	files   map[string]int  // temporary files of compilations in progress (a count per path)
	dirs    map[string]bool // private temporary folders of compilers running
	aborted bool
}

// reapWait bounds how long Abort waits for the killed compilers to be
// gone before it removes their files: a process still in a system call
// when killed may yet create one.
const reapWait = 500 * time.Millisecond

// Abort kills every compiler running, removes the temporary files of the
// compilations it stops, and makes later compilations fail at once with
// ErrAborted. It is for a process that is ending (an interrupt): the
// goroutines that started the compilations may not get to clean up.
func Abort() {
	children.Lock()
	defer children.Unlock()
	children.aborted = true
	for pid := range children.pids {
		syscall.Kill(-pid, syscall.SIGKILL)
	}
	for deadline := time.Now().Add(reapWait); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		alive := false
		for pid := range children.pids {
			alive = alive || groupAlive(pid)
		}
		if !alive {
			break
		}
	}
	for f := range children.files {
		os.Remove(f)
	}
	for d := range children.dirs {
		os.RemoveAll(d)
	}
}

// Temporary records files a compilation writes until the returned function
// is called, so that Abort can remove them.
func Temporary(paths ...string) (done func()) {
	children.Lock()
	defer children.Unlock()
	if children.files == nil {
		children.files = map[string]int{}
	}
	for _, p := range paths {
		children.files[p]++
	}
	return func() {
		children.Lock()
		defer children.Unlock()
		for _, p := range paths {
			if children.files[p]--; children.files[p] <= 0 {
				delete(children.files, p)
			}
		}
	}
}

// Aborted reports whether Abort was called.
func Aborted() bool {
	children.Lock()
	defer children.Unlock()
	return children.aborted
}

// withTempDir is env (the process's when nil) with TMPDIR, TMP and TEMP
// set to dir.
func withTempDir(env []string, dir string) []string {
	if env == nil {
		env = os.Environ()
	}
	out := make([]string, 0, len(env)+3)
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if k != "TMPDIR" && k != "TMP" && k != "TEMP" {
			out = append(out, kv)
		}
	}
	return append(out, "TMPDIR="+dir, "TMP="+dir, "TEMP="+dir)
}

// Run runs cmd in a process group of its own, with a private TMPDIR, and
// returns its combined output; the group is killed if the compilation is
// aborted. Any compiler process bespoke starts (gcc, an OpenCL build in a
// child bespoke) runs through it.
func Run(cmd *exec.Cmd) ([]byte, error) {
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = procAttr()
	// Where TMPDIR cannot be written the compiler finds a folder of its
	// own (gcc takes /tmp), as it did before.
	tmp, err := os.MkdirTemp("", "bespoke-cc-")
	private := err == nil
	if private {
		cmd.Env = withTempDir(cmd.Env, tmp)
		defer func() {
			children.Lock()
			delete(children.dirs, tmp)
			children.Unlock()
			os.RemoveAll(tmp)
		}()
	}
	children.Lock()
	if private {
		if children.dirs == nil {
			children.dirs = map[string]bool{}
		}
		children.dirs[tmp] = true
	}
	if children.aborted {
		children.Unlock()
		return nil, ErrAborted
	}
	if err := cmd.Start(); err != nil {
		children.Unlock()
		return nil, err
	}
	pid := cmd.Process.Pid
	if children.pids == nil {
		children.pids = map[int]bool{}
	}
	children.pids[pid] = true
	children.Unlock()
	err = cmd.Wait()
	children.Lock()
	delete(children.pids, pid)
	aborted := children.aborted
	children.Unlock()
	if err != nil && aborted {
		return out.Bytes(), ErrAborted
	}
	return out.Bytes(), err
}
