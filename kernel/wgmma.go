package kernel

// WGMMA is a warpgroup-level multiply-accumulate D = A·B + D on Hopper's
// tensor cores (PTX wgmma.mma_async.sync.aligned.m64nNk8.f32.tf32.tf32,
// sm_90a only): the 128 threads of a warpgroup (consecutive linear thread
// indices from a multiple of 128) hold a 64×N fp32 accumulator D, A (64×8)
// comes from their registers and B (8×N) from shared memory, read by the
// tensor cores themselves.
//
// A's and B's elements are fp32 values of which the tensor cores take the
// TF32 part (mma.TruncTF32), their products exact, summed into D in fp32. The
// thread of linear index t (warp w = t/32 % 4, g = t%32 / 4, q = t % 4)
// gives A[16w+g][q], A[16w+g+8][q], A[16w+g][q+4] and A[16w+g+8][q+4]
// (mma.sync m16n8k8's A fragment, one warp a band of 16 rows), and holds
// D[16w+g][8j+2q], D[16w+g][8j+2q+1], D[16w+g+8][8j+2q] and
// D[16w+g+8][8j+2q+1] as D's elements 4j … 4j+3, j < N/8.
//
// B lies in the 1-D real shared array B from element BAt on (a multiple of
// 4: 16 bytes), K-major without swizzling, in core matrices of 8 columns
// (n) by 4 rows (k), each 128 contiguous bytes: B[k][n] is element
//
//	BAt + (k/4)·LBO/4 + (n/8)·SBO/4 + (n%8)·4 + k%4
//
// (LBO and SBO in bytes, multiples of 16: the strides between core
// matrices along k and along n; PTX's matrix descriptor). The shared
// memory must have been written before a WGMMASync{Kind: ProxyFence} and a
// Barrier: the tensor cores read it through the async proxy.
//
// The operation is asynchronous: D is undefined, and A's registers must
// not change, until a WGMMASync{Kind: WGMMAWait} retires its group;
// WGMMAFence comes before the first WGMMA that reads registers written
// since the last wait, WGMMACommit closes a group. Every thread of the
// block must reach it (Validate asks for control flow that is the same for
// every thread, a block of whole warpgroups, an fp32 kernel); only CUDA
// spells it, for sm_90a: NeedsArch says 90 and ArchSpecific true.
//
// Accumulate, when set, is an integer expression (the same for the whole
// warpgroup): where it is zero the WGMMA writes D = A·B, ignoring D's old
// values (PTX's scale-d), so that a kernel starts new sums without
// assigning zeros to the accumulators, which the compiler would have to
// order against the WGMMA in flight.
type WGMMA struct {
	N          int
	D          []string
	A          []Expr
	B          string
	BAt        Expr
	LBO, SBO   int
	Accumulate Expr
}

// WGMMASyncKind is what a WGMMASync orders.
type WGMMASyncKind int

// The kinds of WGMMASync.
const (
	// WGMMAFence (wgmma.fence): registers written before it are what the
	// WGMMA after it read and accumulate into.
	WGMMAFence WGMMASyncKind = iota
	// WGMMACommit (wgmma.commit_group): the WGMMA issued since the last
	// commit form a group.
	WGMMACommit
	// WGMMAWait (wgmma.wait_group Pending): at most Pending of the
	// newest groups are left in flight. (Where a kernel reads D before
	// the wait that retires it, ptxas injects a wait there.)
	WGMMAWait
	// ProxyFence (fence.proxy.async.shared::cta): the thread's writes to
	// shared memory before it are seen by the tensor cores' reads after a
	// following barrier.
	ProxyFence
)

// WGMMASync orders the asynchronous WGMMA (see WGMMA and its kinds).
type WGMMASync struct {
	Kind    WGMMASyncKind
	Pending int // WGMMAWait only
}

func (WGMMA) isStmt()     {}
func (WGMMASync) isStmt() {}

// WGMMAMaxN is the widest N a WGMMA takes.
const WGMMAMaxN = 256

// ArchSpecific reports whether ss hold a WGMMA or its fences: code for
// exactly sm_90a (Hopper's arch-specific instructions run on no later
// architecture). A proxy fence alone is sm_90 code.
func ArchSpecific(ss []Stmt) bool {
	found := false
	WalkStmts(ss, func(s Stmt) bool {
		switch x := s.(type) {
		case WGMMA:
			found = true
		case WGMMASync:
			found = found || x.Kind != ProxyFence
		}
		return !found
	})
	return found
}
