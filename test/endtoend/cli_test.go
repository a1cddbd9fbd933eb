package endtoend

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/vtfifo/vtfifo/go/testutil/mariadbtest"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/tableimport"
	"github.com/vtfifo/vtfifo/test/endtoend/cluster"
)

// TestOperatorCLI runs vtfifo's subcommands against a real backup the engine
// took on a real tablet, on local disk and on S3 (versitygw):
//   - ls before and after a test-restore: the verification record shows;
//   - test-restore: restore, prepare with mariabackup, a throwaway mariadbd,
//     CHECK TABLE on every table, the record stored; verify still passes
//     with the record beside the backup; --mysqld-flags that do not fit
//     the files give exit 2 and no record; a damaged part gives exit 1 and
//     a failed record;
//   - restore --prepare: a stock mariadbd starts on the directory and every
//     table's row count and CHECKSUM TABLE equal the source's;
//   - export | mbstream -x gives the same files as restore without --prepare;
//   - bad input: a missing flag, a non-empty target, an unknown backup, a bad
//     flag value: one clear line, exit 2 (usage) or 3 (not found);
//   - vtbackup --fifo-backup-test-restore: a record for a passing backup; one
//     whose test reached no verdict kept and nothing pruned; a damaged one
//     quarantined, never listed, then released and removed.
//   - copy: on local disk, to another root, verified there; from S3, to another prefix of the bucket, verified there, and a
//     new tablet bootstraps from the copy after the primary is lost; to GCS
//     (fake-gcs-server): killed halfway (SIGKILL), not listed there, resumed
//     and verified there; a second copy is refused.
func TestOperatorCLI(t *testing.T) {
	for _, sb := range storageBackends() {
		if sb.name != "split-local" && sb.name != "split-s3-sealed" {
			continue
		}
		t.Run(sb.name, func(t *testing.T) { runOperatorCLI(t, sb) })
	}
}

