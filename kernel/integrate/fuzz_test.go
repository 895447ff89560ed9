package integrate

import (
	"testing"

	"github.com/bespoke-hpc/bespoke/kernel/family/familytest"
)

func FuzzParseVariant(f *testing.F) {
	familytest.FuzzVariantNames(f, ParseVariant, "w64/e1", "w128/e2/local", "w64/e1/local/b8", "w64/e1/local/b8/chain", "w64/e1/chain/local", "w64/e1/rows", "w64/e1/p2", "w64/e1/local/b8/tensor/nt", "w0/e0", "w99999999999999999999/e1", "w64/e1/p1")
}
