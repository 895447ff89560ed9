package serve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/serve"
	"github.com/bespoke-hpc/bespoke/tune"
)

// reply is one answer line as a client reads it.
type reply struct {
	V      int             `json:"v"`
	ID     json.RawMessage `json:"id"`
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result"`
	Error  *serve.Error    `json:"error"`
}

// exchange runs serve.Run over the lines and returns its answers, one a
// line: the same count as the requests (blank lines aside).
func exchange(t *testing.T, opts serve.Options, lines ...string) []reply {
	t.Helper()
	var out, log bytes.Buffer
	opts.Log = &log
	in := strings.Join(lines, "\n") + "\n"
	if err := serve.Run(context.Background(), strings.NewReader(in), &out, opts); err != nil {
		t.Fatalf("Run: %v", err)
	}
	var rs []reply
	for _, l := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		if l == "" {
			continue
		}
		var r reply
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("answer %q is not JSON: %v", l, err)
		}
		if r.V != serve.Protocol {
			t.Errorf("answer %q: v = %d", l, r.V)
		}
		rs = append(rs, r)
	}
	return rs
}

// line marshals a request.
func line(t *testing.T, req map[string]any) string {
	t.Helper()
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// denseOp is a random m×k operator, about half zeros.
func denseOp(rng *rand.Rand, m, k int) map[string]any {
	a := make([]float64, m*k)
	for i := range a {
		if rng.IntN(2) == 0 {
			a[i] = rng.Float64()*2 - 1
		}
	}
	a[0] = 0.75 // never all zero
	return map[string]any{"m": m, "k": k, "dense": a}
}

// cooOp is a random sparse m×k operator in COO.
func cooOp(rng *rand.Rand, m, k int) map[string]any {
	var rows, cols []int
	var vals []float64
	for i := 0; i < m; i++ {
		for j := 0; j < k; j++ {
			if rng.IntN(4) == 0 || i == j {
				rows, cols, vals = append(rows, i), append(cols, j), append(vals, rng.Float64()*2-1)
			}
		}
	}
	return map[string]any{"m": m, "k": k, "coo": map[string]any{"rows": rows, "cols": cols, "vals": vals}}
}

// devices are the device facts of each test backend.
var devices = map[string]map[string]any{
	"cuda90": {"name": "NVIDIA H200", "vendor": "NVIDIA", "driver": "580.159.04", "cuda_arch": 90, "compute_units": 132,
		"local_mem_bytes": 49152, "max_dynamic_shared_bytes": 232448, "bandwidth_gbs": 4250},
	"cuda80": {"name": "NVIDIA A100", "vendor": "NVIDIA", "driver": "580.159.04", "cuda_arch": 80, "compute_units": 108,
		"local_mem_bytes": 49152, "max_dynamic_shared_bytes": 166912},
	"opencl": {"name": "cpu-pocl", "vendor": "pocl", "driver": "OpenCL 3.0 PoCL", "compute_units": 2, "local_mem_bytes": 65536, "type": "cpu"},
	"c":      {"name": "host", "compute_units": 2},
}

// request is a problem's fields for backend (a key of devices).
func request(op map[string]any, backend, dtype string, beta float64, n int) map[string]any {
	be := strings.TrimRight(backend, "0123456789")
	return map[string]any{"v": 1, "id": 1, "op": "candidates", "operator": op, "dtype": dtype, "alpha": 1.5, "beta": beta,
		"n": n, "ldb": n + 2, "ldc": n + 4, "align_b": 32, "align_c": 32, "backend": be, "device": devices[backend]}
}

func TestHello(t *testing.T) {
	rs := exchange(t, serve.Options{}, `{"v":1,"id":"h","op":"hello"}`)
	if len(rs) != 1 || !rs[0].OK || string(rs[0].ID) != `"h"` {
		t.Fatalf("answers %+v", rs)
	}
	var h serve.HelloAnswer
	if err := json.Unmarshal(rs[0].Result, &h); err != nil {
		t.Fatal(err)
	}
	if h.Protocol != 1 || h.Bespoke == "" || len(h.Ops) != 4 || len(h.DTypes) != 2 || len(h.Backends) != 3 {
		t.Errorf("hello %+v", h)
	}
}

// TestCandidates: for a dense and a COO operator on each backend, every
// candidate returned has its source, an entry, every parameter a role
// (data with its values), positive launch numbers, the order of the
// predictions, and the limit holds.
func TestCandidates(t *testing.T) {
	rng := testenv.Rand(t)
	ops := map[string]map[string]any{"dense": denseOp(rng, 12, 10), "coo": cooOp(rng, 20, 16)}
	for _, opName := range []string{"dense", "coo"} {
		for _, backend := range []string{"cuda90", "cuda80", "opencl", "c"} {
			for _, dtype := range []string{"f64", "f32"} {
				t.Run(opName+"/"+backend+"/"+dtype, func(t *testing.T) {
					req := request(ops[opName], backend, dtype, 1, 300)
					req["limit"] = 5
					rs := exchange(t, serve.Options{}, line(t, req))
					if !rs[0].OK {
						t.Fatalf("error %+v", rs[0].Error)
					}
					var a serve.CandidatesAnswer
					if err := json.Unmarshal(rs[0].Result, &a); err != nil {
						t.Fatal(err)
					}
					if a.Key == "" || a.Returned != len(a.Candidates) || a.Returned == 0 || a.Returned > 5 || a.Offered < a.Returned {
						t.Fatalf("key %q, offered %d, returned %d of %d", a.Key, a.Offered, a.Returned, len(a.Candidates))
					}
					m, k := ops[opName]["m"].(int), ops[opName]["k"].(int)
					// Modelled: each strategy's best by predicted
					// time, then the others by predicted time.
					last, repeats := 0.0, false
					seen := map[string]bool{}
					for i, c := range a.Candidates {
						checkCandidate(t, c, strings.TrimRight(backend, "0123456789"), dtype, m*k, 300)
						if c.Rank != i {
							t.Errorf("%s: rank %d at %d", c.Name, c.Rank, i)
						}
						if !c.Modelled {
							continue
						}
						strategy, _, _ := strings.Cut(c.Name, "/")
						switch {
						case seen[strategy] && !repeats:
							repeats, last = true, 0
						case !seen[strategy] && repeats:
							t.Errorf("%s: the first of its strategy after a second of another", c.Name)
						}
						seen[strategy] = true
						if c.PredictedS < last {
							t.Errorf("%s: rank %d, predicted %g after %g", c.Name, c.Rank, c.PredictedS, last)
						}
						last = c.PredictedS
					}
				})
			}
		}
	}
}

// checkCandidate checks what a client relies on in a candidate.
func checkCandidate(t *testing.T, c serve.Candidate, language, dtype string, mk, n int) {
	t.Helper()
	if c.Source == "" || c.Entry == "" || !strings.Contains(c.Source, c.Entry) || c.Family != "sparse" || c.Language != language {
		t.Errorf("%s: entry %q, family %q, language %q, %d bytes of source", c.Name, c.Entry, c.Family, c.Language, len(c.Source))
	}
	if !(c.PredictedS > 0) {
		t.Errorf("%s: predicted %g s", c.Name, c.PredictedS)
	}
	roles := map[string]int{}
	for _, p := range c.Params {
		roles[p.Role]++
		switch p.Role {
		case "b", "c":
			if p.Kind != "buffer" || p.Type != dtype || p.Const == nil || *p.Const != (p.Role == "b") {
				t.Errorf("%s: param %+v", c.Name, p)
			}
		case "data":
			if p.Kind != "buffer" || p.Type != dtype || len(p.Values) != mk {
				t.Errorf("%s: data param %s of type %s with %d values (want %d)", c.Name, p.Name, p.Type, len(p.Values), mk)
			}
		case "n", "ldb", "ldc":
			if p.Kind != "scalar" || p.Value == nil || *p.Value < int64(n) {
				t.Errorf("%s: scalar param %+v", c.Name, p)
			}
		default:
			t.Errorf("%s: param %s has role %q", c.Name, p.Name, p.Role)
		}
	}
	if roles["b"] != 1 || roles["c"] != 1 {
		t.Errorf("%s: roles %v", c.Name, roles)
	}
	l := c.Launch
	for i := range 3 {
		if l.Grid[i] < 1 || l.Block[i] < 1 {
			t.Errorf("%s: grid %v block %v", c.Name, l.Grid, l.Block)
		}
	}
	if l.DynamicSharedBytes > 0 && l.Attributes["max_dynamic_shared_size_bytes"] < l.DynamicSharedBytes {
		t.Errorf("%s: %d bytes of dynamic shared memory with attributes %v", c.Name, l.DynamicSharedBytes, l.Attributes)
	}
	if l.DynamicSharedBytes < 0 || l.StaticSharedBytes < 0 || l.Attributes == nil {
		t.Errorf("%s: launch %+v", c.Name, l)
	}
}

// candidates asks for every candidate and returns them, or the error.
func candidates(t *testing.T, req map[string]any) (*serve.CandidatesAnswer, *serve.Error) {
	t.Helper()
	req["limit"] = 0
	req["source"] = false
	rs := exchange(t, serve.Options{}, line(t, req))
	if !rs[0].OK {
		return nil, rs[0].Error
	}
	var a serve.CandidatesAnswer
	if err := json.Unmarshal(rs[0].Result, &a); err != nil {
		t.Fatal(err)
	}
	return &a, nil
}

// TestCandidateFilters: candidates the device described cannot run are
// left out: tensor cores below their architecture, dynamic shared memory
// over the opt-in limit, static shared memory over the device's, vector
// widths the alignment does not allow, blocks over the work-group size.
func TestCandidateFilters(t *testing.T) {
	rng := testenv.Rand(t)
	op := denseOp(rng, 40, 30) // dense enough for the tensor-core families
	has := func(a *serve.CandidatesAnswer, f func(serve.Candidate) bool) bool {
		for _, c := range a.Candidates {
			if f(c) {
				return true
			}
		}
		return false
	}
	prefix := func(p string) func(serve.Candidate) bool {
		return func(c serve.Candidate) bool { return strings.HasPrefix(c.Name, p) }
	}
	dynamic := func(c serve.Candidate) bool { return c.Launch.DynamicSharedBytes > 0 }
	wide := func(c serve.Candidate) bool { return strings.HasSuffix(c.Name, "-w2") }
	with := func(backend, dtype string, edit func(req, dev map[string]any)) *serve.CandidatesAnswer {
		req := request(op, backend, dtype, 0, 256)
		dev := map[string]any{}
		for k, v := range devices[backend] {
			dev[k] = v
		}
		req["device"] = dev
		req["ldb"], req["ldc"] = 256, 256
		edit(req, dev)
		a, e := candidates(t, req)
		if e != nil {
			t.Fatalf("%s %s: %+v", backend, dtype, e)
		}
		return a
	}
	none := func(req, dev map[string]any) {}
	if a := with("cuda90", "f32", none); !has(a, prefix("wgmma/")) || !has(a, dynamic) || !has(a, wide) {
		t.Errorf("sm_90 f32: no wgmma, dynamic shared or -w2 candidate among %d", len(a.Candidates))
	}
	if a := with("cuda90", "f32", func(_, dev map[string]any) { dev["cuda_arch"] = 100 }); has(a, prefix("wgmma/")) {
		t.Errorf("sm_100: wgmma (sm_90a only) offered")
	}
	// The unmodelled tensor-core kernels alternate with the others from
	// the top.
	first := with("cuda80", "f64", none).Candidates[:4]
	if !first[0].Modelled || first[1].Modelled || !strings.HasPrefix(first[1].Name, "dmma/") || !first[2].Modelled {
		t.Errorf("sm_80 f64: the first candidates %s %s %s do not alternate", first[0].Name, first[1].Name, first[2].Name)
	}
	if a := with("cuda80", "f64", none); !has(a, prefix("dmma/")) || has(a, prefix("wgmma/")) {
		t.Errorf("sm_80 f64: dmma %v, wgmma %v", has(a, prefix("dmma/")), has(a, prefix("wgmma/")))
	}
	if a := with("cuda80", "f64", func(_, dev map[string]any) { dev["cuda_arch"] = 75 }); has(a, prefix("dmma/")) || has(a, prefix("tmma/")) {
		t.Errorf("sm_75: tensor-core candidates offered")
	}
	a := with("cuda80", "f64", func(_, dev map[string]any) { dev["max_dynamic_shared_bytes"] = 0 })
	if has(a, dynamic) {
		t.Errorf("no opt-in: a candidate with dynamic shared memory offered")
	}
	for _, c := range with("cuda80", "f64", func(_, dev map[string]any) { dev["local_mem_bytes"] = 8192 }).Candidates {
		if c.Launch.StaticSharedBytes > 8192 {
			t.Errorf("%s: %d bytes of static shared memory on a device of 8192", c.Name, c.Launch.StaticSharedBytes)
		}
	}
	for _, edit := range []func(req, dev map[string]any){
		func(req, _ map[string]any) { req["align_b"] = 8 },
		func(req, _ map[string]any) { req["align_c"] = 8 },
		func(req, _ map[string]any) { req["ldb"] = 257 },
	} {
		if a := with("opencl", "f64", edit); has(a, wide) {
			t.Errorf("a -w2 candidate offered where B or C cannot be read in pairs")
		}
	}
	for _, c := range with("opencl", "f64", func(_, dev map[string]any) { dev["max_work_group_size"] = 128 }).Candidates {
		if th := c.Launch.Block[0] * c.Launch.Block[1] * c.Launch.Block[2]; th > 128 {
			t.Errorf("%s: %d threads a block, the device takes 128", c.Name, th)
		}
	}
}

// TestErrors: each bad request gets its code (and field), and the loop
// answers the next line.
func TestErrors(t *testing.T) {
	rng := testenv.Rand(t)
	good := func(edit func(map[string]any)) string {
		req := request(cooOp(rng, 6, 5), "c", "f64", 0, 64)
		edit(req)
		return line(t, req)
	}
	big := map[string]any{"m": 400, "k": 400, "dense": make([]float64, 400*400)}
	for i := range big["dense"].([]float64) {
		big["dense"].([]float64)[i] = 1
	}
	cases := []struct {
		name, line, code, field string
	}{
		{"not json", `{"v":1,`, serve.CodeBadJSON, ""},
		{"not an object", `[1,2]`, serve.CodeBadJSON, ""},
		{"no version", `{"id":1,"op":"hello"}`, serve.CodeBadRequest, "v"},
		{"version 2", `{"v":2,"id":1,"op":"hello"}`, serve.CodeUnsupportedVersion, "v"},
		{"unknown op", `{"v":1,"id":1,"op":"compile"}`, serve.CodeUnknownOp, "op"},
		{"no op", `{"v":1,"id":1}`, serve.CodeBadRequest, "op"},
		{"no operator", good(func(r map[string]any) { delete(r, "operator") }), serve.CodeBadRequest, "operator"},
		{"no dtype", good(func(r map[string]any) { delete(r, "dtype") }), serve.CodeBadRequest, "dtype"},
		{"bad dtype", good(func(r map[string]any) { r["dtype"] = "f16" }), serve.CodeBadRequest, "dtype"},
		{"no alpha", good(func(r map[string]any) { delete(r, "alpha") }), serve.CodeBadRequest, "alpha"},
		{"no beta", good(func(r map[string]any) { delete(r, "beta") }), serve.CodeBadRequest, "beta"},
		{"no n", good(func(r map[string]any) { delete(r, "n") }), serve.CodeBadRequest, "n"},
		{"ldb below n", good(func(r map[string]any) { r["ldb"] = 3 }), serve.CodeBadRequest, "ldb"},
		{"no backend", good(func(r map[string]any) { delete(r, "backend") }), serve.CodeBadRequest, "backend"},
		{"no device", good(func(r map[string]any) { r["backend"] = "cuda"; delete(r, "device") }), serve.CodeBadRequest, "device"},
		{"no arch", good(func(r map[string]any) {
			r["backend"] = "cuda"
			r["device"] = map[string]any{"name": "x", "compute_units": 1}
		}), serve.CodeBadRequest, "device.cuda_arch"},
		{"n a string", good(func(r map[string]any) { r["n"] = "ten" }), serve.CodeBadRequest, "n"},
		{"negative limit", good(func(r map[string]any) { r["limit"] = -1 }), serve.CodeBadRequest, "limit"},
		{"dense of the wrong length", good(func(r map[string]any) { r["operator"] = map[string]any{"m": 2, "k": 2, "dense": []float64{1, 2, 3}} }), serve.CodeBadRequest, "operator.dense"},
		{"all zero", good(func(r map[string]any) { r["operator"] = map[string]any{"m": 2, "k": 2, "dense": []float64{0, 0, 0, 0}} }), serve.CodeBadRequest, "operator"},
		{"coo out of range", good(func(r map[string]any) {
			r["operator"] = map[string]any{"m": 2, "k": 2, "coo": map[string]any{"rows": []int{0, 2}, "cols": []int{0, 0}, "vals": []float64{1, 1}}}
		}), serve.CodeBadRequest, "operator.coo.rows[1]"},
		{"coo twice", good(func(r map[string]any) {
			r["operator"] = map[string]any{"m": 2, "k": 2, "coo": map[string]any{"rows": []int{1, 1}, "cols": []int{0, 0}, "vals": []float64{1, 1}}}
		}), serve.CodeBadRequest, "operator.coo.rows[1]"},
		{"nnz over the limit", good(func(r map[string]any) { r["operator"] = big }), serve.CodeLimit, "operator"},
		{"rows over the limit", good(func(r map[string]any) {
			r["operator"] = map[string]any{"m": 70000, "k": 1, "coo": map[string]any{"rows": []int{0}, "cols": []int{0}, "vals": []float64{1}}}
		}), serve.CodeLimit, "operator"},
		{"record without winner", good(func(r map[string]any) { r["op"] = "record"; r["times"] = map[string]float64{"x": 1} }), serve.CodeBadRequest, "winner"},
	}
	lines := []string{}
	for _, c := range cases {
		lines = append(lines, c.line, `{"v":1,"id":"after","op":"hello"}`)
	}
	rs := exchange(t, serve.Options{}, lines...)
	if len(rs) != 2*len(cases) {
		t.Fatalf("%d answers to %d requests", len(rs), 2*len(cases))
	}
	for i, c := range cases {
		r, next := rs[2*i], rs[2*i+1]
		if r.OK || r.Error == nil || r.Error.Code != c.code || r.Error.Field != c.field || r.Error.Message == "" || strings.Contains(r.Error.Message, "\n") {
			t.Errorf("%s: answer %+v error %+v, want code %s field %q", c.name, r, r.Error, c.code, c.field)
		}
		if !next.OK || string(next.ID) != `"after"` {
			t.Errorf("%s: the next request got %+v", c.name, next)
		}
		wantID := "1"
		if c.code == serve.CodeBadJSON {
			wantID = "null"
		}
		if string(r.ID) != wantID {
			t.Errorf("%s: id %s, want %s", c.name, r.ID, wantID)
		}
	}
}

// TestLongLine: a line over the limit is answered with a limit error and
// skipped whole; the next line is answered.
func TestLongLine(t *testing.T) {
	long := `{"v":1,"id":1,"op":"hello","pad":"` + strings.Repeat("x", 5000) + `"}`
	rs := exchange(t, serve.Options{MaxLine: 1000}, long, `{"v":1,"id":2,"op":"hello"}`)
	if len(rs) != 2 || rs[0].OK || rs[0].Error.Code != serve.CodeLimit || !rs[1].OK || string(rs[1].ID) != "2" {
		t.Fatalf("answers %+v", rs)
	}
	// A last line without its newline is a request too.
	var out bytes.Buffer
	if err := serve.Run(context.Background(), strings.NewReader(`{"v":1,"id":3,"op":"hello"}`), &out, serve.Options{}); err != nil || !strings.Contains(out.String(), `"id":3`) {
		t.Fatalf("Run: %v, %q", err, out.String())
	}
}

// TestRunStops: a cancelled context ends Run cleanly.
func TestRunStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r, w := io.Pipe()
	defer w.Close()
	if err := serve.Run(ctx, r, &bytes.Buffer{}, serve.Options{}); err != nil {
		t.Fatalf("Run after cancel: %v", err)
	}
}

