package cli

import (
	"bytes"
	"strings"
	"testing"
)

// TestServeCommand: bespoke serve answers requests on stdin, one line each
// on stdout, and exits 0 at the end of its input.
func TestServeCommand(t *testing.T) {
	var out, errs bytes.Buffer
	c := serveCmd()
	c.SetIn(strings.NewReader("{\"v\":1,\"id\":7,\"op\":\"hello\"}\nnot json\n{\"v\":1,\"id\":8,\"op\":\"hello\"}\n"))
	c.SetOut(&out)
	c.SetErr(&errs)
	c.SetArgs(nil)
	if err := c.Execute(); err != nil {
		t.Fatalf("serve: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], `"id":7,"ok":true`) || !strings.Contains(lines[1], `"bad_json"`) || !strings.Contains(lines[2], `"id":8,"ok":true`) {
		t.Fatalf("answers %q", out.String())
	}
	if !strings.Contains(errs.String(), "bad_json") {
		t.Errorf("no diagnostic on stderr: %q", errs.String())
	}
}
