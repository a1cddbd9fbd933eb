package splitstorage_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/internal/unreadable"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
)

func TestParseIndex(t *testing.T) {
	good := `{"version":1,"backup":"ks/0/b","file":"f","part_size":10,"size":25,"parts":[{"size":10,"crc32c":1},{"size":10,"crc32c":2},{"size":5,"crc32c":3}]}`
	idx, err := splitstorage.ParseIndex([]byte(good), "ks/0", "b", "f")
	require.NoError(t, err)
	assert.Len(t, idx.Parts, 3)
	_, err = splitstorage.ParseIndex([]byte(`{"version":1,"backup":"ks/0/b","file":"f","part_size":10,"size":0,"parts":[]}`), "ks/0", "b", "f")
	require.NoError(t, err, "an empty file has no parts")
	v2 := `{"version":2,"backup":"ks/0/b","file":"f","part_size":4096,"block_size":1024,"size":5000,"parts":[{"size":4096,"crc32c":1,` +
		`"blocks":"AAAAAQAAAAIAAAADAAAABA=="},{"size":904,"crc32c":2,"blocks":"AAAABQ=="}]}`
	idx, err = splitstorage.ParseIndex([]byte(v2), "ks/0", "b", "f")
	require.NoError(t, err)
	assert.Equal(t, []byte{0, 0, 0, 5}, idx.Parts[1].Blocks)

	for doc, want := range map[string]string{
		`{`:         "corrupt index",
		good + `{}`: "trailing data",
		`{"version":3,"backup":"ks/0/b","file":"f","part_size":10,"size":0,"parts":[]}`:   "version 3",
		`{"version":2,"backup":"ks/0/b","file":"f","part_size":4096,"size":0,"parts":[]}`: "block_size 0 out of range",
		`{"version":2,"backup":"ks/0/b","file":"f","part_size":4096,"block_size":1024,"size":2048,"parts":[{"size":2048,` +
			`"blocks":"AAAAAA=="}]}`: "part 1 has 4 bytes of block checksums, want 8",
		`{"version":1,"backup":"ks/0/b","file":"f","part_size":4096,"size":2048,"parts":[{"size":2048,` +
			`"blocks":"AAAAAAAAAAA="}]}`: "block checksums in a version 1 index",
		`{"version":1,"backup":"ks/0/other","file":"f","part_size":10,"size":0,"parts":[]}`:                    "index is for ks/0/other",
		`{"version":1,"backup":"ks/0/b","file":"g","part_size":10,"size":0,"parts":[]}`:                        "file g",
		`{"version":1,"backup":"ks/0/b","file":"f","part_size":0,"size":0,"parts":[]}`:                         "part_size 0",
		`{"version":1,"backup":"ks/0/b","file":"f","part_size":10,"size":-1,"parts":[]}`:                       "size -1",
		`{"version":1,"backup":"ks/0/b","file":"f","part_size":10,"size":15,"parts":[{"size":5},{"size":10}]}`: "part 1 of 2 has size 5",
		`{"version":1,"backup":"ks/0/b","file":"f","part_size":10,"size":11,"parts":[{"size":11}]}`:            "part 1 has size 11",
		`{"version":1,"backup":"ks/0/b","file":"f","part_size":10,"size":0,"parts":[{"size":0}]}`:              "part 1 has size 0",
		`{"version":1,"backup":"ks/0/b","file":"f","part_size":10,"size":-5,"parts":[{"size":-5}]}`:            "part 1 has size -5",
		`{"version":1,"backup":"ks/0/b","file":"f","part_size":10,"size":99,"parts":[{"size":10}]}`:            "size 99 but its parts add up to 10",
	} {
		_, err := splitstorage.ParseIndex([]byte(doc), "ks/0", "b", "f")
		require.Error(t, err, doc)
		assert.Contains(t, err.Error(), want, doc)
	}
}

