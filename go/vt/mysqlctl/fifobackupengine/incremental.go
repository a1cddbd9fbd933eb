package fifobackupengine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"vitess.io/vitess/go/mysql/replication"
	"vitess.io/vitess/go/vt/mysqlctl"
	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	vtrpcpb "vitess.io/vitess/go/vt/proto/vtrpc"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
	"github.com/vtfifo/vtfifo/go/internal/unreadable"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/backuphandle"
)

// Incremental backups. With --fifo-backup-full-interval set, an ordinary
// backup request takes a delta: the tool copies only the InnoDB pages whose
// LSN is above its base's LSN.To (--incremental-lsn), and the MANIFEST names
// the base, the chain's full backup and its length. The base is the newest
// full (a differential, --fifo-backup-incremental-base=full, the default), or
// with latest the newest backup of its chain. A full is taken instead, and the log
// says why, when one is due or no base is usable (chooseBase). Restoring a
// delta restores its chain: the full, then every delta in order, each
// prepared by the tool's rules for incrementals (prepareChain).
//
// Chains need a storage that keeps a base while a delta depends on it: the
// split storage does (its BackupHandle implements backuphandle.Chain), and retires a
// removed base until its last dependent goes. With any other storage every
// backup is full.

// member is one backup of a chain.
type member struct {
	bh backupstorage.BackupHandle
	m  *Manifest
}

// chainNames lists a chain's backup names, full first.
func chainNames(chain []member) []string {
	names := make([]string, len(chain))
	for i, c := range chain {
		names[i] = c.m.BackupName
	}
	return names
}

// resolveChain returns the chain that restores target, full first, target
// last. Every base is opened by name through the storage and checked: a
// fifo MANIFEST of the same tool, whose LSN.To is the next one's LSN.From,
// every lane stored whole where the storage can tell. The error names the
// base that is missing or damaged.
func resolveChain(ctx context.Context, target member) ([]member, error) {
	chain := []member{target}
	for cur := target; cur.m.isDelta(); {
		if len(chain) > maxChainLength+1 {
			return nil, errtext.Errorf(vtrpcpb.Code_FAILED_PRECONDITION, "backup %s: its chain is longer than %d backups (a loop?)", target.m.BackupName,
				maxChainLength)
		}
		name := cur.m.BaseBackup
		ch, ok := cur.bh.(backuphandle.Chain)
		if !ok {
			return nil, errtext.Errorf(vtrpcpb.Code_FAILED_PRECONDITION, "backup %s is incremental on base %s, but its storage cannot open other backups "+
				"(incremental chains need the split storage)", cur.m.BackupName, name)
		}
		bh, err := ch.Sibling(ctx, name)
		if err != nil {
			return nil, baseUnusable(err, cur.m.BackupName, name, "is missing")
		}
		m, err := ReadManifest(ctx, bh)
		if err != nil {
			return nil, damageOf(name, baseUnusable(err, cur.m.BackupName, name, "is damaged"))
		}
		switch {
		case m.BackupName != name:
			return nil, errtext.Errorf(vtrpcpb.Code_FAILED_PRECONDITION, "backup %s: its base %s has the MANIFEST of %s", cur.m.BackupName, name, m.BackupName)
		case m.ToolFlavor != target.m.ToolFlavor:
			return nil, errtext.Errorf(vtrpcpb.Code_FAILED_PRECONDITION, "backup %s: its base %s was taken with %s, it with %s", cur.m.BackupName, name,
				m.ToolFlavor, target.m.ToolFlavor)
		case m.LSN.To == "" || m.LSN.To != cur.m.LSN.From:
			return nil, errtext.Errorf(vtrpcpb.Code_FAILED_PRECONDITION, "backup %s starts at LSN %q but its base %s ends at LSN %q", cur.m.BackupName,
				cur.m.LSN.From, name, m.LSN.To)
		case m.ChainLength != cur.m.ChainLength-1 || (m.isDelta() && m.FullBackup != cur.m.FullBackup) || (!m.isDelta() && name != cur.m.FullBackup):
			return nil, errtext.Errorf(vtrpcpb.Code_FAILED_PRECONDITION, "backup %s (chain of %s, length %d) does not follow its base %s (chain of "+
				"%s, length %d)", cur.m.BackupName, cur.m.FullBackup, cur.m.ChainLength, name, m.FullBackup, m.ChainLength)
		}
		cur = member{bh: bh, m: m}
		chain = append(chain, cur)
	}
	slices.Reverse(chain)
	for _, c := range chain {
		if err := checkLanesStored(ctx, c); err != nil {
			return nil, err
		}
	}
	return chain, nil
}

