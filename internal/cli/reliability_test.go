package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bespoke-hpc/bespoke/device/opencl"
	"github.com/bespoke-hpc/bespoke/fr"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/operator/mtx"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// binary builds bespoke once for the tests that run it as a user would:
// in a process of its own, whose time and memory can be measured and which
// can be sent signals.
func binary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "bespoke-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "bespoke")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/bespoke")
		cmd.Dir = testenv.RepoRoot(t)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// result is one run of the binary.
type result struct {
	code     int
	stdout   string
	stderr   string
	took     time.Duration
	maxRSSKB int64
}

func runBinary(t *testing.T, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String(), took: time.Since(start)}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.maxRSSKB = ru.Maxrss
	}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return r
}

// writeFile writes a test input and returns its path.
func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// denseMTX is an n×n MatrixMarket array with no zero.
func denseMTX(n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%%%%MatrixMarket matrix array real general\n%d %d\n", n, n)
	for i := 0; i < n*n; i++ {
		fmt.Fprintf(&b, "%d.5\n", i%7+1)
	}
	return b.String()
}

// Each case that once ran out of memory or time, checked nothing and
// succeeded, or printed a stack trace, now gives a one-line error (or a
// right result) within 5 s and 1 GB (issue 12).
func TestBoundedFailures(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	env := []string{"BESPOKE_CACHE_DIR=" + filepath.Join(dir, "cache")}
	m0 := writeFile(t, dir, "m0.mtx", "%%MatrixMarket matrix coordinate real general\n3 2 4\n1 1 1.5\n2 2 -2\n3 1 0.25\n3 2 1\n")
	wide := writeFile(t, dir, "wide.mtx", "%%MatrixMarket matrix coordinate real general\n1 67108864 1\n1 1 1.0\n")
	huge := writeFile(t, dir, "huge.mtx", "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1e308\n2 2 1.0\n")
	d500 := writeFile(t, dir, "d500.mtx", denseMTX(500))
	d2000 := writeFile(t, dir, "d2000.mtx", denseMTX(2000))
	bom := writeFile(t, dir, "bom.mtx", "\uFEFF%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1.0\n")
	out := filepath.Join(dir, "out")
	for _, tc := range []struct {
		name string
		args []string
		code int
		msg  string // in the one line on stderr; "" for a success
	}{
		{"negative n", []string{"bench", m0, "--backend", "c", "--n", "-5"}, ExitUsage, "--n -5"},
		{"1×67108864 operator", []string{"verify", wide, "--backend", "c"}, ExitFailure, "at most 65536 rows and columns"},
		{"two billion columns", []string{"verify", m0, "--backend", "c", "--n", "2000000000"}, ExitFailure, "--max-memory"},
		{"dense 2000×2000 source", []string{"gen", d2000, "--backend", "c", "-o", out}, ExitFailure, "--max-nnz"},
		{"dense 500×500 verify", []string{"verify", d500, "--backend", "c", "--dtype", "f64"}, ExitFailure, "--max-nnz"},
		{"hex p15", []string{"ops", "--element", "hex", "--order", "15", "-o", out}, ExitUsage, "1 ≤ p ≤ 10"},
		{"beta nan", []string{"verify", m0, "--backend", "c", "--beta", "nan"}, ExitUsage, "finite"},
		{"beta inf", []string{"verify", m0, "--backend", "c", "--beta", "inf"}, ExitUsage, "finite"},
		{"beta empty", []string{"verify", m0, "--backend", "c", "--beta", ""}, ExitUsage, "--beta"},
		{"dtype comma", []string{"verify", m0, "--backend", "c", "--dtype", ","}, ExitUsage, "--dtype"},
		{"bench beta nan", []string{"bench", m0, "--backend", "c", "--beta", "nan", "--json", out + ".json"}, ExitUsage, "finite"},
		{"overflowing literal", []string{"gen", huge, "--alpha", "10", "--backend", "c"}, ExitFailure, "overflows float64"},
		{"comment in the name", []string{"gen", m0, "--name", "*/ evil /*"}, ExitUsage, "not an identifier"},
		{"reps 0", []string{"bench", m0, "--backend", "c", "--reps", "0"}, ExitUsage, "--reps"},
		{"rounds 0", []string{"bench", m0, "--backend", "c", "--rounds", "0"}, ExitUsage, "--rounds 0"},
		{"readmit negative", []string{"integrate", "bench", "--backend", "c", "--readmit", "-1"}, ExitUsage, "--readmit -1"},
		{"negative working set", []string{"bench", m0, "--backend", "c", "--working-set", "-1"}, ExitUsage, "--working-set"},
		{"device under C", []string{"bench", m0, "--backend", "c", "--device", "3"}, ExitUsage, "--device"},
		{"-o is --meta", []string{"gen", m0, "-o", out, "--meta", out}, ExitUsage, "same file"},
		{"no variant applies", []string{"verify", m0, "--backend", "c", "--variant", "cstream-ksplit/x512-y2-c64"}, ExitFailure, "nothing was verified"},
		{"byte-order mark", []string{"stats", bom}, ExitOK, ""},
		{"one column", []string{"bench", m0, "--backend", "c", "--n", "1", "--reps", "3", "--variant", "cstream", "-q"}, ExitOK, ""},
		{"three rounds", []string{"bench", m0, "--backend", "c", "--n", "1", "--reps", "3", "--rounds", "3", "--readmit", "0", "--variant", "cstream,bstream", "-q"}, ExitOK, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runBinary(t, env, tc.args...)
			if r.code != tc.code {
				t.Errorf("exit %d, want %d; stderr %q", r.code, tc.code, r.stderr)
			}
			if tc.msg != "" && (strings.Count(r.stderr, "\n") != 1 || !strings.HasPrefix(r.stderr, "bespoke: ") || !strings.Contains(r.stderr, tc.msg)) {
				t.Errorf("stderr %q: want one line starting with bespoke: and containing %q", r.stderr, tc.msg)
			}
			if strings.Contains(r.stderr, "goroutine ") || strings.Contains(r.stderr, "panic") {
				t.Errorf("stack trace on stderr: %.300q", r.stderr)
			}
			// Bounded, not fast: 20 s leaves room for a loaded 2-core
			// machine (5 s failed at 5.1 s beside a parallel test run)
			// and still catches work that scales with the input.
			if r.took > 20*time.Second || r.maxRSSKB > 1<<20 {
				t.Errorf("took %v and %d MB (limits 20 s, 1 GB)", r.took.Round(time.Millisecond), r.maxRSSKB>>10)
			}
		})
	}
	if _, err := os.Stat(out + ".json"); err == nil {
		t.Error("a refused bench left a JSON file")
	}
}

