// Package backend is the small object-store interface the split storage
// writes through, and what its implementations share: the errors every one
// maps its service's errors onto, and which of them a retry may fix.
// Implementations live in the sub-packages (local, s3, gcs, azure);
// behaviour (retries) is added by wrapping one (retry).
package backend

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/vtfifo/vtfifo/go/internal/unreadable"
)

// Backend is the small object-store interface every store implements. Keys are
// '/'-separated; backends map them onto paths or object names under their root
// or prefix. Behaviour (retries, stats) is added by wrapping, not by the backends.
type Backend interface {
	// Put stores size bytes read from r under key. r is read from its start; a
	// retry seeks it back to 0. opts.CRC32C is sent to stores that verify it.
	// With opts.IfNotExists the write fails with ErrExists when key exists.
	Put(ctx context.Context, key string, r io.ReadSeeker, size int64, opts PutOptions) error
	// Get opens key from offset; length < 0 reads to the end. A missing key gives ErrNotExist.
	Get(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error)
	// Stat returns the size of key, or ErrNotExist.
	Stat(ctx context.Context, key string) (ObjectInfo, error)
	// List returns the objects under prefix (recursively), sorted by key. With
	// dirs, it returns only the direct children: objects, and sub-prefixes as
	// entries with Dir set and a Key ending in '/'.
	List(ctx context.Context, prefix string, dirs bool) ([]ObjectInfo, error)
	// Delete removes key; a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// String describes the backend for logs and errors (never with secrets).
	String() string
	Close() error
}

// PutOptions are the per-object options of Backend.Put.
type PutOptions struct {
	IfNotExists bool
	CRC32C      uint32
	// Moving says the source is removed once copied (ServerCopier): a
	// copy that shares the source's storage (a hard link) is then as good
	// as one of its own, and is made only then.
	Moving bool
	// Lock, when not zero, stores the object locked in the same request
	// (Locker; only a Locker is given one).
	Lock Lock
}

// A FileBody is a Put body that is the whole of a file without a name that
// nothing writes any more (a sealed spool part, see splitstorage). A backend
// that keeps objects as files on the same file system may give that file a
// name instead of copying its bytes (local does).
type FileBody interface {
	io.ReadSeeker
	BodyFile() *os.File
}

// A WatchedBody wraps a Put body only to watch its reads (retry's watchdog):
// BodyFile looks through it. A wrapper that must see every byte (a rate
// limit) does not implement it, and the body is then copied.
type WatchedBody interface {
	Unwrap() io.ReadSeeker
}

// BodyFile returns the file behind a Put body, or nil when there is none.
func BodyFile(r io.ReadSeeker) *os.File {
	for {
		switch b := r.(type) {
		case FileBody:
			return b.BodyFile()
		case WatchedBody:
			r = b.Unwrap()
		default:
			return nil
		}
	}
}

// ObjectInfo is one entry of Backend.List / Backend.Stat.
type ObjectInfo struct {
	Key  string
	Size int64
	Dir  bool
	// Modified is when the object was last written, as the store reports
	// it (zero for a directory): what the storage judges an object's age
	// by, never a name or a document inside it.
	Modified time.Time
}

var (
	// ErrNotExist is returned (wrapped) for a missing object.
	ErrNotExist = errors.New("object does not exist")
	// ErrExists is returned (wrapped) by Put with IfNotExists when the object exists.
	ErrExists = errors.New("object already exists")
	// ErrPermanent marks an error that no retry can fix.
	ErrPermanent = errors.New("permanent error")
)

type permanentError struct{ err error }

func (p permanentError) Error() string        { return p.err.Error() }
func (p permanentError) Unwrap() error        { return p.err }
func (p permanentError) Is(target error) bool { return target == ErrPermanent }

// Permanent marks err as not retryable.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanentError{err}
}

// Denied marks err, a store's refusal of these credentials or this
// principal (401, 403, AccessDenied), as permanent and as access, never
// damage (go/internal/unreadable).
func Denied(err error) error {
	if err == nil {
		return nil
	}
	return unreadable.Error(Permanent(err))
}

// DeniedStatus says whether an HTTP status refuses the request's
// credentials or principal.
func DeniedStatus(code int) bool { return code == 401 || code == 403 }