// TestStore: record then lookup finds the choice (with the candidate of
// a bespoke winner); bogus records are refused; a stale bespoke winner
// and a forged record are not found, and removed.
func TestStore(t *testing.T) {
	t.Setenv("BESPOKE_CACHE_DIR", t.TempDir())
	t.Setenv("BESPOKE_NO_CACHE", "")
	rng := testenv.Rand(t)
	op := cooOp(rng, 8, 6)
	base := func(opName string) map[string]any {
		req := request(op, "opencl", "f64", 1, 1000)
		req["op"], req["client"] = opName, "pyfr"
		return req
	}
	lookup := func() serve.LookupAnswer {
		rs := exchange(t, serve.Options{}, line(t, base("lookup")))
		if !rs[0].OK {
			t.Fatalf("lookup: %+v", rs[0].Error)
		}
		var a serve.LookupAnswer
		if err := json.Unmarshal(rs[0].Result, &a); err != nil {
			t.Fatal(err)
		}
		return a
	}
	record := func(winner string, times map[string]float64) reply {
		req := base("record")
		req["winner"], req["times"] = winner, times
		return exchange(t, serve.Options{}, line(t, req))[0]
	}
	if a := lookup(); a.Found || a.Key == "" {
		t.Fatalf("empty store: %+v", a)
	}
	cs, e := candidates(t, request(op, "opencl", "f64", 1, 1000))
	if e != nil {
		t.Fatal(e)
	}
	best := "bespoke/" + cs.Candidates[0].Name
	if r := record("gimmik", map[string]float64{"gimmik": 1e-5, best: 2e-5}); !r.OK {
		t.Fatalf("record: %+v", r.Error)
	}
	if a := lookup(); !a.Found || a.Winner != "gimmik" || a.Times["gimmik"] != 1e-5 || a.Candidate != nil || a.Date == "" {
		t.Fatalf("after recording gimmik: %+v", a)
	}
	if r := record(best, map[string]float64{"gimmik": 2e-5, best: 1e-5}); !r.OK {
		t.Fatalf("record: %+v", r.Error)
	}
	a := lookup()
	if !a.Found || a.Winner != best || a.Candidate == nil || a.Candidate.Name != cs.Candidates[0].Name || a.Candidate.Source == "" {
		t.Fatalf("after recording %s: %+v", best, a)
	}
	// The client's namespace is part of the key.
	other := base("lookup")
	other["client"] = "other"
	if rs := exchange(t, serve.Options{}, line(t, other)); !strings.Contains(string(rs[0].Result), `"found":false`) {
		t.Errorf("another client found %s", rs[0].Result)
	}
	for _, c := range []struct {
		name   string
		winner string
		times  map[string]float64
	}{
		{"no such variant", "bespoke/cstream/x999", map[string]float64{"bespoke/cstream/x999": 1e-5}},
		{"no variant", "bespoke/", map[string]float64{"bespoke/": 1e-5}},
		{"control character", "gim\nmik", map[string]float64{"gim\nmik": 1e-5}},
		{"no time for the winner", "gimmik", map[string]float64{"cublas": 1e-5}},
		{"negative time", "gimmik", map[string]float64{"gimmik": -1}},
		{"zero time", "gimmik", map[string]float64{"gimmik": 0}},
		{"empty name", "gimmik", map[string]float64{"gimmik": 1, "": 1}},
	} {
		if r := record(c.winner, c.times); r.OK || r.Error.Code != serve.CodeBadRequest {
			t.Errorf("%s: answer %+v", c.name, r.Error)
		}
	}
	inf := base("record")
	inf["winner"], inf["times"] = "gimmik", map[string]float64{"gimmik": 12345}
	if r := exchange(t, serve.Options{}, strings.Replace(line(t, inf), "12345", "1e999", 1))[0]; r.OK || r.Error.Code != serve.CodeBadRequest {
		t.Errorf("infinite time: %+v", r)
	}
	// A stored bespoke winner that is no longer a candidate, and a
	// record that is not a client's, are not found, and removed.
	st := tune.Open()
	for _, rec := range []tune.Record{
		{Winner: "bespoke/cstream/x999", Kind: "client", Result: json.RawMessage(`{"client":"pyfr","times":{"bespoke/cstream/x999":1e-5}}`)},
		{Winner: best, Kind: "bespoke", Result: json.RawMessage(`{"client":"pyfr","times":{"` + best + `":1e-5}}`)},
		{Winner: "gimmik", Kind: "client", Result: json.RawMessage(`{"client":"pyfr","times":{"gimmik":-1}}`)},
	} {
		rec.Key = a.Key
		if err := st.Put(&rec); err != nil {
			t.Fatal(err)
		}
		if got := lookup(); got.Found {
			t.Errorf("forged record %s (%s) found: %+v", rec.Winner, rec.Kind, got)
		}
		if _, ok := st.Get(a.Key); ok {
			t.Errorf("forged record %s (%s) left in the store", rec.Winner, rec.Kind)
		}
	}
}

