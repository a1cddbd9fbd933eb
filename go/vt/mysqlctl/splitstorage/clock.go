package splitstorage

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
)

// clockPrefix holds the probes Now writes, each deleted at once.
const clockPrefix = fleetPrefix + "clock/"

// Now is the store's clock: the write time the store gives a small probe
// object written now (under .fleet/clock/, deleted at once; only in a root
// that holds its root identity: 4 requests).
// What a cleanup judges ages by, an incomplete backup's last write, is the
// store's own write time, and a backup's name is its tablet's clock: a
// host whose clock runs ahead (a VM resumed, NTP not yet synced) would
// take a backup still running, or one younger than --keep-within, for an
// old one and remove it. On local disk the store is this host.
func (s *Storage) Now(ctx context.Context) (time.Time, error) {
	e, err := s.env(ctx)
	if err != nil {
		return time.Time{}, err
	}
	return probeNow(ctx, e.be)
}

// probeNow is the write time be gives a probe written now (Now).
func probeNow(ctx context.Context, be backend.Backend) (time.Time, error) {
	// Only beside the root identity: a root not proven this storage's (one
	// level off, another's) gets no object of ours.
	if _, err := be.Stat(ctx, rootMarker); errors.Is(err, ErrNotExist) {
		return time.Time{}, fmt.Errorf("split storage: the store's clock is read from a probe written beside the root identity %s, "+
			"which %s does not hold yet (the next backup or copy writes it)", rootMarker, be)
	} else if err != nil {
		return time.Time{}, fmt.Errorf("split storage: reading the root identity %s in %s, beside which the store's clock is read: %w",
			rootMarker, be, err)
	}
	var r [8]byte
	_, _ = rand.Read(r[:])
	key := clockPrefix + hex.EncodeToString(r[:])
	if err := be.Put(ctx, key, bytes.NewReader(nil), 0, backend.PutOptions{IfNotExists: true, CRC32C: crc32c(nil)}); err != nil {
		return time.Time{}, fmt.Errorf("split storage: reading the store's clock (writing %s in %s): %w", key, be, err)
	}
	info, err := be.Stat(ctx, key)
	_ = be.Delete(ctx, key) // one left behind is an empty object nothing reads
	if err == nil && info.Modified.IsZero() {
		err = fmt.Errorf("%s gives no write time", be)
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("split storage: reading the store's clock (%s in %s): %w", key, be, err)
	}
	return info.Modified, nil
}

// judgingNow is the time a lock or a lease found at the store is judged
// by, a judgement that keeps a backup or lets it go: the store's time as
// its answers to the requests sent with clock's context gave it (a network
// store); where they gave none (a local root, which may be a file
// server's: NFS, shared by hosts whose clocks differ from it), the write
// time of a probe (probeNow): the file server's clock, as the lock's or
// lease's own write time is; this host's only where no probe can be
// written there.
func judgingNow(ctx context.Context, be backend.Backend, clock *backend.ClockWatch) time.Time {
	if now, ok := clock.Now(); ok {
		return now
	}
	if now, err := probeNow(ctx, be); err == nil {
		return now
	}
	return hostNow()
}

// hostNow is this host's clock (a test sets it off).
var hostNow = time.Now

// storeNow is the store's time as its answers to the requests sent with
// clock's context gave it: what a lock's or a lease's date is judged by,
// never this host's clock, which may be days off. This host's where they
// gave none (local disk: the store's clock is this host's).
func storeNow(clock *backend.ClockWatch) time.Time {
	if now, ok := clock.Now(); ok {
		return now
	}
	return hostNow()
}

// ErrNoClockSeen is SeenNow's error where the store's answers carry no
// time: local disk, whose clock is this host's.
var ErrNoClockSeen = errors.New("the store's answers carry no time (local disk: its clock is this host's)")

// SeenNow is the store's clock read without writing anything: the time its
// answer to one read gives (the HEAD of the root identity, whether there or
// not), for what judges ages and writes nothing (vtfifo ls --max-age, its
// exporter). ErrNoClockSeen where the answer carries none.
func (s *Storage) SeenNow(ctx context.Context) (time.Time, error) {
	e, err := s.env(ctx)
	if err != nil {
		return time.Time{}, err
	}
	return seenNow(ctx, e.be)
}

// seenNow is the time be's answer to one HEAD of the root identity gives.
func seenNow(ctx context.Context, be backend.Backend) (time.Time, error) {
	wctx, w := backend.WatchClock(ctx)
	if _, err := be.Stat(wctx, rootMarker); err != nil && !errors.Is(err, ErrNotExist) {
		return time.Time{}, fmt.Errorf("split storage: reading the store's clock (%s in %s): %w", rootMarker, be, err)
	}
	now, ok := w.Now()
	if !ok {
		return time.Time{}, ErrNoClockSeen
	}
	return now, nil
}

// datingNow is the time a date given to be is checked against (a lock's
// until must be after it): be's clock as seenNow reads it; where be's
// answers carry none (a local root), the write time of a probe
// (probeNow, as judgingNow); this host's where neither could be read (the store then
// judges the date itself when it locks).
func datingNow(ctx context.Context, be backend.Backend) time.Time {
	now, err := seenNow(ctx, be)
	switch {
	case err == nil:
		return now
	case errors.Is(err, ErrNoClockSeen):
		if now, err := probeNow(ctx, be); err == nil {
			return now
		}
	}
	return hostNow()
}