type transientError struct{ err error }

func (p transientError) Error() string { return p.err.Error() }
func (p transientError) Unwrap() error { return p.err }

// Transient marks err as retryable whatever it wraps.
func Transient(err error) error {
	if err == nil {
		return nil
	}
	return transientError{err}
}

// MarkedTransient says whether err was marked with Transient.
func MarkedTransient(err error) bool {
	var te transientError
	return errors.As(err, &te)
}

// HTTPStatusError is what the store SDKs' errors have in common.
type HTTPStatusError interface{ HTTPStatusCode() int }

// errorCoder matches smithy.APIError.
type errorCoder interface{ ErrorCode() string }

// IsTransient says whether a request that failed with err may succeed if tried
// again: 5xx, throttling (429, SlowDown), request timeouts, connection resets,
// cut bodies and network errors are; authentication, missing buckets or
// objects, failed preconditions and other 4xx are not.
func IsTransient(err error) bool {
	if err == nil {
		return false
	}
	var te transientError
	if errors.As(err, &te) {
		return true
	}
	if errors.Is(err, ErrPermanent) || errors.Is(err, ErrNotExist) || errors.Is(err, ErrExists) || errors.Is(err, context.Canceled) {
		return false
	}
	var ec errorCoder
	if errors.As(err, &ec) {
		switch ec.ErrorCode() {
		case "SlowDown", "Throttling", "ThrottlingException", "RequestTimeout", "RequestTimeTooSkewed",
			"InternalError", "ServiceUnavailable", "RequestLimitExceeded", "BadDigest", "XAmzContentSHA256Mismatch",
			"IncompleteBody":
			return true
		case "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "NoSuchBucket", "AllAccessDisabled",
			"InvalidBucketName", "PreconditionFailed":
			return false
		}
	}
	var hs HTTPStatusError
	if errors.As(err, &hs) {
		if code := hs.HTTPStatusCode(); code != 0 {
			return RetryableStatus(code)
		}
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return true
	}
	// Unknown errors from a network store: retry; the attempt limit bounds it.
	return true
}

// RetryableStatus says whether a request answered with HTTP status code may
// succeed if tried again: timeouts, throttling and server errors.
func RetryableStatus(code int) bool {
	switch {
	case code == 408 || code == 429 || code >= 500:
		return true
	case code >= 400:
		return false
	}
	return true
}

// SortInfos sorts o by key, as List returns it.
func SortInfos(o []ObjectInfo) { sort.Slice(o, func(i, j int) bool { return o[i].Key < o[j].Key }) }

// ServerCopier is a Backend that copies an object of another Backend to the
// same key without the bytes passing through this process, where both are on
// one service (one S3 endpoint, one GCS service, one file system).
type ServerCopier interface {
	// CopyFrom copies src's key here. ok is false, with nothing done, when
	// src is not one it can copy from (another service, an object larger
	// than one copy request takes): the caller streams it instead.
	CopyFrom(ctx context.Context, src Backend, key string, size int64, opts PutOptions) (ok bool, err error)
}

// Unwrapper is a wrapper around a Backend (retry): server-side copies look
// through it for the backend that holds the objects.
type Unwrapper interface{ Unwrap() Backend }

// Innermost returns b with every wrapper taken off.
func Innermost(b Backend) Backend {
	for {
		u, ok := b.(Unwrapper)
		if !ok {
			return b
		}
		b = u.Unwrap()
	}
}

// NewHTTPClient returns a client with enough idle connections for parallel
// parts, for the network backends; it counts every request it sends into
// the Meter of the request's context (meter.go), listing says which of the
// store's requests list objects, and gives each answer's Date to the
// context's ClockWatch (storeclock.go).
func NewHTTPClient(listing func(*http.Request) bool) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 256
	t.MaxIdleConnsPerHost = 64
	t.DisableCompression = true
	return &http.Client{Transport: countingTransport{clockTransport{t}, listing}}
}

// NormPrefix turns a configured prefix into "" or "a/b/": keys are appended to it.
func NormPrefix(p string) string {
	p = strings.Trim(p, "/")
	if p == "" {
		return ""
	}
	return p + "/"
}
