package tune

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/internal/cache"
	"github.com/bespoke-hpc/bespoke/kernel/family"
)

// Key names the choice for an instance on a device: the family's key of
// the instance, the candidates it offers there (candidateDigest), the
// printer's version (printerVersion), and the device (backend, name,
// platform and driver, architecture and compiler, compute units). A change
// to any of them makes older choices unreachable, with no counter to raise.
func Key(in family.Instance, dev device.Device) string { return KeyFor(in, dev.Info()) }

// KeyFor is Key for a device described by its facts alone, with no device
// open (a client describing its own device). Extra parts, when given,
// follow the device's (a client's namespace, exact sizes …); without them
// the key is Key's.
func KeyFor(in family.Instance, i device.Info, extra ...string) string {
	parts := []string{"tune", candidateDigest(in, TargetOf(i)), printerVersion(), in.TuneKey(),
		i.Backend, i.Name, i.Platform, i.Arch, strconv.Itoa(i.ComputeUnits)}
	return cache.Key(append(parts, extra...)...)
}

// Record is a tuning result: the winner and the measurements that chose it.
type Record struct {
	Key     string `json:"key"`
	Problem string `json:"problem"`
	Device  string `json:"device"`
	Date    string `json:"date"`
	Commit  string `json:"commit,omitempty"`
	// Winner is the fastest verified candidate (or baseline), Kind
	// "bespoke" or "baseline".
	Winner string `json:"winner"`
	Kind   string `json:"kind"`
	// Result is bench's whole measurement of the problem: every candidate
	// with its timing, verification and resources.
	Result json.RawMessage `json:"result"`
}

// Store keeps tuning results across runs in the "tune" kind of the cache
// (so BESPOKE_CACHE_DIR and BESPOKE_NO_CACHE apply).
type Store struct{ st *cache.Store }

// Open returns the store.
func Open() *Store { return &Store{st: cache.Open("tune")} }

// Get returns the record for key, or false when there is none, or it is
// damaged or not for this key (then it is removed and the choice redone).
func (s *Store) Get(key string) (*Record, bool) {
	data, ok := s.st.Get(key)
	if !ok {
		return nil, false
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil || r.Key != key || r.Winner == "" || len(r.Result) == 0 {
		s.st.Remove(key)
		return nil, false
	}
	return &r, true
}

// Put stores a record under its key.
func (s *Store) Put(r *Record) error {
	if r.Key == "" || r.Winner == "" {
		return fmt.Errorf("tune: a record needs a key and a winner")
	}
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return s.st.Put(r.Key, data)
}

// Remove drops the record under key, if any (a choice found to be stale).
func (s *Store) Remove(key string) { s.st.Remove(key) }
