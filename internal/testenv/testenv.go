// Package testenv locates shared test data and decides whether a missing
// device is a skip or a failure.
package testenv

import (
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

// PyFRMats returns ../shared/pyfr-mats beside the repository, or skips the
// test naming the path it tried. BESPOKE_PYFR_MATS overrides the path.
func PyFRMats(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("BESPOKE_PYFR_MATS")
	if dir == "" {
		dir = filepath.Join(RepoRoot(t), "..", "shared", "pyfr-mats")
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		t.Skipf("PyFR operator matrices not found at %s (set BESPOKE_PYFR_MATS)", dir)
	}
	return dir
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
