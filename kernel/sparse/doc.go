// Package sparse builds GiMMiK-style kernels for C ← α·A·B + β·C with a
// constant operator A: its non-zeros become literals (α folded in), zeros
// produce no code, β is specialised and everything is unrolled.
//
// Every variant computes, for each column j < n (B is k×n, C is m×n, both
// row-major with leading dimensions ldb and ldc):
//
//	for i := 0; i < m; i++ {
//		s := 0.0
//		for r := 0; r < k; r++ { s += alpha * A[i][r] * B[r*ldb+j] }
//		C[i*ldc+j] = s + beta*C[i*ldc+j] // C is not read when beta == 0
//	}
//
// and Apply runs exactly that loop (the float64 reference). The variants differ in the
// order of that work and in how threads share it.
//
// Each strategy is a parameter struct in a file of its own (StreamParams in
// stream.go, MSplitParams in msplit.go, …) that implements Variant: its
// name, its checks, its launch and its kernel builder. The strategies table
// (variant.go) gives each family's defaults and reads its names back
// (readOptions, names.go).
//
// It must not import emit, device or any backend.
package sparse
