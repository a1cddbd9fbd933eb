// Package azure is the backend for Azure Blob Storage (block blobs).
package azure

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
)

// Azure writes a part of up to Config.SingleUpload bytes with one Put Blob; a
// larger one (parts go up to 5GiB, one Put Blob to 5000MiB) as blocks of
// Config.BlockSize committed by one Put Block List. Either way the part is one
// blob, created whole or not at all.
const (
	DefaultSingleUpload int64 = 256 << 20
	DefaultBlockSize    int64 = 128 << 20
)

// Config is where the backend stores objects and how it authenticates.
type Config struct {
	Account   string
	Container string
	Prefix    string
	Endpoint  string // the service URL; empty: https://<account>.blob.core.windows.net/
	KeyFile   string // a file holding the account's shared key (--split-storage-azure-key-file)

	SingleUpload int64 // 0: DefaultSingleUpload
	BlockSize    int64 // 0: DefaultBlockSize
}

// Backend stores objects as block blobs in an Azure Storage container,
// authenticated with the account's shared key read from
// --split-storage-azure-key-file. The SDK's own retries are off (see
// the s3 backend).
type Backend struct {
	client       *container.Client
	prefix       string
	desc         string
	singleUpload int64
	blockSize    int64
	service      string // account and endpoint: backends with the same copy server-side
}

// New returns the backend for c.
func New(c Config) (*Backend, error) {
	key, err := os.ReadFile(c.KeyFile)
	if err != nil {
		// The error names the file, never its content.
		return nil, backend.Permanent(fmt.Errorf("reading --split-storage-azure-key-file: %w", err))
	}
	cred, err := container.NewSharedKeyCredential(c.Account, strings.TrimSpace(string(key)))
	if err != nil {
		return nil, backend.Permanent(fmt.Errorf("the key in --split-storage-azure-key-file %s is not a shared key of account %s (it must be base64)",
			c.KeyFile, c.Account))
	}
	endpoint := c.Endpoint
	if endpoint == "" {
		endpoint = fmt.Sprintf("https://%s.blob.core.windows.net/", c.Account)
	}
	containerURL := strings.TrimRight(endpoint, "/") + "/" + c.Container
	client, err := container.NewClientWithSharedKeyCredential(containerURL, cred, &container.ClientOptions{
		ClientOptions: azcore.ClientOptions{
			Retry:     policy.RetryOptions{MaxRetries: -1}, // one try: the retrying wrapper retries
			Transport: backend.NewHTTPClient(listing),
		},
	})
	if err != nil {
		return nil, backend.Permanent(fmt.Errorf("creating Azure client for %s: %w", containerURL, err))
	}
	b := &Backend{client: client, prefix: backend.NormPrefix(c.Prefix), singleUpload: c.SingleUpload, blockSize: c.BlockSize,
		service: c.Account + "|" + strings.TrimRight(endpoint, "/")}
	if b.singleUpload <= 0 {
		b.singleUpload = DefaultSingleUpload
	}
	if b.blockSize <= 0 {
		b.blockSize = DefaultBlockSize
	}
	b.desc = fmt.Sprintf("azure:%s/%s/%s", c.Account, c.Container, b.prefix)
	return b, nil
}

func (b *Backend) String() string { return b.desc }
func (b *Backend) Close() error   { return nil }

// azureErr maps the service's errors onto the backend package's: a missing blob is
// backend.ErrNotExist, a failed if-none-match backend.ErrExists, a missing container or a
// refused key permanent, throttling and 5xx transient.
func azureErr(err error) error {
	if err == nil {
		return nil
	}
	switch {
	case bloberror.HasCode(err, bloberror.BlobNotFound, bloberror.ResourceNotFound):
		return fmt.Errorf("%w: %v", backend.ErrNotExist, err)
	case bloberror.HasCode(err, bloberror.BlobAlreadyExists, bloberror.ConditionNotMet):
		return fmt.Errorf("%w: %v", backend.ErrExists, err)
	case bloberror.HasCode(err, bloberror.AuthenticationFailed, bloberror.AuthorizationFailure, bloberror.InsufficientAccountPermissions,
		bloberror.AccountIsDisabled):
		return backend.Denied(err)
	case bloberror.HasCode(err, bloberror.ContainerNotFound):
		return backend.Permanent(err)
	}
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		switch code := re.StatusCode; {
		case code == http.StatusNotFound:
			return fmt.Errorf("%w: %v", backend.ErrNotExist, err)
		case code == http.StatusPreconditionFailed:
			// If-None-Match: * on a blob that exists (a 409 without the
			// BlobAlreadyExists code is a lease or state conflict: permanent).
			return fmt.Errorf("%w: %v", backend.ErrExists, err)
		case backend.DeniedStatus(code):
			return backend.Denied(err)
		case backend.RetryableStatus(code):
			return backend.Transient(err)
		default:
			return backend.Permanent(err)
		}
	}
	return err
}