// proc is one process as /proc/PID/stat gives it.
type proc struct {
	pid, ppid, pgrp int
	state, name     string
}

// procs lists every process.
func procs() []proc {
	var out []proc
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp …; comm may hold spaces: cut at the last ')'.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		var pr proc
		fmt.Sscanf(s, "%d", &pr.pid)
		if _, err := fmt.Sscanf(s[i+2:], "%s %d %d", &pr.state, &pr.ppid, &pr.pgrp); err == nil {
			pr.name = s[:i+1]
			out = append(out, pr)
		}
	}
	return out
}

// group lists the live (not zombie) processes of a process group.
func group(pgid int) []string {
	var live []string
	for _, p := range procs() {
		if p.pgrp == pgid && p.state != "Z" {
			live = append(live, p.name+" "+p.state)
		}
	}
	return live
}

// groups lists the process groups of pid's children (each compiler
// bespoke starts leads one).
func groups(pid int) []int {
	var gs []int
	for _, p := range procs() {
		if p.ppid == pid && !slices.Contains(gs, p.pgrp) {
			gs = append(gs, p.pgrp)
		}
	}
	return gs
}

// compiling returns a cc1 running in one of the groups, or 0.
func compiling(gs []int) int {
	for _, p := range procs() {
		if slices.Contains(gs, p.pgrp) && p.name == fmt.Sprintf("%d (cc1)", p.pid) && p.state != "Z" {
			return p.pid
		}
	}
	return 0
}

