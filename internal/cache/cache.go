// Package cache names where the backends keep compiled kernels and how
// they key them, so that every backend honours the same settings:
// BESPOKE_CACHE_DIR moves the cache, BESPOKE_NO_CACHE turns it off.
package cache

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Dir is the cache folder of one backend: $BESPOKE_CACHE_DIR/backend, else
// os.UserCacheDir()/bespoke/backend, else a folder under os.TempDir().
func Dir(backend string) string {
	if dir := os.Getenv("BESPOKE_CACHE_DIR"); dir != "" {
		return filepath.Join(dir, backend)
	}
	if dir, err := os.UserCacheDir(); err == nil && dir != "" {
		return filepath.Join(dir, "bespoke", backend)
	}
	return filepath.Join(os.TempDir(), "bespoke-cache", backend)
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
