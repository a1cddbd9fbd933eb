package azure

import (
	"context"
	"fmt"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
)

var _ backend.ServerCopier = (*Backend)(nil)

// copyPoll is the first wait between checks of a copy the service has not
// finished at once; it doubles up to copyPollMax.
const (
	copyPoll    = 100 * time.Millisecond
	copyPollMax = 5 * time.Second
)

// CopyFrom copies a blob of the same storage account (another container or
// prefix) with Copy Blob: the service moves the bytes, and the request's
// shared key also authorizes the read of the source, so no SAS token is
// made (none can leak into a log or an error). Another account, or another
// service, is streamed instead. A copy the service reports pending is
// waited for; the verification after the copy checks every part's CRC32C.
func (b *Backend) CopyFrom(ctx context.Context, src backend.Backend, key string, size int64, opts backend.PutOptions) (bool, error) {
	sb, ok := src.(*Backend)
	if !ok || sb.service != b.service {
		return false, nil
	}
	dst := b.client.NewBlobClient(b.prefix + key)
	resp, err := dst.StartCopyFromURL(ctx, sb.client.NewBlobClient(sb.prefix+key).URL(), nil)
	if err != nil {
		return false, fmt.Errorf("server-side copy from %s: %w", sb, azureErr(err))
	}
	status, desc := resp.CopyStatus, (*string)(nil)
	for wait := copyPoll; status != nil && *status == blob.CopyStatusTypePending; wait = min(2*wait, copyPollMax) {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			if resp.CopyID != nil {
				// Leave no copy running into a blob nobody will list.
				_, _ = dst.AbortCopyFromURL(context.WithoutCancel(ctx), *resp.CopyID, nil)
			}
			return false, ctx.Err()
		case <-t.C:
		}
		props, err := dst.GetProperties(ctx, nil)
		if err != nil {
			return false, fmt.Errorf("server-side copy from %s: checking it: %w", sb, azureErr(err))
		}
		status, desc = props.CopyStatus, props.CopyStatusDescription
	}
	if status != nil && *status != blob.CopyStatusTypeSuccess {
		why := string(*status)
		if desc != nil {
			why += ": " + *desc
		}
		// A failed or aborted copy leaves a blob behind: remove it, and let the
		// retrying wrapper try again.
		_, _ = dst.Delete(context.WithoutCancel(ctx), nil)
		return false, backend.Transient(fmt.Errorf("server-side copy from %s: the copy ended %s", sb, why))
	}
	if !opts.Lock.IsZero() {
		if err := b.Lock(ctx, key, opts.Lock); err != nil {
			return false, fmt.Errorf("locking the server-side copy from %s: %w", sb, err)
		}
	}
	return true, nil
}
