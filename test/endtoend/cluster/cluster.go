package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/vtfifo/vtfifo/go/testutil/tabletdb"
)

// Storage is a backup storage configuration: the flags every binary that touches backups
// gets (vttablet, vtbackup and vtctld).
type Storage struct {
	Name  string   // label for logs and tables, e.g. "file", "split-s3"
	Flags []string // --backup-storage-implementation=... and its own flags
	Env   []string // KEY=VALUE the processes need (credentials, emulator host)
}

// FileStorage is Vitess's stock file storage under dir.
func FileStorage(dir string) Storage {
	return Storage{Name: "file", Flags: []string{
		"--backup-storage-implementation=file",
		"--file-backup-storage-root=" + dir,
	}}
}

// Engine is a backup engine configuration: the flags vttablet and vtbackup get.
type Engine struct {
	Name  string // value of --backup-engine-implementation
	Flags []string
}

// Options for a cluster.
type Options struct {
	Paths    Paths
	Cell     string // default "zone1"
	Keyspace string // default "ks"
	Shard    string // default "0"
	Storage  Storage
	// PrepareStorage, when set, is called after the directories exist and before vtctld
	// starts, to set up the storage (servers, buckets, directories via MkdirOwned).
	PrepareStorage func(c *Cluster) (Storage, error)
	// Engine is the tablets' default backup engine (--backup-engine-implementation).
	Engine Engine
	// MysqldLines are more [mysqld] lines for every mysqld the cluster's
	// processes start (tablets, vtbackup), through EXTRA_MY_CNF.
	MysqldLines string
	// Root is the directory everything goes under; default: a new temp dir.
	Root string
	// Logf receives progress lines (testing.T.Logf or a printer); may be nil.
	Logf func(format string, args ...any)
}

// Cluster is etcd + vtctld with a keyspace, ready for tablets.
type Cluster struct {
	Options
	Root           string
	LogDir         string
	DataRoot       string // VTDATAROOT
	TmpDir         string
	ExtraMyCnf     string
	XtrabackupRoot string // dir with xtrabackup->mariabackup, xbstream->mbstream

	EtcdAddr   string
	VtctldHTTP int
	VtctldGRPC int
	Etcd       *Proc
	Vtctld     *Proc

	user    *runAs
	procs   procs
	tablets []*Tablet
	bins    map[string]string
	initSQL string
}

func (c *Cluster) logf(format string, args ...any) {
	if c.Logf != nil {
		c.Logf(format, args...)
	}
}

// MkdirOwned creates dir (and parents) owned by the user the cluster's processes run as.
func (c *Cluster) MkdirOwned(dir string) error { return c.user.mkdir(dir) }

// WriteFileOwned writes a file the cluster's processes can read (owned by the
// user they run as).
func (c *Cluster) WriteFileOwned(path string, data []byte, mode os.FileMode) error {
	return c.user.writeFile(path, data, mode)
}

// Bin returns the path of a Vitess binary as the cluster runs it.
func (c *Cluster) Bin(name string) string { return c.bins[name] }

// InitDBSQLFile is the MariaDB-compatible init_db.sql the tablets and vtbackup use.
func (c *Cluster) InitDBSQLFile() string { return c.initSQL }

// TopoFlags are the flags every Vitess process needs to reach the topology.
func (c *Cluster) TopoFlags() []string {
	return []string{
		"--topo-implementation=etcd2",
		"--topo-global-server-address=" + c.EtcdAddr,
		"--topo-global-root=/vitess/global",
	}
}

// baseEnv is every process's environment. The storage's (credentials, the
// emulator host) goes only to the processes that use the storage (vtctld,
// vttablet, vtbackup): see storageEnv.
func (c *Cluster) baseEnv() []string {
	path := os.Getenv("PATH")
	if !strings.Contains(path, "/usr/sbin") {
		path += ":/usr/sbin:/usr/local/sbin"
	}
	return []string{
		"PATH=" + path,
		"HOME=" + c.TmpDir,
		"TMPDIR=" + c.TmpDir,
		"VTDATAROOT=" + c.DataRoot,
		"VT_MYSQL_ROOT=/usr",
		"EXTRA_MY_CNF=" + c.ExtraMyCnf,
		"LANG=C.UTF-8",
	}
}

// storageEnv is the environment the processes that use the backup storage get
// on top of baseEnv.
func (c *Cluster) storageEnv() []string { return c.Storage.Env }