// TestALaterFormatIsNoDamage: an index, completion marker or seal of a
// format version later than this one reads (a later version of the split
// storage wrote it, with fields this one does not know) cannot be read
// here: unreadable, never damage, saying which version reads it.
func TestALaterFormatIsNoDamage(t *testing.T) {
	_, err := splitstorage.ParseIndex([]byte(`{"version":4,"backup":"ks/0/b","file":"f","part_size":10,"size":0,"parts":[],"new":1}`), "ks/0", "b", "f")
	require.EqualError(t, err, "index of format version 4, written by a later version of the split storage (this one reads versions up to 3): "+
		"read it with that version or later; nothing says it is damaged")
	assert.True(t, unreadable.Is(err))
	assert.NotErrorIs(t, err, splitstorage.ErrDamaged)
	_, err = splitstorage.ParseComplete([]byte(`{"version":2,"backup":"ks/0/b","files":[],"sealed_by":"x"}`), "ks/0", "b")
	require.ErrorContains(t, err, "completion marker of format version 2, written by a later version of the split storage (this one reads "+
		"versions up to 1)")
	assert.True(t, unreadable.Is(err))
	_, err = splitstorage.ParseIndex([]byte(`{"version":0,"backup":"ks/0/b","file":"f","part_size":10,"size":0,"parts":[]}`), "ks/0", "b", "f")
	require.ErrorContains(t, err, "corrupt index: version 0, want 1..3")
	assert.False(t, unreadable.Is(err), "a version no version writes is damage")
}

func TestParseComplete(t *testing.T) {
	_, err := splitstorage.ParseComplete([]byte(`{"version":1,"backup":"ks/0/b","files":["MANIFEST","lane-000.xbstream"],"bytes":10,"parts":2}`), "ks/0", "b")
	require.NoError(t, err)
	for doc, want := range map[string]string{
		`[]`: "corrupt completion marker",
		`{"version":1,"backup":"ks/0/c","files":[]}`:            "for backup ks/0/c",
		`{"version":1,"backup":"ks/0/b","files":["../x"]}`:      "invalid file name",
		`{"version":1,"backup":"ks/0/b","files":["a","a"]}`:     "listed twice",
		`{"version":1,"backup":"ks/0/b","files":[],"bytes":-1}`: "-1 bytes",
	} {
		_, err := splitstorage.ParseComplete([]byte(doc), "ks/0", "b")
		require.Error(t, err, doc)
		assert.Contains(t, err.Error(), want, doc)
	}
}

// FuzzIndex: ParseIndex never panics, and what it accepts is consistent
// (parts add up, every part but the last is full) and survives a re-encode.
func FuzzIndex(f *testing.F) {
	f.Add([]byte(`{"version":1,"backup":"ks/0/b","file":"f","part_size":10,"size":25,"parts":[{"size":10,"crc32c":1},{"size":10,"crc32c":2},{"size":5,` +
		`"crc32c":3}]}`))
	f.Add([]byte(`{"version":1,"backup":"ks/0/b","file":"f","part_size":10,"size":0,"parts":[]}`))
	f.Add([]byte(`{"version":1,"backup":"ks/0/b","file":"f","part_size":9223372036854775807,"size":-9223372036854775808,` +
		`"parts":[{"size":9223372036854775807},{"size":1}]}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		idx, err := splitstorage.ParseIndex(doc, "ks/0", "b", "f")
		if err != nil {
			return
		}
		var sum int64
		for i, p := range idx.Parts {
			if p.Size < 1 || p.Size > idx.PartSize || (i < len(idx.Parts)-1 && p.Size != idx.PartSize) {
				t.Fatalf("accepted part %d of size %d with part size %d", i+1, p.Size, idx.PartSize)
			}
			sum += p.Size
		}
		if sum != idx.Size || idx.Size < 0 {
			t.Fatalf("accepted size %d, parts add up to %d", idx.Size, sum)
		}
		again, err := json.Marshal(idx)
		require.NoError(t, err)
		idx2, err := splitstorage.ParseIndex(again, "ks/0", "b", "f")
		require.NoError(t, err, "re-encoded index refused")
		require.Equal(t, idx, idx2)
	})
}

// FuzzComplete: ParseComplete never panics and accepts only safe file names.
func FuzzComplete(f *testing.F) {
	f.Add([]byte(`{"version":1,"backup":"ks/0/b","finished":"2026-01-01T00:00:00Z","files":["MANIFEST","lane-000.xbstream.zst"],"bytes":10,"parts":2}`))
	f.Add([]byte(`{"version":1,"backup":"ks/0/b","files":["../../etc"],"bytes":0,"parts":0}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		c, err := splitstorage.ParseComplete(doc, "ks/0", "b")
		if err != nil {
			return
		}
		for _, name := range c.Files {
			if name == "" || name[0] == '.' || containsAny(name, "/\\\x00") {
				t.Fatalf("accepted file name %q", name)
			}
		}
	})
}

func containsAny(s, chars string) bool {
	for _, c := range chars {
		for _, d := range s {
			if c == d {
				return true
			}
		}
	}
	return false
}
