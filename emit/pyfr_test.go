package emit_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"hash"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/bespoke-hpc/bespoke/emit"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/sparse"
	"github.com/bespoke-hpc/bespoke/operator/load"
)

var update = flag.Bool("update", false, "rewrite emit/testdata from the current printer")

// pyfrDigests holds, for each PyFR operator and dialect, the sha256 of every
// source the GEMM family renders for it (see pyfrSources). It pins the
// generated code across refactors: a change to it must be intended.
const pyfrDigests = "testdata/pyfr-sources.sha256"

var pyfrDialects = []emit.Dialect{emit.CUDA, emit.OpenCL, emit.C}

// pyfrSources renders, for one operator, every GPU candidate (a superset of
// the CPU candidates) in both precisions, with PyFR's β and β = 0.5, at
// three shapes: n, ldb and ldc baked (as verify does), ldb and ldc baked
// with n at run time (as bench does), and everything at run time. It
// returns one digest per dialect of pyfrDialects.
func pyfrSources(t *testing.T, dir, name string) []string {
	op, err := load.File(filepath.Join(dir, name+"-sp.mtx"))
	if err != nil {
		t.Error(err)
		return nil
	}
	hs := make([]hash.Hash, len(pyfrDialects))
	for i := range hs {
		hs[i] = sha256.New()
	}
	count := 0
	for _, dt := range []kernel.DType{kernel.F64, kernel.F32} {
		for _, beta := range []float64{load.PyFRBeta(name), 0.5} {
			for _, shape := range [][3]int{{1001, 1006, 1010}, {0, 1088, 1088}, {0, 0, 0}} {
				pb := sparse.Problem{Op: op, DType: dt, Alpha: 1, Beta: beta, N: shape[0], LDB: shape[1], LDC: shape[2]}
				for _, v := range sparse.GPUCandidates(pb) {
					k, err := sparse.Build(pb, v)
					if err != nil {
						t.Errorf("%s %s: %v", name, v.Name(), err)
						return nil
					}
					for i, d := range pyfrDialects {
						src, err := emit.Render(d, k)
						if err != nil {
							t.Errorf("%s %s: %v", name, v.Name(), err)
							return nil
						}
						fmt.Fprintf(hs[i], "%s\x00%s\x00", k.Name, src.Text)
						if dump := os.Getenv("BESPOKE_DUMP_DIR"); dump != "" {
							f := filepath.Join(dump, strings.ReplaceAll(name, "/", "_")+"."+k.Name+"."+string(d))
							os.WriteFile(f, []byte(src.Text), 0o644)
						}
					}
					count++
				}
			}
		}
	}
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = fmt.Sprintf("%s %d", hex.EncodeToString(h.Sum(nil))[:32], count)
	}
	return out
}

// TestPyFRSources checks that the GEMM family's sources for the 120 PyFR
// operators are those recorded in testdata (byte for byte, through their
// digests). -update records them anew.
func TestPyFRSources(t *testing.T) {
	dir := testenv.PyFRMats(t)
	var names []string
	filepath.WalkDir(dir, func(p string, de os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, "-sp.mtx") {
			rel, _ := filepath.Rel(dir, p)
			names = append(names, strings.TrimSuffix(filepath.ToSlash(rel), "-sp.mtx"))
		}
		return nil
	})
	sort.Strings(names)
	if len(names) != 120 {
		t.Fatalf("found %d PyFR operators in %s, want 120", len(names), dir)
	}
	// Orders 1–3 (60 operators, every element type and operator kind)
	// render in about 20 s on two cores; 4–6 take five minutes more, so
	// they are checked when BESPOKE_PYFR_DIGESTS=all (or another glob)
	// asks, as it must before a change to kernel/sparse, kernel/pass or
	// emit is committed.
	glob := os.Getenv("BESPOKE_PYFR_DIGESTS")
	switch glob {
	case "all":
		glob = "*/*/*"
	case "":
		glob = "p[123]/*/*"
		if testing.Short() {
			glob = "p1/*/*" // every element type and operator kind
		}
	}
	if glob != "*/*/*" && *update {
		t.Skip("-update rewrites the digests only with BESPOKE_PYFR_DIGESTS=all")
	}
	names = slices.DeleteFunc(names, func(n string) bool { ok, _ := path.Match(glob, n); return !ok })
	t.Logf("digests of %d of the 120 operators (%s; BESPOKE_PYFR_DIGESTS=all checks every one; -short: p1 only)", len(names), glob)
	want := map[string]string{}
	if f, err := os.Open(pyfrDigests); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if key, val, ok := strings.Cut(sc.Text(), "\t"); ok {
				want[key] = val
			}
		}
		f.Close()
	} else if !*update {
		t.Fatal(err)
	}
	// Operators render in parallel, one worker per CPU.
	got := make([][]string, len(names))
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				got[i] = pyfrSources(t, dir, names[i])
			}
		}()
	}
	for i := range names {
		next <- i
	}
	close(next)
	wg.Wait()
	if t.Failed() {
		return
	}
	var lines []string
	for i, name := range names {
		for j, d := range pyfrDialects {
			key := name + " " + string(d)
			lines = append(lines, key+"\t"+got[i][j])
			if !*update && want[key] != got[i][j] {
				t.Errorf("%s: sources %s, recorded %s", key, got[i][j], want[key])
			}
		}
	}
	if *update {
		if err := os.WriteFile(pyfrDigests, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