func runOperatorCLI(t *testing.T, sb storageBackend) {
	// BLACKHOLE, a plugin on Debian's MariaDB, loaded by an option (not in
	// mysql.plugin, and not in the backup): the MANIFEST records it, and a
	// test restore's throwaway server loads it from there.
	c := startCluster(t, cluster.Options{PrepareStorage: sb.prepare(t), MysqldLines: "plugin_load_add=ha_blackhole\n"})
	// A bound against a hang, not a speed target: the run takes about 17
	// minutes alone on 2 cores, and a third more on a busy machine.
	ctx := ctxFor(t, 40*time.Minute)
	p, err := c.NewTablet(100)
	must(t, err)
	p.Engine = engineFor(c, sb.engine)
	must(t, p.InitMySQL(ctx))
	must(t, startSampledPrimary(ctx, c, p, sampleRows))
	// Names in another script (their files in the server's file-name
	// encoding: donn@0pes/t@0ible_@0p_3.ibd) and a foreign key.
	for _, q := range []string{
		"CREATE DATABASE `données`",
		"CREATE TABLE `données`.`tâble_é_3` (id INT PRIMARY KEY, v VARCHAR(40)) ENGINE=InnoDB",
		"INSERT INTO `données`.`tâble_é_3` SELECT seq, MD5(seq) FROM `données`.seq_1_to_50",
		"CREATE TABLE `données`.`enfant` (id INT PRIMARY KEY, pid INT, CONSTRAINT `lien` FOREIGN KEY (pid) REFERENCES `tâble_é_3` (id)) ENGINE=InnoDB",
		"INSERT INTO `données`.`enfant` SELECT seq, seq FROM `données`.seq_1_to_50",
		// A FULLTEXT table, whose files an import cannot take: its rows are loaded.
		"CREATE DATABASE textes",
		"CREATE TABLE textes.articles (id INT PRIMARY KEY, body TEXT, FULLTEXT KEY ftb (body)) ENGINE=InnoDB",
		"INSERT INTO textes.articles SELECT seq, CONCAT('word', seq % 50, ' other ', MD5(seq)) FROM textes.seq_1_to_300",
		// ARCHIVE, a plugin on Debian's MariaDB, installed as an operator
		// does (mysql.plugin): a test restore's throwaway server loads it
		// too, as it loads BLACKHOLE (above), and passes the backup.
		"INSTALL SONAME 'ha_archive'",
		"CREATE DATABASE moteurs",
		"CREATE TABLE moteurs.archived (id INT, v VARCHAR(40)) ENGINE=ARCHIVE",
		"INSERT INTO moteurs.archived SELECT seq, MD5(seq) FROM moteurs.seq_1_to_100",
		"CREATE TABLE moteurs.hole (id INT) ENGINE=BLACKHOLE",
		// What a database holds besides plain tables (restore-table-kinds).
		"CREATE DATABASE kinds",
		"CREATE TABLE kinds.audit (id INT AUTO_INCREMENT PRIMARY KEY, what VARCHAR(80)) ENGINE=InnoDB",
		"CREATE TABLE kinds.trig_inno (id INT PRIMARY KEY, v INT, w INT) ENGINE=InnoDB",
		"CREATE TRIGGER kinds.trig_inno_bi BEFORE INSERT ON kinds.trig_inno FOR EACH ROW SET NEW.w = NEW.v * 2",
		"INSERT INTO kinds.trig_inno (id, v) SELECT seq, seq FROM kinds.seq_1_to_100",
		"CREATE TABLE kinds.trig_aria (id INT PRIMARY KEY, v VARCHAR(40)) ENGINE=Aria",
		"CREATE TRIGGER kinds.trig_aria_ai AFTER INSERT ON kinds.trig_aria FOR EACH ROW INSERT INTO kinds.audit (what) VALUES (CONCAT('aria ', NEW.id))",
		"INSERT INTO kinds.trig_aria SELECT seq, MD5(seq) FROM kinds.seq_1_to_60",
		"CREATE SEQUENCE kinds.counter START WITH 1000 INCREMENT BY 5",
		"CREATE TABLE kinds.uses_counter (id INT PRIMARY KEY DEFAULT NEXTVAL(kinds.counter), v INT) ENGINE=InnoDB",
		"INSERT INTO kinds.uses_counter (v) SELECT seq FROM kinds.seq_1_to_10",
		"CREATE TABLE kinds.ft (id INT PRIMARY KEY, body TEXT, FULLTEXT KEY (body)) ENGINE=InnoDB",
		"INSERT INTO kinds.ft SELECT seq, CONCAT('word', seq % 9, ' ', MD5(seq)) FROM kinds.seq_1_to_90",
		"CREATE TABLE kinds.`" + longName + "` (id INT PRIMARY KEY, v INT) ENGINE=InnoDB PARTITION BY HASH (id) PARTITIONS 3",
		"INSERT INTO kinds.`" + longName + "` SELECT seq, seq FROM kinds.seq_1_to_30",
		"CREATE TABLE kinds.`a.b` (id INT PRIMARY KEY, v VARCHAR(10)) ENGINE=InnoDB",
		"INSERT INTO kinds.`a.b` SELECT seq, 'dot' FROM kinds.seq_1_to_7",
	} {
		_, err := p.Exec(ctx, q)
		must(t, err)
	}
	// Thousands of tables around the ones restore-table restores, on local
	// disk: which files a table restore picks does not depend on the backend,
	// and every backup, restore and vtbackup run of the test carries them.
	const many, manyTables = "vtfifo_many", 2000
	withMany := sb.name == "split-local"
	if withMany {
		must(t, p.LoadManyTables(ctx, many, manyTables))
	}
	must(t, p.Backup(ctx, true, ""))
	want, err := p.Checksums(ctx)
	must(t, err)
	names, err := c.GetBackups(ctx)
	must(t, err)
	name := names[len(names)-1]

	tool := toolFlags(c)
	vtfifo := vtfifoRunner(ctx, c)
	listed := func(t *testing.T) map[string]json.RawMessage {
		var infos []struct {
			Name         string
			Verification json.RawMessage
		}
		out := vtfifo(t, 0, "ls", "--json")
		if err := decodeJSON(out, "[", &infos); err != nil {
			t.Fatalf("vtfifo ls --json: %v\n%s", err, out)
		}
		m := map[string]json.RawMessage{}
		for _, i := range infos {
			m[i.Name] = i.Verification
		}
		return m
	}

	t.Run("test-restore", func(t *testing.T) {
		if v, ok := listed(t)[name]; !ok || len(v) != 0 {
			t.Fatalf("before any test restore: ls lists %s: %v, verification %s", name, ok, v)
		}
		// Flags that do not fit the files (another page size): the server
		// exits at start, and starts without them: a usage error, exit 2,
		// nothing recorded.
		out := vtfifo(t, 2, append([]string{"test-restore", "--backup=" + name, "--mysqld-flags=--innodb-page-size=4k", "--start-timeout=2m"}, tool...)...)
		if !strings.Contains(out, "mysqld exited while starting") || !strings.Contains(out, "those flags do not fit this backup") {
			t.Fatalf("test-restore with a wrong page size:\n%s", out)
		}
		if v := listed(t)[name]; len(v) != 0 {
			t.Fatalf("a test restore that reached no verdict recorded %s", v)
		}
		// A part damaged in the store: the run fails naming it, and says so
		// in the record ls shows (kept, not quarantined: the quarantine is
		// vtbackup-test-restore-quarantine-release-rm's). The byte flipped
		// back, it passes (below).
		key := damageOnePart(ctx, t, c, splitFlags(c), name)
		out, code, err := c.Vtfifo(ctx, append([]string{"test-restore", "--backup=" + name, "--quarantine-on-failure=false"}, tool...)...)
		if again := damageOnePart(ctx, t, c, splitFlags(c), name); again != key {
			t.Fatalf("damageOnePart flipped %s back, not %s", again, key)
		}
		must(t, err)
		if code != 1 || !strings.Contains(out, "FAIL: test restore of") || !strings.Contains(out, key) {
			t.Fatalf("test-restore of a damaged part %s: exit %d, want 1:\n%s", key, code, out)
		}
		var failed struct{ Outcome, Error string }
		must(t, json.Unmarshal(listed(t)[name], &failed))
		if failed.Outcome != "failed" || !strings.Contains(failed.Error, key) {
			t.Fatalf("record after a failed test restore: %+v", failed)
		}
		if out := vtfifo(t, 0, "ls"); !strings.Contains(out, "failed") {
			t.Fatalf("ls does not show the failed record:\n%s", out)
		}

		out = vtfifo(t, 0, append([]string{"test-restore", "--backup=" + name, "--json"}, tool...)...)
		var result struct {
			Record      struct{ Backup, Outcome string }
			Stored      string
			Quarantined bool
		}
		if decodeJSON(out, "{\n  \"record\"", &result) != nil ||
			result.Record.Outcome != "passed" || result.Record.Backup != c.Keyspace+"/"+c.Shard+"/"+name ||
			result.Stored != "stored beside the backup" || result.Quarantined {
			t.Fatalf("test-restore --json: %+v\n%s", result, out)
		}
		// BLACKHOLE was loaded by an option: only the MANIFEST says so.
		if !strings.Contains(out, "the plugins the backup's server loaded: ") || !strings.Contains(out, "BLACKHOLE (ha_blackhole") {
			t.Fatalf("test-restore did not load BLACKHOLE, which the backup's server loaded by plugin_load_add:\n%s", out)
		}
		var rec struct {
			Outcome, Tool, Server string
			Tables                int
			Rows                  int64
			Phases                []struct{ Phase string }
			Work                  *struct {
				StreamBytes int64 `json:"stream_bytes"`
				RedoKnown   bool  `json:"redo_known"`
				Prepares    int
			}
		}
		must(t, json.Unmarshal(listed(t)[name], &rec))
		var phases []string
		for _, p := range rec.Phases {
			phases = append(phases, p.Phase)
		}
		if strings.Join(phases, " ") != "download prepare start check" {
			t.Fatalf("the record's phases: %v, want download, prepare, start, check", phases)
		}
		var rows int64
		for _, s := range want {
			rows += s.Rows
		}
		if rec.Outcome != "passed" || rec.Tables < len(want) || rec.Rows < rows || !strings.Contains(rec.Server, "MariaDB") ||
			!strings.Contains(rec.Tool, "mariabackup") {
			t.Fatalf("verification record %+v: want passed, >= %d tables, >= %d rows, a MariaDB server and mariabackup", rec, len(want), rows)
		}
		if out := vtfifo(t, 0, "ls"); !strings.Contains(out, "passed") {
			t.Fatalf("ls does not show the record:\n%s", out)
		}
		// The record keeps what the restore had to do, and with its phases
		// it predicts the restore time of the shard's backups.
		if rec.Work == nil || rec.Work.StreamBytes <= 0 || !rec.Work.RedoKnown || rec.Work.Prepares != 1 {
			t.Fatalf("the record's work: %+v, want the stream's bytes, the redo and one prepare", rec.Work)
		}
		predictedLine := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `\s.*\s~\d+s\s+passed `)
		if out := vtfifo(t, 0, "ls"); !predictedLine.MatchString(out) ||
			!strings.Contains(out, "Restore times: predicted from the 1 latest passed test restores: download ") {
			t.Fatalf("ls does not predict the restore time from the record:\n%s", out)
		}
		if out := vtfifo(t, 0, "show", "--backup="+name); !regexp.MustCompile(`(?m)^Restore:\s+about \d.*s \(download .*, prepare .*, start .*\); ` +
			`predicted from the 1 latest passed test restores`).MatchString(out) {
			t.Fatalf("show does not predict the restore time:\n%s", out)
		}
		// The next test restore is predicted by this one before it runs, and
		// says how close the prediction came.
		out = vtfifo(t, 0, append([]string{"test-restore", "--backup=" + name}, tool...)...)
		if !regexp.MustCompile(`; served in \S+s, predicted \S+s by the earlier test restores \(\d+ % (longer|shorter)\)\n$`).MatchString(out) {
			t.Fatalf("a second test restore does not compare itself with its prediction:\n%s", out)
		}
		var again struct {
			Predicted *struct{ Download, Prepare, Start int64 }
		}
		must(t, json.Unmarshal(listed(t)[name], &again))
		if again.Predicted == nil || again.Predicted.Download <= 0 || again.Predicted.Prepare <= 0 || again.Predicted.Start <= 0 {
			t.Fatalf("the second record's prediction: %+v", again.Predicted)
		}
		// The record is no stray object to verify.
		vtfifo(t, 0, "verify", "--progress=never")
		// Nothing left in the scratch space.
		if left, _ := filepath.Glob(filepath.Join(c.TmpDir, "vtfifo-test-restore-*")); len(left) > 0 {
			t.Fatalf("scratch directories left behind: %v", left)
		}
	})

	// The fleet view from the cluster's topology (etcd): its one shard, with
	// a backup that passed its test restore.
	t.Run("ls-fleet-from-topology", func(t *testing.T) {
		out, code, err := c.VtfifoFleet(ctx, "ls", "--max-age=1d", "--max-unproven-age=1d")
		must(t, err)
		line := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(c.Keyspace+"/"+c.Shard) + `\s+\d+\s+\S+\s+\S+\s+\d+\s+~\d+s\s.*\s+ok$`)
		if code != 0 || !line.MatchString(out) || strings.Contains(out, "not in the topology") {
			t.Fatalf("vtfifo ls with the topology's flags: exit %d\n%s", code, out)
		}
	})

	t.Run("restore-table", func(t *testing.T) {
		db := c.DBName()
		sums := func() map[string]cluster.TableSum {
			got, err := p.Checksums(ctx)
			must(t, err)
			m := map[string]cluster.TableSum{}
			for _, s := range got {
				m[s.Table] = s
			}
			return m
		}
		before := map[string]cluster.TableSum{}
		for _, s := range want {
			before[s.Table] = s
		}
		restoreTable := func(t *testing.T, code int, args ...string) string {
			t.Helper()
			dir, err := os.MkdirTemp(c.TmpDir, "restore-table-")
			must(t, err)
			must(t, os.Chmod(dir, 0o777))
			// The primary writes a binary log: --unreplicated, the table meant for this server only.
			return vtfifo(t, code, append(append([]string{"restore-table", "--backup=" + name, "--target-dir=" + filepath.Join(dir, "t"), "--unreplicated"},
				args...), tool[:2]...)...)
		}
		// A table with secondary indexes, under another name, into the
		// tablet found by its alias.
		out := restoreTable(t, 0, "--table="+db+".orders", "--into-tablet="+p.Alias, "--as="+db+".orders_restored")
		if !strings.Contains(out, "OK: "+db+".orders imported as "+db+".orders_restored") || !strings.Contains(out, "CHECK TABLE OK") {
			t.Fatalf("restore-table orders:\n%s", out)
		}
		if got := sums()["orders_restored"]; got.Rows != before["orders"].Rows || got.Checksum != before["orders"].Checksum {
			t.Fatalf("orders_restored %+v, want %+v", got, before["orders"])
		}
		// A partitioned table, dropped, restored under its own name.
		_, err := p.Exec(ctx, "DROP TABLE "+db+".metrics_part")
		must(t, err)
		out = restoreTable(t, 0, "--table="+db+".metrics_part", "--into-tablet="+p.Alias)
		if !strings.Contains(out, "OK: "+db+".metrics_part imported as "+db+".metrics_part") {
			t.Fatalf("restore-table metrics_part:\n%s", out)
		}
		if got := sums()["metrics_part"]; got.Rows != before["metrics_part"].Rows || got.Checksum != before["metrics_part"].Checksum {
			t.Fatalf("metrics_part %+v, want %+v", got, before["metrics_part"])
		}
		// And each the other way: orders dropped and back under its own
		// name, metrics_part beside itself under another.
		_, err = p.Exec(ctx, "DROP TABLE "+db+".orders")
		must(t, err)
		restoreTable(t, 0, "--table="+db+".orders", "--into-tablet="+p.Alias)
		out = restoreTable(t, 0, "--table="+db+".metrics_part", "--into-tablet="+p.Alias, "--as="+db+".metrics_restored", "--json")
		var res struct {
			Backup string
			Tables []struct {
				Table, Engine, Definition string
				ImportedAs                string `json:"imported_as"`
				Rows                      int64
				Check                     string
			}
		}
		if decodeJSON(out, "{\n  \"backup\"", &res) != nil || len(res.Tables) != 1 ||
			res.Tables[0].Table != db+".metrics_part" || res.Tables[0].ImportedAs != db+".metrics_restored" ||
			res.Tables[0].Rows != before["metrics_part"].Rows || res.Tables[0].Check != "OK" || !strings.HasSuffix(res.Tables[0].Definition, ".sql") {
			t.Fatalf("restore-table --json: %+v\n%s", res, out)
		}
		now := sums()
		for table, from := range map[string]string{"orders": "orders", "metrics_restored": "metrics_part"} {
			if got := now[table]; got.Rows != before[from].Rows || got.Checksum != before[from].Checksum {
				t.Fatalf("%s %+v, want %+v", table, got, before[from])
			}
		}
		_, err = p.Exec(ctx, "DROP TABLE "+db+".metrics_restored")
		must(t, err)
		// An Aria table (copied by mariabackup while it could change, made
		// whole by Aria's recovery), dropped and back under its own name,
		// then beside itself under another.
		_, err = p.Exec(ctx, "DROP TABLE "+db+".events_aria")
		must(t, err)
		out = restoreTable(t, 0, "--table="+db+".events_aria", "--into-tablet="+p.Alias)
		if !strings.Contains(out, "OK: "+db+".events_aria imported as "+db+".events_aria") {
			t.Fatalf("restore-table events_aria:\n%s", out)
		}
		restoreTable(t, 0, "--table="+db+".events_aria", "--into-tablet="+p.Alias, "--as="+db+".events_restored")
		now = sums()
		for table, from := range map[string]string{"events_aria": "events_aria", "events_restored": "events_aria"} {
			if got := now[table]; got.Rows != before[from].Rows || got.Checksum != before[from].Checksum {
				t.Fatalf("%s %+v, want %+v", table, got, before[from])
			}
		}
		_, err = p.Exec(ctx, "DROP TABLE "+db+".events_restored")
		must(t, err)
		// A name in another script with a foreign key, beside the live
		// table: the key keeps its parent and takes a free name, said so.
		out = restoreTable(t, 0, "--table=données.enfant", "--into-tablet="+p.Alias, "--as=données.enfant-2")
		if !strings.Contains(out, "OK: données.enfant imported as données.enfant-2: 50 rows") ||
			!strings.Contains(out, "note: données.enfant-2: foreign key lien is named lien_2 in données.enfant-2 (lien is taken in database données)") {
			t.Fatalf("restore-table données.enfant:\n%s", out)
		}
		r, err := p.Exec(ctx, "SHOW CREATE TABLE `données`.`enfant-2`")
		must(t, err)
		if def := r.Rows[0][1].ToString(); !strings.Contains(def, "CONSTRAINT `lien_2` FOREIGN KEY (`pid`) REFERENCES `tâble_é_3` (`id`)") {
			t.Fatalf("données.enfant-2:\n%s", def)
		}
		_, err = p.Exec(ctx, "DROP TABLE `données`.`enfant-2`")
		must(t, err)
		// A stray file where a target's tablespace goes, both tables of
		// données dropped: refused before anything is downloaded or changed
		// (RENAME TABLE would write over it), the file untouched.
		for _, q := range []string{"DROP TABLE `données`.`enfant`", "DROP TABLE `données`.`tâble_é_3`"} {
			_, err = p.Exec(ctx, q)
			must(t, err)
		}
		dd, err := p.Exec(ctx, "SELECT @@datadir")
		must(t, err)
		stray := filepath.Join(dd.Rows[0][0].ToString(), "donn@0pes", "t@0ible_@0p_3.ibd")
		must(t, os.WriteFile(stray, []byte("not ours"), 0o640))
		out = restoreTable(t, 2, "--table=données.*", "--into-tablet="+p.Alias)
		if !strings.Contains(out, "données.tâble_é_3: a file of that name exists in the live server's database directory: "+stray+
			", no table's of the server's; move it away or choose another name (--as): nothing was downloaded or changed") {
			t.Fatalf("restore-table données.* with a stray file in the way:\n%s", out)
		}
		if b, err := os.ReadFile(stray); err != nil || string(b) != "not ours" {
			t.Fatalf("the stray file was touched: %q, %v", b, err)
		}
		left, err := p.Exec(ctx, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'données'")
		must(t, err)
		if n := left.Rows[0][0].ToString(); n != "0" {
			t.Fatalf("%s tables left in données after the failed run", n)
		}
		must(t, os.Remove(stray))
		out = restoreTable(t, 0, "--table=données.*", "--into-tablet="+p.Alias)
		if !strings.Contains(out, "OK: données.enfant imported as données.enfant: 50 rows") ||
			!strings.Contains(out, "OK: données.tâble_é_3 imported as données.tâble_é_3: 50 rows") {
			t.Fatalf("restore-table données.*:\n%s", out)
		}
		underAnotherSessionsLock(ctx, t, p, func(code int, args ...string) string { return restoreTable(t, code, args...) }, db)
		if withMany {
			// One of the thousands, beside itself, through the server's socket.
			one := fmt.Sprintf("%s.t%05d", many, manyTables/2)
			restoreTable(t, 0, "--table="+one, "--into-mysql="+p.Socket(), "--as="+one+"_restored")
			checksum := func(table string) string {
				r, err := p.Exec(ctx, "CHECKSUM TABLE "+table)
				must(t, err)
				return r.Rows[0][1].ToString()
			}
			if got, want := checksum(one+"_restored"), checksum(one); got != want || want == "" {
				t.Fatalf("%s_restored: checksum %q, want %q", one, got, want)
			}
		}
		// Bad input: one clear line, exit 2 (a flag the backup or the live
		// server contradicts), the live server unchanged.
		unchanged := sums()
		for _, tc := range []struct {
			code int
			args []string
			want string
		}{
			{2, []string{"--table=" + db + ".orders", "--into-tablet=" + p.Alias}, "exists in the live server: nothing was downloaded or changed"},
			{2, []string{"--table=" + db + ".nosuch", "--into-tablet=" + p.Alias}, "no table " + db + ".nosuch in backup"},
			// A pattern: every target checked before any frame is read.
			{2, []string{"--table=" + db + ".*", "--into-tablet=" + p.Alias}, db + ".customers, " + db + ".events_aria"},
			{2, []string{"--table=" + db + ".*", "--into-tablet=" + p.Alias}, "exists in the live server: nothing was downloaded or changed"},
			{2, []string{"--table=" + db + ".events_aria", "--into-mysql=" + p.Socket()}, db + ".events_aria: a table of that name exists in the live server: " +
				"nothing was downloaded or changed"},
		} {
			if out := restoreTable(t, tc.code, tc.args...); !strings.Contains(out, tc.want) {
				t.Fatalf("restore-table %v: want %q in:\n%s", tc.args, tc.want, out)
			}
		}
		if got := sums(); len(got) != len(unchanged) {
			t.Fatalf("the live server changed: %v, was %v", got, unchanged)
		}
		// Without --unreplicated, into a primary that writes a binary log: the
		// rows go through it, as its replicas would need them.
		dir, err := os.MkdirTemp(c.TmpDir, "restore-table-")
		must(t, err)
		must(t, os.Chmod(dir, 0o777))
		out = vtfifo(t, 0, append([]string{"restore-table", "--backup=" + name, "--target-dir=" + filepath.Join(dir, "t"), "--table=" + db + ".orders",
			"--into-tablet=" + p.Alias, "--as=" + db + ".orders_logged"}, tool[:2]...)...)
		if !strings.Contains(out, "OK: "+db+".orders imported as "+db+".orders_logged through the binary log") {
			t.Fatalf("restore-table into a primary that logs:\n%s", out)
		}
		logged := sums()
		if got := logged["orders_logged"]; got.Rows != before["orders"].Rows || got.Checksum != before["orders"].Checksum {
			t.Fatalf("orders_logged %+v, want %+v", got, before["orders"])
		}
		for name := range logged {
			if strings.HasPrefix(name, "_vtfifo_local_") {
				t.Fatalf("the local table %s is left behind", name)
			}
		}
		status, err := p.Exec(ctx, "SHOW MASTER STATUS")
		must(t, err)
		events, err := p.Exec(ctx, "SHOW BINLOG EVENTS IN '"+status.Rows[0][0].ToString()+"'")
		must(t, err)
		var createLogged bool
		for _, row := range events.Rows {
			createLogged = createLogged || strings.Contains(row[len(row)-1].ToString(), "orders_logged")
		}
		if !createLogged {
			t.Fatal("the binary log has no event naming orders_logged")
		}
		_, err = p.Exec(ctx, "DROP TABLE "+db+".orders_logged")
		must(t, err)

		// A FULLTEXT table: its rows, read from the restored files by a
		// throwaway server, through the binary log; the inserts build the index.
		out = vtfifo(t, 0, append([]string{"restore-table", "--backup=" + name, "--target-dir=" + filepath.Join(dir, "ft"), "--table=textes.articles",
			"--into-tablet=" + p.Alias, "--as=textes.articles_logged"}, tool[:2]...)...)
		if !strings.Contains(out, "OK: textes.articles imported as textes.articles_logged as rows through the binary log: 300 rows, CHECK TABLE OK") ||
			!strings.Contains(out, "note: textes.articles_logged: its files cannot be imported: its rows are loaded") {
			t.Fatalf("restore-table of a FULLTEXT table:\n%s", out)
		}
		var texts []string
		for _, table := range []string{"articles", "articles_logged"} {
			r, err := p.Exec(ctx, "SELECT COUNT(*), (SELECT CONCAT(COUNT(*), ' ', SUM(CRC32(CONCAT(id, body)))) FROM textes."+table+") FROM textes."+
				table+" WHERE MATCH(body) AGAINST ('word7')")
			must(t, err)
			texts = append(texts, r.Rows[0][0].ToString()+" "+r.Rows[0][1].ToString())
		}
		if !strings.HasPrefix(texts[0], "6 300 ") || texts[1] != texts[0] {
			t.Fatalf("full-text matches, rows and their CRC sum: textes.articles %q, textes.articles_logged %q", texts[0], texts[1])
		}

		// A copy stopped after its first rows (its command killed) leaves the
		// copy beside its local copy, and no target: --resume finishes it.
		// Made as a run makes them: the local copy unlogged, the copy from
		// its definition and its first rows through the log (as row events:
		// the restored orders is on this server only).
		resumedAs := tableimport.Target{DB: db, Table: "orders_resumed"}
		local, copied := tableimport.LocalName(resumedAs), tableimport.CopyName(resumedAs)
		def, err := p.Exec(ctx, "SHOW CREATE TABLE "+db+".orders")
		must(t, err)
		create := strings.Replace(def.Rows[0][1].ToString(), "CREATE TABLE `orders`", "CREATE TABLE "+db+".`"+copied.Table+"`", 1)
		must(t, p.ExecAll(ctx,
			"SET SESSION sql_log_bin = 0",
			"CREATE TABLE "+db+".`"+local.Table+"` LIKE "+db+".orders",
			"INSERT INTO "+db+".`"+local.Table+"` SELECT * FROM "+db+".orders",
			"SET SESSION sql_log_bin = 1, binlog_format = ROW",
			create,
			"INSERT INTO "+db+".`"+copied.Table+"` SELECT * FROM "+db+".orders ORDER BY id LIMIT 10"))
		resume := func(code int, more ...string) string {
			return vtfifo(t, code, append(append([]string{"restore-table", "--backup=" + name, "--target-dir=" + filepath.Join(dir, fmt.Sprint("r", code)),
				"--table=" + db + ".orders", "--into-tablet=" + p.Alias, "--as=" + db + ".orders_resumed"}, more...), tool[:2]...)...)
		}
		if out := resume(0, "--resume"); !strings.Contains(out, "OK: "+db+".orders imported as "+db+".orders_resumed through the binary log") ||
			!strings.Contains(out, "resuming the copy through the binary log a stopped run left ("+copied.String()) {
			t.Fatalf("restore-table --resume:\n%s", out)
		}
		if got := sums()["orders_resumed"]; got.Rows != before["orders"].Rows || got.Checksum != before["orders"].Checksum {
			t.Fatalf("orders_resumed %+v, want %+v", got, before["orders"])
		}
		for _, left := range []tableimport.Target{local, copied} {
			if _, ok := sums()[left.Table]; ok {
				t.Fatalf("the reserved table %s is left behind", left)
			}
		}
		_, err = p.Exec(ctx, "DROP TABLE "+db+".orders_resumed")
		must(t, err)
		_, err = p.Exec(ctx, "DROP TABLE "+db+".orders_restored")
		must(t, err)
	})

	t.Run("restore-table-kinds", func(t *testing.T) { restoreTableKinds(ctx, t, c, p, name, vtfifo, tool[:2]) })

	restored := filepath.Join(c.TmpDir, "restored")
	t.Run("restore-prepare-starts-mariadbd", func(t *testing.T) {
		out := vtfifo(t, 0, append([]string{"restore", "--target-dir=" + restored, "--prepare"}, tool...)...)
		if !strings.Contains(out, "OK: backup") || !regexpMatch(`; took download [0-9.]+s, prepare [0-9.]+s\n`, out) {
			t.Fatalf("restore output:\n%s", out)
		}
		srv, proc, err := c.StartMysqld(ctx, "restored-mysqld", restored)
		must(t, err)
		defer proc.Stop(time.Minute)
		checkData(ctx, t, srv, want)
	})

	t.Run("export-equals-restore", func(t *testing.T) {
		stream := filepath.Join(c.TmpDir, "backup.xbstream")
		vtfifo(t, 0, "export", "-o", stream)
		f, err := os.Open(stream)
		must(t, err)
		defer f.Close()
		fromExport := filepath.Join(t.TempDir(), "mbstream")
		mariadbtest.MbstreamExtract(t, fromExport, f)
		extracted := filepath.Join(c.TmpDir, "extracted")
		out := vtfifo(t, 0, "restore", "--target-dir="+extracted, "--progress=never", "--json")
		var restored struct {
			Backup, Target, Tool string
			Files                int
		}
		if decodeJSON(out, "{\n  \"backup\"", &restored) != nil ||
			restored.Backup != c.Keyspace+"/"+c.Shard+"/"+name || restored.Target != extracted || restored.Files < 10 || restored.Tool != "" {
			t.Fatalf("restore --json (extracted, not prepared): %+v\n%s", restored, out)
		}
		if n := mariadbtest.TreesEqual(t, fromExport, extracted); n < 10 {
			t.Fatalf("only %d entries compared", n)
		}
	})

	t.Run("bad-input", func(t *testing.T) {
		for _, tc := range []struct {
			code int
			args []string
			want string
		}{
			{2, []string{"restore"}, "--target-dir is required"},
			{2, []string{"restore", "--target-dir=" + restored}, "is not empty: a restore never writes over files"},
			{3, append([]string{"test-restore", "--backup=2020-01-01.000000.zone1-0000000001"}, tool...), "no such backup (GetBackups does not list it)"},
			{2, []string{"test-restore", "--buffer-pool-size=1KiB"}, "--buffer-pool-size"},
			{2, []string{"test-restore", "--mysqld-flags=-x"}, "--mysqld-flags"},
		} {
			if out := vtfifo(t, tc.code, tc.args...); !strings.Contains(out, tc.want) {
				t.Errorf("vtfifo %s: want %q in:\n%s", strings.Join(tc.args, " "), tc.want, out)
			}
		}
	})

	if sb.name == "split-s3-sealed" {
		t.Run("seal-refuses-a-forged-part", func(t *testing.T) { forgedPart(ctx, t, c, name, vtfifo, tool) })
	}

	// vtbackup --fifo-backup-test-restore: a new backup that passes gets its
	// record; one that fails is quarantined (GetBackups, and so every
	// restore, no longer sees it) and fails vtbackup; release puts it back,
	// rm removes it.
	// The fleet view follows each change the real binaries make (the
	// storage's change marks): walked once after each, then read from
	// its summary.
	type fleetRow struct {
		Keyspace, Shard      string
		Backups, Quarantined int
		Walked               string
	}
	fleet := func(t *testing.T, wantWalked *bool) fleetRow {
		t.Helper()
		out, code, err := c.VtfifoFleet(ctx, "ls", "--json")
		must(t, err)
		var rows []fleetRow
		if code != 0 || json.Unmarshal([]byte(out), &rows) != nil {
			t.Fatalf("vtfifo ls --json (the fleet): exit %d\n%s", code, out)
		}
		for _, r := range rows {
			if r.Keyspace == c.Keyspace && r.Shard == c.Shard {
				if wantWalked != nil && (r.Walked != "") != *wantWalked {
					t.Fatalf("the fleet view walked the shard: %q, want walked %v\n%s", r.Walked, *wantWalked, out)
				}
				return r
			}
		}
		t.Fatalf("the fleet view has no %s/%s:\n%s", c.Keyspace, c.Shard, out)
		return fleetRow{}
	}
	yes, no := true, false
	t.Run("vtbackup-test-restore-quarantine-release-rm", func(t *testing.T) {
		vo := cluster.VtbackupOptions{Engine: engineFor(c, sb.engine), MinRetentionCount: 10,
			Extra: []string{"--fifo-backup-test-restore", "--fifo-backup-test-restore-scratch-dir=" + c.TmpDir}}
		before, err := c.GetBackups(ctx)
		must(t, err)
		fleet(t, nil) // whatever the steps before changed
		if r := fleet(t, &no); r.Backups != len(before) {
			t.Fatalf("the fleet view from its summary: %+v, want %d backups", r, len(before))
		}
		_, err = c.RunVtbackup(ctx, vo)
		must(t, err)
		after, err := c.GetBackups(ctx)
		must(t, err)
		if len(after) != len(before)+1 {
			t.Fatalf("after vtbackup: %v, want %v and one more", after, before)
		}
		if r := fleet(t, &yes); r.Backups != len(after) || !strings.HasPrefix(r.Walked, "changed since its summary") {
			t.Fatalf("the fleet view after vtbackup: %+v, want %d backups, walked because it changed", r, len(after))
		}
		fleet(t, &no)
		var rec struct{ Outcome string }
		must(t, json.Unmarshal(listed(t)[after[len(after)-1]], &rec))
		if rec.Outcome != "passed" {
			t.Fatalf("vtbackup's test restore of %s: %+v", after[len(after)-1], rec)
		}

		// Retention that would prune every older backup, and flags that do
		// not fit: vtbackup must not cost the older backups, nor quarantine
		// one, nor call one damaged. The prepare's flags fail vtbackup's own
		// restore of the newest backup, before it takes one, saying that
		// they may be the cause.
		vo.MinRetentionCount, vo.MinRetentionTime = 1, time.Second
		run := vo
		run.Extra = append(slices.Clone(vo.Extra), "--fifo-backup-prepare-flags=--innodb-page-size=4k")
		res, err := c.RunVtbackup(ctx, run)
		if err == nil || !strings.Contains(res.Output, `its prepare ran with --fifo-backup-prepare-flags="--innodb-page-size=4k", which may be `+
			`what it failed on`) || !strings.Contains(res.Output, "nothing says the backup is damaged") || strings.Contains(res.Output, "the backup is quarantined") {
			t.Fatalf("vtbackup with prepare flags that do not fit the backup it restores: err %v, want it failed naming the flags, "+
				"nothing called damaged or quarantined:\n%s", err, res.Output)
		}
		if now, err := c.GetBackups(ctx); err != nil || !slices.Equal(now, after) {
			t.Fatalf("GetBackups lists %v (%v) after vtbackup's failed restore, want %v: nothing taken, pruned or quarantined", now, err, after)
		}
		// The server's flags: the backup is taken, its test restore reaches
		// no verdict, and vtbackup's pruning waits for one.
		run.Extra = append(slices.Clone(vo.Extra), "--fifo-backup-test-restore-mysqld-flags=--innodb-page-size=4k",
			"--fifo-backup-test-restore-start-timeout=2m")
		res, err = c.RunVtbackup(ctx, run)
		if err == nil || !strings.Contains(res.Output, "could not run, nothing is recorded") ||
			strings.Contains(res.Output, "the backup is quarantined") {
			t.Fatalf("vtbackup with flags that do not fit its test restore: err %v, want it failed, nothing quarantined:\n%s", err, res.Output)
		}
		untested, err := c.GetBackups(ctx)
		must(t, err)
		if len(untested) != len(after)+1 || !slices.Equal(untested[:len(after)], after) {
			t.Fatalf("GetBackups lists %v after a test restore with no verdict, want %v and the new one: nothing pruned or quarantined", untested, after)
		}
		// A part of it damaged in the store: its test restore fails and, by
		// default, takes it out of every restore's choice, Vitess's too.
		newest := untested[len(untested)-1]
		key := damageOnePart(ctx, t, c, splitFlags(c), newest)
		if out := vtfifo(t, 1, append([]string{"test-restore", "--backup=" + newest}, tool...)...); !strings.Contains(out, key) ||
			!strings.Contains(out, "the backup is quarantined: restores no longer choose it") {
			t.Fatalf("test-restore of a damaged part %s:\n%s", key, out)
		}
		listedNow, err := c.GetBackups(ctx)
		must(t, err)
		if !slices.Equal(listedNow, after) {
			t.Fatalf("GetBackups lists %v after the failed test restore, want %v: a quarantined backup is never listed", listedNow, after)
		}
		out := vtfifo(t, 0, "verify", "--list-incomplete")
		m := regexp.MustCompile(`(?m)^incomplete \S+/(\S+): .*; quarantined: test restore failed`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("verify --list-incomplete does not show the quarantined backup:\n%s", out)
		}
		quarantined := m[1]
		if r := fleet(t, &yes); r.Quarantined != 1 || r.Backups != len(after) {
			t.Fatalf("the fleet view after the quarantine: %+v, want 1 quarantined and %d backups", r, len(after))
		}
		vtfifo(t, 1, "show", "--backup="+quarantined)
		// Damaged, it stays quarantined; its part made whole again (as
		// vtfifo repair would), release puts it back.
		if out := vtfifo(t, 1, "release", "--backup="+quarantined); !strings.Contains(out, "stays quarantined") || !strings.Contains(out, key) {
			t.Fatalf("release of a damaged backup:\n%s", out)
		}
		if again := damageOnePart(ctx, t, c, splitFlags(c), quarantined); again != key {
			t.Fatalf("damageOnePart flipped %s back, not %s", again, key)
		}
		if out := vtfifo(t, 0, "release", "--backup="+quarantined); !strings.Contains(out, "still pass it over") {
			t.Fatalf("release does not say that its failed test record still passes it over:\n%s", out)
		}
		released, err := c.GetBackups(ctx)
		must(t, err)
		if !slices.Contains(released, quarantined) {
			t.Fatalf("released backup %s is not listed: %v", quarantined, released)
		}
		must(t, json.Unmarshal(listed(t)[quarantined], &rec))
		if rec.Outcome != "failed" {
			t.Fatalf("the released backup's record: %+v, want failed", rec)
		}
		vtfifo(t, 2, "rm")
		vtfifo(t, 0, "rm", "--backup="+quarantined)
		final, err := c.GetBackups(ctx)
		must(t, err)
		if !slices.Equal(final, after) {
			t.Fatalf("after rm: %v, want %v", final, after)
		}
		if r := fleet(t, &yes); r.Quarantined != 0 || r.Backups != len(after) {
			t.Fatalf("the fleet view after rm: %+v, want none quarantined and %d backups", r, len(after))
		}
		fleet(t, &no)
	})

	// vtbackup's own verdict: a table whose files are damaged on the source
	// (a MyISAM index cut short, unopened since) is carried by every backup
	// as it is, and CHECK TABLE in vtbackup's test restore fails on it:
	// vtbackup quarantines its new backup, exits non-zero and prunes
	// nothing, though its retention would. The table dropped and the
	// backups that carry it removed, the shard is as before.
	t.Run("vtbackup-quarantines-a-backup-that-fails", func(t *testing.T) {
		before, err := c.GetBackups(ctx)
		must(t, err)
		incomplete := func() []string {
			out, _, _ := c.Vtfifo(ctx, "verify", "--list-incomplete")
			var names []string
			for _, m := range regexp.MustCompile(`(?m)^incomplete \S+/(\S+): `).FindAllStringSubmatch(out, -1) {
				names = append(names, m[1])
			}
			return names
		}
		incompleteBefore := incomplete()
		db := c.DBName()
		// Whatever fails below, the table goes and the backups that carry
		// it are removed: the next subtests back up and restore the shard.
		defer func() {
			if _, err := p.Exec(ctx, "DROP TABLE IF EXISTS "+db+".cut"); err != nil {
				t.Errorf("dropping %s.cut: %v", db, err)
			}
			now, _ := c.GetBackups(ctx)
			for _, name := range append(now, incomplete()...) {
				if !slices.Contains(before, name) && !slices.Contains(incompleteBefore, name) {
					c.Vtfifo(ctx, "rm", "--backup="+name)
				}
			}
			if final, err := c.GetBackups(ctx); err != nil || !slices.Equal(final, before) {
				t.Errorf("after rm: %v (%v), want %v", final, err, before)
			}
		}()
		must(t, p.ExecAll(ctx, "CREATE TABLE "+db+".cut (id INT, KEY (id)) ENGINE=MyISAM",
			"INSERT INTO "+db+".cut SELECT seq FROM "+db+".seq_1_to_2000", "FLUSH TABLES"))
		must(t, os.Truncate(filepath.Join(p.Dir, "data", db, "cut.MYI"), 2048))
		_, err = p.Exec(ctx, "FLUSH TABLES")
		must(t, err)
		must(t, p.Backup(ctx, true, ""))
		carrying, err := c.GetBackups(ctx)
		must(t, err)
		if len(carrying) != len(before)+1 {
			t.Fatalf("after the tablet's backup: %v, want %v and one more", carrying, before)
		}
		vo := cluster.VtbackupOptions{Engine: engineFor(c, sb.engine), MinRetentionCount: 1, MinRetentionTime: time.Second,
			Extra: []string{"--fifo-backup-test-restore", "--fifo-backup-test-restore-scratch-dir=" + c.TmpDir}}
		res, err := c.RunVtbackup(ctx, vo)
		if err == nil || !strings.Contains(res.Output, "the backup is quarantined") || !strings.Contains(res.Output, "`"+db+"`.`cut`") {
			t.Fatalf("vtbackup whose new backup carries a damaged table: err %v, want its test restore failed on %s.cut and the backup "+
				"quarantined:\n%s", err, db, res.Output)
		}
		listedNow, err := c.GetBackups(ctx)
		must(t, err)
		if !slices.Equal(listedNow, carrying) {
			t.Fatalf("GetBackups lists %v after vtbackup's failed test restore, want %v: the new one quarantined, nothing pruned", listedNow, carrying)
		}
		m := regexp.MustCompile(`(?m)^incomplete \S+/(\S+): .*; quarantined: test restore failed`).FindStringSubmatch(vtfifo(t, 0, "verify",
			"--list-incomplete"))
		if m == nil {
			t.Fatal("verify --list-incomplete does not show vtbackup's quarantined backup")
		}
		if out := vtfifo(t, 1, "show", "--backup="+m[1]); !strings.Contains(out, "quarantined: test restore failed") ||
			!strings.Contains(out, "CHECK TABLE failed on 1 of ") || !strings.Contains(out, "`"+db+"`.`cut`") {
			t.Fatalf("vtfifo show of vtbackup's quarantined %s: want its failed test restore naming %s.cut:\n%s", m[1], db, out)
		}
	})

	// copy: S3 -> S3 under another prefix (a tablet restores from the copy)
	// and S3 -> GCS (fake-gcs-server), each verified at the destination; a
	// second copy to the same place is refused.
	t.Run("copy", func(t *testing.T) {
		tablet := splitFlags(c)
		flagsFile := filepath.Join(c.Root, "tablet-storage.flags")
		must(t, c.WriteFileOwned(flagsFile, []byte(strings.Join(tablet, "\n")+"\n"), 0o644))
		if sb.name != "split-s3-sealed" {
			// Local disk: to another root, verified there; a second copy is
			// refused. (The server-side copies, the kill and the disaster
			// drill run from S3, below.)
			dr := filepath.Join(c.Root, "dr-storage")
			must(t, c.MkdirOwned(dr))
			out := vtfifo(t, 0, "copy", "--backup="+name, "--progress=never", "--to-flags-file="+flagsFile, "--to=--split-storage-root="+dr, "--json")
			var copied struct {
				Backup, Destination string
				Copy                struct{ Objects, Copied int }
				SourceRemoved       bool `json:"source_removed"`
			}
			if decodeJSON(out, "{\n  \"backup\"", &copied) != nil ||
				copied.Destination != dr || copied.Copy.Objects == 0 || copied.Copy.Copied != copied.Copy.Objects || copied.SourceRemoved {
				t.Fatalf("copy --json (local to local): %+v\n%s", copied, out)
			}
			if out := vtfifo(t, 2, "copy", "--backup="+name, "--progress=never", "--to-flags-file="+flagsFile,
				"--to=--split-storage-root="+dr); !strings.Contains(out, "already holds it") {
				t.Fatalf("a second copy:\n%s", out)
			}
			vout, code, err := c.VtfifoWith(ctx, nil, append(append([]string{"verify", "--backup=" + name, "--progress=never"}, c.Storage.Flags...),
				"--split-storage-root="+dr)...)
			must(t, err)
			if code != 0 || !strings.Contains(vout, "OK") {
				t.Fatalf("verify at the destination root: exit %d\n%s", code, vout)
			}
			if _, err := os.Stat(filepath.Join(dr, c.Keyspace, c.Shard, name, ".complete")); err != nil {
				t.Fatalf("the copy is not complete under %s: %v", dr, err)
			}
			return
		}
		out := vtfifo(t, 0, "copy", "--backup="+name, "--progress=never", "--to-flags-file="+flagsFile, "--to=--split-storage-s3-prefix=dr")
		if !strings.Contains(out, "OK: backup") || !strings.Contains(out, "verified at the destination") ||
			strings.Contains(out, "; 0 of them by the storage service") {
			t.Fatalf("copy output (S3 to S3: server-side):\n%s", out)
		}
		if out := vtfifo(t, 2, "copy", "--backup="+name, "--progress=never", "--to-flags-file="+flagsFile,
			"--to=--split-storage-s3-prefix=dr"); !strings.Contains(out, "already holds it") {
			t.Fatalf("a second copy:\n%s", out)
		}
		// The copy verifies at the destination (the tablets' flags, another prefix).
		vout, code, err := c.VtfifoWith(ctx, nil, append(append([]string{"verify", "--backup=" + name, "--progress=never"}, c.Storage.Flags...),
			"--split-storage-s3-prefix=dr")...)
		must(t, err)
		if code != 0 {
			t.Fatalf("verify at the destination: exit %d\n%s", code, vout)
		}

		// A part damaged at the source is repaired from the copy, and the
		// backup verifies whole (every lane decoded) after.
		key := damageOnePart(ctx, t, c, tablet, name)
		if out := vtfifo(t, 1, "verify", "--backup="+name, "--progress=never"); !strings.Contains(out, key) {
			t.Fatalf("verify of the damaged backup does not name %s:\n%s", key, out)
		}
		out = vtfifo(t, 0, "repair", "--backup="+name, "--from-flags-file="+flagsFile, "--from=--split-storage-s3-prefix=dr")
		if !strings.Contains(out, "repaired "+key+" from s3://") || !strings.Contains(out, "verifies after the repair: 1 parts replaced") {
			t.Fatalf("repair from the copy:\n%s", out)
		}
		vtfifo(t, 0, "verify", "--backup="+name, "--progress=never")

		// Disaster: the primary is gone; a new tablet restores from the copy
		// (the newest backup there) and serves the source's data. (With the
		// primary up, a MariaDB replica cannot attach: shared/CONTEXT.md.)
		must(t, p.Destroy(ctx))
		r, err := c.NewTablet(103)
		must(t, err)
		r.Engine = engineFor(c, sb.engine)
		r.ExtraArgs = append(r.ExtraArgs, "--split-storage-s3-prefix=dr")
		must(t, r.InitMySQL(ctx))
		must(t, r.Start(ctx, cluster.StartOptions{RestoreFromBackup: true}))
		checkData(ctx, t, r, want)
		if log, _ := os.ReadFile(r.Vttablet.LogPath); !strings.Contains(string(log), name) {
			t.Fatalf("vttablet-103 did not restore %s from the copy", name)
		}

		gcs := splitstoragetest.Start(t, splitstorage.BackendGCS)
		copyArgs := append([]string{"copy", "--backup=" + name, "--progress=never", "--to-flags-file=" + flagsFile,
			"--to=--split-storage-backend=gcs", "--to=--split-storage-gcs-bucket=" + gcs.Config.GCS.Bucket, "--to=--split-storage-gcs-prefix=" +
				gcs.Config.GCS.Prefix}, c.Storage.Flags...)
		gcsFlags := append(gcs.Flags(), "--backup-storage-implementation=split", "--backup="+name, "--progress=never")

		// Killed halfway: the source's reads held to 1 MiB/s, the copy is
		// SIGKILLed half way through its bytes; the destination lists
		// nothing, and the next run resumes it.
		var infos []struct {
			Name        string
			StoredBytes int64 `json:"stored_bytes"`
		}
		lsOut := vtfifo(t, 0, "ls", "--json")
		must(t, decodeJSON(lsOut, "[", &infos))
		var stored int64
		for _, i := range infos {
			if i.Name == name {
				stored = i.StoredBytes
			}
		}
		half := time.Duration(float64(stored)/2/(1<<20)*float64(time.Second)) + 500*time.Millisecond
		killCtx, cancel := context.WithTimeout(ctx, half)
		out, code, _ = c.VtfifoWith(killCtx, gcs.Environ(), append(copyArgs, "--split-storage-download-limit=1MiB")...)
		cancel()
		if code != -1 {
			t.Fatalf("the copy held to 1 MiB/s (%d bytes stored) was not killed after %v: exit %d\n%s", stored, half, code, out)
		}
		lout, _, err := c.VtfifoWith(ctx, gcs.Environ(), append([]string{"ls", "--backup-storage-implementation=split"}, gcs.Flags()...)...)
		must(t, err)
		if strings.Contains(lout, name) {
			t.Fatalf("a killed copy is listed at the destination:\n%s", lout)
		}
		out, code, err = c.VtfifoWith(ctx, gcs.Environ(), copyArgs...)
		must(t, err)
		if code != 0 || !strings.Contains(out, "verified at the destination") {
			t.Fatalf("copy to GCS, resumed: exit %d\n%s", code, out)
		}
		t.Logf("killed after %v (%d bytes stored), then resumed: %s", half, stored, strings.TrimSpace(out))
		vout, code, err = c.VtfifoWith(ctx, gcs.Environ(), append([]string{"verify"}, gcsFlags...)...)
		must(t, err)
		if code != 0 || !strings.Contains(vout, "OK") {
			t.Fatalf("verify at GCS: exit %d\n%s", code, vout)
		}

		promoteKilledAndResumed(ctx, t, c, name, flagsFile, stored, vtfifo)
	})

	// Locks with the real binaries, on local disk (S3 Object Lock is proven
	// against versitygw in go/vt/mysqlctl/splitstorage: this cluster's
	// bucket has no Object Lock): a scheduled vtbackup with
	// --split-storage-lock-for writes a locked backup; vtctld's RemoveBackup
	// and a later vtbackup's retention refuse it, naming the date.
	if sb.name == "split-local" {
		t.Run("lock-refuses-vtctld-and-vtbackup-retention", func(t *testing.T) { lockedThroughVitess(ctx, t, c, sb, vtfifo) })
	}
}

