package layers

import (
	"slices"
	"testing"

	"github.com/bespoke-hpc/bespoke/kernel/family/registry"
	_ "github.com/bespoke-hpc/bespoke/kernel/family/registry/families"
)

// Every registered family's package has a layer, is imported by the
// package that registers it, and reaches neither the registry nor the
// registering package: the registry reads the families, never the other
// way round.
func TestRegistryFamilies(t *testing.T) {
	const regs = "kernel/family/registry/families"
	imports := golist(t, false)
	deps := golist(t, true)
	if len(registry.All()) == 0 {
		t.Fatal("no family registered")
	}
	for _, f := range registry.All() {
		if _, ok := allowed[f.Package]; !ok {
			t.Errorf("family %s: its package %s is in no layer", f.Name, f.Package)
		}
		if !slices.Contains(imports[regs], f.Package) {
			t.Errorf("family %s: %s does not import its package %s", f.Name, regs, f.Package)
		}
		for _, bad := range []string{"kernel/family/registry", regs} {
			if slices.Contains(deps[f.Package], bad) {
				t.Errorf("family %s: %s reaches %s", f.Name, f.Package, bad)
			}
		}
		for _, bad := range []string{"kernel/family/registry", regs} {
			if slices.Contains(allowed[f.Package], bad) {
				t.Errorf("family %s: the layer of %s allows %s", f.Name, f.Package, bad)
			}
		}
	}
	if !registry.Has(registry.DefaultFamily) {
		t.Errorf("the default family %q is not registered", registry.DefaultFamily)
	}
}
