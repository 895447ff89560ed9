// Package testenv locates shared test data and decides whether a missing
// device is a skip or a failure.
package testenv

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// RepoRoot walks up from the working directory to the folder with go.mod.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("testenv: no go.mod above the working directory")
		}
		dir = parent
	}
}

// pyfrArchive holds the 120 PyFR operators the tests use (p1–p6 of quad,
// hex, tri and tet; m0, m3, m6, m132, m460), as PyFR dumped them: the
// repository carries its test data.
const pyfrArchive = "testdata/pyfr-mats.tar.gz"

// PyFRMats returns a folder of the PyFR operators (p3/hex/m6-sp.mtx …):
// BESPOKE_PYFR_MATS when set, else the repository's archive unpacked once
// into a folder under os.TempDir() named by the archive's digest (shared by
// the test processes of one run, and later runs).
func PyFRMats(t testing.TB) string {
	t.Helper()
	if dir := os.Getenv("BESPOKE_PYFR_MATS"); dir != "" {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			t.Fatalf("BESPOKE_PYFR_MATS=%s is no folder", dir)
		}
		return dir
	}
	dir, err := unpack(filepath.Join(RepoRoot(t), pyfrArchive), "pyfr-mats")
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return dir
}

// pyfrOpsArchive holds the output of scripts/pyfr-export-ops.py: PyFR's
// operators m0 … m460 of tri, tet, pri and pyr elements with the point sets
// behind them, KIND-VARIANT/pN/{OP.mtx, upts.txt, tri-fpts.txt}.
const pyfrOpsArchive = "testdata/pyfr-ops.tar.gz"

// PyFROps returns a folder of that export: BESPOKE_PYFR_OPS when set, else
// the repository's archive unpacked once (as PyFRMats).
func PyFROps(t testing.TB) string {
	t.Helper()
	if dir := os.Getenv("BESPOKE_PYFR_OPS"); dir != "" {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			t.Fatalf("BESPOKE_PYFR_OPS=%s is no folder", dir)
		}
		return dir
	}
	dir, err := unpack(filepath.Join(RepoRoot(t), pyfrOpsArchive), "pyfr-ops")
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return dir
}

// unpack extracts a .tar.gz into os.TempDir()/bespoke-testdata-<digest>
// (through a temporary folder renamed into place, so that concurrent test
// processes never see half an archive) and returns its folder top.
func unpack(archive, top string) (string, error) {
	data, err := os.ReadFile(archive)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	root := filepath.Join(os.TempDir(), "bespoke-testdata-"+hex.EncodeToString(sum[:8]))
	dir := filepath.Join(root, top)
	if st, err := os.Stat(dir); err == nil && st.IsDir() {
		return dir, nil
	}
	tmp, err := os.MkdirTemp(os.TempDir(), "bespoke-testdata-*.tmp")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return "", fmt.Errorf("%s: %w", archive, err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", fmt.Errorf("%s: %w", archive, err)
		}
		name := filepath.Clean(h.Name)
		if strings.HasPrefix(name, "..") || filepath.IsAbs(name) {
			return "", fmt.Errorf("%s: entry %q leaves the folder", archive, h.Name)
		}
		p := filepath.Join(tmp, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				return "", err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return "", err
			}
			b, err := io.ReadAll(io.LimitReader(tr, 16<<20))
			if err != nil {
				return "", err
			}
			if err := os.WriteFile(p, b, 0o444); err != nil {
				return "", err
			}
		}
	}
	if err := os.Rename(tmp, root); err != nil {
		// Another process unpacked it first.
		if st, err2 := os.Stat(dir); err2 == nil && st.IsDir() {
			return dir, nil
		}
		return "", err
	}
	return dir, nil
}

// Unavailable skips the test because backend cannot be used, unless
// BESPOKE_REQUIRE_DEVICE lists the backend (comma-separated, or "all"),
// in which case the test fails: a run that must exercise a device cannot
// pass by skipping.
func Unavailable(t testing.TB, backend string, err error) {
	t.Helper()
	for _, b := range strings.Split(os.Getenv("BESPOKE_REQUIRE_DEVICE"), ",") {
		if b == backend || b == "all" {
			t.Fatalf("%s required (BESPOKE_REQUIRE_DEVICE) but unavailable: %v", backend, err)
		}
	}
	t.Skipf("%s unavailable: %v", backend, err)
}

// Rand returns a generator with a fresh seed for each run, logged so that a
// failure can be replayed with BESPOKE_SEED.
func Rand(t testing.TB) *rand.Rand {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("BESPOKE_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("BESPOKE_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Logf("BESPOKE_SEED=%d", seed)
	return rand.New(rand.NewPCG(seed, 0x62657370))
}
