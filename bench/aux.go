package bench

import (
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

func buffer(name string, t kernel.Type, isConst bool) kernel.Param {
	return kernel.Param{Name: name, Kind: kernel.BufferParam, Type: t, Const: isConst}
}

const auxBlock = 256

// fillKernel writes x[i] = tab[i % period] for i < n: device-side fill of
// large buffers from a small random table the host can replay.
func fillKernel(dt kernel.DType) *kernel.Kernel {
	return &kernel.Kernel{
		Name: "bespoke_fill_" + dt.String(), Variant: "fill", DType: dt, Index64: true,
		Params: []kernel.Param{scalar("n"), scalar("period"), buffer("x", kernel.Real, false), buffer("tab", kernel.Real, true)},
		Launch: kernel.Launch{Block: [3]int{auxBlock, 1, 1}, Grid: [3]kernel.Axis{kernel.Over("n", auxBlock)}},
		Active: v("n"),
		Body: []kernel.Stmt{
			kernel.Decl{Type: kernel.Index, Name: "i", Init: threadX(auxBlock)},
			kernel.Put("x", kernel.At("tab", kernel.Bin{Op: "%", L: v("i"), R: v("period")}), v("i")),
		},
		Doc: "x[i] = tab[i % period] for i < n",
	}
}

// roofStripes is how many parts of x and y each roof kernel streams
// through at once: on a CPU four concurrent streams moved 15–20 % more
// than one (a C OpenMP copy and update, 1 GiB), about what the GEMM
// kernels, which stream several rows of B and C, reached above a
// one-stream roof.
const roofStripes = 4

// stripes builds the body of a roof kernel: for each of the roofStripes
// parts of length n/roofStripes (n a multiple of 2·roofStripes), the
// thread's pair of elements in it, through pair(offset).
func stripes(pair func(at kernel.Expr) []kernel.Stmt) []kernel.Stmt {
	body := []kernel.Stmt{
		kernel.Decl{Type: kernel.Index, Name: "i", Init: kernel.Bin{Op: "*", L: threadX(auxBlock), R: kernel.Int{V: 2}}},
		kernel.Decl{Type: kernel.Index, Name: "part", Init: kernel.Bin{Op: "/", L: v("n"), R: kernel.Int{V: roofStripes}}},
	}
	for s := 0; s < roofStripes; s++ {
		at := kernel.Expr(v("i"))
		if s > 0 {
			at = kernel.Bin{Op: "+", L: kernel.Bin{Op: "*", L: v("part"), R: kernel.Int{V: int64(s)}}, R: v("i")}
		}
		body = append(body, kernel.If{Cond: kernel.Int{V: 1}, Then: pair(at)})
	}
	return body
}

// copyKernel is a roof: y[i] = x[i] for i < n, two elements per thread
// with vector loads and stores, as the best candidates do, in roofStripes
// parts at once.
func copyKernel(dt kernel.DType) *kernel.Kernel {
	return &kernel.Kernel{
		Name: "bespoke_copy_" + dt.String(), Variant: "copy", DType: dt, Index64: true,
		Params: []kernel.Param{scalar("n"), buffer("x", kernel.Real, true), buffer("y", kernel.Real, false)},
		Launch: kernel.Launch{Block: [3]int{auxBlock, 1, 1}, Grid: [3]kernel.Axis{kernel.Over("n", 2*auxBlock*roofStripes)}},
		Active: kernel.Bin{Op: "/", L: v("n"), R: kernel.Int{V: 2 * roofStripes}},
		Body: stripes(func(at kernel.Expr) []kernel.Stmt {
			return []kernel.Stmt{
				kernel.Decl{Type: kernel.Real, Name: "x0"},
				kernel.Decl{Type: kernel.Real, Name: "x1"},
				kernel.VecLoad{Dst: []string{"x0", "x1"}, Buf: "x", Index: at},
				kernel.VecStore{Buf: "y", Index: at, Src: []kernel.Expr{v("x0"), v("x1")}},
			}
		}),
		Doc: "y[i] = x[i] for i < n, n a multiple of 8, in four parts at once",
	}
}

// updateKernel is the roof for kernels that read what they write (β ≠
// 0): y[i] += x[i] for i < n, as copyKernel. On a CPU a store to a line
// not in cache first reads it (write-allocate), which a copy pays and an
// in-place update does not, so kernels that read C before writing it
// outran the copy by up to 2×; the roof is the faster of
// the two.
func updateKernel(dt kernel.DType) *kernel.Kernel {
	return &kernel.Kernel{
		Name: "bespoke_update_" + dt.String(), Variant: "update", DType: dt, Index64: true,
		Params: []kernel.Param{scalar("n"), buffer("x", kernel.Real, true), buffer("y", kernel.Real, false)},
		Launch: kernel.Launch{Block: [3]int{auxBlock, 1, 1}, Grid: [3]kernel.Axis{kernel.Over("n", 2*auxBlock*roofStripes)}},
		Active: kernel.Bin{Op: "/", L: v("n"), R: kernel.Int{V: 2 * roofStripes}},
		Body: stripes(func(at kernel.Expr) []kernel.Stmt {
			return []kernel.Stmt{
				kernel.Decl{Type: kernel.Real, Name: "x0"},
				kernel.Decl{Type: kernel.Real, Name: "x1"},
				kernel.Decl{Type: kernel.Real, Name: "y0"},
				kernel.Decl{Type: kernel.Real, Name: "y1"},
				kernel.VecLoad{Dst: []string{"x0", "x1"}, Buf: "x", Index: at},
				kernel.VecLoad{Dst: []string{"y0", "y1"}, Buf: "y", Index: at},
				kernel.VecStore{Buf: "y", Index: at, Src: []kernel.Expr{kernel.Bin{Op: "+", L: v("y0"), R: v("x0")}, kernel.Bin{Op: "+", L: v("y1"), R: v("x1")}}},
			}
		}),
		Doc: "y[i] += x[i] for i < n, n a multiple of 8, in four parts at once",
	}
}

// gatherKernel copies the sampled elements of an output: out[s] = x[at[s]]
// for s < n.
func gatherKernel(dt kernel.DType) *kernel.Kernel {
	return &kernel.Kernel{
		Name: "bespoke_gather_" + dt.String(), Variant: "gather", DType: dt, Index64: true,
		Params: []kernel.Param{scalar("n"), buffer("x", kernel.Real, true), buffer("at", kernel.Int64, true), buffer("out", kernel.Real, false)},
		Launch: kernel.Launch{Block: [3]int{auxBlock, 1, 1}, Grid: [3]kernel.Axis{kernel.Over("n", auxBlock)}},
		Active: v("n"),
		Body: []kernel.Stmt{
			kernel.Decl{Type: kernel.Index, Name: "s", Init: threadX(auxBlock)},
			kernel.Put("out", kernel.At("x", kernel.At("at", v("s"))), v("s")),
		},
		Doc: "out[s] = x[at[s]] for s < n",
	}
}
