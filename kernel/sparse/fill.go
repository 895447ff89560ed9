package sparse

// fillBlocksPerUnit is the blocks a multiprocessor should get from a
// resident tensor-core variant (α·A staged once, then Block tiles of
// columns one after another). With the 16 or 32 tiles a block that suit a
// million columns, PyFR's p5 tets (about 120,000 columns) launched fewer
// blocks than the H200 has multiprocessors and ran at half the speed of
// the same kernel on a full device (docs/rationale.md#dmma-fill).
const fillBlocksPerUnit = 2

// fillUnits lowers the tiles a block takes in the resident dmma, tmma and
// wgmma variants of vs where n columns would give fewer than
// fillBlocksPerUnit blocks to each of units multiprocessors: to the
// largest power of two that gives that many, at least one. Other variants,
// and all of them where n or units is unknown (0), are left as they are;
// variants that become the same are listed once.
func fillUnits(pb Problem, n, units int, vs []Variant) []Variant {
	if n <= 0 || units <= 0 {
		return vs
	}
	out := make([]Variant, 0, len(vs))
	seen := map[string]bool{}
	for _, v := range vs {
		if f, ok := filled(pb, v, n, units); ok {
			v = f
		}
		if seen[v.Name()] {
			continue
		}
		seen[v.Name()] = true
		out = append(out, v)
	}
	return out
}

// filled is v with fewer tiles a block, where fillUnits asks for it and
// the problem accepts the result.
func filled(pb Problem, v Variant, n, units int) (Variant, bool) {
	var cols, groups, block int
	switch p := v.(type) {
	case MMAParams:
		if p.Block == 0 {
			return v, false
		}
		l := p.dmmaLayout(pb)
		cols, groups, block = l.cols, l.groups, p.Block
	case WGMMAParams:
		l := p.wgmmaLayout(pb)
		cols, groups, block = l.cols, l.groups, p.Block
	default:
		return v, false
	}
	tiles := (n + cols - 1) / cols
	want := fillBlocksPerUnit * units
	blocks := func(b int) int { return (tiles + b - 1) / b * max(groups, 1) }
	if blocks(block) >= want {
		return v, false
	}
	b := block
	for b > 1 && blocks(b) < want {
		b /= 2
	}
	var out Variant
	switch p := v.(type) {
	case MMAParams:
		p.Block = b
		out = p
	case WGMMAParams:
		p.Block = b
		out = p
	}
	if pb.Check(out) != nil {
		return v, false
	}
	return out, true
}