// Every command that compiles, interrupted (SIGINT or SIGTERM) while its
// compiler runs, exits non-zero within 5 s with a line that says so,
// leaves no compiler running (each runs in a process group of its own,
// which bespoke kills), no temporary file in the cache, and nothing in
// TMPDIR (each compiler has a private one: a killed gcc leaves its cc*.s
// there). Bench and tune still write what they finished (issues 12, 37).
// About a minute: the binary runs once per command, cold.
func TestInterruptKillsCompilers(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary, once per command")
	}
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	dir := t.TempDir()
	// hex p6's m132 (343×1029, 7,203 non-zeros): gcc takes tens of seconds.
	el, err := fr.Element("hex", 6, "", "")
	if err != nil {
		t.Fatal(err)
	}
	op, err := el.Operator("m132")
	if err != nil {
		t.Fatal(err)
	}
	m132 := filepath.Join(dir, "m132.mtx")
	if err := mtx.WriteFile(m132, op); err != nil {
		t.Fatal(err)
	}
	// One hexahedron (x fastest), and an E-vector of one order-8 element.
	u := filepath.Join(dir, "u.npy")
	integrateNPY(t, u, 1, 729, make([]float64, 729))
	var hex []float64
	for k := range 2 {
		for j := range 2 {
			for i := range 2 {
				hex = append(hex, float64(i), float64(j), float64(k))
			}
		}
	}
	nodes, cells := filepath.Join(dir, "x.npy"), filepath.Join(dir, "c.npy")
	integrateNPY(t, nodes, 8, 3, hex)
	integrateInts(t, cells, 1, 8, []int64{0, 1, 3, 2, 4, 5, 7, 6})
	out := func(name string) string { return filepath.Join(dir, name) }
	const cc1 = 0 // wait for a compiler that lasts
	for _, tc := range []struct {
		name string
		sig  syscall.Signal
		args []string
		// wait: cc1, or how long to let an in-process compiler (PoCL)
		// run.
		wait time.Duration
		// lines: 1, or 2 for a command that writes what it finished
		// and says what that is.
		lines int
		json  string // the report of what finished (bench, tune, a pum bench grid)
	}{
		{"verify", syscall.SIGTERM, []string{"verify", m132, "--backend", "c", "--dtype", "f64", "--variant", "cstream,bstream"}, cc1, 2, ""},
		{"bench", syscall.SIGINT, []string{"bench", m132, "--backend", "c", "--dtype", "f64", "--variant", "cstream,bstream", "--working-set", "8M", "--no-baselines", "-q", "--json", out("bench.json")}, cc1, 2, out("bench.json")},
		{"tune", syscall.SIGTERM, []string{"tune", m132, "--backend", "c", "--dtype", "f64", "--variant", "cstream,bstream", "--working-set", "8M", "--no-baselines", "-q", "--json", out("tune.json")}, cc1, 2, out("tune.json")},
		{"pum bench", syscall.SIGTERM, []string{"pum", "bench", "--dim", "3", "--level", "2", "--degree", "2", "--backend", "c", "--integrator", "group", "--side", "6", "--tiles", "8"}, cc1, 1, ""},
		{"pum bench grid", syscall.SIGINT, []string{"pum", "bench", "--dim", "3", "--level", "2", "--degree", "2,3", "--backend", "c", "--integrator", "group", "--json", out("pum.json")}, cc1, 2, out("pum.json")},
		{"pum assemble", syscall.SIGINT, []string{"pum", "assemble", "--dim", "3", "--level", "2", "--degree", "3", "--backend", "c", "-o", out("A.mtx"), "--rhs", out("f.npy")}, cc1, 1, ""},
		{"fem apply", syscall.SIGTERM, []string{"fem", "apply", "--kernel", "bk5", "--order", "8", "--mesh", "1x1x1", "--backend", "c", "--in", u, "--out", out("v.npy")}, cc1, 1, ""},
		{"fem bench", syscall.SIGTERM, []string{"fem", "bench", "--kernel", "bk5", "--order", "12-15", "--backend", "c", "-q"}, cc1, 2, ""},
		{"integrate apply", syscall.SIGTERM, []string{"integrate", "apply", "--element", "hex", "--nodes", nodes, "--cells", cells, "--backend", "c", "--out", out("a.npy")}, cc1, 1, ""},
		{"integrate bench", syscall.SIGINT, []string{"integrate", "bench", "--element", "hex", "--problem", "laplace", "--backend", "c", "--n", "4096", "--working-set", "8M", "-q"}, cc1, 2, ""},
		{"pum bench opencl", syscall.SIGTERM, []string{"pum", "bench", "--dim", "2", "--level", "3", "--degree", "2", "--backend", "opencl"}, 2 * time.Second, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if slices.Contains(tc.args, "opencl") {
				if err := opencl.Available(); err != nil {
					testenv.Unavailable(t, "opencl", err)
				}
			}
			// A cold cache (and PoCL's), and a TMPDIR of the test's own.
			cacheDir, tmp := t.TempDir(), t.TempDir()
			cmd := exec.Command(binary(t), tc.args...)
			cmd.Env = append(os.Environ(), "BESPOKE_CACHE_DIR="+cacheDir, "TMPDIR="+tmp, "XDG_CACHE_HOME="+t.TempDir())
			var errb bytes.Buffer
			cmd.Stderr = &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			var seen []int // the compilers' process groups
			note := func() {
				for _, g := range groups(cmd.Process.Pid) {
					// Not bespoke's own group (the test's), where its
					// short helpers (uname) run.
					if g != cmd.Process.Pid && g != syscall.Getpgrp() && !slices.Contains(seen, g) {
						seen = append(seen, g)
					}
				}
			}
			if tc.wait == cc1 {
				// Not the compiler's probes at start (a few ms): a cc1
				// seen twice 300 ms apart.
				for deadline, last := time.Now().Add(60*time.Second), 0; ; {
					if time.Now().After(deadline) {
						t.Fatalf("no long compilation within 60 s; stderr %q", errb.String())
					}
					note()
					pid := compiling(seen)
					if pid != 0 && pid == last {
						break
					}
					last = pid
					time.Sleep(300 * time.Millisecond)
				}
			} else {
				for end := time.Now().Add(tc.wait); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
					note()
				}
			}
			start := time.Now()
			cmd.Process.Signal(tc.sig)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatalf("still running 5 s after %v; stderr %q", tc.sig, errb.String())
			}
			took := time.Since(start)
			if code := cmd.ProcessState.ExitCode(); code != exitInterrupted {
				t.Errorf("exit %d after an interrupt, want %d", code, exitInterrupted)
			}
			var said []string
			for _, line := range strings.Split(errb.String(), "\n") {
				if strings.HasPrefix(line, "bespoke: ") {
					said = append(said, line)
				}
			}
			if len(said) != tc.lines || !strings.HasPrefix(said[0], "bespoke: interrupted") {
				t.Errorf("stderr %q: want %d line(s), the first bespoke: interrupted", errb.String(), tc.lines)
			}
			if strings.Contains(errb.String(), "goroutine ") || strings.Contains(errb.String(), "panic") {
				t.Errorf("stack trace on stderr: %.300q", errb.String())
			}
			// Killed processes take a moment to die; zombies waiting for
			// init to reap them run nothing.
			for _, g := range seen {
				for time.Since(start) < 5*time.Second && len(group(g)) > 0 {
					time.Sleep(10 * time.Millisecond)
				}
				if live := group(g); len(live) > 0 {
					t.Errorf("compiler group %d still running 5 s after %v: %v", g, tc.sig, live)
				}
			}
			var left []string
			filepath.WalkDir(cacheDir, func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() && (strings.HasSuffix(p, ".tmp") || strings.HasSuffix(p, ".c")) {
					left = append(left, p)
				}
				return nil
			})
			if len(left) > 0 {
				t.Errorf("left in the cache: %v", left)
			}
			if ents, _ := os.ReadDir(tmp); len(ents) > 0 {
				var names []string
				for _, e := range ents {
					names = append(names, e.Name())
				}
				t.Errorf("left in TMPDIR: %v", names)
			}
			if tc.json != "" {
				// What finished (here: nothing) is written as a report
				// marked interrupted.
				data, err := os.ReadFile(tc.json)
				var rep struct {
					Interrupted bool              `json:"interrupted"`
					Problems    []json.RawMessage `json:"problems"`
				}
				var rows []json.RawMessage // pum bench's rows
				if tc.args[0] == "pum" {
					if err != nil || json.Unmarshal(data, &rows) != nil || rows == nil {
						t.Errorf("the interrupted run's JSON: %v, %.200q", err, data)
					}
				} else if err != nil || json.Unmarshal(data, &rep) != nil || !rep.Interrupted || rep.Problems == nil {
					t.Errorf("the interrupted run's JSON: %v, %.200q", err, data)
				}
			}
			t.Logf("stopped in %v: %s", took.Round(time.Millisecond), strings.TrimSpace(errb.String()))
		})
	}
}

