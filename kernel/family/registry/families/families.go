// Package families registers every kernel family with package registry:
// one file per family declares its flags, problems, default variant,
// sizes and report columns, and the list below gives the order the report
// shows them in. Adding a family is a file here and its name in that list
// (docs/architecture.md has the recipe).
package families

import "github.com/bespoke-hpc/bespoke/kernel/family/registry"

func init() {
	registry.Register(sparseFamily, contractFamily, femFamily, integrateFamily, pumFamily)
}
