package tensor

import (
	"testing"

	"github.com/bespoke-hpc/bespoke/kernel/family/familytest"
)

func FuzzParseVariant(f *testing.F) {
	familytest.FuzzVariantNames(f, ParseVariant, "slab/e2", "slab-lit/e1", "cube-fold/e4", "cube-pair", "cpu/e1", "pair/e8", "cube/e99999999999999999999", "slab-lit/e1/tri", "cpu/e1/aff", "pair/tri")
}
