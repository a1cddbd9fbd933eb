package vtfifocli

import (
	"cmp"
	"context"
	"io"
	"strings"
)

// commandDoc is a command's help.
type commandDoc struct{ use, short, long, example string }

// subcommand is one of vtfifo's commands, parsing its own flags.
type subcommand struct {
	commandDoc
	run func(ctx context.Context, prog string, args []string, stdout, stderr io.Writer) int
}

// commandDocs are vtfifo's commands' help, in the order `vtfifo --help`
// lists them: the one source of every command's help (commandHelp).
var commandDocs = []commandDoc{
	{"verify", "Check a backup without restoring it (every part, lane and chunk)",
		"Reads a backup as restore would and writes nothing: every part's size and checksum (split storage),\n" +
			"every lane decompressed, every xbstream chunk and its CRC32. Prints OK, or what is wrong and where.\n" +
			"A backup of Vitess's xtrabackup engine (an adopted fleet's, docs/migration.md) is read too: its stream,\n" +
			"from its stripes, every chunk checked. The same as fifoverify.",
		"  vtfifo verify --backup-storage-implementation=split --split-storage-backend=s3 --split-storage-s3-bucket=b \\\n" +
			"      --keyspace=commerce --shard=0 [--backup=NAME] [--sample=5%]"},
	{"export", "Write a backup as one stock xbstream (for xbstream -x / mbstream -x)",
		"Writes the backup's lanes merged back into one standard xbstream, which Percona's `xbstream -x` or\n" +
			"MariaDB's `mbstream -x` extract into the tool's files; then `xtrabackup --prepare` (or mariabackup's)\n" +
			"makes a data directory. Every chunk's CRC32 and every lane's length are checked on the way.\n" +
			"Refuses to write to a terminal.",
		"  vtfifo export --backup-storage-implementation=split --split-storage-root=/backups \\\n" +
			"      --keyspace=commerce --shard=0 -o - | mbstream -x -C /restore/datadir"},
	{"ls", "List the complete backups of a shard with their engine, time, size, lanes and position",
		"Lists the complete backups in --keyspace/--shard (or --backup-dir), oldest first, as GetBackups does,\n" +
			"with what each MANIFEST says and their test restore, then the quarantined and incomplete ones with why.\n" +
			"Without --keyspace and --shard: the fleet view, every shard of the storage (and of the topology, with its\n" +
			"flags) with its newest backup and newest one that passed a test restore; --max-age and --max-unproven-age\n" +
			"make it a check (exit 1), --prometheus prints it for node_exporter. --json prints JSON.",
		"  vtfifo ls --backup-storage-implementation=split --split-storage-root=/backups --keyspace=commerce --shard=0"},
	{"show", "Show a backup: its MANIFEST, lanes and parts, and with --files the files it holds",
		"Shows the backup (--backup, or the newest complete one) as its MANIFEST describes it, each lane's\n" +
			"bytes and chunks, and on the split storage its parts. --files also lists the files of the data\n" +
			"directory in the backup, by reading and checking every lane as verify does. --json prints one object.",
		"  vtfifo show --backup-storage-implementation=split --split-storage-root=/backups --keyspace=commerce --shard=0 --files"},
	{"restore", "Restore a backup into a directory without Vitess (--prepare: a data directory mysqld starts on)",
		"Restores the backup (--backup, or the newest complete one) into --target-dir, which must not exist or be\n" +
			"empty, reading the lanes in parallel and checking every part and chunk as a tablet's restore does. With\n" +
			"--prepare the tool (xtrabackup or mariabackup) prepares it: start mysqld with --datadir on it.\n" +
			"No Vitess process, topology or tablet is needed. See docs/disaster-recovery.md. A backup of Vitess's xtrabackup engine\n" +
			"(docs/migration.md) is restored too, from its stream.",
		"  vtfifo restore --backup-storage-implementation=split --split-storage-backend=s3 --split-storage-s3-bucket=b \\\n" +
			"      --keyspace=commerce --shard=0 --target-dir=/var/lib/mysql-restored --prepare"},
	{"restore-table", "Restore some tables of a backup, reading only the frames that hold them; import them into a live server",
		"Restores the tables --table names (db.table, db.*; InnoDB, partitions included; MariaDB's Aria, MyISAM, CSV)\n" +
			"and the files the tool needs to prepare them into --target-dir, reading only the lane frames that hold them\n" +
			"(the whole lanes for backups without a lane index, which it says), prepares them with the tool's --export,\n" +
			"checks every .cfg, and writes each table's definition, read from the backup's own files by a throwaway mysqld\n" +
			"(InnoDB read-only; it runs Aria's recovery), as db/table.sql; Aria tables are then zero-filled (aria_chk).\n" +
			"With --into-mysql or --into-tablet it imports them into that live server on this host, under their own name\n" +
			"or --as: CREATE TABLE, DISCARD TABLESPACE, the files copied in, IMPORT TABLESPACE (Aria, MyISAM, CSV: the\n" +
			"files copied in, .frm last, FLUSH TABLES), CHECK TABLE, a row count and CHECKSUM TABLE, then InnoDB's\n" +
			"checkpoint past the import; into a server that writes a binary log, under a local name and then copied into\n" +
			"the target through the binary log, so replicas get it. Any name the server accepts; foreign keys point where\n" +
			"they pointed (renames and orphan rows said). An existing table is never replaced; a run is all or nothing.\n" +
			"See docs/table-restore.md.",
		"  vtfifo restore-table --backup-storage-implementation=split --split-storage-root=/backups --keyspace=commerce \\\n" +
			"      --shard=0 --table=commerce.orders --target-dir=/var/tmp/orders --into-tablet=zone1-0000000100 --as=commerce.orders_restored"},
	{"test-restore", "Prove a backup restorable: restore, prepare, start a throwaway mysqld, CHECK TABLE every table",
		"Restores and prepares the backup into a scratch directory, starts a throwaway mysqld on it (its own socket,\n" +
			"no network, no grants, no replication, no events), runs CHECK TABLE and counts the rows of every table,\n" +
			"stops it and removes the scratch directory. The verification record (when, tool and server versions,\n" +
			"tables, rows, duration, outcome) is stored beside the backup on the split storage; `vtfifo ls` shows it. A run\n" +
			"that could not read the backup (a permission, a timeout, this host's keys) records nothing and exits 3.\n" +
			"A backup of Vitess's xtrabackup engine (docs/migration.md) is tested the same way, from its stream.",
		"  vtfifo test-restore --backup-storage-implementation=split --split-storage-root=/backups \\\n" +
			"      --keyspace=commerce --shard=0 --scratch-dir=/var/tmp"},
	{"selftest", "Prove the engine and storage on this host: a scratch server backed up, restored and compared",
		"Needs no Vitess and no network: a scratch server laid out as a tablet's, a shaped data set written to\n" +
			"while it is backed up (full, then two incremental) through the real engine into a split storage on local\n" +
			"disk, every backup verified, the chain restored, prepared, started and compared table by table, one table\n" +
			"restored into the scratch server, the stream extracted with the tool's own extractor. Prints a report\n" +
			"to attach to a bug; steps the host cannot run are skipped with the reason. See docs/compatibility.md.",
		"  vtfifo selftest --work-dir=/var/tmp [--tool=/usr/bin/xtrabackup] [--mysqld=/usr/sbin/mysqld] [--json]"},
	{"copy", "Copy a backup to a second split storage (another bucket, region, prefix or backend), verified there",
		"Copies the backup (--backup, or the newest complete one) to the storage that --to-flags-file (its --split-storage-*\n" +
			"lines) and --to describe. Every object goes through a temporary file; the destination is verified (every index,\n" +
			"every part's size and CRC32C read back) before its completion marker is written, so it is never listed there\n" +
			"before it is whole. A copy that stopped is resumed by running it again; --remove-source makes it a move.\n" +
			"A backup of the legacy storage (--split-storage-legacy), of any engine, is copied file by file into the\n" +
			"destination, each file read back and compared, and keeps its engine (docs/migration.md).",
		"  vtfifo copy --flags-file=/etc/vitess/vttablet.flags --keyspace=commerce --shard=0 \\\n" +
			"      --to-flags-file=/etc/vitess/dr-region.flags --to=--split-storage-s3-prefix=protected"},
	{"repair", "Repair a backup's damaged parts from its copy in a second split storage, verified after",
		"Verifies the backup --backup names (complete, quarantined or a retired base); every part found missing or\n" +
			"damaged is read from the same backup in the storage --from-flags-file and --from describe (where vtfifo copy\n" +
			"put it), checked against the backup's own index (size and CRC32C), and written in place; then the backup is\n" +
			"verified whole again. Damage to an index or the completion marker is reported, never guessed at.",
		"  vtfifo repair --flags-file=/etc/vitess/vttablet.flags --keyspace=commerce --shard=0 \\\n" +
			"      --backup=2026-11-23.162035.zone1-0000000100 --from-flags-file=/etc/vitess/dr-region.flags"},
	{"key-check", "List the key file's key IDs and, for every backup of a shard, whether the key file opens it",
		"Prints the key IDs of --split-storage-encryption-key-file (never a key), the first being the one that wraps\n" +
			"new backups, then every complete backup of the shard with the ID of the key that wraps its data key and\n" +
			"whether the key file unwraps it. Exit 1 when one does not: run it before a key leaves the file.",
		"  vtfifo key-check --flags-file=/etc/vitess/vttablet.flags --keyspace=commerce --shard=0"},
	{"rm", "Remove one backup, named with --backup (complete, quarantined, or incomplete and old enough)",
		"Removes the backup --backup names: a complete one, a quarantined one, or an incomplete one started more than\n" +
			"--incomplete-min-age ago (a younger one may still be running: refused). rm never picks a backup itself.",
		"  vtfifo rm --backup-storage-implementation=split --split-storage-root=/backups --keyspace=commerce --shard=0 \\\n" +
			"      --backup=2026-11-23.162035.zone1-0000000100"},
	{"prune", "Remove the complete backups beyond the newest --keep and older than --keep-within",
		"Keeps the newest --keep complete backups (at least 1), every backup younger than --keep-within, the newest of\n" +
			"each of the last --keep-daily days, --keep-weekly weeks and --keep-monthly months, and the newest that passed a\n" +
			"test restore, saying why each is kept; removes the other complete ones, oldest first, never one being read.\n" +
			"--dry-run takes the same decisions and prints what it would remove.",
		"  vtfifo prune --backup-storage-implementation=split --split-storage-root=/backups --keyspace=commerce --shard=0 \\\n" +
			"      --keep=7 --keep-within=168h --dry-run"},
	{"release", "Put a quarantined backup back among those restores choose from",
		"A backup that failed its test restore (vtbackup --fifo-backup-test-restore, or test-restore\n" +
			"--quarantine-on-failure) is quarantined: restores no longer choose it and `verify --list-incomplete` shows\n" +
			"why. release verifies every part, then makes it complete again, for a failure that was the test's environment,\n" +
			"not the backup; it keeps the failed test record and says so (vtfifo's own picks skip such a backup until a test\n" +
			"restore passes).",
		"  vtfifo release --backup-storage-implementation=split --split-storage-root=/backups --keyspace=commerce --shard=0 \\\n" +
			"      --backup=2026-11-23.162035.zone1-0000000100"},
}

