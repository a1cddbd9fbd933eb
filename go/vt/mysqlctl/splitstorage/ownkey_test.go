package splitstorage

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestOwnKey: in a backup's directory, the storage's own kinds of object
// are its markers, records, leases, and its files' parts and indexes;
// anything else (a '.'-file, a note, a folder's objects, a part-like name
// without its eight digits) is someone else's, and no lock covers it.
func TestOwnKey(t *testing.T) {
	const prefix = "ks/0/2026-02-02.000000.zone1-0000000100/"
	for rel, own := range map[string]bool{
		".started": true, ".complete": true, ".base": true, ".retired": true, ".quarantined": true, ".seal": true, ".promoting": true,
		".promoted": true, ".sidecar-testrestore": true, ".reading-host-123": true, ".locked-20260202": true,
		"MANIFEST.index": true, "MANIFEST.part-00000001": true, "lane-000.xbstream.zst.part-00000042": true, "lanes.index.index": true,

		"NOTES.txt": false, ".DS_Store": false, ".index": false, ".part-00000001": false, "f.part-1": false, "f.part-0000000x": false,
		"notes/f.index": false, "notes/f.part-00000001": false, "f.part-000000001": false,
	} {
		assert.Equal(t, own, ownKey(prefix, prefix+rel), rel)
		if !own {
			assert.False(t, lockCovers(prefix, prefix+rel), "a lock never covers %s", rel)
		}
	}
	assert.False(t, ownKey(prefix, "ks/0/another/MANIFEST.index"), "not under the prefix")
}
