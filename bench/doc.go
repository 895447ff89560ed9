// Package bench times kernels on a device the way a user's solver runs them:
// data resident on the device, a working set large enough that caches do not
// flatter the numbers (several copies of a workload's arrays rotated), a
// warm-up, then the median of many timed launches. Each timed candidate is
// first verified against its family's float64 reference at sampled outputs,
// and the roof — a copy kernel over the same working set, timed the same way
// in the same run — turns times into a fraction of what the memory can do.
//
// It works on any kernel family through kernel/family; it may import kernel,
// kernel/family, emit, build, tune and device, but no backend and no family.
package bench
