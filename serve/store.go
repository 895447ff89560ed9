package serve

import (
	"encoding/json"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/bespoke-hpc/bespoke/tune"
)

// recordKind marks the tuning store's records that clients made: bespoke's
// bench keeps "bespoke" and "baseline" records (under keys of its own, as a
// client's key holds its namespace), and never takes a "client" one.
const recordKind = "client"

// clientResult is what a client's record holds as its result.
type clientResult struct {
	Client string             `json:"client"`
	Times  map[string]float64 `json:"times"`
}

// Lookup returns the choice stored for the problem. A record that is
// damaged, not a client's, or whose bespoke winner is no longer among the
// current candidates on the device described is removed and not found.
func Lookup(req LookupRequest) (*LookupAnswer, error) {
	r, err := resolve(&req.Problem)
	if err != nil {
		return nil, err
	}
	key := r.key()
	st := tune.Open()
	rec, ok := st.Get(key)
	if !ok {
		return &LookupAnswer{Key: key}, nil
	}
	var res clientResult
	if rec.Kind != recordKind || json.Unmarshal(rec.Result, &res) != nil || checkChoice(rec.Winner, res.Times) != nil {
		st.Remove(key)
		return &LookupAnswer{Key: key}, nil
	}
	ans := &LookupAnswer{Found: true, Key: key, Winner: rec.Winner, Times: res.Times, Date: rec.Date}
	if v, ok := strings.CutPrefix(rec.Winner, bespokePrefix); ok {
		c, err := r.candidate(v)
		if err != nil {
			st.Remove(key)
			return &LookupAnswer{Key: key}, nil
		}
		c.Rank = 0
		ans.Candidate = c
	}
	return ans, nil
}

// Record stores a client's choice for the problem: the winner and the
// times that chose it, each finite and positive. A bespoke winner must be
// one of the current candidates on the device described.
func Record(req RecordRequest) (*RecordAnswer, error) {
	r, err := resolve(&req.Problem)
	if err != nil {
		return nil, err
	}
	if err := checkChoice(req.Winner, req.Times); err != nil {
		return nil, err
	}
	if v, ok := strings.CutPrefix(req.Winner, bespokePrefix); ok {
		if _, err := r.candidate(v); err != nil {
			return nil, badField("winner", "%s", oneLine(err.Error()))
		}
	}
	res, err := json.Marshal(clientResult{Client: r.client, Times: req.Times})
	if err != nil {
		return nil, err
	}
	key := r.key()
	rec := &tune.Record{
		Key: key, Problem: r.in.Name(), Device: r.dev.Name, Date: time.Now().UTC().Format(time.RFC3339),
		Commit: Version(), Winner: req.Winner, Kind: recordKind, Result: res,
	}
	if err := tune.Open().Put(rec); err != nil {
		return nil, errorf(CodeInternal, "", "storing the choice: %s", oneLine(err.Error()))
	}
	return &RecordAnswer{Stored: true, Key: key}, nil
}

// checkChoice refuses an empty winner, names with control characters,
// times that are not finite and positive, and a winner without a time.
func checkChoice(winner string, times map[string]float64) *Error {
	if err := checkName(winner); err != nil {
		return badField("winner", "%v", err)
	}
	if v, ok := strings.CutPrefix(winner, bespokePrefix); ok && v == "" {
		return badField("winner", "%q names no variant", winner)
	}
	names := make([]string, 0, len(times))
	for name := range times {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := checkName(name); err != nil {
			return badField("times", "a name: %v", err)
		}
		if t := times[name]; !(t > 0) || math.IsInf(t, 0) {
			return badField("times."+name, "%g s: want a finite positive time", t)
		}
	}
	if _, ok := times[winner]; !ok {
		return badField("times", "no time for the winner %q", winner)
	}
	return nil
}
