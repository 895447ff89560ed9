package tune

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"

	"github.com/bespoke-hpc/bespoke/emit"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/kernel/kerneltest"
)

// candidateDigest names the candidate set a choice was made among: a digest
// of the names the family offers for the instance on t, in order. Adding,
// removing or renaming a candidate changes it, so a choice made among other
// candidates is not reused.
func candidateDigest(in family.Instance, t family.Target) string {
	h := sha256.New()
	for _, c := range in.Candidates(t) {
		fmt.Fprintf(h, "%s\n", c.Name())
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// printerVersion is a digest of the printer's output: the sample kernels of
// kernel/kerneltest, which hold every IR construct, rendered in every
// dialect (a rendering's error counts as its output). Any change to how
// kernels are spelled changes it, so a choice measured on code printed
// otherwise is not reused. It is computed once per process.
var printerVersion = sync.OnceValue(func() string {
	v, _ := printerDigest(func() []*kernel.Kernel {
		return []*kernel.Kernel{
			kerneltest.Slabs(), kerneltest.Tickets(), kerneltest.WGMMA(),
			kerneltest.Misc(kernel.F64), kerneltest.Misc(kernel.F32),
			kerneltest.Stream(kernel.F64), kerneltest.Stream(kernel.F32),
			kerneltest.Ring(kernel.F64), kerneltest.Ring(kernel.F32),
			kerneltest.MMA(kernel.M16N8K4), kerneltest.TF32MMA(kernel.M16N8K8), kerneltest.TF32RawMMA(kernel.M16N8K8),
		}
	})
	return v
})

// printerDigest renders the kernels samples returns in every dialect (fresh
// kernels each time, as a rendering may lower them) and digests the
// sources; rendered counts the renderings that succeeded.
func printerDigest(samples func() []*kernel.Kernel) (digest string, rendered int) {
	h := sha256.New()
	for _, d := range emit.Dialects() {
		for _, k := range samples() {
			fmt.Fprintf(h, "%s %s\n", d, k.Name)
			src, err := emit.Render(d, k)
			if err != nil {
				fmt.Fprintf(h, "error %s\n", err)
				continue
			}
			rendered++
			h.Write([]byte(src.Text))
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:12]), rendered
}

// PrinterVersion is the digest of the printer's output that tuning keys
// carry, for programs that report which printer they run.
func PrinterVersion() string { return printerVersion() }
