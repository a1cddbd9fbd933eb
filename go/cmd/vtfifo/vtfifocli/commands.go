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

// commands are vtfifo's commands, one line each: its help (declared beside
// its run, in the command's own file) and the function that runs it. This
// is the order of docs/operations.md; `vtfifo --help` sorts them by name.
func commands() []subcommand {
	return []subcommand{
		{verifyDoc, Verify},
		{exportDoc, Export},
		{lsDoc, List},
		{exporterDoc, Exporter},
		{showDoc, Show},
		{restoreDoc, Restore},
		{restoreTableDoc, RestoreTable},
		{testRestoreDoc, TestRestore},
		{selftestDoc, SelfTest},
		{copyDoc, Copy},
		{repairDoc, Repair},
		{keyCheckDoc, KeyCheck},
		{rmDoc, Remove},
		{pruneDoc, Prune},
		{releaseDoc, Release},
		{lockDoc, LockBackup},
		{promoteDoc, Promote},
	}
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
	for _, c := range commands() {
		if c.use == name {
			return c.long + "\n" + cmp.Or(exitStatuses[name], exitStatusHelp) + "\n\nExample:\n" + c.example
		}
	}
	return exitStatusHelp
}
