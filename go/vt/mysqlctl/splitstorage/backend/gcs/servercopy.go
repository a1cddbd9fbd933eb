package gcs

import (
	"context"
	"fmt"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
)

// CopyFrom copies an object of another bucket or prefix with GCS's rewrite
// (the Go client repeats it until done): every GCS backend of a process
// talks to one service (STORAGE_EMULATOR_HOST included).
func (b *Backend) CopyFrom(ctx context.Context, src backend.Backend, key string, size int64, opts backend.PutOptions) (bool, error) {
	sb, ok := src.(*Backend)
	if !ok {
		return false, nil
	}
	if _, err := b.bucket.Object(b.prefix + key).CopierFrom(sb.bucket.Object(sb.prefix + key)).Run(ctx); err != nil {
		return false, fmt.Errorf("server-side copy from %s: %w", sb, gcsErr(err))
	}
	if !opts.Lock.IsZero() {
		// A rewrite takes no retention: the copy is locked once made.
		if err := b.Lock(ctx, key, opts.Lock); err != nil {
			return false, fmt.Errorf("locking the server-side copy from %s: %w", sb, err)
		}
	}
	return true, nil
}
