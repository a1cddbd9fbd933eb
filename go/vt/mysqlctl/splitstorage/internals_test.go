package splitstorage

import (
	"context"
	"time"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
)

// RawBackendForTest returns the storage's backend without the retrying wrapper.
func (s *Storage) RawBackendForTest(ctx context.Context) (backend.Backend, error) {
	if _, err := s.env(ctx); err != nil {
		return nil, err
	}
	return s.base, nil
}

// ReadBudgetHeldForTest reports the bytes of the read budget borrowed now.
func (s *Storage) ReadBudgetHeldForTest(ctx context.Context) int64 {
	e, _ := s.env(ctx)
	return e.budget.held.Load()
}

// SpoolForTest reports the spool's bytes promised and on disk now.
func (s *Storage) SpoolForTest(ctx context.Context) (reserved, live int64) {
	e, _ := s.env(ctx)
	e.spool.mu.Lock()
	defer e.spool.mu.Unlock()
	return e.spool.reserved, e.spool.live.Load()
}

// SetFreeSpaceForTest makes the spool see free bytes in every directory,
// on a file system of no size (nothing kept), until the test ends.
func SetFreeSpaceForTest(t interface{ Cleanup(func()) }, free int64) {
	old := spaceOf
	spaceOf = func(string) (int64, int64, error) { return free, 0, nil }
	t.Cleanup(func() { spaceOf = old })
}

// RetryingBackendForTest returns the storage's backend with the retrying wrapper.
func (s *Storage) RetryingBackendForTest(ctx context.Context) (backend.Backend, error) {
	e, err := s.env(ctx)
	if err != nil {
		return nil, err
	}
	return e.be, nil
}

// SpoolPlaceForTest is where c's parts wait, and whether uploads link them.
func SpoolPlaceForTest(c Config) (dir string, linked bool) {
	p := c.spoolPlace()
	return p.dir, p.linked
}

// ChangedDirForTest is changedDir: which backup directory a write of key
// changes for the fleet view.
func ChangedDirForTest(key string) (string, bool) { return changedDir(key) }

// SummariesHeldForTest is how many fleet summaries the Storage keeps read.
func (s *Storage) SummariesHeldForTest() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.summaries)
}

// SetHostClockOffForTest sets this host's clock off by off, as the
// storage sees it, until the test ends (the store's clock, read from its
// answers, is left as it is).
func SetHostClockOffForTest(t interface{ Cleanup(func()) }, off time.Duration) {
	old := hostNow
	hostNow = func() time.Time { return time.Now().Add(off) }
	t.Cleanup(func() { hostNow = old })
}
