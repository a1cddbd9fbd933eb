package flagvalue

import "errors"

// A contradiction is a request that the data or the host refuses as it is
// made, whatever is retried: a --table the backup does not hold, a tool
// flavor that is not the backup's. It is a usage error (the CLI's exit 2),
// never damage and never "could not read".

type contradiction struct{ err error }

func (c contradiction) Error() string { return c.err.Error() }
func (c contradiction) Unwrap() error { return c.err }

// Contradiction marks err as a request the data or the host contradicts.
func Contradiction(err error) error {
	if err == nil {
		return nil
	}
	return contradiction{err}
}

// IsContradiction reports whether err, or anything it wraps, was marked by
// Contradiction.
func IsContradiction(err error) bool {
	var c contradiction
	return errors.As(err, &c)
}
