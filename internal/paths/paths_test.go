package paths

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "v.mtx")
	if err := os.WriteFile(in, []byte("input"), 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.mtx")
	if err := os.Symlink(in, link); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(dir, "hard.mtx")
	if err := os.Link(in, hard); err != nil {
		t.Fatal(err)
	}
	dirLink := filepath.Join(dir, "sublink")
	if err := os.Symlink(sub, dirLink); err != nil {
		t.Fatal(err)
	}
	dangling := filepath.Join(dir, "dangling")
	if err := os.Symlink(filepath.Join(sub, "new.json"), dangling); err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	rel, err := filepath.Rel(wd, in)
	if err != nil {
		t.Fatal(err)
	}
	file := func(flag, p string) File { return File{Flag: flag, Path: p} }
	for _, tc := range []struct {
		name    string
		inputs  []File
		outputs []File
		want    string // in the error; "" for none
	}{
		{"distinct", []File{file("input", in)}, []File{file("-o", filepath.Join(dir, "v.c")), file("--meta", filepath.Join(dir, "v.json"))}, ""},
		{"stdout twice", nil, []File{file("--json", "-"), file("--csv", "-")}, ""},
		{"unset", []File{file("input", in)}, []File{file("--json", ""), file("--csv", "")}, ""},
		{"output is the input", []File{file("input", in)}, []File{file("-o", in)}, "-o " + in + " would overwrite the input"},
		{"another spelling", []File{file("input", in)}, []File{file("--json", filepath.Join(sub, "..", "v.mtx"))}, "would overwrite the input"},
		{"relative spelling", []File{file("input", in)}, []File{file("--json", rel)}, "would overwrite the input"},
		{"through a symbolic link", []File{file("input", in)}, []File{file("--meta", link)}, "would overwrite the input"},
		{"a hard link", []File{file("input", in)}, []File{file("--meta", hard)}, "would overwrite the input"},
		{"two outputs", nil, []File{file("--json", filepath.Join(dir, "s.out")), file("--csv", filepath.Join(dir, "s.out"))}, "--json " + filepath.Join(dir, "s.out") + " and --csv"},
		{"two outputs through a folder link", nil, []File{file("--json", filepath.Join(sub, "a")), file("--csv", filepath.Join(dirLink, "a"))}, "name the same file"},
		{"a dangling link", nil, []File{file("--json", filepath.Join(sub, "new.json")), file("--csv", dangling)}, "name the same file"},
		{"a folder", nil, []File{file("--json", sub)}, "is a folder"},
		{"below a file", nil, []File{file("--json", filepath.Join(in, "x.json"))}, "is not a folder"},
		{"a new folder", nil, []File{file("--json", filepath.Join(dir, "new", "deeper", "x.json"))}, ""},
		{"an output folder that is a file", nil, []File{{Flag: "-o", Path: in, Dir: true}}, "not a folder"},
		{"an output folder", nil, []File{{Flag: "-o", Path: sub, Dir: true}}, ""},
		{"/dev/null", nil, []File{file("--json", os.DevNull)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tc.inputs, tc.outputs)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "new")); err == nil {
		t.Error("Check created a folder")
	}
	if ents, _ := os.ReadDir(sub); len(ents) != 0 {
		t.Errorf("Check left files: %v", ents)
	}
}

func TestCheckDevFull(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	err := Check(nil, []File{{Flag: "--json", Path: "/dev/full"}})
	if err == nil || !strings.Contains(err.Error(), "--json /dev/full") {
		t.Errorf("got %v, want an error naming --json /dev/full", err)
	}
}

func TestCheckReadOnlyFolder(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes anywhere")
	}
	dir := t.TempDir()
	ro := filepath.Join(dir, "ro")
	if err := os.Mkdir(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	if err := Check(nil, []File{{Flag: "-o", Path: filepath.Join(ro, "x")}}); err == nil || !strings.Contains(err.Error(), "cannot write") {
		t.Errorf("got %v, want cannot write", err)
	}
}

// A failed write leaves the old file whole, and no temporary file.
func TestWriteAtomic(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "out.json")
	if err := os.WriteFile(target, []byte("old"), 0o640); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	if err := Write(target, func(w io.Writer) error {
		io.WriteString(w, "half")
		return boom
	}); !errors.Is(err, boom) {
		t.Fatalf("got %v, want boom", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "old" {
		t.Errorf("after a failed write the file holds %q", b)
	}
	if err := WriteFile(target, []byte("new")); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(target)
	st, _ := os.Stat(target)
	if string(b) != "new" || st.Mode().Perm() != 0o640 {
		t.Errorf("after a write: %q, mode %v", b, st.Mode().Perm())
	}
	// Through a link, the file it names is replaced and the link kept.
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(link, []byte("linked")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); string(b) != "linked" {
		t.Errorf("through the link the target holds %q", b)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v", err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Errorf("files left: %v", ents)
	}
	if _, err := os.Stat("/dev/full"); err == nil {
		if err := WriteFile("/dev/full", []byte("x")); err == nil {
			t.Error("a write to /dev/full succeeded")
		}
	}
}

// Cleanup removes the temporary file of a write in progress (an interrupt
// exits before the write ends), and leaves finished files alone.
func TestCleanupPending(t *testing.T) {
	dir := t.TempDir()
	done := filepath.Join(dir, "done.txt")
	if err := WriteFile(done, []byte("x")); err != nil {
		t.Fatal(err)
	}
	w, err := Create(filepath.Join(dir, "half.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("half")); err != nil {
		t.Fatal(err)
	}
	Cleanup()
	names, _ := os.ReadDir(dir)
	if len(names) != 1 || names[0].Name() != "done.txt" {
		var got []string
		for _, n := range names {
			got = append(got, n.Name())
		}
		t.Fatalf("after Cleanup the folder holds %q, want only done.txt", got)
	}
	w.Abort() // the file is gone already: no error, no panic
}