func (b *Backend) Put(ctx context.Context, key string, r io.ReadSeeker, size int64, opts backend.PutOptions) error {
	bb := b.client.NewBlockBlobClient(b.prefix + key)
	var cond *blob.AccessConditions
	if opts.IfNotExists {
		etagAny := azcore.ETagAny
		cond = &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: &etagAny}}
	}
	hold, mode, until := lockUpload(opts.Lock)
	if size <= b.singleUpload {
		_, err := bb.Upload(ctx, nopSeekCloser{r}, &blockblob.UploadOptions{AccessConditions: cond,
			LegalHold: hold, ImmutabilityPolicyMode: mode, ImmutabilityPolicyExpiryTime: until})
		return azureErr(err)
	}
	var ids []string
	for off, i := int64(0), 0; off < size; off, i = off+b.blockSize, i+1 {
		id := base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "part-block-%06d", i))
		sec := &seekSection{r: r, base: off, size: min(b.blockSize, size-off)}
		if _, err := bb.StageBlock(ctx, id, sec, nil); err != nil {
			return azureErr(err)
		}
		ids = append(ids, id)
	}
	_, err := bb.CommitBlockList(ctx, ids, &blockblob.CommitBlockListOptions{AccessConditions: cond,
		LegalHold: hold, ImmutabilityPolicyMode: mode, ImmutabilityPolicyExpiryTime: until})
	return azureErr(err)
}

func (b *Backend) Get(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	if length == 0 {
		return io.NopCloser(strings.NewReader("")), nil
	}
	rng := blob.HTTPRange{Offset: offset}
	if length > 0 {
		rng.Count = length
	}
	resp, err := b.client.NewBlobClient(b.prefix+key).DownloadStream(ctx, &blob.DownloadStreamOptions{Range: rng})
	if err != nil {
		return nil, azureErr(err)
	}
	return resp.Body, nil
}

func (b *Backend) Stat(ctx context.Context, key string) (backend.ObjectInfo, error) {
	props, err := b.client.NewBlobClient(b.prefix+key).GetProperties(ctx, nil)
	if err != nil {
		return backend.ObjectInfo{}, azureErr(err)
	}
	var size int64
	if props.ContentLength != nil {
		size = *props.ContentLength
	}
	var modified time.Time
	if props.LastModified != nil {
		modified = *props.LastModified
	}
	return backend.ObjectInfo{Key: key, Size: size, Modified: modified}, nil
}

func (b *Backend) List(ctx context.Context, prefix string, dirs bool) ([]backend.ObjectInfo, error) {
	full := b.prefix + prefix
	var out []backend.ObjectInfo
	add := func(name *string, props *container.BlobProperties, dir bool) {
		if name == nil {
			return
		}
		o := backend.ObjectInfo{Key: strings.TrimPrefix(*name, b.prefix), Dir: dir}
		if props != nil && props.ContentLength != nil {
			o.Size = *props.ContentLength
		}
		if props != nil && props.LastModified != nil {
			o.Modified = *props.LastModified
		}
		out = append(out, o)
	}
	var err error
	if dirs {
		err = eachPage(ctx, b.client.NewListBlobsHierarchyPager("/", &container.ListBlobsHierarchyOptions{Prefix: &full}),
			func(page container.ListBlobsHierarchyResponse) {
				for _, it := range page.Segment.BlobItems {
					add(it.Name, it.Properties, false)
				}
				for _, bp := range page.Segment.BlobPrefixes {
					add(bp.Name, nil, true)
				}
			})
	} else {
		err = eachPage(ctx, b.client.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: &full}),
			func(page container.ListBlobsFlatResponse) {
				for _, it := range page.Segment.BlobItems {
					add(it.Name, it.Properties, false)
				}
			})
	}
	if err != nil {
		return nil, azureErr(err)
	}
	backend.SortInfos(out)
	return out, nil
}

// eachPage calls fn with every page of a listing.
func eachPage[T any](ctx context.Context, p *runtime.Pager[T], fn func(T)) error {
	for p.More() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return err
		}
		backend.Progress(ctx)
		fn(page)
	}
	return nil
}

func (b *Backend) Delete(ctx context.Context, key string) error {
	_, err := b.client.NewBlobClient(b.prefix+key).Delete(ctx, nil)
	err = azureErr(err)
	if errors.Is(err, backend.ErrNotExist) {
		return nil
	}
	return err
}

// nopSeekCloser is the io.ReadSeekCloser the SDK takes, over a part's reader
// that the caller owns.
type nopSeekCloser struct{ io.ReadSeeker }

func (nopSeekCloser) Close() error { return nil }

// seekSection is the bytes [base, base+size) of r as an io.ReadSeekCloser; it
// seeks r before every read, so sections of one reader can be sent one after
// another.
type seekSection struct {
	r               io.ReadSeeker
	base, size, pos int64
}

func (s *seekSection) Read(p []byte) (int, error) {
	if s.pos >= s.size {
		return 0, io.EOF
	}
	if _, err := s.r.Seek(s.base+s.pos, io.SeekStart); err != nil {
		return 0, err
	}
	p = p[:min(int64(len(p)), s.size-s.pos)]
	n, err := s.r.Read(p)
	s.pos += int64(n)
	if err == io.EOF && s.pos < s.size {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

func (s *seekSection) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		off += s.pos
	case io.SeekEnd:
		off += s.size
	default:
		return 0, fmt.Errorf("seekSection: bad whence %d", whence)
	}
	if off < 0 {
		return 0, errors.New("seekSection: negative position")
	}
	s.pos = off
	return off, nil
}

func (s *seekSection) Close() error { return nil }

// listing says which requests list blobs (billed as list operations).
func listing(r *http.Request) bool {
	return r.Method == http.MethodGet && r.URL.Query().Get("comp") == "list"
}
