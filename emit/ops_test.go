package emit

import (
	"testing"

	"github.com/bespoke-hpc/bespoke/kernel"
)

// TestEveryBinOpPrinted: the printer knows the precedence of every
// operator of the IR (a missing one would print without parentheses).
func TestEveryBinOpPrinted(t *testing.T) {
	for _, op := range kernel.BinOps {
		if _, ok := precOf[op]; !ok {
			t.Errorf("no precedence for %q", op)
		}
	}
	if len(precOf) != len(kernel.BinOps) {
		t.Errorf("%d precedences for %d operators", len(precOf), len(kernel.BinOps))
	}
}
