package backend

import "context"

// A request that moves in steps (a listing, page after page) says so
// through its context, so that a watchdog over it (retry) tells a long
// request that moves from one that is stalled: a listing of a million keys
// may take longer than any one request may wait without a byte.

type progressKey struct{}

// WithProgress returns ctx carrying kick, which Progress calls.
func WithProgress(ctx context.Context, kick func()) context.Context {
	return context.WithValue(ctx, progressKey{}, kick)
}

// Progress says that the request ctx belongs to moved (a page of a
// listing came back); nothing when no watchdog asked.
func Progress(ctx context.Context) {
	if kick, ok := ctx.Value(progressKey{}).(func()); ok {
		kick()
	}
}