// TestGoAPI: the functions answer as the protocol does.
func TestGoAPI(t *testing.T) {
	one, zero := 1.0, 0.0
	limit := 2
	a, err := serve.Candidates(serve.CandidatesRequest{Problem: serve.Problem{
		Operator: &serve.Operator{M: 2, K: 2, COO: &serve.COO{Rows: []int{0, 1}, Cols: []int{1, 0}, Vals: []float64{2, 3}}},
		DType:    "f64", Alpha: &one, Beta: &zero, N: 100, LDB: 100, LDC: 100, Backend: "c",
	}, Limit: &limit})
	if err != nil || a.Returned != 2 {
		t.Fatalf("Candidates: %v, %+v", err, a)
	}
	_, err = serve.Candidates(serve.CandidatesRequest{})
	var e *serve.Error
	if !errors.As(err, &e) || e.Code != serve.CodeBadRequest || e.Field != "operator" {
		t.Fatalf("empty request: %v", err)
	}
	if h := serve.Hello(); h.Protocol != serve.Protocol {
		t.Errorf("Hello %+v", h)
	}
}

// TestOddRequests: requests at the edges of what JSON allows get an
// answer each, never an internal error (which would be a panic or a bug).
func TestOddRequests(t *testing.T) {
	dev := `"backend":"cuda","device":{"name":"x","cuda_arch":90,"compute_units":1}`
	lines := []string{
		`{"v":1,"id":{"nested":[1,2,{"a":null}]},"op":"hello"}`,
		`{"v":1,"id":1,"op":"candidates","operator":{"m":1,"k":1,"coo":null,"dense":null},"dtype":"f64","alpha":1,"beta":0,"n":1,"ldb":1,"ldc":1,` + dev + `}`,
		`{"v":1,"id":1,"op":"candidates","operator":{"m":2,"k":2,"coo":{"rows":[0],"cols":[],"vals":[1]}},"dtype":"f64","alpha":1,"beta":0,"n":1,"ldb":1,"ldc":1,` + dev + `}`,
		`{"v":1,"id":1,"op":"candidates","operator":{"m":1,"k":1,"dense":[1]},"dtype":"f64","alpha":1,"beta":0,"n":1e18,"ldb":1,"ldc":1,` + dev + `}`,
		`{"v":1,"id":1,"op":"candidates","operator":{"m":1,"k":1,"dense":[1e300]},"dtype":"f32","alpha":1,"beta":0,"n":1,"ldb":1,"ldc":1,` + dev + `}`,
		`{"v":1,"id":1,"op":"candidates","operator":{"m":1,"k":1,"dense":[1]},"dtype":"f64","alpha":1e308,"beta":0,"n":3000000000,"ldb":3000000000,"ldc":3000000000,"limit":1,"source":false,` + dev + `}`,
		`{"v":1,"id":1,"op":"candidates","operator":{"m":1,"k":1,"dense":[1]},"dtype":"f64","alpha":1,"beta":0,"n":1,"ldb":1,"ldc":1,"align_b":-8,` + dev + `}`,
		`{"v":1,"id":1,"op":"record","operator":{"m":1,"k":1,"dense":[1]},"dtype":"f64","alpha":1,"beta":0,"n":1,"ldb":1,"ldc":1,"winner":"x","times":null,` + dev + `}`,
		`{"v":"1","id":1,"op":"hello"}`,
		`{"v":1,"id":1,"op":7}`,
		`null`,
		`"hello"`,
	}
	t.Setenv("BESPOKE_CACHE_DIR", t.TempDir())
	rs := exchange(t, serve.Options{}, lines...)
	if len(rs) != len(lines) {
		t.Fatalf("%d answers to %d lines", len(rs), len(lines))
	}
	for i, r := range rs {
		if r.Error != nil && (r.Error.Code == serve.CodeInternal || r.Error.Message == "") {
			t.Errorf("line %d: %+v", i, r.Error)
		}
		t.Logf("line %d: ok=%v %+v", i, r.OK, r.Error)
	}
}