// Start creates the directories, starts etcd, registers the cell, starts vtctld and creates
// the keyspace. On error everything started so far is stopped.
func Start(ctx context.Context, opts Options) (c *Cluster, err error) {
	if opts.Cell == "" {
		opts.Cell = "zone1"
	}
	if opts.Keyspace == "" {
		opts.Keyspace = "ks"
	}
	if opts.Shard == "" {
		opts.Shard = "0"
	}
	paths, err := Discover(opts.Paths)
	if err != nil {
		return nil, err
	}
	opts.Paths = paths
	user, err := lookupRunAs()
	if err != nil {
		return nil, err
	}
	root := opts.Root
	if root == "" {
		root, err = os.MkdirTemp("", "vtfifo-cluster-")
		if err != nil {
			return nil, err
		}
	}
	c = &Cluster{Options: opts, Root: root, user: user, bins: map[string]string{}}
	c.LogDir = filepath.Join(root, "logs")
	c.DataRoot = filepath.Join(root, "vtdataroot")
	c.TmpDir = filepath.Join(root, "tmp")
	c.XtrabackupRoot = filepath.Join(root, "xtrabackup-root")
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w\n(cluster logs under %s)", err, c.LogDir)
			c.Teardown()
		}
	}()
	if err := c.layOut(); err != nil {
		return c, err
	}
	if opts.PrepareStorage != nil {
		if c.Storage, err = opts.PrepareStorage(c); err != nil {
			return c, err
		}
	}
	if c.Storage.Name == "" {
		dir := filepath.Join(root, "backups")
		if err := c.user.mkdir(dir); err != nil {
			return c, err
		}
		c.Storage = FileStorage(dir)
	}
	if err := c.startEtcd(ctx); err != nil {
		return c, err
	}
	if _, err := c.run(ctx, "vtctldclient", nil, c.Bin("vtctldclient"), append(append([]string{"--server=internal"}, c.TopoFlags()...),
		"AddCellInfo", "--root=/vitess/"+c.Cell, "--server-address="+c.EtcdAddr, c.Cell)...); err != nil {
		return c, err
	}
	if err := c.StartVtctld(ctx); err != nil {
		return c, err
	}
	if _, err := c.Vtctldclient(ctx, "CreateKeyspace", "--durability-policy=none", c.Keyspace); err != nil {
		return c, err
	}
	return c, nil
}

// layOut makes the cluster's directories, stages the binaries and the init
// SQL where the cluster's user reads them, links the tools Vitess's
// xtrabackup engine runs, and writes the my.cnf additions.
func (c *Cluster) layOut() error {
	if err := c.user.chown(c.Root); err != nil {
		return err
	}
	if err := os.Chmod(c.Root, 0o755); err != nil {
		return err
	}
	for _, d := range []string{c.LogDir, c.DataRoot, c.TmpDir, c.XtrabackupRoot, filepath.Join(c.Root, "bin")} {
		if err := c.user.mkdir(d); err != nil {
			return err
		}
	}
	for _, b := range binaries {
		dir := filepath.Join(c.Root, "bin", filepath.Dir(b))
		if err := c.user.mkdir(dir); err != nil {
			return err
		}
		p, err := stageFile(filepath.Join(c.Paths.BinDir, b), dir, c.user)
		if err != nil {
			return err
		}
		c.bins[b] = p
	}
	var err error
	if c.initSQL, err = stageFile(c.Paths.InitDBSQL, filepath.Join(c.Root, "bin"), c.user); err != nil {
		return err
	}
	// Vitess's xtrabackup engine runs <root>/xtrabackup and <root>/xbstream.
	for link, target := range map[string]string{"xtrabackup": "mariabackup", "xbstream": "mbstream"} {
		tp, err := lookPath(target)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrPrereq, err)
		}
		if err := os.Symlink(tp, filepath.Join(c.XtrabackupRoot, link)); err != nil {
			return err
		}
	}
	// mysqlctl reads EXTRA_MY_CNF after its own my.cnf template.
	c.ExtraMyCnf = filepath.Join(c.Root, "extra_my.cnf")
	extra := "# added by the vtfifo cluster harness\n"
	if c.user != nil {
		extra += "user=" + c.user.name + "\n"
	}
	extra += "innodb_buffer_pool_size=64M\ninnodb_log_file_size=48M\nperformance_schema=OFF\n" + tabletdb.TestDurability + c.MysqldLines
	if err := c.user.writeFile(c.ExtraMyCnf, []byte(extra), 0o644); err != nil {
		return err
	}
	return nil
}

func (c *Cluster) startEtcd(ctx context.Context) error {
	clientPort, err := FreePort()
	if err != nil {
		return err
	}
	peerPort, err := FreePort()
	if err != nil {
		return err
	}
	etcd, err := lookPath("etcd")
	if err != nil {
		return fmt.Errorf("%w: %v", ErrPrereq, err)
	}
	dataDir := filepath.Join(c.Root, "etcd")
	if err := c.user.mkdir(dataDir); err != nil {
		return err
	}
	if err := os.Chmod(dataDir, 0o700); err != nil {
		return err
	}
	c.EtcdAddr = fmt.Sprintf("127.0.0.1:%d", clientPort)
	peer := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	c.Etcd, err = c.start("etcd", nil, etcd,
		"--name=vtfifo", "--data-dir="+dataDir,
		"--listen-client-urls=http://"+c.EtcdAddr, "--advertise-client-urls=http://"+c.EtcdAddr,
		"--listen-peer-urls="+peer, "--initial-advertise-peer-urls="+peer,
		"--initial-cluster=vtfifo="+peer)
	if err != nil {
		return err
	}
	return c.waitHTTP(ctx, c.Etcd, "http://"+c.EtcdAddr+"/health", 30*time.Second)
}

