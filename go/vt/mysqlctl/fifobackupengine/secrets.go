package fifobackupengine

import (
	"strings"

	"github.com/google/shlex"
)

// Secrets in the tool's extra flags (--fifo-backup-backup-flags,
// --fifo-backup-prepare-flags) and the DBA password must never reach a log
// line, an error, the MANIFEST, or the tool's own record of its command line
// (xtrabackup_info's tool_command, stored inside the backup).

// secretWords mark a long flag whose value is a secret: --password and its
// abbreviations and typos the tool echoes back ("unknown variable
// 'pass=...'"), --*pwd*, and the tools' key flags (Percona's
// --encrypt-key, --transition-key; MariaDB's file_key_management_filekey).
// A name ending in "-file" holds a path.
var secretWords = []string{"pass", "pasw", "pwd", "secret", "token", "encrypt-key", "transition-key", "filekey"}

// isSecretFlag reports whether a flag name (without "=value") takes a
// secret value: "-p" or a long flag named with one of secretWords.
func isSecretFlag(name string) bool {
	if name == "-p" {
		return true
	}
	if !strings.HasPrefix(name, "--") || strings.HasSuffix(name, "-file") || strings.HasSuffix(name, "_file") {
		return false
	}
	n := strings.ToLower(name)
	for _, w := range secretWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// minSecretLen: shorter values are not scrubbed from output (it would
// mangle every line); they are still redacted from argv.
const minSecretLen = 4

// redactSecrets returns args with every secret value replaced by "****"
// (--password=x, --*pass*=x, -px, and the separate forms "--password x",
// "-p x"), and the values it hid.
func redactSecrets(args []string) (redacted, secrets []string) {
	out := make([]string, len(args))
	copy(out, args)
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch k, v, ok := strings.Cut(a, "="); {
		case ok && isSecretFlag(k):
			out[i] = k + "=****"
			secrets = append(secrets, v)
		case strings.HasPrefix(a, "-p") && !strings.HasPrefix(a, "--") && len(a) > 2:
			out[i] = "-p****"
			secrets = append(secrets, a[2:])
		case !ok && isSecretFlag(a) && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-"):
			out[i+1] = "****"
			secrets = append(secrets, args[i+1])
			i++
		}
	}
	return out, secrets
}

// redactArgs hides the secret values of an argv before it is logged or
// stored.
func redactArgs(args []string) []string {
	out, _ := redactSecrets(args)
	return out
}

// RedactedFlags is redactArgs for a flag string split like a shell would:
// how a MANIFEST, an error or a log line names an operator's tool flags.
func RedactedFlags(flags string) string {
	args, err := shlex.Split(flags)
	if err != nil {
		return "(unparsable flags, not recorded)"
	}
	return strings.Join(redactArgs(args), " ")
}

// joinSecretValues turns the separate forms "-p x" and "--password x" into
// "-px" and "--password=x", which the tools read the same way: mariabackup
// masks an attached value in the command line it records in the backup
// (xtrabackup_info), but records the value of "-p x" in clear.
func joinSecretValues(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.Contains(a, "=") && isSecretFlag(a) && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			if a == "-p" {
				a += args[i+1]
			} else {
				a += "=" + args[i+1]
			}
			i++
		}
		out = append(out, a)
	}
	return out
}

// scrubber replaces secret values in text the tool printed.
type scrubber struct{ secrets []string }

func (s *scrubber) add(secrets ...string) {
	for _, v := range secrets {
		if len(v) >= minSecretLen {
			s.secrets = append(s.secrets, v)
		}
	}
}

func (s *scrubber) scrub(text string) string {
	for _, v := range s.secrets {
		text = strings.ReplaceAll(text, v, "****")
	}
	return text
}
