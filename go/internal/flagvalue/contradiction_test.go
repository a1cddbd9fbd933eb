package flagvalue

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"vitess.io/vitess/go/vt/vterrors"

	"github.com/vtfifo/vtfifo/go/internal/unreadable"
)

// A contradiction's own text says what to correct: unreadable.NoVerdict
// adds nothing after it, though it holds this host's failure.
var _ unreadable.Contradicted = contradiction{}

func TestNoVerdictAddsNothingToAContradiction(t *testing.T) {
	host := unreadable.Host(errors.New("mariabackup --prepare failed"), "its disk is full")
	assert.NotEmpty(t, unreadable.NoVerdict(host))
	assert.Empty(t, unreadable.NoVerdict(fmt.Errorf("restore: %w", Contradiction(host))))
}

// TestContradictionThroughWrapping: the mark is found through fmt's %w,
// errors.Join and Vitess's wrapping (Cause, not Unwrap).
func TestContradictionThroughWrapping(t *testing.T) {
	c := Contradiction(errors.New("no table db.t in backup b"))
	assert.True(t, IsContradiction(c))
	assert.True(t, IsContradiction(fmt.Errorf("restore: %w", c)))
	assert.True(t, IsContradiction(errors.Join(errors.New("other"), c)))
	assert.True(t, IsContradiction(vterrors.Wrapf(fmt.Errorf("x: %w", c), "fifo restore of backup b failed")))
	assert.False(t, IsContradiction(vterrors.Wrapf(errors.New("checksum mismatch"), "fifo restore of backup b failed")))
	assert.False(t, IsContradiction(nil))
	assert.Nil(t, Contradiction(nil))
}
