package endtoend

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
	"github.com/vtfifo/vtfifo/test/endtoend/cluster"
)

// plantedSecrets are distinctive secret values; found anywhere they must
// not be, they say which secret leaked.
type plantedSecrets []struct{ name, value string }

func (p plantedSecrets) check(t *testing.T, where string, data []byte) {
	t.Helper()
	for _, s := range p {
		if i := bytes.Index(data, []byte(s.value)); i >= 0 {
			lo, hi := max(i-120, 0), min(i+len(s.value)+40, len(data))
			t.Errorf("%s contains the %s: ...%q...", where, s.name, data[lo:hi])
		}
	}
}

// TestSecretsNeverLeak plants distinctive secrets and looks for them
// everywhere a real cluster writes. Processes: etcd, vtctld, vttablets
// (mysqlctl-started MariaDB, real mariabackup), vtctldclient, fifoverify;
// storage: split on S3 (versitygw).
//
// Planted: the S3 secret key (AWS_SECRET_ACCESS_KEY of every process); GCS
// credentials (GOOGLE_APPLICATION_CREDENTIALS of every process: a service
// account JSON with a real, freshly generated private key); the tablet's
// --db-dba-password (the DBA user is a user with that password, and the tool
// connects as it: the engine hands the password over in MYSQL_PWD); the
// tool's own password in --fifo-backup-backup-flags in three forms at once
// ("--password=A -pB -p C": the tool uses the last, so the backup succeeds
// only if the separate form reaches it); a secret in
// --fifo-backup-prepare-flags ("-p D", read by the restore's --prepare); and
// two backups that must fail: a wrong password, and a mistyped flag that
// mariabackup echoes back with its value ("unknown variable 'pasword=...'").
// Users are created with password hashes, so mysqld never sees a secret.
//
// Looked through: every file under the cluster's directory (every process's
// log and output, vtdataroot with the restored tablet's data, tmp, etcd; the
// harness's "### <command line>" lines are the test's own record of what it
// ran and are skipped), every object in the S3 bucket, every lane of every
// backup decompressed (the tool's xtrabackup_info with its tool_command),
// the MANIFESTs, the failed backups' errors, GetBackups --json, fifoverify's
// output on every backup, and fifoverify's error with GCS credentials that
// the library really loads and signs with (no emulator: the token request
// goes to a local endpoint that refuses it), and with a key that does not
// parse. (With STORAGE_EMULATOR_HOST, as fake-gcs-server needs, the GCS
// client does not read credentials at all.)
func TestSecretsNeverLeak(t *testing.T) {
	paths := discoverBinaries(t)
	fifoverify := filepath.Join(paths.BinDir, "fifoverify")
	if _, err := os.Stat(fifoverify); err != nil {
		t.Fatalf("%v (make build)", err)
	}
	tag := randomTag(t)
	var (
		s3Secret  = "S3SECRET" + tag
		dbaPW     = "DBAPW" + tag
		flagLong  = "FLAGLONG" + tag
		flagShort = "FLAGSHORT" + tag
		flagSep   = "FLAGSEP" + tag // the tool user's real password
		prepPW    = "PREPPW" + tag
		wrongPW   = "WRONGPW" + tag
		typoPW    = "TYPOPW" + tag
		badKey    = "GCSPLANTED" + tag
	)
	gcsKey, keyLine := newServiceAccountKey(t)
	secrets := plantedSecrets{
		{"S3 secret key (AWS_SECRET_ACCESS_KEY)", s3Secret},
		{"DBA password (--db-dba-password)", dbaPW},
		{"tool password, --password= form", flagLong},
		{"tool password, -p form", flagShort},
		{"tool password, separate -p form", flagSep},
		{"--fifo-backup-prepare-flags secret", prepPW},
		{"wrong tool password", wrongPW},
		{"mistyped password flag's value", typoPW},
		{"GCS private key (a line of its PEM)", keyLine},
		{"GCS private key that does not parse", badKey},
	}

	// A token endpoint that refuses every key: the GCS library's token
	// requests come here instead of Google.
	var tokenRequests atomic.Int64
	tokenSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tokenRequests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":"invalid_grant","error_description":"the test token endpoint refuses every key"}`)
	}))
	defer tokenSrv.Close()

	var srv *splitstoragetest.Server
	var credFile, badCredFile string
	c := startCluster(t, cluster.Options{PrepareStorage: func(c *cluster.Cluster) (cluster.Storage, error) {
		srv = splitstoragetest.StartS3WithSecret(t, s3Secret)
		srv.Setenv(t) // for reading the bucket from this process
		srv.Config.PartSize = 1 << 20
		srv.Config.MemoryBudget = 16 << 20
		credFile = filepath.Join(c.Root, "gcs-credentials.json")
		badCredFile = filepath.Join(c.Root, "gcs-credentials-bad.json")
		if err := os.WriteFile(credFile, serviceAccountJSON(gcsKey, tokenSrv.URL), 0o644); err != nil {
			return cluster.Storage{}, err
		}
		bad := "-----BEGIN PRIVATE KEY-----\n" + badKey + "\n-----END PRIVATE KEY-----\n"
		if err := os.WriteFile(badCredFile, serviceAccountJSON(bad, tokenSrv.URL), 0o644); err != nil {
			return cluster.Storage{}, err
		}
		env := append(srv.Environ(), "GOOGLE_APPLICATION_CREDENTIALS="+credFile)
		return cluster.Storage{Name: "split-s3", Flags: srv.Flags(), Env: env}, nil
	}})
	ctx := ctxFor(t, 30*time.Minute)
	var outputs []string // what commands printed, besides their logs

	dbaArgs := []string{"--db-dba-user=vt_secret_dba", "--db-dba-password=" + dbaPW}
	toolArgs := func(flags string) []string {
		return append(append([]string{}, dbaArgs...), "--fifo-backup-user=vt_secret_tool", "--fifo-backup-backup-flags="+flags)
	}
	p, err := c.NewTablet(100)
	must(t, err)
	p.Engine = engineFor(c, "fifo")
	must(t, p.InitMySQL(ctx))
	must(t, createSecretUsers(ctx, p, dbaPW, flagSep))
	p.ExtraArgs = dbaArgs
	must(t, startSampledPrimary(ctx, c, p, 2000))

	// A: the tool connects as the DBA user, with --db-dba-password.
	must(t, p.Backup(ctx, true, ""))
	// B: the tool's own user, its password in the extra flags.
	restart := func(args []string) {
		t.Helper()
		p.StopVttablet()
		p.ExtraArgs = args
		must(t, p.Start(ctx, cluster.StartOptions{WaitForType: "PRIMARY"}))
	}
	restart(toolArgs("--password=" + flagLong + " -p" + flagShort + " -p " + flagSep))
	must(t, p.AddRows(ctx, 100))
	want, err := p.Checksums(ctx)
	must(t, err)
	must(t, p.Backup(ctx, true, ""))
	// C and D: backups that fail.
	restart(toolArgs("--password=" + wrongPW))
	errD := p.Backup(ctx, true, "")
	if errD == nil {
		t.Fatal("a backup with a wrong tool password succeeded")
	}
	restart(toolArgs("--pasword=" + typoPW))
	errC := p.Backup(ctx, true, "")
	if errC == nil {
		t.Fatal("a backup with a mistyped password flag succeeded")
	}
	outputs = append(outputs, errD.Error(), errC.Error())
	// Both failures were the tool's, and say why.
	for _, f := range []struct {
		what string
		err  error
		want string
	}{{"wrong password", errD, "Access denied for user 'vt_secret_tool'"}, {"mistyped flag", errC, "unknown variable 'pasword=****'"}} {
		line := lineWith(f.err.Error(), f.want)
		if line == "" {
			t.Errorf("the failed backup (%s) does not say %q:\n%s", f.what, f.want, f.err)
		}
		t.Logf("%s: %s", f.what, line)
	}
	names, err := c.GetBackups(ctx)
	must(t, err)
	if len(names) != 2 {
		t.Fatalf("GetBackups = %v, want the 2 successful backups", names)
	}

	// Restore into a fresh tablet (the primary gone: a replica cannot run
	// beside a MariaDB primary with Vitess v24), with a prepare-flag secret.
	must(t, p.Destroy(ctx))
	r, err := c.NewTablet(101)
	must(t, err)
	r.Engine = engineFor(c, "fifo")
	must(t, r.InitMySQL(ctx))
	must(t, createSecretUsers(ctx, r, dbaPW, flagSep))
	r.ExtraArgs = append(append([]string{}, dbaArgs...), "--fifo-backup-prepare-flags=-p "+prepPW)
	must(t, r.Start(ctx, cluster.StartOptions{RestoreFromBackup: true}))
	checkData(ctx, t, r, want)
	// Vitess logs the environment of the mysqld it starts (Mysqld.Start logs
	// its exec.Cmd): the restore did start one, and the vttablet had been
	// given the S3 credentials in its environment.
	if log := r.Vttablet.Tail(16 << 20); !strings.Contains(log, "&exec.Cmd{") {
		t.Errorf("vttablet-101's log shows no mysqld start with its environment: the case was not exercised")
	} else if strings.Contains(log, "AWS_SECRET_ACCESS_KEY=") {
		t.Errorf("vttablet-101's log shows AWS_SECRET_ACCESS_KEY in an environment")
	}

	// The stored backups: every object as stored, every lane decompressed,
	// the MANIFESTs.
	objects := 0
	must(t, filepath.WalkDir(srv.Dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		objects++
		secrets.check(t, "stored object "+path, data)
		return nil
	}))
	st, err := splitstorage.New(srv.Config)
	must(t, err)
	bhs, err := st.ListBackups(ctx, c.Keyspace+"/"+c.Shard)
	must(t, err)
	toolCommands := 0
	for _, bh := range bhs {
		var m struct {
			CompressionEngine string
			ToolParams        string
			Lanes             []struct{ File string }
		}
		data := readAll(ctx, t, bh, "MANIFEST")
		secrets.check(t, "MANIFEST of "+bh.Name(), data)
		must(t, json.Unmarshal(data, &m))
		t.Logf("backup %s: ToolParams %q", bh.Name(), m.ToolParams)
		if strings.Contains(m.ToolParams, "-p") && !strings.Contains(m.ToolParams, "--password=****") {
			t.Errorf("MANIFEST of %s: ToolParams %q, want the passwords shown as ****", bh.Name(), m.ToolParams)
		}
		for _, l := range m.Lanes {
			raw := decompress(t, m.CompressionEngine, readAll(ctx, t, bh, l.File))
			toolCommands += bytes.Count(raw, []byte("tool_command"))
			secrets.check(t, fmt.Sprintf("lane %s of %s (decompressed)", l.File, bh.Name()), raw)
		}
		out, err := exec.CommandContext(ctx, fifoverify, verifyArgs(srv, c, "--backup="+bh.Name())...).CombinedOutput()
		if err != nil {
			t.Errorf("fifoverify --backup=%s: %v\n%s", bh.Name(), err, out)
		}
		outputs = append(outputs, string(out))
	}
	if toolCommands < len(bhs) {
		t.Errorf("found %d tool_command lines in %d backups' streams: the tool's own record was not looked at", toolCommands, len(bhs))
	}
	_, js, err := c.GetBackupsJSON(ctx)
	must(t, err)
	outputs = append(outputs, js)

	// GCS: credentials the library loads and signs with, refused by the
	// token endpoint; and a key that does not parse.
	for _, cred := range []struct{ name, file string }{{"a real key", credFile}, {"a key that does not parse", badCredFile}} {
		before := tokenRequests.Load()
		cmd := exec.CommandContext(ctx, fifoverify, "--backup-storage-implementation=split", "--split-storage-backend=gcs",
			"--split-storage-gcs-bucket=vtfifo-secrets", "--split-storage-retry-max-attempts=2", "--split-storage-retry-initial-backoff=10ms",
			"--split-storage-request-timeout=10s", "--keyspace=ks", "--shard=0", "--progress=never")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "GOOGLE_APPLICATION_CREDENTIALS=" + cred.file, "NO_GCE_CHECK=true"}
		out, err := cmd.CombinedOutput()
		t.Logf("fifoverify on GCS with %s (%d token requests): %v\n%s", cred.name, tokenRequests.Load()-before, err, lastLines(string(out), 6))
		if err == nil {
			t.Errorf("fifoverify on GCS with %s and no server succeeded", cred.name)
		}
		outputs = append(outputs, string(out))
	}

	for i, o := range outputs {
		secrets.check(t, fmt.Sprintf("command output %d", i), []byte(o))
	}
	// Every file the cluster wrote.
	files, skipped := 0, 0
	must(t, filepath.WalkDir(c.Root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if !d.Type().IsRegular() || path == credFile || path == badCredFile {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		files++
		if strings.HasPrefix(path, c.LogDir+string(filepath.Separator)) {
			var kept bytes.Buffer
			sc := bufio.NewScanner(bytes.NewReader(data))
			sc.Buffer(make([]byte, 1<<20), 16<<20)
			for sc.Scan() {
				if strings.HasPrefix(sc.Text(), "### ") {
					skipped++
					continue
				}
				kept.Write(sc.Bytes())
				kept.WriteByte('\n')
			}
			must(t, sc.Err())
			data = kept.Bytes()
		}
		secrets.check(t, path, data)
		return nil
	}))
	t.Logf("looked through %d files under %s (%d harness command lines skipped), %d stored objects, %d backups' lanes and MANIFESTs (%d tool_command "+
		"lines), %d command outputs",
		files, c.Root, skipped, objects, len(bhs), toolCommands, len(outputs))
}

