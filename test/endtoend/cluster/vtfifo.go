package cluster

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"time"

	"vitess.io/vitess/go/mysql"
)

// Vtfifo runs the operator CLI as the cluster's user, with the storage's
// environment and flags and the cluster's keyspace and shard after args. It
// returns the combined output and the exit status (err only when it could
// not run or was killed).
func (c *Cluster) Vtfifo(ctx context.Context, args ...string) (string, int, error) {
	return c.VtfifoWith(ctx, nil, append(append([]string{}, args...), c.Storage.Flags...)...)
}

// VtfifoWith runs vtfifo with the cluster's keyspace and shard but no
// storage flags of its own (args give them; env is added to the storage's).
func (c *Cluster) VtfifoWith(ctx context.Context, env []string, args ...string) (string, int, error) {
	return c.vtfifo(ctx, env, append(append([]string{}, args...), "--keyspace="+c.Keyspace, "--shard="+c.Shard)...)
}

// VtfifoFleet runs vtfifo with the storage's flags and the topology's, and
// no keyspace or shard: ls's fleet view of the whole cluster.
func (c *Cluster) VtfifoFleet(ctx context.Context, args ...string) (string, int, error) {
	return c.vtfifo(ctx, nil, append(append(append([]string{}, args...), c.Storage.Flags...), c.TopoFlags()...)...)
}

func (c *Cluster) vtfifo(ctx context.Context, env []string, args ...string) (string, int, error) {
	out, err := c.run(ctx, "vtfifo", append(append([]string{}, c.storageEnv()...), env...), c.Bin("vtfifo"), args...)
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out, 0, nil
	case errors.As(err, &ee) && ee.ExitCode() > 0:
		return out, ee.ExitCode(), nil
	}
	return out, -1, err
}

// StartMysqld starts a stock mariadbd on dataDir as the cluster's user: its
// socket in a new directory, no network, no replica threads. The returned
// Tablet answers Exec and Checksums (as vt_dba, which a restored Vitess data
// directory has); the Proc stops it (Teardown does too).
func (c *Cluster) StartMysqld(ctx context.Context, name, dataDir string) (*Tablet, *Proc, error) {
	bin, err := lookPath("mariadbd")
	if err != nil {
		return nil, nil, err
	}
	dir := filepath.Join(c.Root, name)
	if err := c.user.mkdir(dir); err != nil {
		return nil, nil, err
	}
	t := &Tablet{c: c, Alias: name, Dir: dir}
	p, err := c.start(name, nil, bin, "--no-defaults", "--datadir="+dataDir, "--socket="+t.Socket(),
		"--pid-file="+filepath.Join(dir, "mysql.pid"), "--skip-networking", "--skip-slave-start",
		"--innodb-buffer-pool-size=64M", "--tmpdir="+c.TmpDir)
	if err != nil {
		return nil, nil, err
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if done, werr := p.Exited(); done {
			return nil, nil, fmt.Errorf("mariadbd on %s exited while starting (%v):\n%s", dataDir, werr, p.Tail(30))
		}
		conn, err := mysql.Connect(ctx, &mysql.ConnParams{Uname: "vt_dba", UnixSocket: t.Socket()})
		if err == nil {
			conn.Close()
			return t, p, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			p.Stop(30 * time.Second)
			return nil, nil, fmt.Errorf("mariadbd on %s did not answer: %v\n%s", dataDir, err, p.Tail(30))
		}
		time.Sleep(200 * time.Millisecond)
	}
}
