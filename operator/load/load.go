// Package load turns command-line arguments (files and directories) into
// operators, choosing the reader by file extension and naming each operator
// the way reports and generated kernels refer to it.
package load

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bespoke-hpc/bespoke/operator"
	"github.com/bespoke-hpc/bespoke/operator/dense"
	"github.com/bespoke-hpc/bespoke/operator/mtx"
	"github.com/bespoke-hpc/bespoke/operator/npy"
)

// File extensions the readers are chosen by (compared case-insensitively).
const (
	extMTX = ".mtx"
	extNPY = ".npy"
)

// spSuffix is the suffix PyFR's dumps put on operator names ("m6-sp.mtx":
// solution points); it carries no meaning for bespoke and is dropped.
const spSuffix = "-sp"

// File reads one operator: .mtx as MatrixMarket, .npy as NumPy, anything else
// as dense text. The operator is named by the file's base name without
// extension and "-sp" suffix; Source is path.
func File(path string) (*operator.Operator, error) {
	var (
		op  *operator.Operator
		err error
	)
	switch strings.ToLower(filepath.Ext(path)) {
	case extMTX:
		op, err = mtx.Read(path)
	case extNPY:
		op, err = npy.Read(path)
	default:
		op, err = dense.Read(path)
	}
	if err != nil {
		return nil, nameFile(path, err)
	}
	op.Name = stem(filepath.Base(path))
	op.Source = path
	return op, nil
}

// nameFile makes sure an error names the file: the readers' syntax errors
// and os errors already do, anything else is wrapped.
func nameFile(path string, err error) error {
	var (
		me *mtx.SyntaxError
		ne *npy.SyntaxError
		de *dense.SyntaxError
		pe *fs.PathError
	)
	if errors.As(err, &me) || errors.As(err, &ne) || errors.As(err, &de) || errors.As(err, &pe) {
		return err
	}
	return fmt.Errorf("load: %s: %w", path, err)
}

// Paths reads every argument in order. A file is read with File. A directory
// is walked recursively for *.mtx and *.npy files (hidden directories
// skipped), read in sorted order and named by their path relative to the
// directory, slash-separated, without extension and "-sp" suffix, e.g.
// "p3/hex/m6". The first error is returned; a directory holding no operator
// file is an error, since it is almost always a wrong path.
func Paths(args []string) ([]*operator.Operator, error) {
	var ops []*operator.Operator
	for _, arg := range args {
		st, err := os.Stat(arg)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			op, err := File(arg)
			if err != nil {
				return nil, err
			}
			ops = append(ops, op)
			continue
		}
		dirOps, err := dir(arg)
		if err != nil {
			return nil, err
		}
		ops = append(ops, dirOps...)
	}
	uniqueNames(ops)
	return ops, nil
}

// uniqueNames lengthens names that clash — operators of different paths
// named alike relative to their own arguments (p3/hex/m0 and p6/hex/m0 given
// as the folders p3 and p6 are both "hex/m0") — with the leading folders of
// their paths, one at a time, until every name is its shortest
// distinguishing suffix.
func uniqueNames(ops []*operator.Operator) {
	parts := make([][]string, len(ops)) // path components, last first, stem included
	depth := make([]int, len(ops))      // components the name uses
	for i, op := range ops {
		abs, err := filepath.Abs(op.Source)
		if err != nil {
			abs = op.Source
		}
		comps := strings.Split(filepath.ToSlash(abs), "/")
		comps[len(comps)-1] = stem(comps[len(comps)-1])
		for l, r := 0, len(comps)-1; l < r; l, r = l+1, r-1 {
			comps[l], comps[r] = comps[r], comps[l]
		}
		parts[i] = comps
		depth[i] = strings.Count(op.Name, "/") + 1
	}
	name := func(i int) string {
		d := min(depth[i], len(parts[i]))
		c := append([]string(nil), parts[i][:d]...)
		for l, r := 0, len(c)-1; l < r; l, r = l+1, r-1 {
			c[l], c[r] = c[r], c[l]
		}
		return strings.Join(c, "/")
	}
	for changed := true; changed; {
		changed = false
		seen := map[string][]int{}
		for i, op := range ops {
			seen[op.Name] = append(seen[op.Name], i)
		}
		for _, idx := range seen {
			if len(idx) < 2 {
				continue
			}
			for _, i := range idx {
				if depth[i] < len(parts[i]) {
					depth[i]++
					ops[i].Name = name(i)
					changed = true
				}
			}
		}
	}
}

// dir reads the operator files under root.
func dir(root string) ([]*operator.Operator, error) {
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		switch strings.ToLower(filepath.Ext(p)) {
		case extMTX, extNPY:
			// Regular files only (a symbolic link counts as what it
			// names): a pipe would block the scan, a device or socket
			// is no operator.
			if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
				files = append(files, p)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("load: no %s or %s files under %s", extMTX, extNPY, root)
	}
	sort.Strings(files)
	ops := make([]*operator.Operator, 0, len(files))
	for _, p := range files {
		op, err := File(p)
		if err != nil {
			return nil, err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return nil, fmt.Errorf("load: %s: %w", p, err)
		}
		op.Name = stem(filepath.ToSlash(rel))
		ops = append(ops, op)
	}
	return ops, nil
}

// stem drops the extension and the "-sp" suffix from a slash-separated name.
func stem(name string) string {
	name = strings.TrimSuffix(name, path.Ext(name))
	return strings.TrimSuffix(name, spSuffix)
}

// PyFRBeta is the β PyFR applies an operator with: its m3 and m6 operators
// accumulate into the output (β = 1), the others overwrite it (β = 0). Only
// the last element of name counts, so "p3/hex/m6", "m6" and "m6-sp.mtx" all
// give 1.
func PyFRBeta(name string) float64 {
	switch stem(path.Base(filepath.ToSlash(name))) {
	case "m3", "m6":
		return 1
	}
	return 0
}
