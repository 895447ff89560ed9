package tune

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"unicode"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/internal/cache"
	"github.com/bespoke-hpc/bespoke/kernel/family"
)

// Key names the choice for an instance on a device: the family's key of
// the instance, the candidates it offers there (candidateDigest), the
// printer's version (printerVersion), and the device (backend, name,
// platform and driver, architecture and compiler, compute units, the
// width of the wide vectors a CPU builds with). A change
// to any of them makes older choices unreachable, with no counter to raise.
func Key(in family.Instance, dev device.Device) string { return KeyFor(in, dev.Info()) }

// KeyFor is Key for a device described by its facts alone, with no device
// open (a client describing its own device). Extra parts, when given,
// follow the device's (a client's namespace, exact sizes …); without them
// the key is Key's.
func KeyFor(in family.Instance, i device.Info, extra ...string) string {
	parts := []string{"tune", candidateDigest(in, TargetOf(i)), printerVersion(), in.TuneKey(),
		i.Backend, i.Name, i.Platform, i.Arch, strconv.Itoa(i.ComputeUnits)}
	if i.WideVectorBits > 0 {
		// CPUs of one model name differ in AVX-512 (a VM may hide it),
		// and kernels that ask for wide vectors are built for it.
		parts = append(parts, "wide="+strconv.Itoa(i.WideVectorBits))
	}
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

// Remove deletes the record for key (one found stale or impossible).
func (s *Store) Remove(key string) { s.st.Remove(key) }

// Put stores a record under its key.
func (s *Store) Put(r *Record) error {
	if r.Key == "" || r.Winner == "" {
		return fmt.Errorf("tune: a record needs a key and a winner")
	}
	if err := CheckName(r.Winner); err != nil {
		return fmt.Errorf("tune: winner %w", err)
	}
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return s.st.Put(r.Key, data)
}

// MaxRoofFrac bounds the fraction of the roof a measurement may claim.
// The roof is the best streaming bandwidth over the same working set, and
// a candidate's bandwidth counts only its least traffic, so a candidate
// cannot beat it by much; a figure far above it means the roof was
// measured while the machine was busy (a CPU shared with other work can
// give a roof sample several times too low). 1.5 leaves room for noise
// between the two measurements and for a kernel whose traffic the caches
// trim below the least counted, and refuses the impossible.
const MaxRoofFrac = 1.5

// CheckName refuses a name that could not be a candidate's or a
// baseline's: empty, too long, or holding control or other unprintable
// characters (a name is printed in tables and messages).
func CheckName(name string) error {
	if name == "" || len(name) > 200 {
		return fmt.Errorf("name %q: want 1 to 200 characters", name)
	}
	for _, c := range name {
		if !unicode.IsPrint(c) || c == unicode.ReplacementChar {
			return fmt.Errorf("name %q holds an unprintable character", name)
		}
	}
	return nil
}

// ErrStale is the cause of a stored record whose winner is not something
// that exists now.
var ErrStale = errors.New("not a current candidate")

// Check judges a stored record's winner against what exists now: a
// bespoke winner must be one of the candidates the instance offers on the
// device, a baseline one of the baselines named (those the run has). A
// record that fails is stale or forged: its choice must be measured anew.
func (r *Record) Check(in family.Instance, dev device.Device, baselines []string) error {
	if err := CheckName(r.Winner); err != nil {
		return fmt.Errorf("winner %w", err)
	}
	switch r.Kind {
	case "bespoke":
		cs, err := Candidates(in, dev, nil)
		if err != nil {
			return fmt.Errorf("the candidates of %s: %w", r.Problem, err)
		}
		if !slices.ContainsFunc(cs, func(c family.Candidate) bool { return c.Name() == r.Winner }) {
			return fmt.Errorf("winner %q: %w of %d offered on %s", r.Winner, ErrStale, len(cs), dev.Info().Name)
		}
	case "baseline":
		if !slices.Contains(baselines, r.Winner) {
			return fmt.Errorf("winner %q: %w (the baselines here: %q)", r.Winner, ErrStale, baselines)
		}
	default:
		return fmt.Errorf("winner %q of kind %q: want bespoke or baseline", r.Winner, r.Kind)
	}
	return nil
}
