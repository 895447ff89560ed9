// Package bench times kernels on a device the way a user's solver runs them:
// data resident on the device, a working set large enough that caches do not
// flatter the numbers (several input/output sets rotated), a warm-up, then
// the median of many timed launches. Each timed candidate is first verified
// against a float64 reference on a sample of columns, and the roof — a copy
// kernel over the same working set, timed the same way in the same run —
// turns times into a fraction of what the memory can do.
package bench
