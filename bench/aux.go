package bench

import (
	"fmt"

	"github.com/bespoke-hpc/bespoke/kernel"
)

// Helper kernels, built from the same IR as the candidates so every backend
// runs them through the same path.

func threadX(block int) kernel.Expr {
	return kernel.Bin{Op: "+", L: kernel.Bin{Op: "*", L: kernel.Special{Kind: kernel.GroupID}, R: kernel.Int{V: int64(block)}}, R: kernel.Special{Kind: kernel.LocalID}}
}

func v(name string) kernel.Expr { return kernel.Var{Name: name} }

func scalar(name string) kernel.Param {
	return kernel.Param{Name: name, Kind: kernel.ScalarParam, Type: kernel.Index}
}

func buffer(name string, isConst bool) kernel.Param {
	return kernel.Param{Name: name, Kind: kernel.BufferParam, Type: kernel.Real, Const: isConst}
}

const auxBlock = 256

// fillKernel writes x[i] = tab[i % period] for i < n: device-side fill of
// large buffers from a small random table the host can replay.
func fillKernel(dt kernel.DType, period int) *kernel.Kernel {
	return &kernel.Kernel{
		Name: fmt.Sprintf("bespoke_fill_%s_p%d", dt, period), Variant: "fill", DType: dt, Index64: true,
		Params: []kernel.Param{scalar("n"), buffer("x", false), buffer("tab", true)},
		Launch: kernel.Launch{Block: [3]int{auxBlock, 1, 1}, ColsPerBlock: auxBlock},
		Active: v("n"),
		Body: []kernel.Stmt{
			kernel.Decl{Type: kernel.Index, Name: "i", Init: threadX(auxBlock)},
			kernel.Store{Buf: "x", Index: v("i"), Value: kernel.Load{Buf: "tab", Index: kernel.Bin{Op: "%", L: v("i"), R: kernel.Int{V: int64(period)}}}},
		},
		Doc: "x[i] = tab[i % period] for i < n",
	}
}

// copyKernel is the roof: y[i] = x[i] for i < n (n even), two elements per
// thread with vector loads and stores, as the best candidates do.
func copyKernel(dt kernel.DType) *kernel.Kernel {
	return &kernel.Kernel{
		Name: "bespoke_copy_" + dt.String(), Variant: "copy", DType: dt, Index64: true,
		Params: []kernel.Param{scalar("n"), buffer("x", true), buffer("y", false)},
		Launch: kernel.Launch{Block: [3]int{auxBlock, 1, 1}, ColsPerBlock: 2 * auxBlock},
		Active: kernel.Bin{Op: "/", L: v("n"), R: kernel.Int{V: 2}},
		Body: []kernel.Stmt{
			kernel.Decl{Type: kernel.Index, Name: "i", Init: kernel.Bin{Op: "*", L: threadX(auxBlock), R: kernel.Int{V: 2}}},
			kernel.Decl{Type: kernel.Real, Name: "x0"},
			kernel.Decl{Type: kernel.Real, Name: "x1"},
			kernel.VecLoad{Dst: []string{"x0", "x1"}, Buf: "x", Index: v("i")},
			kernel.VecStore{Buf: "y", Index: v("i"), Src: []kernel.Expr{v("x0"), v("x1")}},
		},
		Doc: "y[i] = x[i] for i < n, n even",
	}
}

// gatherKernel copies samples columns of C (m rows, leading dimension ld)
// into out (m × samples): column s is j = s·(n−1)/(samples−1).
func gatherKernel(dt kernel.DType, m, ld, samples int) *kernel.Kernel {
	body := []kernel.Stmt{
		kernel.Decl{Type: kernel.Index, Name: "s", Init: threadX(auxBlock)},
		kernel.Decl{Type: kernel.Index, Name: "j", Init: kernel.Bin{Op: "/", L: kernel.Bin{Op: "*", L: v("s"), R: kernel.Bin{Op: "-", L: v("n"), R: kernel.Int{V: 1}}}, R: kernel.Int{V: int64(max(samples-1, 1))}}},
	}
	for i := 0; i < m; i++ {
		body = append(body, kernel.Store{
			Buf:   "out",
			Index: kernel.Bin{Op: "+", L: kernel.Int{V: int64(i * samples)}, R: v("s")},
			Value: kernel.Load{Buf: "c", Index: kernel.Bin{Op: "+", L: kernel.Int{V: int64(i) * int64(ld)}, R: v("j")}},
		})
	}
	return &kernel.Kernel{
		Name: fmt.Sprintf("bespoke_gather_%s_m%d_ld%d_s%d", dt, m, ld, samples), Variant: "gather", DType: dt, Index64: true,
		Params: []kernel.Param{scalar("n"), buffer("c", true), buffer("out", false)},
		Launch: kernel.Launch{Block: [3]int{auxBlock, 1, 1}, ColsPerBlock: auxBlock},
		Active: kernel.Int{V: int64(samples)},
		Body:   body,
		Doc:    "out[i*samples+s] = c[i*ld + s*(n-1)/(samples-1)]",
	}
}

// sampleColumn is the column the gather kernel reads for sample s.
func sampleColumn(s, n, samples int) int { return s * (n - 1) / max(samples-1, 1) }
