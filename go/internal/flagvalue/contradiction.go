package flagvalue

import "errors"

// A contradiction is a request that the data or the host refuses as it is
// made, whatever is retried: a --table the backup does not hold, a tool
// flavor that is not the backup's. It is a usage error (the CLI's exit 2),
// never damage and never "could not read".

type contradiction struct{ err error }

func (c contradiction) Error() string { return c.err.Error() }
func (c contradiction) Unwrap() error { return c.err }

// Contradicted: unreadable.NoVerdict says nothing after its text
// (unreadable.Contradicted, asserted in this package's tests).
func (c contradiction) Contradicted() bool { return true }

// Contradiction marks err as a request the data or the host contradicts.
func Contradiction(err error) error {
	if err == nil {
		return nil
	}
	return contradiction{err}
}

// IsContradiction reports whether err, or anything it wraps (through
// Unwrap, or a Vitess error's Cause), was marked by Contradiction.
func IsContradiction(err error) bool {
	var c contradiction
	if errors.As(err, &c) {
		return true
	}
	switch w := err.(type) {
	case interface{ Unwrap() []error }:
		for _, e := range w.Unwrap() {
			if IsContradiction(e) {
				return true
			}
		}
	case interface{ Cause() error }:
		return IsContradiction(w.Cause())
	case interface{ Unwrap() error }:
		return IsContradiction(w.Unwrap())
	}
	return false
}
