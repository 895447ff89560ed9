package cuda

import (
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bespoke-hpc/bespoke/internal/dl"
)

// LibraryDirs lists the folders searched for CUDA toolkit libraries (NVRTC,
// cuBLAS, cuSPARSE), most specific first: $CUDA_HOME/lib64, $CUDA_PATH/lib64,
// /usr/local/cuda/lib64, /usr/local/cuda-*/lib64 (newest first), the
// targets/x86_64-linux/lib folders beside them, /usr/lib/x86_64-linux-gnu, and
// for each wheelSub (e.g. "nvidia/cuda_nvrtc/lib") that folder under the
// site-packages folders of common Python prefixes. Only existing folders are
// returned.
func LibraryDirs(wheelSubs ...string) []string {
	var dirs []string
	add := func(ds ...string) {
		for _, d := range ds {
			if d == "" {
				continue
			}
			if st, err := os.Stat(d); err == nil && st.IsDir() {
				dirs = append(dirs, d)
			}
		}
	}
	newestFirst := func(pattern string) []string {
		m, _ := filepath.Glob(pattern)
		sort.Sort(sort.Reverse(sort.StringSlice(m)))
		return m
	}
	for _, env := range []string{"CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"} {
		if p := os.Getenv(env); p != "" {
			add(filepath.Join(p, "lib64"), filepath.Join(p, "lib"),
				filepath.Join(p, "targets", "x86_64-linux", "lib"))
		}
	}
	add("/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib")
	add(newestFirst("/usr/local/cuda-*/lib64")...)
	add(newestFirst("/usr/local/cuda-*/targets/x86_64-linux/lib")...)
	add("/usr/lib/x86_64-linux-gnu", "/usr/lib64")

	var sites []string
	for _, env := range []string{"VIRTUAL_ENV", "CONDA_PREFIX"} {
		if p := os.Getenv(env); p != "" {
			sites = append(sites, newestFirst(filepath.Join(p, "lib", "python3*", "site-packages"))...)
		}
	}
	home, _ := os.UserHomeDir()
	for _, prefix := range []string{home + "/.local", "/usr/local", "/usr", "/opt/conda"} {
		if prefix == "/.local" {
			continue
		}
		sites = append(sites, newestFirst(filepath.Join(prefix, "lib", "python3*", "site-packages"))...)
		sites = append(sites, newestFirst(filepath.Join(prefix, "lib", "python3*", "dist-packages"))...)
	}
	sites = append(sites, "/usr/lib/python3/dist-packages")
	for _, s := range sites {
		for _, w := range wheelSubs {
			add(filepath.Join(s, w))
		}
	}
	return dedup(dirs)
}

func dedup(ss []string) []string {
	seen := map[string]bool{}
	out := ss[:0]
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// libraryCandidates returns, for each soname in order of preference, the bare
// name (found through the dynamic loader's own path) followed by the
// existing files of that name in dirs.
func libraryCandidates(dirs []string, names ...string) []string {
	var c []string
	for _, n := range names {
		c = append(c, n)
		for _, d := range dirs {
			p := filepath.Join(d, n)
			if _, err := os.Stat(p); err == nil {
				c = append(c, p)
			}
		}
	}
	return dedup(c)
}

// OpenLibrary loads a CUDA toolkit library: the path in envVar when set, then
// each of names through the loader path and in LibraryDirs(wheelSubs...).
// what names it in errors ("nvrtc", "cublas" …).
func OpenLibrary(what, envVar string, wheelSubs []string, names ...string) (uintptr, error) {
	cands := libraryCandidates(LibraryDirs(wheelSubs...), names...)
	hint := "install the CUDA toolkit or the " + what + " wheel, or set CUDA_HOME"
	lib, err := dl.OpenWithHint(what, envVar, hint, cands...)
	if err != nil {
		// Keep the message readable: name the sonames, not every path.
		if le, ok := err.(*dl.LoadError); ok {
			le.Names = names
			le.Hint = hint + "; searched " + strings.Join(LibraryDirs(wheelSubs...), ":")
		}
		return 0, err
	}
	return lib, nil
}
