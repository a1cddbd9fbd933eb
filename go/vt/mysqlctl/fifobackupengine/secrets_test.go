package fifobackupengine

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every form of a secret in the extra flags is hidden from what is logged
// or stored, and the separate forms are joined before the tool sees them
// (mariabackup records "-p VALUE" in clear in xtrabackup_info).
func TestSecretFlagForms(t *testing.T) {
	flags := `--password=PLANTED-1 --no-lock -pPLANTED-2 --encrypt-key-password='PLANTED 3' --parallel=4 ` +
		`--password PLANTED-4 -p PLANTED-5 --pass=PLANTED-6 --passwd=PLANTED-7 --pasword=PLANTED-8 ` +
		`--transition-key=PLANTED-9 --encrypt-key PLANTED-10 --port=3306 -P 3306 --encrypt-key-file=/keys/k --password`
	got := RedactedFlags(flags)
	assert.NotContains(t, got, "PLANTED")
	for _, keep := range []string{"--no-lock", "--parallel=4", "--port=3306", "-P 3306", "--encrypt-key-file=/keys/k", "--password=****", "-p****",
		"--password ****", "-p ****"} {
		assert.Contains(t, got, keep)
	}
	assert.True(t, strings.HasSuffix(got, " --password"), "a trailing bare --password stays: %s", got)

	cfg := validConfig()
	cfg.BackupFlags = flags
	cfg.PrepareFlags = `--transition-key PLANTED-11 -p PLANTED-12`
	tool := &backupTool{Flavor: FlavorMariabackup}
	args, err := tool.backupArgs(&cfg, "/my.cnf", "/sock", "vt_dba", "/w", SourceStdout, "", 0)
	require.NoError(t, err)
	argv := strings.Join(args, " ")
	for _, want := range []string{"--password=PLANTED-4", "-pPLANTED-5", "--encrypt-key=PLANTED-10", "-P 3306", "--parallel=4"} {
		assert.Contains(t, argv, want)
	}
	assert.NotContains(t, argv, "-p PLANTED")
	assert.NotContains(t, argv, "--password PLANTED")
	_, secrets := redactSecrets(args)
	assert.Len(t, secrets, 10)
	args, err = tool.prepareArgs(&cfg, prepareStep{DefaultsFile: "/my.cnf", TargetDir: "/staging"})
	require.NoError(t, err)
	assert.Contains(t, args, "--transition-key=PLANTED-11")
	assert.Contains(t, args, "-pPLANTED-12")

	for name, secret := range map[string]bool{"-p": true, "--password": true, "--PASSWORD": true, "--pass": true, "--db-pwd": true,
		"--port": false, "--parallel": false, "--encrypt-key-file": false, "--no-lock": false, "-P": false, "--user": false} {
		assert.Equal(t, secret, isSecretFlag(name), name)
	}
}

// The tool's output is scrubbed of the secrets it was given, in the log and
// in the tail kept for errors (mariabackup echoes a flag it does not know
// with its value: "unknown variable 'pasword=...'").
func TestToolOutputScrubbed(t *testing.T) {
	logger := newMemoryLogger()
	tl := newTailLogger(logger, "mariabackup stderr: ", 5)
	_, secrets := redactSecrets([]string{"--pasword=PLANTED-secret", "-p", "PLANTED-short"})
	tl.hide(append(secrets, "PLANTED-dba", "ab")...)
	_, _ = tl.Write([]byte("mariabackup: unknown variable 'pasword=PLANTED-secret'\nconnecting with PLANTED-short and PLANTED-dba\npartial ab"))
	tl.flush()
	for _, out := range []string{logger.String(), tl.tail()} {
		assert.NotContains(t, out, "PLANTED")
		assert.Contains(t, out, "unknown variable 'pasword=****'")
		assert.Contains(t, out, "partial ab", "values shorter than minSecretLen are not scrubbed")
	}
}