// CheckRestorable finds, without reading a lane, what would stop a restore
// of bh before its first byte: a MANIFEST damaged, and for an incremental
// backup a base of its chain missing, damaged or not following it, or a
// lane not stored whole where the storage can tell (resolveChain). Another
// engine's backup is not judged here (nil). nil does not prove the lanes
// whole (verify reads them); an error that unreadable.Is says nothing
// about the backup.
func CheckRestorable(ctx context.Context, bh backupstorage.BackupHandle) error {
	_, err := ChainBases(ctx, bh)
	return err
}

// ChainBases are the bases a restore of bh reads before it, its full first,
// each checked as CheckRestorable checks them: none for a full backup or
// another engine's.
func ChainBases(ctx context.Context, bh backupstorage.BackupHandle) ([]backupstorage.BackupHandle, error) {
	doc, err := readManifestBytes(ctx, bh)
	if err != nil {
		return nil, err
	}
	var method struct{ BackupMethod string }
	if json.Unmarshal(doc, &method) == nil && method.BackupMethod != engineName {
		return nil, nil
	}
	m, err := ParseManifest(doc)
	if err != nil {
		return nil, errtext.Wrapf(err, "backup %s: MANIFEST", bh.Name())
	}
	chain, err := resolveChain(ctx, member{bh: bh, m: m})
	if err != nil {
		return nil, err
	}
	bases := make([]backupstorage.BackupHandle, len(chain)-1)
	for i, c := range chain[:len(chain)-1] {
		bases[i] = c.bh
	}
	return bases, nil
}

// baseUnusable is why the base name of backup cannot serve its chain:
// judged ("is missing", "is damaged") only where what was read says so; a
// base that could not be read or reached (go/internal/unreadable) is never
// called either.
func baseUnusable(err error, backup, name, judged string) error {
	if unreadable.Is(err) {
		return errtext.Wrapf(err, "backup %s: its base %s could not be read", backup, name)
	}
	return errtext.Wrapf(err, "backup %s: its base %s %s", backup, name, judged)
}

// checkLanesStored checks, where the storage can say without reading them,
// that every lane of a backup is stored whole.
func checkLanesStored(ctx context.Context, c member) error {
	s, ok := c.bh.(backuphandle.StoredSizer)
	if !ok {
		return nil
	}
	for _, l := range c.m.Lanes {
		n, err := s.StoredSize(ctx, l.File)
		if unreadable.Is(err) {
			return errtext.Wrapf(err, "backup %s: the size of lane %s could not be read", c.m.BackupName, l.File)
		}
		if err != nil {
			return damageOf(c.m.BackupName, errtext.Wrapf(err, "backup %s is damaged: lane %s", c.m.BackupName, l.File))
		}
		if n != l.StoredBytes {
			return damageOf(c.m.BackupName, errtext.Errorf(vtrpcpb.Code_DATA_LOSS, "backup %s is damaged: lane %s has %d bytes stored, its MANIFEST says %d",
				c.m.BackupName, l.File, n, l.StoredBytes))
		}
	}
	return nil
}

// baseChoice is what the choice of a base depends on.
type baseChoice struct {
	cfg          *Config
	now          time.Time
	tool         *backupTool
	mysqlVersion string
	pos          replication.Position // the server's, before the backup
	here         lineage
	dir          string
}

