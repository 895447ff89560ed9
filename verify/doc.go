// Package verify checks generated kernels against a float64 reference:
// fresh random inputs (never zero), outputs poisoned with NaN before a run,
// padding checked untouched after it, and the error measured relative to
// the reference's largest magnitude.
//
// It may import operator, kernel, emit and device, but no backend.
package verify
