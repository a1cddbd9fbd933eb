package vtfifocli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestInvalidFlags: every bad value stops fifoverify at startup (exit 2)
// with a message naming the flag and the allowed values.
func TestInvalidFlags(t *testing.T) {
	root := t.TempDir()
	// Flag variables are process globals: every case sets what others change.
	base := []string{"--backup-storage-implementation=split", "--split-storage-backend=file", "--split-storage-part-size=4MiB", "--split-storage-upload-concurrency=2", "--split-storage-root=" + root, "--keyspace=ks", "--shard=0"}
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"--sample=0%"}, []string{"--sample", "(0%, 100%]"}},
		{[]string{"--sample=101%"}, []string{"--sample", "(0%, 100%]"}},
		{[]string{"--sample=lots"}, []string{"--sample", "(0%, 100%]"}},
		{[]string{"--progress=sometimes"}, []string{"--progress", "auto, always, never"}},
		{[]string{"--progress-interval=1ms"}, []string{"--progress-interval", "100ms or more"}},
		{[]string{"--concurrency=0"}, []string{"--concurrency", "1..64"}},
		{[]string{"--concurrency=65"}, []string{"--concurrency", "1..64"}},
		{[]string{"--timeout=-1s"}, []string{"--timeout"}},
		{[]string{"--incomplete-min-age=-1h"}, []string{"--incomplete-min-age"}},
		{[]string{"--backup=../other"}, []string{"--backup", "no '/'"}},
		{[]string{"--backup=.started"}, []string{"--backup", "not starting with '.'"}},
		{[]string{"--list-incomplete", "--remove-incomplete"}, []string{"exclusive"}},
		{[]string{"--backup-storage-implementation=tape"}, []string{"--backup-storage-implementation", "split", "file"}},
		{[]string{"--split-storage-backend=tape"}, []string{"--split-storage-backend"}},
		{[]string{"--split-storage-part-size=1KiB"}, []string{"--split-storage-part-size"}},
		{[]string{"--split-storage-upload-concurrency=0"}, []string{"--split-storage-upload-concurrency"}},
		{[]string{"--backup-storage-implementation=file", "--sample=5%"}, []string{"--sample", "split"}},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := Verify(context.Background(), "fifoverify", append(append([]string{}, base...), tc.args...), &out, &errOut)
			assert.Equal(t, 2, code, "stdout: %s\nstderr: %s", out.String(), errOut.String())
			for _, w := range tc.want {
				assert.Contains(t, errOut.String(), w)
			}
		})
	}
	t.Run("no keyspace", func(t *testing.T) {
		var out, errOut bytes.Buffer
		code := Verify(context.Background(), "fifoverify", []string{"--backup-storage-implementation=split", "--split-storage-root=" + root}, &out, &errOut)
		assert.Equal(t, 2, code)
		assert.Contains(t, errOut.String(), "--keyspace and --shard (or --backup-dir) are required")
	})
	t.Run("traversal in backup-dir", func(t *testing.T) {
		var out, errOut bytes.Buffer
		code := Verify(context.Background(), "fifoverify", []string{"--backup-storage-implementation=split", "--split-storage-root=" + root, "--backup-dir=../../etc"}, &out, &errOut)
		assert.Equal(t, 2, code)
		assert.Contains(t, errOut.String(), "--backup-dir")
	})
}
