package azure

import (
	"context"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
)

// Azure version-level immutability (a container or account with it
// enabled): a blob version keeps its bytes until its policy's expiry;
// "Unlocked" (our governance) can be shortened or removed by a principal
// allowed to, "Locked" (compliance) by no one. A legal hold keeps it
// whatever the date. Azurite does not enforce them: Azure locks are proven
// by the requests sent, not against an enforcing server.

var _ backend.Locker = (*Backend)(nil)

func azureMode(m backend.LockMode) *blob.ImmutabilityPolicySetting {
	s := blob.ImmutabilityPolicySettingUnlocked
	if m == backend.LockCompliance {
		s = blob.ImmutabilityPolicySettingLocked
	}
	return &s
}

// LockOf reads the blob's immutability policy and legal hold.
func (b *Backend) LockOf(ctx context.Context, key string) (backend.Lock, error) {
	p, err := b.client.NewBlobClient(b.prefix+key).GetProperties(ctx, nil)
	if err != nil {
		return backend.Lock{}, azureErr(err)
	}
	var l backend.Lock
	if p.ImmutabilityPolicyExpiresOn != nil && p.ImmutabilityPolicyMode != nil && *p.ImmutabilityPolicyMode != blob.ImmutabilityPolicyModeMutable {
		l.Until, l.Mode = p.ImmutabilityPolicyExpiresOn.UTC(), backend.LockGovernance
		if *p.ImmutabilityPolicyMode == blob.ImmutabilityPolicyModeLocked {
			l.Mode = backend.LockCompliance
		}
	}
	l.LegalHold = p.LegalHold != nil && *p.LegalHold
	return l, nil
}

// Lock extends the blob's immutability policy and sets its legal hold.
func (b *Backend) Lock(ctx context.Context, key string, want backend.Lock) error {
	return backend.ExtendLock(ctx, key, want, b.LockOf, func(ctx context.Context, key string, l, had backend.Lock) error {
		c := b.client.NewBlobClient(b.prefix + key)
		if !l.Until.Equal(had.Until) || l.Mode != had.Mode {
			if _, err := c.SetImmutabilityPolicy(ctx, l.Until.UTC(), &blob.SetImmutabilityPolicyOptions{Mode: azureMode(l.Mode)}); err != nil {
				return azureErr(err)
			}
		}
		if l.LegalHold && !had.LegalHold {
			if _, err := c.SetLegalHold(ctx, true, nil); err != nil {
				return azureErr(err)
			}
		}
		return nil
	})
}

// lockUpload sets a Put's lock on the blob it uploads (Put Blob, or Put
// Block List for a blob uploaded in blocks).
func lockUpload(l backend.Lock) (hold *bool, mode *blob.ImmutabilityPolicySetting, until *time.Time) {
	if !l.Until.IsZero() {
		t := l.Until.UTC()
		mode, until = azureMode(l.Mode), &t
	}
	if l.LegalHold {
		hold = &l.LegalHold
	}
	return hold, mode, until
}
