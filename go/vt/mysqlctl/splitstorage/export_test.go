package splitstorage

import "context"

// RawBackendForTest returns the storage's backend without the retrying wrapper.
func (s *Storage) RawBackendForTest(ctx context.Context) (Backend, error) {
	e, err := s.env(ctx)
	if err != nil {
		return nil, err
	}
	return e.be.Backend, nil
}

// PoolForTest reports the budget and chunk size of the storage's memory pool.
func (s *Storage) PoolForTest(ctx context.Context) (budget, chunk int64) {
	e, _ := s.env(ctx)
	return e.pool.budget, e.pool.chunkSize
}

// PoolHeldForTest reports the bytes of the memory budget reserved now.
func (s *Storage) PoolHeldForTest(ctx context.Context) int64 {
	e, _ := s.env(ctx)
	return e.pool.held.Load()
}

// DropIdlePoolsForTest frees the chunks every idle pool keeps for reuse.
func DropIdlePoolsForTest() {
	poolsMu.Lock()
	defer poolsMu.Unlock()
	for _, p := range pools {
		p.dropIdle()
	}
}

// ForgetTakenCredentialsForTest undoes TakeEnvCredentials.
func ForgetTakenCredentialsForTest() {
	envCreds.Lock()
	defer envCreds.Unlock()
	envCreds.creds = nil
}

// RetryingBackendForTest returns the storage's backend with the retrying wrapper.
func (s *Storage) RetryingBackendForTest(ctx context.Context) (Backend, error) {
	e, err := s.env(ctx)
	if err != nil {
		return nil, err
	}
	return e.be, nil
}

// SetAzureBlocksForTest lowers the size above which the Azure backend writes a
// part as staged blocks, and the block size, until the test ends.
func SetAzureBlocksForTest(t interface{ Cleanup(func()) }, single, block int64) {
	oldSingle, oldBlock := azureSingleUpload, azureBlockSize
	azureSingleUpload, azureBlockSize = single, block
	t.Cleanup(func() { azureSingleUpload, azureBlockSize = oldSingle, oldBlock })
}