// lockedThroughVitess is TestOperatorCLI's lock step: it runs last, since
// its retention prunes the shard's older backups.
func lockedThroughVitess(ctx context.Context, t *testing.T, c *cluster.Cluster, sb storageBackend, vtfifo func(*testing.T, int, ...string) string) {
	_, err := c.RunVtbackup(ctx, cluster.VtbackupOptions{Engine: engineFor(c, sb.engine), MinRetentionCount: 100,
		Extra: []string{"--split-storage-lock-for=24h"}})
	must(t, err)
	names, err := c.GetBackups(ctx)
	must(t, err)
	locked := names[len(names)-1]
	lockLine := regexp.MustCompile(`locked until (\S+) \(governance\)`)
	m := lockLine.FindStringSubmatch(vtfifo(t, 0, "show", "--backup="+locked))
	if m == nil {
		t.Fatalf("show does not print the lock of %s", locked)
	}
	if until, err := time.Parse(time.RFC3339, m[1]); err != nil || time.Until(until) < 23*time.Hour || time.Until(until) > 25*time.Hour {
		t.Fatalf("%s is locked until %s, want about 24h from now", locked, m[1])
	}
	out, err := c.Vtctldclient(ctx, "RemoveBackup", c.Keyspace+"/"+c.Shard, locked)
	if err == nil || !strings.Contains(out+err.Error(), "it is locked until "+m[1]) {
		t.Fatalf("vtctldclient RemoveBackup of a locked backup: err %v, want it refused naming the date:\n%s", err, out)
	}
	promoted := promotedByVtbackup(ctx, t, c, sb, vtfifo)
	// Retention that would prune every older backup: the unlocked ones go,
	// the locked one stays, and vtbackup fails naming its date (so it
	// stops there: the promoted one, newer, stays too).
	res, err := c.RunVtbackup(ctx, cluster.VtbackupOptions{Engine: engineFor(c, sb.engine), MinRetentionCount: 1, MinRetentionTime: time.Second})
	if err == nil || !strings.Contains(res.Output, "it is locked until "+m[1]) {
		t.Fatalf("vtbackup's retention over a locked backup: err %v, want it refused naming the date:\n%s", err, res.Output)
	}
	after, err := c.GetBackups(ctx)
	must(t, err)
	if len(after) != 3 || after[0] != locked || after[1] != promoted {
		t.Fatalf("after retention: %v, want the locked %s, the promoted %s and the newest", after, locked, promoted)
	}
}

