package fem

// AssemblyBytes is a lower bound on the host memory NewAssembly takes for
// b on a mesh of nx×ny×nz elements: the geometric factors, the index lists
// and the nodes' positions, so that a caller can refuse a size before
// building anything.
func AssemblyBytes(b *Basis, nx, ny, nz int) int64 {
	e := int64(nx) * int64(ny) * int64(nz)
	p, q, n := int64(b.P()), int64(b.Q()), int64(b.N)
	entries := e * p * p * p
	nodes := (int64(nx)*n + 1) * (int64(ny)*n + 1) * (int64(nz)*n + 1)
	geo := e * int64(b.Factors()) * q * q * q * 8
	// Per entry: Index and Entries (int32 each) and its position (three
	// float64s); per node: Offsets, Boundary and Positions.
	return geo + entries*(4+4+24) + nodes*(4+1+24)
}
