package layers

import (
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/bespoke-hpc/bespoke/"

// allowed lists, for each package, the bespoke packages it may import
// directly. A package missing here is an error: a new package states its
// layer.
var allowed = map[string][]string{
	"internal/cache":           {},
	"internal/dl":              {},
	"internal/testenv":         {},
	"internal/paths":           {},
	"internal/layers":          {},
	"operator":                 {},
	"operator/dense":           {"operator"},
	"operator/mtx":             {"operator"},
	"operator/npy":             {"operator"},
	"operator/load":            {"operator", "operator/dense", "operator/mtx", "operator/npy"},
	"poly":                     {},
	"fr":                       {"operator", "poly"},
	"fem":                      {"poly"},
	"fem/meshfile":             {"fem", "operator/npy"},
	"kernel":                   {},
	"kernel/family":            {"kernel"},
	"kernel/family/familytest": {},
	"kernel/interp":            {"kernel", "kernel/mma"},
	"kernel/mma":               {"kernel"},
	"kernel/pass":              {"kernel"},
	"kernel/cost":              {"kernel"},
	"kernel/kerneltest":        {"kernel"},
	"kernel/sparse":            {"kernel", "kernel/family", "operator"},
	"kernel/contract":          {"kernel", "kernel/family", "poly"},
	"kernel/tensor":            {"fem", "kernel", "kernel/family"},
	"kernel/vector":            {"kernel", "kernel/family"},
	"element":                  {"poly"},
	"kernel/integrate":         {"element", "kernel", "kernel/family", "poly"},
	"pum":                      {"poly"},
	"kernel/pum":               {"kernel", "kernel/family", "poly", "pum"},
	"pum/run":                  {"build", "device", "internal/cache", "kernel", "kernel/pum", "pum", "solve", "tune"},
	"pum/tuned":                {"device", "kernel", "kernel/family", "kernel/pum", "pum", "pum/run", "tune"},
	"solve":                    {"build", "device", "fem", "kernel", "kernel/family", "kernel/tensor", "kernel/vector"},
	"emit":                     {"kernel", "kernel/pass"},
	"device":                   {"emit", "kernel"},
	"device/cuda":              {"device", "emit", "internal/cache", "internal/dl"},
	"device/opencl":            {"device", "emit", "internal/cache", "internal/dl"},
	"device/host":              {"device", "emit", "internal/cache"},
	"baseline":                 {"device", "device/cuda", "internal/dl", "kernel", "kernel/family", "kernel/sparse"},
	"build":                    {"device", "emit", "kernel"},
	"verify":                   {"build", "device", "emit", "kernel", "kernel/family", "kernel/interp"},
	"tune":                     {"device", "emit", "internal/cache", "kernel", "kernel/cost", "kernel/family", "kernel/kerneltest"},
	"bench":                    {"build", "device", "kernel", "kernel/family", "tune"},
	"report":                   {"bench", "device", "kernel/family/registry", "tune"},
	"serve":                    {"device", "emit", "kernel", "kernel/family", "kernel/sparse", "operator", "tune"},
	"conformance": {"device", "element", "fem", "kernel/integrate", "kernel/pum", "pum", "internal/testenv", "kernel", "kernel/contract", "kernel/family", "kernel/interp",
		"kernel/kerneltest", "kernel/sparse", "kernel/tensor", "kernel/vector", "operator", "operator/load", "verify"},
	"internal/cli": {"baseline", "bench", "build", "device", "device/cuda", "device/host", "device/opencl", "element", "emit", "fem", "fem/meshfile", "fr",
		"gen", "kernel/family/registry", "kernel/family/registry/families", "kernel/integrate", "kernel/pum", "pum", "pum/run", "pum/tuned",
		"internal/cache", "internal/paths", "kernel", "kernel/contract", "kernel/family", "kernel/sparse", "kernel/tensor", "operator", "operator/load",
		"operator/mtx", "operator/npy", "report", "serve", "solve", "tune", "verify"},
	"cmd/bespoke": {"internal/cli"},

	// The family registry names the families without importing them;
	// registry/families registers each, importing its package.
	"kernel/family/registry": {"kernel", "kernel/family"},
	"kernel/family/registry/families": {"element", "fem", "fem/meshfile", "fr", "kernel", "kernel/contract", "kernel/family",
		"kernel/family/registry", "kernel/integrate", "kernel/pum", "kernel/sparse", "kernel/tensor", "operator", "operator/load", "pum", "pum/run", "pum/tuned"},
	"gen": {"bench", "device", "emit", "kernel/family", "tune"},
}

// never lists what a package must not reach even indirectly: the rules
// the doc comments state.
var never = map[string][]string{
	"kernel":          {"emit", "device", "kernel/sparse", "kernel/contract"},
	"kernel/family":   {"emit", "device"},
	"kernel/cost":     {"emit", "device", "kernel/family"},
	"kernel/sparse":   {"emit", "device", "build", "verify", "bench"},
	"kernel/contract": {"emit", "device", "build", "verify", "bench"},
	"kernel/tensor":   {"emit", "device", "build", "verify", "bench"},
	"emit":            {"device", "kernel/family", "kernel/sparse", "kernel/contract"},
	"device":          {"device/cuda", "device/opencl", "device/host", "kernel/family"},
	"build":           {"device/cuda", "device/opencl", "device/host", "kernel/family", "kernel/sparse", "kernel/contract"},
	"verify":          {"device/cuda", "device/opencl", "device/host", "kernel/sparse", "kernel/contract", "tune", "bench"},
	"tune":            {"device/cuda", "device/opencl", "device/host", "kernel/sparse", "kernel/contract", "verify", "bench"},
	"bench":           {"device/cuda", "device/opencl", "device/host", "kernel/sparse", "kernel/contract", "verify", "report", "baseline"},
	"report":          {"device/cuda", "device/opencl", "device/host", "kernel/sparse", "kernel/contract", "kernel/tensor", "kernel/integrate", "kernel/family/registry/families"},
	"internal/cache":  {"kernel", "device"},
	"serve":           {"device/cuda", "device/opencl", "device/host", "build", "verify", "bench"},
	"pum/run":         {"device/cuda", "device/opencl", "device/host", "internal/cli"},
	"pum/tuned":       {"device/cuda", "device/opencl", "device/host", "internal/cli"},

	// The registry reads no family, so that report reads it without
	// reaching one.
	"kernel/family/registry": {"emit", "device", "kernel/sparse", "kernel/contract", "kernel/tensor", "kernel/integrate"},
	"gen":                    {"device/cuda", "device/opencl", "device/host", "kernel/sparse", "kernel/contract", "kernel/tensor", "kernel/integrate"},
}

// golist returns, for each bespoke package, its bespoke imports (direct,
// or with deps every package it reaches).
func golist(t *testing.T, deps bool) map[string][]string {
	t.Helper()
	field := "{{.Imports}}"
	if deps {
		field = "{{.Deps}}"
	}
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} "+field, module+"...").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	m := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, rest, _ := strings.Cut(line, " ")
		pkg = strings.TrimPrefix(pkg, module)
		var own []string
		for _, imp := range strings.Fields(strings.Trim(rest, "[]")) {
			if strings.HasPrefix(imp, module) {
				own = append(own, strings.TrimPrefix(imp, module))
			}
		}
		m[pkg] = own
	}
	return m
}

func TestImports(t *testing.T) {
	var pkgs []string
	imports := golist(t, false)
	for pkg := range imports {
		pkgs = append(pkgs, pkg)
	}
	sort.Strings(pkgs)
	for _, pkg := range pkgs {
		ok, known := allowed[pkg]
		if !known {
			t.Errorf("%s is in no layer: add it to allowed with the imports its doc comment permits", pkg)
			continue
		}
		for _, imp := range imports[pkg] {
			if !slices.Contains(ok, imp) {
				t.Errorf("%s imports %s, which its layer does not allow", pkg, imp)
			}
		}
	}
}

func TestNever(t *testing.T) {
	deps := golist(t, true)
	for pkg, bad := range never {
		reach, ok := deps[pkg]
		if !ok {
			t.Errorf("no package %s", pkg)
			continue
		}
		for _, b := range bad {
			if slices.Contains(reach, b) {
				t.Errorf("%s reaches %s (go list -deps), which it must not", pkg, b)
			}
		}
	}
}
