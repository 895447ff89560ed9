package contract

import (
	"testing"

	"github.com/bespoke-hpc/bespoke/kernel/family/familytest"
)

func FuzzParseVariant(f *testing.F) {
	familytest.FuzzVariantNames(f, ParseVariant, "slab", "pencil/e4", "slab/e0", "slab/e99999999999999999999", "pencil/")
}