// chooseBase picks the base of the next backup among the complete backups of
// its directory (manifests oldest first; nil for one that is unreadable),
// or returns why the backup is full. The base still needs its chain checked
// (resolveChain).
func (c *baseChoice) chooseBase(backups []*Manifest) (base *Manifest, whyFull string) {
	var full *Manifest
	for i := len(backups) - 1; i >= 0; i-- {
		if m := backups[i]; m != nil && !m.isDelta() {
			full = backups[i]
			break
		}
	}
	if full == nil {
		return nil, fmt.Sprintf("no complete fifo full backup in %s", c.dir)
	}
	consistent, err := mysqlctl.ParseRFC3339(full.BackupTime)
	if err != nil {
		return nil, fmt.Sprintf("the last full backup %s has an unreadable BackupTime %q", full.BackupName, full.BackupTime)
	}
	if age := c.now.Sub(consistent); age >= c.cfg.FullInterval {
		return nil, fmt.Sprintf("the last full backup %s is %v old: a full is due every %v (--fifo-backup-full-interval)", full.BackupName,
			age.Round(time.Minute), c.cfg.FullInterval)
	}
	base = full
	deltas := 0 // the full's listed deltas: a chain, or differentials
	for _, m := range backups {
		if m != nil && m.FullBackup == full.BackupName {
			deltas++
			if c.cfg.IncrementalBase == BaseLatest {
				base = m // the newest, as backups are oldest first
			}
		}
	}
	switch number := max(base.ChainLength, deltas) + 1; {
	case number > c.cfg.MaxChainLength:
		return nil, fmt.Sprintf("a delta on %s would be number %d after the full %s, more than --fifo-backup-max-chain-length=%d", base.BackupName,
			number, full.BackupName, c.cfg.MaxChainLength)
	case base.ToolFlavor != c.tool.Flavor || base.ToolVersion != c.tool.Version:
		return nil, fmt.Sprintf("the base %s was taken with %s (%s), the tool here is %s (%s)", base.BackupName, base.ToolFlavor, base.ToolVersion,
			c.tool.Flavor, c.tool.Version)
	case base.MySQLVersion != c.mysqlVersion:
		return nil, fmt.Sprintf("the base %s was taken on MySQL %s, the server here is %s", base.BackupName, base.MySQLVersion, c.mysqlVersion)
	case base.LSN.To == "":
		return nil, fmt.Sprintf("the base %s recorded no LSN", base.BackupName)
	case !c.here.descendsFrom(base):
		return nil, fmt.Sprintf("this data directory does not descend from the base %s (taken from another data directory, and this one was not restored "+
			"from its chain): its pages have other LSNs", base.BackupName)
	case !c.pos.AtLeast(base.Position):
		return nil, fmt.Sprintf("the server's position %v does not contain the base %s's %v", c.pos, base.BackupName, base.Position)
	}
	return base, ""
}

// planDelta decides whether this backup is a delta, and on which base; nil
// for a full, with the reason logged.
func (b *backupRun) planDelta(ctx context.Context, here lineage, pos replication.Position, mysqlVersion string) *member {
	if b.cfg.FullInterval == 0 {
		return nil
	}
	full := func(why string) *member {
		b.logger.Infof("fifo backup: taking a full backup: %s", why)
		return nil
	}
	ch, ok := b.bh.(backuphandle.Chain)
	if !ok {
		return full("the backup storage cannot keep incremental chains (use --backup-storage-implementation=split)")
	}
	bhs, err := ch.Siblings(ctx)
	if err != nil {
		return full(fmt.Sprintf("cannot list the backups of %s: %v", b.bh.Directory(), err))
	}
	// MANIFESTs newest first, down to the newest fifo full: all a choice needs.
	manifests := make([]*Manifest, len(bhs))
	handles := map[*Manifest]backupstorage.BackupHandle{}
	var newestDelta *Manifest
	for i := len(bhs) - 1; i >= 0; i-- {
		m, err := ReadManifest(ctx, bhs[i])
		if err != nil {
			b.logger.Warningf("fifo backup: not a base: %s", errtext.Text(err))
			continue
		}
		manifests[i], handles[m] = m, bhs[i]
		if !m.isDelta() {
			newestDelta = nil
			break
		}
		if newestDelta == nil {
			newestDelta = m
		}
	}
	if newestDelta != nil {
		// No full listed after it: retention retired the chain's full, which
		// the storage keeps for its deltas.
		if bh, err := ch.Sibling(ctx, newestDelta.FullBackup); err == nil {
			if m, err := ReadManifest(ctx, bh); err == nil && !m.isDelta() {
				manifests = append([]*Manifest{m}, manifests...)
				handles[m] = bh
			}
		}
	}
	c := &baseChoice{cfg: &b.cfg, now: time.Now(), tool: b.tool, mysqlVersion: mysqlVersion, pos: pos, here: here, dir: b.bh.Directory()}
	base, why := c.chooseBase(manifests)
	if base == nil {
		return full(why)
	}
	chain, err := resolveChain(ctx, member{bh: handles[base], m: base})
	if err != nil {
		return full(fmt.Sprintf("the chain of the base %s is not usable: %v", base.BackupName, err))
	}
	if err := ch.SetBase(ctx, base.BackupName); err != nil {
		return full(fmt.Sprintf("cannot record %s as the base: %v", base.BackupName, err))
	}
	b.logger.Infof("fifo backup: incremental, on %s (LSN %s; chain %v)", base.BackupName, base.LSN.To, chainNames(chain))
	return &member{bh: handles[base], m: base}
}

// maxChainLength bounds a chain a restore follows, whatever a MANIFEST says.
const maxChainLength = 1000