// With caching off (BESPOKE_NO_CACHE), or a cache folder that cannot be
// written, the stores are private folders in TMPDIR that end with the run:
// nothing of them is left after a normal exit (issue 37).
func TestPrivateCachesRemovedAtExit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	m0 := writeFile(t, dir, "m0.mtx", "%%MatrixMarket matrix coordinate real general\n3 2 4\n1 1 1.5\n2 2 -2\n3 1 0.25\n3 2 1\n")
	notDir := writeFile(t, dir, "file", "") // a file where the cache folder should be
	for _, tc := range []struct {
		name string
		env  []string
	}{
		{"BESPOKE_NO_CACHE", []string{"BESPOKE_NO_CACHE=1"}},
		{"unwritable cache", []string{"BESPOKE_CACHE_DIR=" + notDir}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			r := runBinary(t, append([]string{"TMPDIR=" + tmp}, tc.env...), "tune", m0, "--backend", "c", "--n", "1", "--reps", "3", "--variant", "cstream", "--working-set", "1M", "--no-baselines", "-q")
			if r.code != ExitOK {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			if ents, _ := os.ReadDir(tmp); len(ents) > 0 {
				var names []string
				for _, e := range ents {
					names = append(names, e.Name())
				}
				t.Errorf("left in TMPDIR after the run: %v", names)
			}
		})
	}
}
