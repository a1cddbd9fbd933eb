// Package splitstoragetest starts the object stores the split storage is tested
// against (versitygw for S3, fake-gcs-server for GCS, Azurite for Azure, or a
// temp directory) and
// puts a fault-injecting HTTP proxy in front of them. Engine and end-to-end
// tests reuse it: every server comes with a splitstorage.Config, the
// equivalent --split-storage-* flags, and the environment a client needs.
//
// The server binaries are not Go module dependencies (they would upgrade
// modules Vitess uses); `make tools` installs them into <repo>/build/tools.
// VERSITYGW_BIN, FAKE_GCS_BIN and AZURITE_BLOB_BIN override the paths.
package splitstoragetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vtfifo/vtfifo/go/testutil/freeport"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/vtfifo/vtfifo/go/testutil/tier"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/crypt"
)

// Test credentials of the S3 server (not secrets: a throwaway local server).
const (
	S3AccessKey = "splittest"
	S3SecretKey = "splittest-secret"
	Bucket      = "split-test"
)

// Server is one store to test against.
type Server struct {
	// Kind is splitstorage.BackendFile, BackendS3, BackendGCS or BackendAzure.
	Kind string
	// Addr is host:port of the server (empty for file).
	Addr string
	// Config is ready to use with splitstorage.New: backend fields set, small
	// parts (4 MiB), a 64 MiB budget and quick retries. Change what you need.
	Config splitstorage.Config
	// Env is what a client process needs (AWS credentials / STORAGE_EMULATOR_HOST).
	Env map[string]string
	// Dir is the data directory of the server (or the file backend root).
	Dir string
	// S3Client is a client of an S3 server (nil for the others): what a
	// test asks the store itself, around our code.
	S3Client *s3.Client
}

// TestConfig is the base of every Server's Config: small and quick.
func TestConfig() splitstorage.Config {
	c := splitstorage.DefaultConfig()
	c.PartSize = 4 << 20
	c.MemoryBudget = 64 << 20
	c.UploadConcurrency = 4
	c.ReadAhead = 2 << 20
	c.RetryMaxAttempts = 6
	c.RetryInitialBackoff = 10 * time.Millisecond
	c.RetryMaxBackoff = 200 * time.Millisecond
	c.RequestTimeout = 10 * time.Second
	return c
}

// Flags returns the server's Config as flags, plus --backup-storage-implementation=split.
func (s *Server) Flags() []string {
	return append([]string{"--backup-storage-implementation=split"}, s.Config.Args()...)
}

// Environ returns Env as KEY=VALUE lines, for exec.Cmd.Env (append to os.Environ()).
func (s *Server) Environ() []string {
	var out []string
	for k, v := range s.Env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// Setenv sets Env in this process for the rest of the test (the S3 and GCS
// clients read credentials and the emulator host from the environment).
func (s *Server) Setenv(t testing.TB) {
	t.Helper()
	for k, v := range s.Env {
		t.Setenv(k, v)
	}
}

// Local returns a file-backend Server rooted in a fresh temp directory.
func Local(t testing.TB) *Server {
	t.Helper()
	dir := t.TempDir()
	c := TestConfig()
	c.Backend = splitstorage.BackendFile
	c.File.Root = dir
	return &Server{Kind: splitstorage.BackendFile, Config: c, Env: map[string]string{}, Dir: dir}
}

// RepoRoot is the directory holding the module's go.mod.
func RepoRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return "."
	}
	for d := dir; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && bytes.Contains(b, []byte("module github.com/vtfifo/vtfifo")) {
			return d
		}
		if d == filepath.Dir(d) {
			return dir
		}
	}
}

// Binary finds a server binary from env or <repo>/build/tools/<name>; it fails
// the test (it does not skip) when the binary is missing.
func Binary(t testing.TB, envVar, name string) string {
	t.Helper()
	tier.Integration(t, name)
	p := os.Getenv(envVar)
	if p == "" {
		p = filepath.Join(RepoRoot(), "build", "tools", name)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s not found at %s (%v): run `make tools` in the repository root to install it into build/tools, or set %s", name, p, err, envVar)
	}
	return p
}

