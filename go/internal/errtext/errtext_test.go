package errtext

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/assert"

	"vitess.io/vitess/go/vt/vterrors"

	vtrpcpb "vitess.io/vitess/go/vt/proto/vtrpc"
)

func TestVitessErrorsComeOutBackwardsThroughFmt(t *testing.T) {
	// What this package is for: Vitess's own errors, wrapped by fmt.
	wrapped := fmt.Errorf("lane 1: %w", vterrors.Wrapf(fs.ErrPermission, "lane-001.zst: cannot open"))
	assert.Equal(t, "lane 1: permission denied\nlane-001.zst: cannot open", wrapped.Error(), "vterrors' %v, as fmt.Errorf's %w uses it")
	coded := fmt.Errorf("restore: %w", vterrors.Errorf(vtrpcpb.Code_NOT_FOUND, "no backup"))
	assert.Equal(t, "restore: Code: NOT_FOUND\nno backup\n", coded.Error())

	assert.Equal(t, "lane 1: lane-001.zst: cannot open: permission denied", Text(wrapped))
	assert.Equal(t, "restore: no backup", Text(coded))
}

func TestOurErrorsPrintTheirMessageForEveryVerb(t *testing.T) {
	inner := Errorf(vtrpcpb.Code_DATA_LOSS, "part %d: checksum mismatch", 3)
	mid := Wrapf(inner, "lane-%03d.zst", 1)
	outer := fmt.Errorf("backup b: %w", mid)
	assert.Equal(t, "backup b: lane-001.zst: part 3: checksum mismatch", outer.Error())
	assert.Equal(t, outer.Error(), fmt.Sprintf("%v", outer))
	assert.Equal(t, outer.Error(), Text(outer))

	assert.Equal(t, vtrpcpb.Code_DATA_LOSS, vterrors.Code(mid), "a wrap keeps its cause's code")
	assert.Equal(t, vtrpcpb.Code_DATA_LOSS, vterrors.Code(Wrap(outer, "restore")), "found below fmt's wrapper too")
	assert.Equal(t, vtrpcpb.Code_INVALID_ARGUMENT, vterrors.Code(New(vtrpcpb.Code_INVALID_ARGUMENT, "bad flag")))
	assert.Equal(t, vtrpcpb.Code_CANCELED, vterrors.Code(Wrap(context.Canceled, "reading")))
	assert.ErrorIs(t, Wrap(Wrapf(fs.ErrNotExist, "x"), "y"), fs.ErrNotExist)
	assert.ErrorIs(t, vterrors.UnwrapAll(Wrap(Wrapf(fs.ErrNotExist, "x"), "y")), fs.ErrNotExist)

	vitess := fmt.Errorf("lane 1: %w", vterrors.Wrapf(fs.ErrPermission, "lane-001.zst: cannot open"))
	assert.Equal(t, "restore of b failed: lane 1: lane-001.zst: cannot open: permission denied", Wrap(vitess, "restore of b failed").Error(),
		"a wrap mends what it wraps")
	assert.Equal(t, "x: restore of b failed: lane 1: lane-001.zst: cannot open: permission denied", fmt.Errorf("x: %w", Wrap(vitess, "restore of b failed")).Error())

	assert.NoError(t, Wrap(nil, "x"))
	assert.NoError(t, Wrapf(nil, "x %d", 1))
}

func TestTextMendsEveryBranch(t *testing.T) {
	a := fmt.Errorf("lane 0: %w", vterrors.Wrap(errors.New("short read"), "lane-000.lz4"))
	b := vterrors.Errorf(vtrpcpb.Code_UNAVAILABLE, "storage unavailable")
	joined := fmt.Errorf("restore of b: %w", errors.Join(a, b))
	assert.Equal(t, "restore of b: lane 0: lane-000.lz4: short read\nstorage unavailable", Text(joined), "errors.Join's own line break stays")
	assert.Equal(t, "x: y: z", Text(vterrors.Wrap(fmt.Errorf("y: %w", errors.New("z")), "x")), "a message with nothing to mend is itself")
}

// A chain of wraps with no code anywhere is walked once, not once per
// level and again below it.
func TestCodeOfADeepChainIsLinear(t *testing.T) {
	err := errors.New("root")
	for i := range 40 {
		err = Wrapf(fmt.Errorf("level %d: %w", i, err), "wrap %d", i)
	}
	assert.Equal(t, vtrpcpb.Code_UNKNOWN, vterrors.Code(err), "40 levels: an exponential walk would not end")
	assert.Equal(t, vtrpcpb.Code_NOT_FOUND, vterrors.Code(Wrap(fmt.Errorf("x: %w", vterrors.Wrap(vterrors.Errorf(vtrpcpb.Code_NOT_FOUND, "gone"), "mid")), "top")),
		"found below fmt's and Vitess's wrappers")
}
