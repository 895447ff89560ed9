package sparse

import "fmt"

// BlocksParams are the parameters of blocks (see Blocks):
// "blocks/xX-yY[-tT][-a|-a2][-l][-bB]".
type BlocksParams struct {
	Block int // columns (threads along x) a block
	Split int // threads along y a column
	// Tiles (-t) is the tiles of Block columns a block does in turn, the
	// next one's B loaded while the current one computes.
	Tiles int
	// Stages is 1 (-a) to stage B by asynchronous copies into one
	// buffer, 2 (-a2) into two, 0 through registers.
	Stages int
	// Large (-l) lets the kernel hold up to blocksLargeShared bytes of
	// shared memory: CUDA only, sm_80+.
	Large bool
	// Occupancy is the blocks per multiprocessor the CUDA compiler must
	// allow (capping registers); 0 leaves it free.
	Occupancy int
}

// Family is the strategy v belongs to.
func (v BlocksParams) Family() Family { return Blocks }

// String is v's name.
func (v BlocksParams) String() string { return v.Name() }

// Name is e.g. "blocks/x16-y16" or "blocks/x32-y16-t2-a2-l".
func (v BlocksParams) Name() string {
	s := fmt.Sprintf("%s/x%d-y%d", Blocks, v.Block, v.Split)
	if v.Tiles > 1 {
		s += fmt.Sprintf("-t%d", v.Tiles)
	}
	switch v.Stages {
	case 1:
		s += "-a"
	case 2:
		s += "-a2"
	}
	if v.Large {
		s += "-l"
	}
	if v.Occupancy > 0 {
		s += fmt.Sprintf("-b%d", v.Occupancy)
	}
	return s
}

func parseBlocks(def Variant, name string, opts []string) (Variant, error) {
	v := def.(BlocksParams)
	has, err := readOptions(name, opts, "blocks/x16-y16: columns per block, threads per column",
		need("x", &v.Block), need("y", &v.Split), num("t", &v.Tiles),
		option{key: "a", num: &v.Stages, choice: map[string]int{"a": 1, "a2": 2}},
		flag("l", &v.Large), num("b", &v.Occupancy))
	switch {
	case err != nil:
		return nil, err
	case has["t"] && v.Tiles < 1:
		return nil, fmt.Errorf("variant %q: tiles must be ≥ 1", name)
	case has["b"] && v.Occupancy < 1:
		return nil, fmt.Errorf("variant %q: -bN must be ≥ 1", name)
	}
	return v, nil
}

func (v BlocksParams) valid() error {
	switch {
	case v.Block < 1 || v.Split < 1 || v.Block > blocksMaxThreads || v.Split > blocksMaxThreads || v.Block*v.Split > blocksMaxThreads:
		return fmt.Errorf("variant %s: x and y must be ≥ 1 with x·y ≤ %d threads", v.Name(), blocksMaxThreads)
	case v.Stages < 0 || v.Stages > 2:
		return fmt.Errorf("variant %s: blocks stages B by asynchronous copies into one buffer (-a) or two (-a2), or not", v.Name())
	case v.Occupancy < 0 || v.Occupancy > 8:
		return fmt.Errorf("variant %s: -bN asks for 1..8 blocks a multiprocessor", v.Name())
	case v.Tiles < 0 || v.Tiles > blocksMaxTiles:
		return fmt.Errorf("variant %s: tiles must be 1..%d", v.Name(), blocksMaxTiles)
	}
	return nil
}

// check reports why the operator has no block plan, or why v's shared
// memory does not fit.
func (v BlocksParams) check(pb Problem) error {
	g := newGen(pb, v)
	p, err := g.plan()
	if err != nil {
		return fmt.Errorf("variant %s: %v", v.Name(), err)
	}
	if v.Stages == 2 && (len(p.phases) < 2 || v.Tiles > 1) {
		return fmt.Errorf("variant %s: two buffers (-a2) need an operator applied in phases and one tile a block", v.Name())
	}
	if s, lim := blocksShared(pb, v, p), v.sharedLimit(); s > lim {
		return fmt.Errorf("variant %s needs %d bytes of shared memory (limit %d; fewer columns per block, -x, need less)", v.Name(), s, lim)
	}
	return nil
}

// sharedBytes is 0 here: the shared memory follows the operator's block
// plan, which blocksKernel sets (blocksShared).
func (v BlocksParams) sharedBytes(Problem) int { return 0 }

func (v BlocksParams) launch() launchShape { return launchShape{v.Block, v.Split, 1, v.Occupancy} }

func (v BlocksParams) build(g *gen) error { return g.blocksKernel() }

// blocksBuffers is the buffers of staged rows of B: two with -a2.
func (v BlocksParams) blocksBuffers() int { return max(v.Stages, 1) }

// sharedLimit is the shared memory a Blocks variant may use.
func (v BlocksParams) sharedLimit() int {
	if v.Large {
		return blocksLargeShared
	}
	return MaxSharedBytes
}