// promotedByVtbackup runs vtbackup with a test restore and a promotion to a
// protected storage on local disk: the new backup is listed there, locked,
// with its passed test record; show says where it was promoted.
func promotedByVtbackup(ctx context.Context, t *testing.T, c *cluster.Cluster, sb storageBackend, vtfifo func(*testing.T, int, ...string) string) string {
	protected := filepath.Join(c.Root, "protected-backups")
	must(t, c.MkdirOwned(protected))
	_, err := c.RunVtbackup(ctx, cluster.VtbackupOptions{Engine: engineFor(c, sb.engine), MinRetentionCount: 100,
		Extra: []string{"--fifo-backup-test-restore", "--fifo-backup-test-restore-scratch-dir=" + c.TmpDir,
			"--fifo-backup-promote-to=--split-storage-root=" + protected, "--fifo-backup-promote-lock-for=48h", "--fifo-backup-promote-lock-mode=compliance"}})
	must(t, err)
	names, err := c.GetBackups(ctx)
	must(t, err)
	promoted := names[len(names)-1]
	if out := vtfifo(t, 0, "show", "--backup="+promoted); !regexp.MustCompile(`Promotion:\s+promoted to file:` + regexp.QuoteMeta(protected) +
		` on \S+, locked until \S+ \(compliance\) there`).MatchString(out) {
		t.Fatalf("show does not say where %s was promoted:\n%s", promoted, out)
	}
	out, code, err := c.VtfifoWith(ctx, nil, "ls", "--backup-storage-implementation=split", "--split-storage-root="+protected)
	must(t, err)
	if code != 0 || !regexp.MustCompile(regexp.QuoteMeta(promoted)+`\s.*passed.*locked until \S+ \(compliance\)`).MatchString(out) {
		t.Fatalf("ls at the protected storage: exit %d, want %s listed, proven and locked:\n%s", code, promoted, out)
	}
	return promoted
}