// serverDirs makes a temp dir for a server's log and files, and its data dir in it.
func serverDirs(t testing.TB) (dir, data string) {
	t.Helper()
	dir = t.TempDir()
	data = filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o750); err != nil {
		t.Fatal(err)
	}
	return dir, data
}

// FreePort returns a free TCP port (go/testutil/freeport).
func FreePort(t testing.TB) int {
	t.Helper()
	p, err := freeport.Get()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// startProcess runs bin with args and env, kills it by PID at cleanup, and waits
// until addr accepts connections.
func startProcess(t testing.TB, name, bin string, args, env []string, addr, logPath string) {
	t.Helper()
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("starting %s: %v", name, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); logf.Close() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return
		}
		select {
		case err := <-exited:
			b, _ := os.ReadFile(logPath)
			t.Fatalf("%s exited before listening on %s: %v\n%s", name, addr, err, b)
		default:
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logPath)
			t.Fatalf("%s did not listen on %s within 30s\n%s", name, addr, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// StartS3 starts versitygw (posix backend in a temp dir) on a free port,
// creates the bucket Bucket, and returns the Server. Credentials are passed
// through the standard AWS environment variables (see Env / Setenv).
func StartS3(t testing.TB) *Server {
	t.Helper()
	return StartS3WithSecret(t, S3SecretKey)
}

// StartS3WithSecret is StartS3 with secret as the S3 secret key (a
// distinctive value a test can look for in logs, errors and stored objects).
func StartS3WithSecret(t testing.TB, secret string) *Server {
	t.Helper()
	return startS3(t, secret, false)
}

// StartS3ObjectLock is StartS3 with a bucket created with S3 Object Lock
// enabled (and so versioned, versitygw keeping old versions under a
// versioning directory): versitygw enforces retention (COMPLIANCE always,
// GOVERNANCE unless a bypass is asked and granted) and legal holds.
func StartS3ObjectLock(t testing.TB) *Server {
	t.Helper()
	return startS3(t, S3SecretKey, true)
}

func startS3(t testing.TB, secret string, objectLock bool) *Server {
	t.Helper()
	bin := Binary(t, "VERSITYGW_BIN", "versitygw")
	dir, data := serverDirs(t)
	addr := fmt.Sprintf("127.0.0.1:%d", FreePort(t))
	args := []string{"--quiet", "--port", addr, "posix", data}
	if objectLock {
		versions := filepath.Join(dir, "versions")
		if err := os.MkdirAll(versions, 0o755); err != nil {
			t.Fatal(err)
		}
		args = []string{"--quiet", "--port", addr, "posix", "--versioning-dir", versions, data}
	}
	startProcess(t, "versitygw", bin, args,
		[]string{"ROOT_ACCESS_KEY=" + S3AccessKey, "ROOT_SECRET_KEY=" + secret}, addr, filepath.Join(dir, "versitygw.log"))
	endpoint := "http://" + addr
	client := s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(S3AccessKey, secret, ""),
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(Bucket), ObjectLockEnabledForBucket: aws.Bool(objectLock)}); err != nil {
		t.Fatalf("creating bucket %s on versitygw: %v", Bucket, err)
	}
	c := TestConfig()
	c.Backend = splitstorage.BackendS3
	c.S3.Endpoint = endpoint
	c.S3.Region = "us-east-1"
	c.S3.Bucket = Bucket
	c.S3.Prefix = "backups"
	c.S3.ForcePathStyle = true
	return &Server{Kind: splitstorage.BackendS3, Addr: addr, Config: c, Dir: data, S3Client: client, Env: map[string]string{
		"AWS_ACCESS_KEY_ID":     S3AccessKey,
		"AWS_SECRET_ACCESS_KEY": secret,
		"AWS_REGION":            "us-east-1",
		// Keep the shared config files of the machine out of the tests.
		"AWS_CONFIG_FILE":             filepath.Join(dir, "no-aws-config"),
		"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "no-aws-credentials"),
		"AWS_EC2_METADATA_DISABLED":   "true",
	}}
}

