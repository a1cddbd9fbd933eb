package splitstorage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
)

// PutSidecar stores doc as the sidecar named sidecar of this complete
// backup, replacing an older one. A backup that is not complete, or that was
// removed meanwhile, gets none.
func (h *Handle) PutSidecar(ctx context.Context, sidecar string, doc []byte) error {
	if err := checkName("sidecar name", sidecar, false); err != nil {
		return err
	}
	if len(doc) > maxSidecarBytes {
		return fmt.Errorf("split storage: sidecar %s of backup %s/%s: %d bytes, at most %d", sidecar, h.dir, h.name, len(doc), maxSidecarBytes)
	}
	complete := backupPrefix(h.dir, h.name) + completeMarker
	if _, err := h.e.be.Stat(ctx, complete); err != nil {
		return fmt.Errorf("split storage: backup %s/%s is not complete: %w", h.dir, h.name, err)
	}
	key := sidecarKey(h.dir, h.name, sidecar)
	doc, err := h.sealSidecar(sidecar, doc)
	if err != nil {
		return fmt.Errorf("split storage: backup %s/%s: sealing %s: %w", h.dir, h.name, sidecar, err)
	}
	if err := h.e.be.Put(ctx, key, bytes.NewReader(doc), int64(len(doc)), backend.PutOptions{CRC32C: crc32c(doc)}); err != nil {
		return fmt.Errorf("split storage: backup %s/%s: storing %s: %w", h.dir, h.name, sidecar, err)
	}
	// A removal that listed the backup before this Put would leave the
	// sidecar behind: take it back.
	if _, err := h.e.be.Stat(ctx, complete); errors.Is(err, ErrNotExist) {
		h.e.be.Delete(ctx, key)
		return fmt.Errorf("split storage: backup %s/%s was removed while its %s was stored", h.dir, h.name, sidecar)
	}
	return nil
}

// ReadSidecar returns the sidecar named sidecar, or an error wrapping
// ErrNotExist when the backup has none.
func (h *Handle) ReadSidecar(ctx context.Context, sidecar string) ([]byte, error) {
	if err := checkName("sidecar name", sidecar, false); err != nil {
		return nil, err
	}
	doc, err := readSmall(ctx, h.e.be, sidecarKey(h.dir, h.name, sidecar))
	if err != nil {
		return nil, fmt.Errorf("split storage: backup %s/%s: reading %s: %w", h.dir, h.name, sidecar, err)
	}
	return h.openSidecar(ctx, sidecar, doc)
}

func isSidecarKey(prefix, key string) bool {
	return strings.HasPrefix(key, prefix+sidecarPrefix)
}