// commands are vtfifo's commands: each help with the function that runs
// it (apart from commandDocs, which the commands read while they run).
func commands() []subcommand {
	runs := map[string]func(ctx context.Context, prog string, args []string, stdout, stderr io.Writer) int{
		"verify":        Verify,
		"export":        Export,
		"ls":            List,
		"show":          Show,
		"restore":       Restore,
		"restore-table": RestoreTable,
		"test-restore":  TestRestore,
		"selftest":      SelfTest,
		"copy":          Copy,
		"repair":        Repair,
		"key-check":     KeyCheck,
		"rm":            Remove,
		"prune":         Prune,
		"release":       Release,
	}
	out := make([]subcommand, len(commandDocs))
	for i, d := range commandDocs {
		out[i] = subcommand{d, runs[d.use]}
	}
	return out
}

// exitStatuses are the exit statuses of the commands whose statuses are
// not exitStatusHelp's.
var exitStatuses = map[string]string{"selftest": "Exit status: 0 every step that ran passed, 1 a step failed, 2 usage error."}

// commandHelp is the help of the command prog runs ("vtfifo ls", or
// "fifoverify", which is verify): the one text both `vtfifo help ls` and
// `vtfifo ls --help` print, from the table above.
func commandHelp(prog string) string {
	name := strings.TrimPrefix(prog, "vtfifo ")
	if name == "fifoverify" {
		name = "verify"
	}
	for _, c := range commandDocs {
		if c.use == name {
			return c.long + "\n" + cmp.Or(exitStatuses[name], exitStatusHelp) + "\n\nExample:\n" + c.example
		}
	}
	return exitStatusHelp
}
