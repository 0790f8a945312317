package ledger

import "errors"

var (
	// ErrExists: an event with the key is already stored.
	ErrExists = errors.New("ledger: event already stored")
	// ErrNotFound: no ledger record has the key.
	ErrNotFound = errors.New("ledger: event not found")
)

// ExistsError is a commit refused because the event is stored already,
// under Key (the key the commit wrote, or the legacy key it checked).
type ExistsError struct{ Key string }

func (e *ExistsError) Error() string { return "ledger: event " + e.Key + " already stored" }

// Is makes errors.Is(err, ErrExists) hold.
func (e *ExistsError) Is(target error) bool { return target == ErrExists }
