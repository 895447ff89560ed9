package cli

import (
	"strings"
	"testing"
)

// The pum family through the registry's commands: gen writes a
// candidate's integration kernel, named, and refuses what does not apply
// in one line; verify refuses the family, whose candidates are checked
// as whole systems, with the reason.
func TestPUMFamilyCommands(t *testing.T) {
	tests := []struct {
		args []string
		code int
		want string // in the output on success, in the one-line error otherwise
	}{
		{[]string{"gen", "--family", "pum", "--backend", "c"}, ExitOK, "atomic.thread.t1"},
		{[]string{"gen", "--family", "pum", "--backend", "cuda"}, ExitOK, "atomic.thread.t64"},
		{[]string{"gen", "--family", "pum", "--backend", "cuda", "--variant", "fused.group.t128.s4.k1"}, ExitOK, "fused.group.t128.s4.k1"},
		{[]string{"gen", "--family", "pum", "--backend", "opencl", "--dim", "3", "--degree", "2", "--variant", "colour.group.t128.s3.k1"}, ExitOK, "colour.group.t128.s3.k1"},
		{[]string{"gen", "--family", "pum", "--backend", "c", "--list", "--strategy", "fused"}, ExitOK, "fused.group.t16.s2.k1"},
		{[]string{"gen", "--family", "pum", "--backend", "c", "--variant", "fused.thread.t64"}, ExitUsage, "group integration kernel"},
		{[]string{"gen", "--family", "pum", "--backend", "c", "--variant", "bstream"}, ExitUsage, "pum candidate"},
		{[]string{"gen", "--family", "pum", "--backend", "c", "--n", "1024"}, ExitUsage, "--n"},
		{[]string{"gen", "--family", "pum", "--backend", "c", "--dim", "4"}, ExitUsage, "--dim 4"},
		{[]string{"gen", "--family", "pum", "--backend", "c", "--degree", "4", "--dim", "3"}, ExitUsage, "--degree 4"},
		{[]string{"gen", "--family", "pum", "--backend", "c", "--layout", "diagonal"}, ExitUsage, "--layout"},
		{[]string{"gen", "--family", "pum", "--backend", "c", "--strategy", "greedy"}, ExitUsage, "--strategy"},
		{[]string{"gen", "--family", "pum", "--backend", "c", "--coeff", "wild"}, ExitUsage, "wild"},
		{[]string{"gen", "--family", "pum", "--backend", "c", "--order", "2"}, ExitUsage, "not a flag of the pum family"},
		{[]string{"verify", "--family", "pum", "--backend", "c"}, ExitUsage, "whole pipeline"},
		{[]string{"tune", "--family", "pum", "--backend", "c", "--no-store", "-q", "--n", "2000000"}, ExitFailure, "beyond 10"},
	}
	for _, tc := range tests {
		code, stdout, stderr := run(t, tc.args...)
		name := strings.Join(tc.args, " ")
		switch {
		case code != tc.code:
			t.Errorf("%s: exit %d, want %d: %s", name, code, tc.code, stderr)
		case code == ExitOK && !strings.Contains(stdout, tc.want):
			t.Errorf("%s: %.300q; want %q in it", name, stdout, tc.want)
		case code != ExitOK && (strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want)):
			t.Errorf("%s: %q; want one line with %q", name, stderr, tc.want)
		}
	}
}
