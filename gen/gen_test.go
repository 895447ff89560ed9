package gen

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/emit"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/contract"
)

// Write renders the variant asked for in each dialect, under the entry
// point asked for, with metadata when asked; an unknown variant or a bad
// entry point is the caller's mistake (a VariantError).
func TestWrite(t *testing.T) {
	axis, err := contract.ParseAxis("y")
	if err != nil {
		t.Fatal(err)
	}
	p, err := contract.Derivative(3, axis, kernel.F32)
	if err != nil {
		t.Fatal(err)
	}
	in, err := p.Timed(1)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, variant, entry string
		dialect              emit.Dialect
		meta                 bool
		wantText             string // "" when an error is wanted
		wantVariantErr       bool
	}{
		{"c", "slab/e1", "", emit.C, false, "slab/e1", false},
		{"cuda with metadata", "slab/e2", "", emit.CUDA, true, "__global__", false},
		{"opencl named", "slab/e1", "my_kernel", emit.OpenCL, false, "my_kernel", false},
		{"unknown variant", "nope", "", emit.C, false, "", true},
		{"bad entry point", "slab/e1", "1bad", emit.C, false, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src, err := Write(Request{Problem: p, Instance: in, Variant: tc.variant, Dialect: tc.dialect, Name: tc.entry, Meta: tc.meta})
			if tc.wantText == "" {
				var ve VariantError
				if err == nil || errors.As(err, &ve) != tc.wantVariantErr {
					t.Fatalf("err %v; want a VariantError: %v", err, tc.wantVariantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(src.Text, tc.wantText) {
				t.Errorf("source lacks %q:\n%.400s", tc.wantText, src.Text)
			}
			if tc.meta != (len(src.Meta) > 0) || (tc.meta && !bytes.HasSuffix(src.Meta, []byte("}\n"))) {
				t.Errorf("metadata %q; asked: %v", src.Meta, tc.meta)
			}
		})
	}
}
