package vtfifocli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/crypt"
)

// keygen is `vtfifo keygen`: a new master key, as a key file line.
func keygen(stdout io.Writer) *cobra.Command {
	var id string
	cmd := &cobra.Command{
		Use:   "keygen --id ID",
		Short: "Print a new key file line for --split-storage-encryption-key-file",
		Long: "Prints \"<id> <base64 of 32 random bytes>\": a new master key for --split-storage-encryption-key-file.\n" +
			"Put it first in the key file to encrypt new backups with it, and keep the older lines: every key listed\n" +
			"decrypts. The key goes to stdout only. See docs/encryption.md.",
		Example: "  (umask 077; vtfifo keygen --id 2026-11 > keys.new && cat /etc/vitess/backup-keys >> keys.new)",
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			line, err := crypt.NewKeyLine(id)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(stdout, line)
			return err
		},
	}
	cmd.Flags().StringVar(&id, "id", "", "the key's ID, stored with every backup it encrypts (A-Z a-z 0-9 . _ : -, up to 64)")
	return cmd
}