// splitFlags are the split storage's flags of the cluster's tablets.
func splitFlags(c *cluster.Cluster) []string {
	var flags []string
	for _, f := range c.Storage.Flags {
		if strings.HasPrefix(f, "--split-storage-") {
			flags = append(flags, f)
		}
	}
	return flags
}

// damageOnePart flips a byte in the middle of the first part of backup
// name's data (not its MANIFEST), through the storage's own API (any
// backend), and returns its key; a second call flips it back.
func damageOnePart(ctx context.Context, t *testing.T, c *cluster.Cluster, storageFlags []string, name string) string {
	t.Helper()
	return damageObject(ctx, t, c, storageFlags, name, func(key string) bool {
		return strings.Contains(key, ".part-") && !strings.Contains(key, "/MANIFEST.")
	})
}

// damageManifest is damageOnePart of backup name's MANIFEST.
func damageManifest(ctx context.Context, t *testing.T, c *cluster.Cluster, storageFlags []string, name string) string {
	t.Helper()
	return damageObject(ctx, t, c, storageFlags, name, func(key string) bool { return strings.Contains(key, "/MANIFEST.") })
}

// damageObject flips a byte in the middle of the first object of backup
// name that which takes, as damageOnePart says.
func damageObject(ctx context.Context, t *testing.T, c *cluster.Cluster, storageFlags []string, name string, which func(key string) bool) string {
	t.Helper()
	for _, kv := range c.Storage.Env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	cfg, err := splitstorage.ConfigFromArgs(storageFlags)
	must(t, err)
	be, err := splitstorage.OpenBackend(ctx, cfg)
	must(t, err)
	defer be.Close()
	objs, err := be.List(ctx, c.Keyspace+"/"+c.Shard+"/"+name+"/", false)
	must(t, err)
	for _, o := range objs {
		if !which(o.Key) {
			continue
		}
		r, err := be.Get(ctx, o.Key, 0, -1)
		must(t, err)
		b, err := io.ReadAll(r)
		r.Close()
		must(t, err)
		b[len(b)/2] ^= 0xff
		// The store checks the CRC32C it is sent: the damaged bytes' own.
		sum := crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli))
		must(t, be.Put(ctx, o.Key, bytes.NewReader(b), int64(len(b)), backend.PutOptions{CRC32C: sum}))
		return o.Key
	}
	t.Fatalf("backup %s has no such object", name)
	return ""
}