// StartVtctld starts (or restarts) vtctld with the cluster's storage flags.
func (c *Cluster) StartVtctld(ctx context.Context) error {
	var err error
	if c.VtctldHTTP == 0 {
		if c.VtctldHTTP, err = FreePort(); err != nil {
			return err
		}
		if c.VtctldGRPC, err = FreePort(); err != nil {
			return err
		}
	}
	args := append([]string{}, c.TopoFlags()...)
	args = append(args,
		"--cell="+c.Cell,
		"--service-map=grpc-vtctl,grpc-vtctld",
		fmt.Sprintf("--port=%d", c.VtctldHTTP),
		fmt.Sprintf("--grpc-port=%d", c.VtctldGRPC),
		"--bind-address=127.0.0.1",
		"--grpc-bind-address=127.0.0.1",
		"--log-format=text", "--logtostderr",
		"--config-file-not-found-handling=ignore",
	)
	args = append(args, c.Storage.Flags...)
	c.Vtctld, err = c.start("vtctld", c.storageEnv(), c.Bin("vtctld"), args...)
	if err != nil {
		return err
	}
	return c.waitHTTP(ctx, c.Vtctld, fmt.Sprintf("http://127.0.0.1:%d/debug/status", c.VtctldHTTP), 60*time.Second)
}

// waitHTTP waits for url to answer 200, failing early if the process exits.
func (c *Cluster) waitHTTP(ctx context.Context, p *Proc, url string, timeout time.Duration) error {
	err := waitFor(ctx, timeout, p.Name+" at "+url, func() (bool, error) {
		if done, werr := p.Exited(); done {
			return false, fatal(fmt.Errorf("%s exited: %v", p.Name, werr))
		}
		resp, err := http.Get(url)
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		return resp.StatusCode == 200, fmt.Errorf("status %d", resp.StatusCode)
	})
	if err != nil {
		return fmt.Errorf("%w\nlast lines of %s:\n%s", err, p.LogPath, p.Tail(3000))
	}
	return nil
}

// Vtctldclient runs vtctldclient against vtctld's gRPC port and returns its stdout+stderr.
func (c *Cluster) Vtctldclient(ctx context.Context, args ...string) (string, error) {
	full := append([]string{fmt.Sprintf("--server=127.0.0.1:%d", c.VtctldGRPC), "--action-timeout=10m"}, args...)
	return c.run(ctx, "vtctldclient", nil, c.Bin("vtctldclient"), full...)
}

// GetBackups lists the shard's backups (names, oldest first) through vtctld.
func (c *Cluster) GetBackups(ctx context.Context) ([]string, error) {
	out, err := c.Vtctldclient(ctx, "GetBackups", c.Keyspace+"/"+c.Shard)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		if l != "" {
			names = append(names, l)
		}
	}
	return names, nil
}

// BackupInfo is one entry of `GetBackups --json`.
type BackupInfo struct {
	Name      string `json:"name"`
	Directory string `json:"directory"`
	Engine    string `json:"engine"`
	Status    any    `json:"status"`
}

// GetBackupsJSON lists the shard's backups with details.
func (c *Cluster) GetBackupsJSON(ctx context.Context) ([]BackupInfo, string, error) {
	out, err := c.Vtctldclient(ctx, "GetBackups", "--json", c.Keyspace+"/"+c.Shard)
	if err != nil {
		return nil, out, err
	}
	var resp struct {
		Backups []BackupInfo `json:"backups"`
	}
	if err := json.Unmarshal([]byte(out), &resp); err != nil {
		return nil, out, fmt.Errorf("parse GetBackups --json: %w\n%s", err, out)
	}
	return resp.Backups, out, nil
}

// Teardown stops every tablet and process, newest first, each by its own PID. The root
// directory is kept (logs); RemoveAll removes it.
func (c *Cluster) Teardown() {
	for i := len(c.tablets) - 1; i >= 0; i-- {
		c.tablets[i].Stop()
	}
	c.procs.mu.Lock()
	list := append([]*Proc(nil), c.procs.list...)
	c.procs.mu.Unlock()
	for i := len(list) - 1; i >= 0; i-- {
		list[i].Stop(15 * time.Second)
	}
}

// RemoveAll deletes the cluster's directory. Call after Teardown.
func (c *Cluster) RemoveAll() error { return os.RemoveAll(c.Root) }