func randomTag(t *testing.T) string {
	b := make([]byte, 6)
	_, err := rand.Read(b)
	must(t, err)
	return strings.ToUpper(hex.EncodeToString(b))
}

// newServiceAccountKey returns a fresh RSA key as PKCS#8 PEM and one line
// of its body (what to look for).
func newServiceAccountKey(t *testing.T) (string, string) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	must(t, err)
	der, err := x509.MarshalPKCS8PrivateKey(key)
	must(t, err)
	p := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	lines := strings.Split(p, "\n")
	return p, lines[len(lines)/2]
}

func serviceAccountJSON(privateKey, tokenURL string) []byte {
	b, _ := json.Marshal(map[string]string{
		"type":                        "service_account",
		"project_id":                  "vtfifo-secrets",
		"private_key_id":              "0123456789abcdef",
		"private_key":                 privateKey,
		"client_email":                "backup@vtfifo-secrets.iam.gserviceaccount.com",
		"client_id":                   "1",
		"auth_uri":                    tokenURL + "/auth",
		"token_uri":                   tokenURL + "/token",
		"auth_provider_x509_cert_url": tokenURL + "/certs",
		"universe_domain":             "googleapis.com",
	})
	return b
}

// createSecretUsers makes vt_secret_dba (all privileges, like vt_dba) and
// vt_secret_tool, from password hashes: mysqld never sees the passwords.
func createSecretUsers(ctx context.Context, tab *cluster.Tablet, dbaPW, toolPW string) error {
	for _, q := range []string{
		"CREATE USER 'vt_secret_dba'@'localhost' IDENTIFIED BY PASSWORD '" + nativePasswordHash(dbaPW) + "'",
		"GRANT ALL PRIVILEGES ON *.* TO 'vt_secret_dba'@'localhost' WITH GRANT OPTION",
		"CREATE USER 'vt_secret_tool'@'localhost' IDENTIFIED BY PASSWORD '" + nativePasswordHash(toolPW) + "'",
		"GRANT ALL PRIVILEGES ON *.* TO 'vt_secret_tool'@'localhost'",
	} {
		if _, err := tab.Exec(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// nativePasswordHash is mysql_native_password's stored form of pw.
func nativePasswordHash(pw string) string {
	h1 := sha1.Sum([]byte(pw))
	h2 := sha1.Sum(h1[:])
	return "*" + strings.ToUpper(hex.EncodeToString(h2[:]))
}

func readAll(ctx context.Context, t *testing.T, bh interface {
	ReadFile(context.Context, string) (io.ReadCloser, error)
}, name string) []byte {
	t.Helper()
	rc, err := bh.ReadFile(ctx, name)
	must(t, err)
	defer rc.Close()
	data, err := io.ReadAll(rc)
	must(t, err)
	return data
}

func decompress(t *testing.T, engine string, data []byte) []byte {
	t.Helper()
	var r io.Reader
	switch engine {
	case "pargzip", "pgzip":
		zr, err := gzip.NewReader(bytes.NewReader(data))
		must(t, err)
		r = zr
	case "zstd":
		zr, err := zstd.NewReader(bytes.NewReader(data))
		must(t, err)
		defer zr.Close()
		r = zr
	case "":
		return data
	default:
		t.Fatalf("cannot decompress %q here", engine)
	}
	out, err := io.ReadAll(r)
	must(t, err)
	return out
}

func verifyArgs(srv *splitstoragetest.Server, c *cluster.Cluster, extra ...string) []string {
	args := append([]string{"--keyspace=" + c.Keyspace, "--shard=" + c.Shard, "--progress=never"}, srv.Flags()...)
	return append(args, extra...)
}

// lineWith returns the first line of s containing sub, or "".
func lineWith(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return strings.TrimSpace(l)
		}
	}
	return ""
}