// longName is a table name of 60 characters, near the server's 64.
var longName = strings.Repeat("l", 60)

// restoreTableKinds: kinds.* of the backup (triggers on InnoDB and Aria, a
// sequence a table's default uses, a FULLTEXT table, a partitioned table
// of a 60-character name, a name with a dot), its database dropped and
// made again, restored in one run into the primary, through its binary
// log: every table as it was, triggers that fire, the sequence going on
// after the backup's values, the target directory removed. Then a name
// with a dot under another, a trigger whose name is taken (refused, exit
// 2; --skip-triggers goes without, said), and a read-only server (refused,
// exit 2, before anything is downloaded).
func restoreTableKinds(ctx context.Context, t *testing.T, c *cluster.Cluster, p *cluster.Tablet, name string,
	vtfifo func(t *testing.T, code int, args ...string) string, tool []string) {
	one := func(query string) string {
		t.Helper()
		r, err := p.Exec(ctx, query)
		must(t, err)
		if len(r.Rows) == 0 {
			return ""
		}
		return r.Rows[0][len(r.Rows[0])-1].ToString()
	}
	tables := []string{"audit", "trig_inno", "trig_aria", "uses_counter", "ft", longName, "a.b"}
	checksums := func() map[string]string {
		m := map[string]string{}
		for _, tb := range tables {
			m[tb] = one("SELECT COUNT(*) FROM kinds.`"+tb+"`") + " " + one("CHECKSUM TABLE kinds.`"+tb+"`")
		}
		return m
	}
	before := checksums()
	next := one("SELECT next_not_cached_value FROM kinds.counter")
	restoreTable := func(code int, args ...string) (string, string) {
		t.Helper()
		dir, err := os.MkdirTemp(c.TmpDir, "restore-table-")
		must(t, err)
		must(t, os.Chmod(dir, 0o777))
		target := filepath.Join(dir, "t")
		return vtfifo(t, code, append(append([]string{"restore-table", "--backup=" + name, "--target-dir=" + target, "--into-tablet=" + p.Alias},
			args...), tool...)...), target
	}
	for _, q := range []string{"DROP DATABASE kinds", "CREATE DATABASE kinds"} {
		one(q)
	}
	out, target := restoreTable(0, "--table=kinds.*")
	for _, want := range []string{
		"OK: kinds.counter imported as kinds.counter (a sequence) through the binary log: 1 rows",
		"OK: kinds.trig_aria imported as kinds.trig_aria through the binary log: 60 rows",
		"note: kinds.trig_aria: its triggers restored with it: trig_aria_ai",
		"note: kinds.trig_inno: its triggers restored with it: trig_inno_bi",
		"OK: kinds.ft imported as kinds.ft as rows through the binary log: 90 rows",
		"OK: kinds." + longName + " imported as kinds." + longName + " through the binary log: 30 rows",
		"OK: kinds.a.b imported as kinds.a.b through the binary log: 7 rows",
		"removed " + target + ", the restore's files (--keep-target-dir keeps them)",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("restore-table kinds.*: want %q in:\n%s", want, out)
		}
	}
	if strings.Index(out, "OK: kinds.counter") > strings.Index(out, "OK: kinds.uses_counter") {
		t.Fatalf("the sequence is not made before the table whose default uses it:\n%s", out)
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Fatalf("the target directory is left: %v", err)
	}
	if got := checksums(); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Fatalf("kinds after restore-table kinds.*:\n%v\nwant\n%v", got, before)
	}
	if n := one("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'kinds' AND TABLE_NAME LIKE '\\_vtfifo\\_%'"); n != "0" {
		t.Fatalf("%s reserved tables left in kinds", n)
	}
	// The triggers fire, the sequence goes on, the FULLTEXT index answers.
	audits := one("SELECT COUNT(*) FROM kinds.audit")
	one("INSERT INTO kinds.trig_inno (id, v) VALUES (100000, 21)")
	one("INSERT INTO kinds.trig_aria VALUES (100000, 'after')")
	one("INSERT INTO kinds.uses_counter (v) VALUES (11)")
	if w, a := one("SELECT w FROM kinds.trig_inno WHERE id = 100000"), one("SELECT COUNT(*) FROM kinds.audit"); w != "42" || a == audits {
		t.Fatalf("after the restore the triggers do not fire: w %s (want 42), audit rows %s (were %s)", w, a, audits)
	}
	if id := one("SELECT id FROM kinds.uses_counter WHERE v = 11"); id != next {
		t.Fatalf("the sequence gave %s, want %s (the first value the backup's had not handed out)", id, next)
	}
	if n := one("SELECT COUNT(*) FROM kinds.ft WHERE MATCH(body) AGAINST ('word4')"); n != "10" {
		t.Fatalf("MATCH ... AGAINST ('word4') on the restored FULLTEXT table: %s rows, want 10", n)
	}

	// A name with a dot, under another: backquotes, as in SQL.
	out, _ = restoreTable(0, "--table=kinds.`a.b`", "--as=kinds.`a.b 2`")
	if !strings.Contains(out, "OK: kinds.a.b imported as kinds.a.b 2 through the binary log: 7 rows") {
		t.Fatalf("restore-table of a name with a dot:\n%s", out)
	}
	// Into a directory that was there, empty, before: the restore's files
	// go, the directory (the operator's) stays.
	existing, err := os.MkdirTemp(c.TmpDir, "restore-table-existing-")
	must(t, err)
	must(t, os.Chmod(existing, 0o777))
	out = vtfifo(t, 0, append([]string{"restore-table", "--backup=" + name, "--target-dir=" + existing, "--into-tablet=" + p.Alias,
		"--table=kinds.`a.b`", "--as=kinds.`a.b 3`"}, tool...)...)
	if !strings.Contains(out, "removed the restore's files from "+existing+", which was there before and is kept") {
		t.Fatalf("restore-table into an existing directory:\n%s", out)
	}
	if left, err := os.ReadDir(existing); err != nil || len(left) != 0 {
		t.Fatalf("the existing target directory: %v, holding %v (want it kept, empty)", err, left)
	}
	// Its trigger's name is taken beside the live table: refused; with
	// --skip-triggers imported without it, said.
	out, _ = restoreTable(2, "--table=kinds.trig_inno", "--as=kinds.trig_inno_2")
	if strings.Count(out, "trigger kinds.trig_inno_bi (on trig_inno): a trigger of that name exists in the live server") != 1 ||
		!strings.Contains(out, "pass --skip-triggers") {
		t.Fatalf("restore-table with a trigger name taken:\n%s", out)
	}
	out, _ = restoreTable(0, "--table=kinds.trig_inno", "--as=kinds.trig_inno_2", "--skip-triggers", "--keep-target-dir")
	if !strings.Contains(out, "note: kinds.trig_inno_2: trigger trig_inno_bi (BEFORE INSERT) not restored (--skip-triggers)") ||
		strings.Contains(out, "removed ") {
		t.Fatalf("restore-table --skip-triggers --keep-target-dir:\n%s", out)
	}
	// A read-only server (as Vitess keeps a replica) is never written to.
	one("SET GLOBAL read_only = 1")
	out, target = restoreTable(2, "--table=kinds.ft", "--as=kinds.ft_2")
	one("SET GLOBAL read_only = 0")
	if !strings.Contains(out, "the live server must not be written to: it is read-only (read_only=ON") {
		t.Fatalf("restore-table into a read-only server:\n%s", out)
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Fatalf("restore-table into a read-only server downloaded into %s", target)
	}
}