// StartGCS starts fake-gcs-server (filesystem backend in a temp dir) on a free
// port, creates the bucket Bucket, and returns the Server. The client finds it
// through STORAGE_EMULATOR_HOST (see Env / Setenv), which must equal the
// server's -public-host exactly.
func StartGCS(t testing.TB) *Server {
	t.Helper()
	bin := Binary(t, "FAKE_GCS_BIN", "fake-gcs-server")
	dir, data := serverDirs(t)
	port := FreePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	startProcess(t, "fake-gcs-server", bin, []string{"-scheme", "http", "-host", "127.0.0.1", "-port", strconv.Itoa(port),
		"-backend", "filesystem", "-filesystem-root", data, "-public-host", addr, "-external-url", "http://" + addr, "-log-level", "error"},
		nil, addr, filepath.Join(dir, "fake-gcs-server.log"))
	body := strings.NewReader(`{"name":"` + Bucket + `"}`)
	resp, err := http.Post("http://"+addr+"/storage/v1/b?project=test", "application/json", body)
	if err != nil {
		t.Fatalf("creating bucket %s on fake-gcs-server: %v", Bucket, err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("creating bucket %s on fake-gcs-server: %s", Bucket, resp.Status)
	}
	c := TestConfig()
	c.Backend = splitstorage.BackendGCS
	c.GCS.Bucket = Bucket
	c.GCS.Prefix = "backups"
	return &Server{Kind: splitstorage.BackendGCS, Addr: addr, Config: c, Dir: data, Env: map[string]string{
		"STORAGE_EMULATOR_HOST": addr,
	}}
}

// Azurite's development account (its documented, public key: not a secret).
const (
	AzureAccount   = "devstoreaccount1"
	azureDevKey    = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
	AzureContainer = "split-test"
)

// StartAzure starts Azurite's blob service (npm package azurite, which `make
// tools` installs into build/tools/azurite) on a free port with its data in a
// temp dir, creates the container AzureContainer, and returns the Server; the
// account key is in a file named by Config.Azure.KeyFile.
func StartAzure(t testing.TB) *Server {
	t.Helper()
	bin := Binary(t, "AZURITE_BLOB_BIN", filepath.Join("azurite", "node_modules", ".bin", "azurite-blob"))
	dir, data := serverDirs(t)
	port := FreePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	startProcess(t, "azurite-blob", bin, []string{"--blobHost", "127.0.0.1", "--blobPort", strconv.Itoa(port),
		"--location", data, "--silent", "--skipApiVersionCheck", "--loose", "--disableProductStyleUrl"},
		nil, addr, filepath.Join(dir, "azurite.log"))
	keyFile := filepath.Join(dir, "azure.key")
	if err := os.WriteFile(keyFile, []byte(azureDevKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	endpoint := "http://" + addr + "/" + AzureAccount
	cred, err := container.NewSharedKeyCredential(AzureAccount, azureDevKey)
	if err != nil {
		t.Fatal(err)
	}
	client, err := container.NewClientWithSharedKeyCredential(endpoint+"/"+AzureContainer, cred, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := client.Create(ctx, nil); err != nil {
		t.Fatalf("creating container %s on Azurite: %v", AzureContainer, err)
	}
	c := TestConfig()
	c.Backend = splitstorage.BackendAzure
	c.Azure.Account = AzureAccount
	c.Azure.Container = AzureContainer
	c.Azure.Prefix = "backups"
	c.Azure.Endpoint = endpoint
	c.Azure.KeyFile = keyFile
	return &Server{Kind: splitstorage.BackendAzure, Addr: addr, Config: c, Dir: data, Env: map[string]string{}}
}

// Start starts a Server of the given kind (Kinds).
func Start(t testing.TB, kind string) *Server {
	t.Helper()
	k, ok := kindOf(kind)
	if !ok {
		t.Fatalf("unknown split storage backend %q", kind)
	}
	return k.Start(t)
}

// WithProxy returns a copy of s that talks to the store through p (a
// remote kind: Kinds).
func (s *Server) WithProxy(p *FaultProxy) *Server {
	c := *s
	c.Env = map[string]string{}
	for k, v := range s.Env {
		c.Env[k] = v
	}
	if k, ok := kindOf(s.Kind); ok && k.proxy != nil {
		k.proxy(&c, p)
	}
	c.Addr = p.Addr
	return &c
}

// StartBackend starts a server of kind (as Start) and returns its raw
// backend, for the backend-level suite: environment set, closed at cleanup.
func StartBackend(t *testing.T, kind string) backend.Backend {
	srv := Start(t, kind)
	srv.Setenv(t)
	b, err := splitstorage.OpenBackend(context.Background(), srv.Config)
	if err != nil {
		t.Fatalf("opening the %s backend: %v", kind, err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// KeyFile writes a key file with a new random key for each of ids (the first
// encrypts) in a temporary directory, mode 0400, and returns its path.
func KeyFile(t testing.TB, ids ...string) string {
	t.Helper()
	var doc strings.Builder
	doc.WriteString("# test keys: the first encrypts, all decrypt\n")
	for _, id := range ids {
		line, err := crypt.NewKeyLine(id)
		if err != nil {
			t.Fatal(err)
		}
		doc.WriteString(line + "\n")
	}
	path := filepath.Join(t.TempDir(), "split-keys")
	if err := os.WriteFile(path, []byte(doc.String()), 0o400); err != nil {
		t.Fatal(err)
	}
	return path
}

// Get returns the object at key, read from be directly.
func Get(t testing.TB, be backend.Backend, key string) []byte {
	t.Helper()
	r, err := be.Get(context.Background(), key, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Put stores b at key in be directly, with its CRC32C.
func Put(t testing.TB, be backend.Backend, key string, b []byte) {
	t.Helper()
	if err := be.Put(context.Background(), key, bytes.NewReader(b), int64(len(b)),
		backend.PutOptions{CRC32C: crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli))}); err != nil {
		t.Fatal(err)
	}
}

// Tamper rewrites the part objects of a file of a backup with mutate's
// result and makes its index agree with them (sizes, checksums, and for an
// encrypted file the bytes its frames hold), as someone who can write the
// bucket could: what is left to catch it is the encryption.
func Tamper(t testing.TB, be backend.Backend, dir, name, file string, mutate func(parts [][]byte) [][]byte) {
	t.Helper()
	ctx := context.Background()
	get := func(key string) []byte { return Get(t, be, key) }
	put := func(key string, b []byte) { Put(t, be, key, b) }
	ikey := splitstorage.IndexKey(dir, name, file)
	var idx splitstorage.Index
	if err := json.Unmarshal(get(ikey), &idx); err != nil {
		t.Fatal(err)
	}
	var parts [][]byte
	for i := range idx.Parts {
		parts = append(parts, get(splitstorage.PartKey(dir, name, file, i+1)))
	}
	parts = mutate(parts)
	for i := len(parts); i < len(idx.Parts); i++ {
		if err := be.Delete(ctx, splitstorage.PartKey(dir, name, file, i+1)); err != nil {
			t.Fatal(err)
		}
	}
	idx.Parts, idx.Size = nil, 0
	for i, p := range parts {
		put(splitstorage.PartKey(dir, name, file, i+1), p)
		idx.Parts = append(idx.Parts, splitstorage.PartEntryOf(p, idx.BlockSize))
		idx.Size += int64(len(p))
		if idx.Encryption != "" {
			idx.Size -= (int64(len(p)) + idx.BlockSize - 1) / idx.BlockSize * crypt.Overhead
		}
	}
	doc, err := json.Marshal(idx)
	if err != nil {
		t.Fatal(err)
	}
	put(ikey, doc)
}

// ProxiedBackend starts a server of kind behind a FaultProxy and returns
// the raw backend, through the proxy (environment set, closed at cleanup),
// and the proxy, for tests that assert what was sent.
func ProxiedBackend(t *testing.T, kind string, answer func(p *FaultProxy)) (backend.Backend, *FaultProxy) {
	t.Helper()
	srv := Start(t, kind)
	p := NewFaultProxy(t, srv.Addr)
	if answer != nil {
		answer(p)
	}
	ps := srv.WithProxy(p)
	ps.Setenv(t)
	b, err := splitstorage.OpenBackend(context.Background(), ps.Config)
	if err != nil {
		t.Fatalf("opening the %s backend: %v", kind, err)
	}
	t.Cleanup(func() { b.Close() })
	return b, p
}
