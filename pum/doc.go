// Package pum is the float64 Go foundation of the partition-of-unity method
// (PUM): patch covers of [0,1]^d, the Shepard partition of unity, local
// Legendre spaces, the tensor split-point decomposition of every patch into
// integration cells, per-cell Gauss quadrature of −∇·(κ∇u) + r u = f, the
// assembly of the global block-sparse matrix and load vector, a
// preconditioned CG solve and a MatrixMarket writer. It is the reference
// that device kernels generated later (kernel/pum) are checked against, so
// every intermediate result lives in flat arrays of fixed layout.
//
// It imports only poly (Gauss–Legendre rules) and the standard library.
//
// # Conventions
//
//   - Domain [0,1]^d, d = 2 or 3. Without Periodic the boundary condition is
//     the natural one (κ∂u/∂n = 0); with Periodic the domain is the torus and
//     every patch is an inner patch.
//   - A uniform cover at level l has n = 2^l patches per direction, h = 1/n.
//     Patch i has centre c_i, basic half-width h/2 (its share of the domain,
//     the basic extent c_i ± h/2) and support c_i ± α·h/2, 1 < α < 2, so
//     only adjacent patches overlap (3^d neighbours, self included).
//     Patches are numbered x-fastest: i = ix + n·iy + n²·iz. Adaptive covers
//     number their patches by centre, x fastest (sorted by z, then y, then x).
//   - Weights are tensor hats W_i(x) = Π_k max(0, 1 − |x_k − c_ik|/s_ik),
//     s_i = α·(basic half-width); φ_i = W_i / Σ_j W_j (Shepard).
//   - Local functions ψ_i^n(x) = Π_k P_{e_nk}(ξ_k), ξ = (x − c_i)/s_i (the
//     support box mapped to [-1,1]^d), P the Legendre polynomials (P(1) = 1),
//     of total degree ≤ p; ordered by total degree, then by descending
//     x exponent, then descending y exponent; ψ⁰ ≡ 1 first.
//     B = C(p+d, d) functions per patch.
//   - DOFs are patch-major: DOF (i, n) has index i·B + n.
//
// # Layouts (the arrays a device kernel takes)
//
//   - Cover: Centre and Half, N·d float64 each (patch-major, Centre[i·d+k]);
//     the neighbour graph (patches whose supports overlap, self included,
//     ascending) in CSR form NbrPtr (N+1) / Nbr, int32.
//   - Decomposition: cells of patch i are CellPtr[i] … CellPtr[i+1]−1;
//     Lo, Hi (NCells·d) are the cell boxes, Owner the patch whose basic
//     extent holds the cell; the active patches of cell c (supports
//     overlapping the cell) are Act[ActPtr[c] … ActPtr[c+1]−1], ascending,
//     and Mask[c] is the same set as bits over the owner's neighbour slots.
//     Cells with k active patches are BinCell[BinPtr[k] … BinPtr[k+1]−1].
//     Every array is filled by count, prefix sum and fill.
//   - Element blocks: for a cell with a active patches, n_f = a·B local
//     functions ordered (active slot, n); the block is n_f × n_f row-major,
//     the load n_f long; offsets are prefix sums of n_f² and n_f.
//   - Matrix: BSR with B×B blocks row-major, block rows = patches, block
//     columns = the patch's neighbours (RowPtr = NbrPtr, Col = Nbr); CSR is
//     its scalar expansion.
package pum
