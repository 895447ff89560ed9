package tune

import (
	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/kernel/family"
)

// A Chooser is an instance whose candidates are each a pipeline of
// kernels (PUM's decomposition, integration and assembly), verified and
// timed as a whole rather than as the one kernel a family.Workload
// describes. It chooses its candidate itself and keeps the winner in the
// store under Key; bench hands it the device and the store, and gen --best
// asks it whether a stored record is still its choice.
type Chooser interface {
	family.Instance
	// Choose returns the candidate to run on dev: the winner st holds
	// (unless retune), else the fastest verified one, measured now and
	// stored (st may be nil: nothing read or kept).
	Choose(dev device.Device, st *Store, retune bool) (*Chosen, error)
	// CheckStored reports why rec, found under Key, is no longer a
	// choice of this instance on dev, or nil.
	CheckStored(rec *Record, dev device.Device) error
	// Facts are what the report states of the instance (its size in the
	// family's units, degrees of freedom …), as a Workload's Facts.
	Facts() map[string]float64
}

// Chosen is a Chooser's choice and the measurements behind it.
type Chosen struct {
	Winner string
	// Cached: read from the store, nothing timed now; Date is when the
	// winner was measured (RFC 3339, UTC).
	Cached bool
	Date   string
	Times  []Measured
	// StoreErr is why a measured winner could not be stored, or nil.
	StoreErr error
}

// Measured is one candidate's measurement of a whole pipeline: its median
// time, or why it could not run or was wrong.
type Measured struct {
	Name     string
	Seconds  float64 // the median of Reps runs
	Reps     int
	Verified bool
	Err      string
}
