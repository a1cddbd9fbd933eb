// Package gcs is the backend for Google Cloud Storage.
package gcs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync/atomic"

	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"
	htransport "google.golang.org/api/transport/http"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
)

// Backend stores objects in a Google Cloud Storage bucket. Credentials come
// from Application Default Credentials; STORAGE_EMULATOR_HOST points the client
// at an emulator. The library's retries are off (see the s3 backend), and so is its
// reader's own reopen of a broken body (see oneRequestPerGet).
type Backend struct {
	client *storage.Client
	bucket *storage.BucketHandle
	prefix string
	desc   string
}

// Config is where the backend stores objects.
type Config struct {
	Bucket string
	Prefix string
}

// New returns the backend for c.
func New(ctx context.Context, c Config) (*Backend, error) {
	hc, err := newGCSHTTPClient(ctx)
	if err != nil {
		return nil, backend.Permanent(fmt.Errorf("creating GCS client: %w", err))
	}
	client, err := storage.NewClient(ctx, option.WithHTTPClient(hc))
	if err != nil {
		return nil, backend.Permanent(fmt.Errorf("creating GCS client: %w", err))
	}
	client.SetRetry(storage.WithPolicy(storage.RetryNever))
	b := &Backend{client: client, bucket: client.Bucket(c.Bucket), prefix: backend.NormPrefix(c.Prefix)}
	b.desc = fmt.Sprintf("gcs:%s/%s", c.Bucket, b.prefix)
	return b, nil
}

// newGCSHTTPClient is the client storage.NewClient would build (Application
// Default Credentials and the storage scopes, or no authentication against an
// emulator) over our transport wrapped in oneRequestPerGet.
func newGCSHTTPClient(ctx context.Context) (*http.Client, error) {
	base := oneRequestPerGet{backend.NewHTTPClient(listing).Transport}
	if os.Getenv("STORAGE_EMULATOR_HOST") != "" {
		return &http.Client{Transport: base}, nil
	}
	t, err := htransport.NewTransport(ctx, base,
		option.WithScopes(storage.ScopeFullControl, "https://www.googleapis.com/auth/cloud-platform"))
	if err != nil {
		return nil, err
	}
	return &http.Client{Transport: t}, nil
}

// getAttempt marks the context of one backend.Backend.Get: the requests made under it.
type getAttempt struct{}

// errReopenRefused is what the GCS library's reader gets when it tries to
// reopen a body that broke mid-way.
var errReopenRefused = errors.New("a second request for one read (the GCS library's reopen) is refused: the retrying wrapper resumes it")

// oneRequestPerGet lets one request through per Get. The GCS library's reader
// reopens a body that breaks mid-way by itself, whatever the retry policy, as
// often as it breaks: a second retry layer that nobody counts, logs or bounds.
// Refused, the break reaches the retrying wrapper, which resumes at the offset
// reached with its backoff, its attempt limit and its log line, as on S3.
type oneRequestPerGet struct{ http.RoundTripper }

func (t oneRequestPerGet) RoundTrip(req *http.Request) (*http.Response, error) {
	if n, ok := req.Context().Value(getAttempt{}).(*atomic.Int32); ok && n.Add(1) > 1 {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, errReopenRefused
	}
	return t.RoundTripper.RoundTrip(req)
}

func (b *Backend) String() string { return b.desc }
func (b *Backend) Close() error   { return b.client.Close() }

func googleStatus(err error) int {
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		return ge.Code
	}
	return 0
}

func gcsErr(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, storage.ErrObjectNotExist) {
		return fmt.Errorf("%w: %v", backend.ErrNotExist, err)
	}
	if errors.Is(err, storage.ErrBucketNotExist) {
		return backend.Permanent(err)
	}
	switch code := googleStatus(err); {
	case code == 404:
		return fmt.Errorf("%w: %v", backend.ErrNotExist, err)
	case code == 412:
		return fmt.Errorf("%w: %v", backend.ErrExists, err)
	case code == 0:
		return err
	case backend.DeniedStatus(code):
		return backend.Denied(err)
	case backend.RetryableStatus(code):
		return backend.Transient(err)
	default:
		return backend.Permanent(err)
	}
}

func (b *Backend) Put(ctx context.Context, key string, r io.ReadSeeker, size int64, opts backend.PutOptions) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	obj := b.bucket.Object(b.prefix + key)
	if opts.IfNotExists {
		obj = obj.If(storage.Conditions{DoesNotExist: true})
	}
	w := obj.NewWriter(ctx)
	w.ChunkSize = 0 // one request, no library buffer: the part is already in memory
	w.SendCRC32C = true
	w.CRC32C = opts.CRC32C
	w.ContentType = "application/octet-stream"
	lockWriter(w, opts.Lock)
	if _, err := io.Copy(w, struct{ io.Reader }{r}); err != nil {
		cancel()
		w.Close()
		return gcsErr(err)
	}
	return gcsErr(w.Close())
}

func (b *Backend) Get(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	if length == 0 {
		return io.NopCloser(strings.NewReader("")), nil
	}
	ctx = context.WithValue(ctx, getAttempt{}, new(atomic.Int32))
	r, err := b.bucket.Object(b.prefix+key).ReadCompressed(true).NewRangeReader(ctx, offset, length)
	if err != nil {
		return nil, gcsErr(err)
	}
	return r, nil
}

func (b *Backend) Stat(ctx context.Context, key string) (backend.ObjectInfo, error) {
	a, err := b.bucket.Object(b.prefix + key).Attrs(ctx)
	if err != nil {
		return backend.ObjectInfo{}, gcsErr(err)
	}
	return backend.ObjectInfo{Key: key, Size: a.Size, Modified: a.Updated}, nil
}

func (b *Backend) List(ctx context.Context, prefix string, dirs bool) ([]backend.ObjectInfo, error) {
	q := &storage.Query{Prefix: b.prefix + prefix}
	if dirs {
		q.Delimiter = "/"
	}
	_ = q.SetAttrSelection([]string{"Name", "Size", "Prefix", "Updated"})
	it := b.bucket.Objects(ctx, q)
	var out []backend.ObjectInfo
	for {
		a, err := it.Next()
		if err == iterator.Done {
			break
		}
		if err != nil {
			return nil, gcsErr(err)
		}
		backend.Progress(ctx) // the iterator hides its pages: each entry
		if a.Prefix != "" {
			out = append(out, backend.ObjectInfo{Key: strings.TrimPrefix(a.Prefix, b.prefix), Dir: true})
			continue
		}
		out = append(out, backend.ObjectInfo{Key: strings.TrimPrefix(a.Name, b.prefix), Size: a.Size, Modified: a.Updated})
	}
	backend.SortInfos(out)
	return out, nil
}

func (b *Backend) Delete(ctx context.Context, key string) error {
	err := gcsErr(b.bucket.Object(b.prefix + key).Delete(ctx))
	if errors.Is(err, backend.ErrNotExist) {
		return nil
	}
	return err
}

// listing says which requests list objects (class A): GET .../b/<bucket>/o.
func listing(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/o")
}
