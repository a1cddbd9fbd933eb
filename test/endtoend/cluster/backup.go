package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"
)

// Backup runs `vtctldclient Backup` on the tablet. engine "" uses the tablet's default
// engine; otherwise it is passed as the per-request --backup-engine.
func (t *Tablet) Backup(ctx context.Context, allowPrimary bool, engine string) error {
	args := []string{"Backup"}
	if allowPrimary {
		args = append(args, "--allow-primary")
	}
	if engine != "" {
		args = append(args, "--backup-engine="+engine)
	}
	args = append(args, t.Alias)
	_, err := t.c.Vtctldclient(ctx, args...)
	return err
}

// RestoreFromBackup runs `vtctldclient RestoreFromBackup` on the tablet.
func (t *Tablet) RestoreFromBackup(ctx context.Context, extra ...string) error {
	args := append(append([]string{"RestoreFromBackup"}, extra...), t.Alias)
	_, err := t.c.Vtctldclient(ctx, args...)
	return err
}

// RemoveBackup removes one backup through vtctld.
func (c *Cluster) RemoveBackup(ctx context.Context, name string) error {
	_, err := c.Vtctldclient(ctx, "RemoveBackup", c.Keyspace+"/"+c.Shard, name)
	return err
}

// VtbackupOptions for one scheduled-style vtbackup run.
type VtbackupOptions struct {
	Engine            Engine
	MinRetentionCount int           // --min-retention-count
	MinRetentionTime  time.Duration // --min-retention-time (0: Vitess's default)
	Extra             []string
	// Vars, when true, keeps vtbackup alive after its backup and prune
	// (--keep-alive-timeout) long enough to read its /debug/vars, then stops it.
	Vars bool
}

// VtbackupResult is what a vtbackup run left behind.
type VtbackupResult struct {
	Output string
	Vars   map[string]json.RawMessage // /debug/vars after the backup (with Vars)
}

// RunVtbackup runs vtbackup to completion: it restores the latest backup into its own
// mysqld, catches up from the shard primary, takes a new backup and prunes old ones.
func (c *Cluster) RunVtbackup(ctx context.Context, o VtbackupOptions) (VtbackupResult, error) {
	var res VtbackupResult
	mysqlPort, err := FreePort()
	if err != nil {
		return res, err
	}
	httpPort, err := FreePort()
	if err != nil {
		return res, err
	}
	args := append([]string{}, c.TopoFlags()...)
	args = append(args,
		"--init-keyspace="+c.Keyspace,
		"--init-shard="+c.Shard,
		"--init-db-sql-file="+c.initSQL,
		fmt.Sprintf("--mysql-port=%d", mysqlPort),
		fmt.Sprintf("--port=%d", httpPort),
		"--mysql-timeout=3m",
		"--log-format=text", "--logtostderr",
		"--config-file-not-found-handling=ignore",
		"--backup-engine-implementation="+o.Engine.Name,
	)
	if o.MinRetentionCount > 0 {
		args = append(args, fmt.Sprintf("--min-retention-count=%d", o.MinRetentionCount))
	}
	if o.MinRetentionTime > 0 {
		args = append(args, "--min-retention-time="+o.MinRetentionTime.String())
	}
	args = append(args, o.Engine.Flags...)
	args = append(args, c.Storage.Flags...)
	args = append(args, o.Extra...)
	if !o.Vars {
		res.Output, err = c.run(ctx, "vtbackup", c.storageEnv(), c.Bin("vtbackup"), args...)
		return res, err
	}
	args = append(args, "--keep-alive-timeout=10m")
	p, err := c.start("vtbackup", c.storageEnv(), c.Bin("vtbackup"), args...)
	if err != nil {
		return res, err
	}
	defer p.Stop(30 * time.Second)
	const done = "Backup was successful, waiting"
	err = waitFor(ctx, 15*time.Minute, "vtbackup to finish its backup", func() (bool, error) {
		if strings.Contains(readFileString(p.LogPath), done) {
			return true, nil
		}
		if exited, werr := p.Exited(); exited {
			return false, fatal(fmt.Errorf("vtbackup exited before finishing: %v", werr))
		}
		return false, nil
	})
	if err != nil {
		return res, fmt.Errorf("%w\nlast lines of %s:\n%s", err, p.LogPath, p.Tail(4000))
	}
	res.Vars, err = fetchVars(ctx, fmt.Sprintf("http://127.0.0.1:%d/debug/vars", httpPort))
	res.Output = readFileString(p.LogPath)
	return res, err
}

func readFileString(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}
