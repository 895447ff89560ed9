//go:build !linux || !(amd64 || arm64)

package dl

// FixSignals does nothing where bespoke does not know the kernel's
// sigaction layout.
func FixSignals() int { return 0 }