// underAnotherSessionsLock: restore-table while another session holds
// FLUSH TABLES WITH READ LOCK (as a backup tool takes it) past the live
// server's lock_wait_timeout fails with the server's own error, which says
// nothing of the backup: exit 3, naming the lock (it was 1, "a backup is
// damaged"), and no table under the target's name; with the lock gone the
// same run imports the table whole.
func underAnotherSessionsLock(ctx context.Context, t *testing.T, p *cluster.Tablet, restoreTable func(int, ...string) string, db string) {
	t.Helper()
	live, err := sql.Open("mysql", "vt_dba@unix("+p.Socket()+")/")
	must(t, err)
	defer live.Close()
	lock, err := live.Conn(ctx)
	must(t, err)
	defer lock.Close()
	for _, q := range []string{"SET GLOBAL lock_wait_timeout = 2", "FLUSH TABLES WITH READ LOCK"} {
		_, err := lock.ExecContext(ctx, q)
		must(t, err)
	}
	args := []string{"--table=" + db + ".orders", "--into-tablet=" + p.Alias, "--as=" + db + ".orders_under_lock"}
	out := restoreTable(3, args...)
	for _, q := range []string{"UNLOCK TABLES", "SET GLOBAL lock_wait_timeout = DEFAULT"} {
		_, err := lock.ExecContext(ctx, q)
		must(t, err)
	}
	if !strings.Contains(out, "Lock wait timeout exceeded") || !strings.Contains(out, "; this host could not finish it (another session held a lock "+
		"past the server's lock_wait_timeout): nothing says the backup is damaged") {
		t.Fatalf("restore-table under another session's lock:\n%s", out)
	}
	var n int
	must(t, live.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'orders_under_lock'",
		db).Scan(&n))
	if n != 0 {
		t.Fatalf("%s.orders_under_lock exists after the run the lock stopped", db)
	}
	if out := restoreTable(0, args...); !strings.Contains(out, "OK: "+db+".orders imported as "+db+".orders_under_lock") {
		t.Fatalf("restore-table once the lock is gone:\n%s", out)
	}
}

