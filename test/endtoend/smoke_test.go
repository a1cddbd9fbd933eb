package endtoend

import (
	"github.com/vtfifo/vtfifo/test/endtoend/cluster"
	"testing"
	"time"
)

func TestSmokeDisasterRecovery(t *testing.T) {
	c := startCluster(t, cluster.Options{})
	ctx := ctxFor(t, 20*time.Minute)
	p, err := c.NewTablet(100)
	must(t, err)
	p.Engine = withXtrabackupRoot(c, p.Engine)
	must(t, p.InitMySQL(ctx))
	must(t, p.Start(ctx, cluster.StartOptions{}))
	out, err := c.Vtctldclient(ctx, "InitShardPrimary", "--force", c.Keyspace+"/"+c.Shard, p.Alias)
	t.Logf("InitShardPrimary: %v\n%s", err, out)
	typ, _ := p.Type(ctx)
	t.Logf("type after InitShardPrimary: %s", typ)
	if typ != "PRIMARY" {
		must(t, p.MakePrimary(ctx))
	}
	must(t, p.LoadSampleData(ctx, 20000))
	before, err := p.Checksums(ctx)
	must(t, err)
	out, err = c.Vtctldclient(ctx, "Backup", "--allow-primary", p.Alias)
	must(t, err)
	bs, err := c.GetBackups(ctx)
	must(t, err)
	t.Logf("backups: %v", bs)
	must(t, p.Destroy(ctx))
	r, err := c.NewTablet(101)
	must(t, err)
	r.Engine = p.Engine
	must(t, r.InitMySQL(ctx))
	st := cluster.StartOptions{}
	st.RestoreFromBackup = true
	must(t, r.Start(ctx, st))
	out, err = c.Vtctldclient(ctx, "InitShardPrimary", "--force", c.Keyspace+"/"+c.Shard, r.Alias)
	t.Logf("ISP: %v\n%s", err, out)
	typ, _ = r.Type(ctx)
	if typ != "PRIMARY" {
		must(t, r.MakePrimary(ctx))
	}
	after, err := r.Checksums(ctx)
	must(t, err)
	t.Log("\n" + cluster.FormatChecksums("before", before, "after", after))
	vars, err := r.DebugVars(ctx)
	must(t, err)
	rs, _ := cluster.BackupStats(vars, "Restore")
	t.Log(cluster.FormatStats("restore", rs))
}
