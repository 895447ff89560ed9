package integrate

import (
	"fmt"

	"github.com/bespoke-hpc/bespoke/kernel"
)

// partRows are the matrix rows part h of P forms: a contiguous block of
// Nodes/P rows.
func (in *Instance) partRows(h, parts int) []int {
	n := in.Kind.Nodes() / parts
	rows := make([]int, n)
	for i := range rows {
		rows[i] = h*n + i
	}
	return rows
}

// buildParts is the kernel of a variant with Parts = P ≥ 2: P work-items
// share an element, each forming the whole geometry again (the inputs are
// read once from memory, the second reader hits the cache) but
// accumulating only its block of Nodes/P rows, so that a work-item holds
// 1/P of the accumulators (the CDR kernels of one work-item per element
// run out of registers). Work-item lx takes part lx / m of element lx % m
// (m = WG/P ≥ 32, so that the branch on the part is uniform over a warp)
// and stores its rows' entries, coalesced over the m elements.
func (in *Instance) buildParts(vr Variant) *kernel.Kernel {
	p := in.Problem
	m := vr.WG / vr.Parts
	k := in.build(Variant{WG: vr.WG, EPT: max(vr.EPT, 2)}) // parameters and facts
	k.Name = fmt.Sprintf("bespoke_integrate_%s_%s_%s", p.ident(), p.Prec, vr.ident())
	k.Variant = vr.Name()
	k.Launch = kernel.Launch{Block: [3]int{vr.WG, 1, 1}, Grid: [3]kernel.Axis{kernel.Over(Elements, m*vr.EPT)}}
	k.Active = nil
	k.Doc = in.doc(vr) + fmt.Sprintf("\nparts: %d elements per block, work-item lx forms rows block lx / %d of element lx %% %d", m, m, m)
	k.Meta["ept"], k.Meta["parts"], k.Meta["elements_per_group"] = vr.EPT, vr.Parts, m
	E := kernel.Ref(Elements)
	body := []kernel.Stmt{
		kernel.DeclIndex("el", kernel.Add(kernel.Mul(kernel.Add(kernel.Mul(gx, kernel.Const(vr.EPT)), kernel.Ref("k")), kernel.Const(m)), kernel.Rem(lx, kernel.Const(m)))),
	}
	ent := p.entryList()
	var branches []kernel.Stmt // innermost first
	for h := vr.Parts - 1; h >= 0; h-- {
		rows := in.partRows(h, vr.Parts)
		own := map[int]bool{}
		for _, a := range rows {
			own[a] = true
		}
		work := in.computeRows(in.inputWord, rows, true, vr.Chain)
		for i, e := range ent {
			if own[e[0]] {
				work = append(work, kernel.Put("a", kernel.Ref(acc(e[0], e[1])), in.outIndex(i, len(ent))))
			}
		}
		if p.Load {
			for _, a := range rows {
				work = append(work, kernel.Put("b", kernel.Ref(fmt.Sprintf("B%d", a)), in.outIndex(a, p.Kind.Nodes())))
			}
		}
		if branches == nil {
			branches = work
			continue
		}
		branches = []kernel.Stmt{kernel.If{Cond: kernel.Lt(lx, kernel.Const((h+1)*m)), Then: work, Else: branches}}
	}
	body = append(body, kernel.If{Cond: kernel.Lt(kernel.Ref("el"), E), Then: branches})
	k.Shared = nil
	k.Body = []kernel.Stmt{kernel.For{Var: "k", From: kernel.Const(0), To: kernel.Const(vr.EPT), Unroll: vr.EPT <= 4, Body: body}}
	return k
}
