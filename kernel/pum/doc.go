// Package pum builds the device kernels of the partition-of-unity method
// (package pum is their float64 reference and states every layout):
//
//   - Integrate: one thread per integration cell of a bin (cells with the
//     same number of active patches, so every thread of a launch does the
//     same work); per Gauss point the Shepard PU of the active patches,
//     the Legendre local functions and the coefficients κ, r, f (compiled
//     in as expressions of x, see Coefficients), then a rank-(d+1) update
//     of the upper triangle of the element block, mirrored at the end.
//   - Assemble: one thread per (cell, slot, slot) block, added into the
//     BSR matrix (block rows = patches, columns = neighbours) and the load
//     vector, either atomically (any cells together) or plainly over one
//     colour group at a time (Plan: patches coloured so that owners of one
//     colour are ≥ 3 apart, cells grouped by owner colour and position in
//     their patch, so that no two cells of a group write one block).
//   - Decompose (decompose.go, uniform covers): the decomposition on the
//     device from the cover's per-direction split tables (Decomposer): a
//     pattern kernel writes the patch data and the matrix pattern; in
//     colour order a count kernel makes a histogram of the cells by
//     (active count, colour, position), the host its prefix sums, and a
//     fill kernel puts every cell into its bin at a slot an atomic
//     fetch-add hands out; in patch order one fill kernel puts every cell
//     at its place in closed form. The bins are NewPlan's, with colour or
//     without.
//
// On the host, pum.Decompose (count, prefix sum, fill) and NewPlan, which
// bins and orders its cells for the kernels, serve every cover.
//
// It may import kernel, kernel/family, poly and pum.
package pum
