// Package tuned chooses how the partition-of-unity pipeline runs on a
// device: its strategies and kernel shapes are candidates on the family
// seam (kernel/family), measured on the device in use at the size asked
// for, and the winner kept in the tuning store (tune) under a key that
// names the configuration, the candidates and the device.
//
// It may import pum/run, kernel, kernel/family, kernel/pum, tune and
// device, but no backend and no command.
package tuned

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/pum/run"
)

// Candidate is one way to run the pipeline: a run.Shape, named stably.
type Candidate struct{ run.Shape }

// Name spells the shape as strategy.integrator.tT, and for the group
// kernel .sS.kK (tile side and tiles per thread), with .vV, .mmaW and
// .percell where set; Parse reads it back.
func (c Candidate) Name() string {
	s := c.Shape
	parts := []string{s.Strategy, s.Integrator, "t" + strconv.Itoa(s.Threads)}
	if s.Integrator == run.Group {
		parts = append(parts, "s"+strconv.Itoa(s.Side), "k"+strconv.Itoa(s.Tiles))
		if s.Vec > 0 {
			parts = append(parts, "v"+strconv.Itoa(s.Vec))
		}
		if s.MMA > 0 {
			parts = append(parts, "mma"+strconv.Itoa(s.MMA))
		}
	}
	if s.PerCell {
		parts = append(parts, "percell")
	}
	return strings.Join(parts, ".")
}

// Parse reads a name as Candidate.Name spells it.
func Parse(name string) (Candidate, error) {
	bad := func() (Candidate, error) {
		return Candidate{}, fmt.Errorf("pum candidate %q: want strategy.integrator.tT[.sS.kK[.vV][.mmaW]][.percell]", name)
	}
	parts := strings.Split(name, ".")
	if len(parts) < 3 {
		return bad()
	}
	var s run.Shape
	s.Strategy, s.Integrator = parts[0], parts[1]
	if !slices.Contains(run.Strategies, s.Strategy) || (s.Integrator != run.Thread && s.Integrator != run.Group) {
		return bad()
	}
	seen := map[string]bool{}
	for _, p := range parts[2:] {
		if p == "percell" {
			if seen[p] {
				return bad()
			}
			seen[p], s.PerCell = true, true
			continue
		}
		i := strings.IndexFunc(p, func(r rune) bool { return r >= '0' && r <= '9' })
		if i <= 0 || seen[p[:i]] {
			return bad()
		}
		v, err := strconv.Atoi(p[i:])
		// Zero is a shape's "unset", which a name never spells.
		if err != nil || v < 1 || strconv.Itoa(v) != p[i:] {
			return bad()
		}
		seen[p[:i]] = true
		switch p[:i] {
		case "t":
			s.Threads = v
		case "s":
			s.Side = v
		case "k":
			s.Tiles = v
		case "v":
			s.Vec = v
		case "mma":
			s.MMA = v
		default:
			return bad()
		}
	}
	c := Candidate{s}
	if !seen["t"] || (s.Integrator == run.Group) != (seen["s"] && seen["k"]) || c.Name() != name {
		return bad()
	}
	return c, nil
}

// Fixed holds the shape's fields a user set by hand: they replace the
// candidates' own, and the candidates that become alike count once.
type Fixed struct {
	Integrator           string // "": free
	Threads, Tiles, Side int    // 0: free
	Vec                  int    // 0: free
	MMA                  int    // below 0: free
	PerCell              bool   // true: every fused candidate per cell
}

// Free is a Fixed that fixes nothing.
var Free = Fixed{MMA: -1}

// Any reports whether f fixes a field.
func (f Fixed) Any() bool { return f != Free }

// apply sets f's fields in s. The thread kernel has no tiles: a field
// of the group kernel fixed (and not the thread kernel) makes a
// thread-kernel candidate a group-kernel one, of 128 threads on a GPU and
// 16 on a CPU unless fixed; the thread kernel's shape has no such fields.
func (f Fixed) apply(s run.Shape, gpu bool) run.Shape {
	if f.Integrator != "" {
		s.Integrator = f.Integrator
	}
	if s.Integrator == run.Thread && f.Integrator == "" && (f.Side > 0 || f.Tiles > 0 || f.Vec > 0 || f.MMA > 0) {
		s.Integrator, s.Threads = run.Group, 16
		if gpu {
			s.Threads = 128
		}
	}
	if f.Threads > 0 {
		s.Threads = f.Threads
	}
	if f.Tiles > 0 {
		s.Tiles = f.Tiles
	}
	if f.Side > 0 {
		s.Side = f.Side
	}
	if f.Vec > 0 {
		s.Vec = f.Vec
	}
	if f.MMA >= 0 {
		s.MMA = f.MMA
	}
	if f.PerCell && s.Strategy == run.Fused {
		s.PerCell = true
	}
	if s.Integrator == run.Thread {
		s.Side, s.Tiles, s.Vec, s.MMA = 0, 0, 0, 0
	} else {
		s.Side, s.Tiles = max(s.Side, 2), max(s.Tiles, 1) // kpum.Spec's defaults, spelled out
	}
	return s
}

// shapes lists the candidates for t before Fixed applies: on a CPU one
// per strategy (a block's threads run as loops in one CPU thread, so the
// tile shapes that matter on a GPU do not), on a GPU each strategy over
// team sizes and tile shapes, the fused one merged and per cell, and on
// CUDA with tensor cores (sm_80 on) the fused Gram product on them.
func shapes(t family.Target) []run.Shape {
	if !t.GPU {
		return []run.Shape{
			{Strategy: run.Atomic, Integrator: run.Thread, Threads: 1},
			{Strategy: run.Colour, Integrator: run.Thread, Threads: 1},
			{Strategy: run.Fused, Integrator: run.Group, Threads: 16, Side: 2, Tiles: 1},
		}
	}
	type tile struct{ threads, side, tiles int }
	fusedTiles := []tile{{64, 2, 2}, {256, 3, 1}, {64, 4, 1}, {128, 4, 1}, {128, 5, 1}, {128, 6, 1}, {256, 5, 1}}
	plainTiles := []tile{{128, 3, 1}, {128, 4, 1}}
	var out []run.Shape
	for _, st := range []string{run.Atomic, run.Colour} {
		out = append(out, run.Shape{Strategy: st, Integrator: run.Thread, Threads: 64})
		for _, g := range plainTiles {
			out = append(out, run.Shape{Strategy: st, Integrator: run.Group, Threads: g.threads, Side: g.side, Tiles: g.tiles})
		}
	}
	for _, g := range fusedTiles {
		out = append(out, run.Shape{Strategy: run.Fused, Integrator: run.Group, Threads: g.threads, Side: g.side, Tiles: g.tiles})
	}
	for _, g := range []tile{{128, 4, 1}, {128, 6, 1}} {
		out = append(out, run.Shape{Strategy: run.Fused, Integrator: run.Group, Threads: g.threads, Side: g.side, Tiles: g.tiles, PerCell: true})
	}
	if t.CUDAArch >= 80 {
		for _, th := range []int{128, 256} {
			out = append(out, run.Shape{Strategy: run.Fused, Integrator: run.Group, Threads: th, Side: 2, Tiles: 1, MMA: 16})
		}
	}
	return out
}
