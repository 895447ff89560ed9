package conformance

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/verify"
)

// ShardEnv, set to "i/w" (0 ≤ i < w), makes Check run only the i-th of w
// shares of its cases (see deal): one of w worker processes of RunShards.
const ShardEnv = "BESPOKE_CONFORMANCE_SHARD"

// shard is this process's part of every Check: index i of w.
type shard struct{ i, w int }

var (
	shardOnce sync.Once
	thisShard shard
	shardErr  error
)

// currentShard parses ShardEnv once; no variable means the whole suite.
func currentShard() (shard, error) {
	shardOnce.Do(func() { thisShard, shardErr = parseShard(os.Getenv(ShardEnv)) })
	return thisShard, shardErr
}

// parseShard reads "i/w"; "" is the whole suite, 0/1.
func parseShard(s string) (shard, error) {
	if s == "" {
		return shard{0, 1}, nil
	}
	i, w, ok := strings.Cut(s, "/")
	a, err1 := strconv.Atoi(i)
	b, err2 := strconv.Atoi(w)
	if !ok || err1 != nil || err2 != nil || b < 1 || a < 0 || a >= b {
		return shard{0, 1}, fmt.Errorf("%s=%q: want i/w with 0 ≤ i < w", ShardEnv, s)
	}
	return shard{a, b}, nil
}

// inShard keeps this shard's cases: the cases are dealt to the shards
// heaviest first, each to the least loaded (the same deal in every worker),
// so that the workers finish together; the kept ones stay in order.
func inShard(t *testing.T, cases []verify.Case) []verify.Case {
	t.Helper()
	sh, err := currentShard()
	if err != nil {
		t.Fatal(err)
	}
	if sh.w == 1 {
		return cases
	}
	owner := deal(cases, sh.w)
	var mine []verify.Case
	for i, c := range cases {
		if owner[i] == sh.i {
			mine = append(mine, c)
		}
	}
	return mine
}

// deal assigns each case to one of w shards by its build work (the IR
// nodes of its kernel, plus a fixed cost per kernel), largest first.
func deal(cases []verify.Case, w int) []int {
	work := func(c verify.Case) int { return kernel.Size(c.Kernel.Body) + perKernelWork }
	order := make([]int, len(cases))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return work(cases[order[a]]) > work(cases[order[b]]) })
	load, owner := make([]int, w), make([]int, len(cases))
	for _, i := range order {
		least := 0
		for s := range load {
			if load[s] < load[least] {
				least = s
			}
		}
		owner[i] = least
		load[least] += work(cases[i])
	}
	return owner
}

// perKernelWork is the fixed build cost of a kernel, in IR nodes (about
// what a GEMM kernel of 100 non-zeros has).
const perKernelWork = 1000

// Workers is how many processes should share the suite on dev: one per
// CPU for a device that builds one program at a time per process (PoCL's
// compiler holds a process-wide lock), else 1. A worker process itself
// (ShardEnv set) never splits again.
func Workers(dev device.Device) int {
	if os.Getenv(ShardEnv) != "" {
		return 1
	}
	if s, ok := dev.(device.SerialBuilder); ok && s.SerialBuilds() {
		return runtime.GOMAXPROCS(0)
	}
	return 1
}

// relayed are the lines of a worker's output worth showing on success:
// what ran, how much was verified, and skips.
var relayed = regexp.MustCompile(`verified|--- (SKIP|FAIL)|device:|-short:`)

// RunShards runs the test named test (a top-level test of this package) in
// w worker processes side by side, each with its shard of every Check, and
// fails for each worker that fails, showing its output. The workers are
// this test binary run again, so they check exactly what this process
// would have.
func RunShards(t *testing.T, test string, w int) {
	args := []string{"-test.run=^" + test + "$", "-test.v"}
	if testing.Short() {
		args = append(args, "-test.short") // the workers check the same subset
	}
	if d, ok := t.Deadline(); ok {
		args = append(args, "-test.timeout="+time.Until(d).Round(time.Second).String())
	}
	for i := 0; i < w; i++ {
		t.Run(fmt.Sprintf("worker-%d-of-%d", i+1, w), func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0], args...)
			cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d/%d", ShardEnv, i, w))
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("worker %s=%d/%d: %v; its output:\n%s", ShardEnv, i, w, err, out)
				return
			}
			sc := bufio.NewScanner(bytes.NewReader(out))
			for sc.Scan() {
				if line := sc.Text(); relayed.MatchString(line) {
					t.Log(strings.TrimSpace(line))
				}
			}
		})
	}
}
