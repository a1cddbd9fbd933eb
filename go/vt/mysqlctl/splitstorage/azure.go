package splitstorage

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// Azure writes a part of up to azureSingleUpload bytes with one Put Blob; a
// larger one (parts go up to 5GiB, one Put Blob to 5000MiB) as blocks of
// azureBlockSize committed by one Put Block List. Either way the part is one
// blob, created whole or not at all.
var (
	azureSingleUpload int64 = 256 << 20
	azureBlockSize    int64 = 128 << 20
)

// azureBackend stores objects as block blobs in an Azure Storage container,
// authenticated with the account's shared key read from
// --split-storage-azure-key-file. The SDK's own retries are off (see
// s3Backend).
type azureBackend struct {
	client *container.Client
	prefix string
	desc   string
}

func newAzureBackend(c Config) (*azureBackend, error) {
	key, err := os.ReadFile(c.AzureKeyFile)
	if err != nil {
		// The error names the file, never its content.
		return nil, permanent(fmt.Errorf("reading --split-storage-azure-key-file: %w", err))
	}
	cred, err := container.NewSharedKeyCredential(c.AzureAccount, strings.TrimSpace(string(key)))
	if err != nil {
		return nil, permanent(fmt.Errorf("the key in --split-storage-azure-key-file %s is not a shared key of account %s (it must be base64)", c.AzureKeyFile, c.AzureAccount))
	}
	endpoint := c.AzureEndpoint
	if endpoint == "" {
		endpoint = fmt.Sprintf("https://%s.blob.core.windows.net/", c.AzureAccount)
	}
	containerURL := strings.TrimRight(endpoint, "/") + "/" + c.AzureContainer
	client, err := container.NewClientWithSharedKeyCredential(containerURL, cred, &container.ClientOptions{
		ClientOptions: azcore.ClientOptions{
			Retry:     policy.RetryOptions{MaxRetries: -1}, // one try: the retrying wrapper retries
			Transport: newHTTPClient(),
		},
	})
	if err != nil {
		return nil, permanent(fmt.Errorf("creating Azure client for %s: %w", containerURL, err))
	}
	b := &azureBackend{client: client, prefix: normPrefix(c.AzurePrefix)}
	b.desc = fmt.Sprintf("azure:%s/%s/%s", c.AzureAccount, c.AzureContainer, b.prefix)
	return b, nil
}

func (b *azureBackend) String() string { return b.desc }
func (b *azureBackend) Close() error   { return nil }

// azureErr maps the service's errors onto the Backend's: a missing blob is
// ErrNotExist, a failed if-none-match ErrExists, a missing container or a
// refused key permanent, throttling and 5xx transient.
func azureErr(err error) error {
	if err == nil {
		return nil
	}
	switch {
	case bloberror.HasCode(err, bloberror.BlobNotFound, bloberror.ResourceNotFound):
		return fmt.Errorf("%w: %v", ErrNotExist, err)
	case bloberror.HasCode(err, bloberror.BlobAlreadyExists, bloberror.ConditionNotMet):
		return fmt.Errorf("%w: %v", ErrExists, err)
	case bloberror.HasCode(err, bloberror.ContainerNotFound, bloberror.AuthenticationFailed, bloberror.AuthorizationFailure,
		bloberror.InsufficientAccountPermissions, bloberror.AccountIsDisabled):
		return permanent(err)
	}
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		switch code := re.StatusCode; {
		case code == http.StatusNotFound:
			return fmt.Errorf("%w: %v", ErrNotExist, err)
		case code == http.StatusPreconditionFailed:
			// If-None-Match: * on a blob that exists (a 409 without the
			// BlobAlreadyExists code is a lease or state conflict: permanent).
			return fmt.Errorf("%w: %v", ErrExists, err)
		case retryableStatus(code):
			return transient(err)
		default:
			return permanent(err)
		}
	}
	return err
}

func (b *azureBackend) Put(ctx context.Context, key string, r io.ReadSeeker, size int64, opts PutOptions) error {
	bb := b.client.NewBlockBlobClient(b.prefix + key)
	var cond *blob.AccessConditions
	if opts.IfNotExists {
		etagAny := azcore.ETagAny
		cond = &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: &etagAny}}
	}
	if size <= azureSingleUpload {
		_, err := bb.Upload(ctx, nopSeekCloser{r}, &blockblob.UploadOptions{AccessConditions: cond})
		return azureErr(err)
	}
	var ids []string
	for off, i := int64(0), 0; off < size; off, i = off+azureBlockSize, i+1 {
		id := base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "part-block-%06d", i))
		sec := &seekSection{r: r, base: off, size: min(azureBlockSize, size-off)}
		if _, err := bb.StageBlock(ctx, id, sec, nil); err != nil {
			return azureErr(err)
		}
		ids = append(ids, id)
	}
	_, err := bb.CommitBlockList(ctx, ids, &blockblob.CommitBlockListOptions{AccessConditions: cond})
	return azureErr(err)
}

func (b *azureBackend) Get(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
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

func (b *azureBackend) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	props, err := b.client.NewBlobClient(b.prefix+key).GetProperties(ctx, nil)
	if err != nil {
		return ObjectInfo{}, azureErr(err)
	}
	var size int64
	if props.ContentLength != nil {
		size = *props.ContentLength
	}
	return ObjectInfo{Key: key, Size: size}, nil
}

func (b *azureBackend) List(ctx context.Context, prefix string, dirs bool) ([]ObjectInfo, error) {
	full := b.prefix + prefix
	var out []ObjectInfo
	add := func(name *string, size *int64, dir bool) {
		if name == nil {
			return
		}
		o := ObjectInfo{Key: strings.TrimPrefix(*name, b.prefix), Dir: dir}
		if size != nil {
			o.Size = *size
		}
		out = append(out, o)
	}
	var err error
	if dirs {
		err = eachPage(ctx, b.client.NewListBlobsHierarchyPager("/", &container.ListBlobsHierarchyOptions{Prefix: &full}),
			func(page container.ListBlobsHierarchyResponse) {
				for _, it := range page.Segment.BlobItems {
					add(it.Name, it.Properties.ContentLength, false)
				}
				for _, bp := range page.Segment.BlobPrefixes {
					add(bp.Name, nil, true)
				}
			})
	} else {
		err = eachPage(ctx, b.client.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: &full}),
			func(page container.ListBlobsFlatResponse) {
				for _, it := range page.Segment.BlobItems {
					add(it.Name, it.Properties.ContentLength, false)
				}
			})
	}
	if err != nil {
		return nil, azureErr(err)
	}
	sortInfos(out)
	return out, nil
}

// eachPage calls fn with every page of a listing.
func eachPage[T any](ctx context.Context, p *runtime.Pager[T], fn func(T)) error {
	for p.More() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return err
		}
		fn(page)
	}
	return nil
}

func (b *azureBackend) Delete(ctx context.Context, key string) error {
	_, err := b.client.NewBlobClient(b.prefix+key).Delete(ctx, nil)
	err = azureErr(err)
	if errors.Is(err, ErrNotExist) {
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
