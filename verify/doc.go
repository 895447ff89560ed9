// Package verify checks generated kernels against their family's float64
// reference: the family draws fresh random inputs (never zero) with outputs
// poisoned with NaN and padding marked, verify runs each kernel on a device
// (or in the interpreter), and judges every array it comes back with —
// outputs against the reference relative to its largest magnitude, inputs
// and padding untouched. Apply runs one kernel once on given data (the
// apply commands' launch), built as a build.Program.
//
// It may import kernel, kernel/family, kernel/interp, emit, build and
// device, but no backend and no family.
package verify