// forgedPart is TestOperatorCLI's seal step, on the sealed S3 storage: the
// first part of a lane replaced, at the store, by bytes whose CRC32C (whole
// and per block) matches: vtfifo verify and restore, with the signing key,
// refuse the backup naming the file, part and block; show says it is
// sealed, and without the key that it was not checked. The part is put
// back at the end.
func forgedPart(ctx context.Context, t *testing.T, c *cluster.Cluster, name string, vtfifo func(*testing.T, int, ...string) string, tool []string) {
	var unsigned []string
	for _, f := range c.Storage.Flags {
		if !strings.HasPrefix(f, "--split-storage-signing-key-file=") {
			unsigned = append(unsigned, f)
		}
	}
	be := rawBackend(ctx, t, c)
	prefix := c.Keyspace + "/" + c.Shard + "/" + name + "/"
	objs, err := be.List(ctx, prefix, false)
	must(t, err)
	var key string
	for _, o := range objs {
		if strings.HasPrefix(o.Key, prefix+"lane-") && strings.HasSuffix(o.Key, ".part-00000001") {
			key = o.Key
			break
		}
	}
	if key == "" {
		t.Fatalf("no lane part under %s", prefix)
	}
	lane := strings.TrimSuffix(strings.TrimPrefix(key, prefix), ".part-00000001")
	orig := splitstoragetest.Get(t, be, key)
	splitstoragetest.Put(t, be, key, splitstoragetest.ForgeCRC32C(orig, 100, 104))
	restored := false
	defer func() {
		if !restored { // the later steps need the backup whole
			splitstoragetest.Put(t, be, key, orig)
		}
	}()
	forged := "file " + lane + ", part 1, block 0: its bytes: not the ones sealed (the tag differs; a CRC32C can be made to match): replaced or forged"
	if out := vtfifo(t, 1, "verify", "--backup="+name); !strings.Contains(out, forged) {
		t.Fatalf("verify of a forged backup does not name the forged block:\n%s", out)
	}
	target := filepath.Join(c.TmpDir, "forged-restore")
	if out := vtfifo(t, 1, append([]string{"restore", "--backup=" + name, "--target-dir=" + target}, tool...)...); !strings.Contains(out, forged) {
		t.Fatalf("restore of a forged backup does not name the forged block:\n%s", out)
	}
	if out := vtfifo(t, 0, "show", "--backup="+name); !regexp.MustCompile(`MAC:\s+sealed with key e2e-sign-1 \(HMAC-SHA256-HKDF-v1\): seal and markers check`).MatchString(out) {
		t.Fatalf("show does not say the backup is sealed:\n%s", out)
	}
	out, code, err := c.VtfifoWith(ctx, nil, append([]string{"show", "--backup=" + name}, unsigned...)...)
	must(t, err)
	if code != 0 || !strings.Contains(out, "not checked here: no --split-storage-signing-key-file") {
		t.Fatalf("show without the signing key: exit %d\n%s", code, out)
	}
	splitstoragetest.Put(t, be, key, orig)
	restored = true
	vtfifo(t, 0, "verify", "--backup="+name)
}

// promoteKilledAndResumed is TestOperatorCLI's promotion on S3: vtfifo
// promote to a second versitygw with Object Lock (streamed: another
// endpoint), its reads held to 1 MiB/s and SIGKILLed half way: the
// source refuses its removal, the destination lists nothing; run again, it
// finishes, and the backup is listed and locked there.
func promoteKilledAndResumed(ctx context.Context, t *testing.T, c *cluster.Cluster, name, flagsFile string, stored int64,
	vtfifo func(*testing.T, int, ...string) string) {
	dst := splitstoragetest.StartS3ObjectLock(t)
	args := []string{"promote", "--backup=" + name, "--to-flags-file=" + flagsFile, "--to=--split-storage-s3-endpoint=" + dst.Config.S3.Endpoint,
		"--for=48h"}
	// Killed once its marker is at the source and its copy under way (held
	// to 1 MiB/s, it takes seconds): not at a time guessed.
	killCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		out  string
		code int
	}
	done := make(chan result, 1)
	go func() {
		out, code, _ := c.VtfifoWith(killCtx, nil, append(append(args, c.Storage.Flags...), "--split-storage-download-limit=1MiB")...)
		done <- result{out, code}
	}()
	marker := c.Keyspace + "/" + c.Shard + "/" + name + "/.promoting"
	be := rawBackend(ctx, t, c)
	var half time.Duration
	for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		if _, err := be.Stat(ctx, marker); err == nil {
			half = time.Since(start) + time.Duration(float64(stored)/2/(1<<20)*float64(time.Second))
			time.Sleep(time.Duration(float64(stored) / 2 / (1 << 20) * float64(time.Second)))
			break
		}
		if len(done) > 0 || time.Since(start) > time.Minute {
			t.Fatalf("the promotion never marked its source (%s)", marker)
		}
	}
	cancel()
	if r := <-done; r.code != -1 {
		t.Fatalf("the promotion held to 1 MiB/s (%d bytes stored) was not killed after %v: exit %d\n%s", stored, half, r.code, r.out)
	}
	if out := vtfifo(t, 3, "rm", "--backup="+name); !strings.Contains(out, "has not finished (vtfifo promote resumes it)") {
		t.Fatalf("rm of a backup whose promotion was killed:\n%s", out)
	}
	dstLs := append([]string{"ls", "--backup-storage-implementation=split"}, dst.Config.Args()...)
	if out, code, err := c.VtfifoWith(ctx, dst.Environ(), dstLs...); err != nil || strings.Contains(out, name) {
		t.Fatalf("a killed promotion is listed at the destination (exit %d, %v):\n%s", code, err, out)
	}
	out := vtfifo(t, 0, args...)
	if !regexp.MustCompile(`promoted \S+/` + regexp.QuoteMeta(name) + ` to s3:\S+: .*verified there, locked until \S+ \(governance\) there`).MatchString(out) {
		t.Fatalf("the promotion, resumed:\n%s", out)
	}
	out, code, err := c.VtfifoWith(ctx, dst.Environ(), dstLs...)
	must(t, err)
	if code != 0 || !regexp.MustCompile(regexp.QuoteMeta(name)+`\s.*locked until \S+ \(governance\)`).MatchString(out) {
		t.Fatalf("ls at the protected storage: exit %d\n%s", code, out)
	}
	t.Logf("promotion killed after %v, then resumed: %s", half, strings.TrimSpace(out))
}

// rawBackend is the cluster's split storage's backend, opened in this
// process from the cluster's flags: what a test changes or reads at the
// store, around the binaries.
func rawBackend(ctx context.Context, t *testing.T, c *cluster.Cluster) backend.Backend {
	var splitFlags []string
	for _, f := range c.Storage.Flags {
		if strings.HasPrefix(f, "--split-storage-") {
			splitFlags = append(splitFlags, f)
		}
	}
	cfg, err := splitstorage.ConfigFromArgs(splitFlags)
	must(t, err)
	be, err := splitstorage.OpenBackend(ctx, cfg)
	must(t, err)
	t.Cleanup(func() { be.Close() })
	return be
}
