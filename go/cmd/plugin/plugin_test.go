package plugin

import (
	"errors"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func TestInstallAddsFlagsAndValidates(t *testing.T) {
	var lanes int
	var prevRan bool
	cmd := &cobra.Command{
		Use:     "x",
		PreRunE: func(*cobra.Command, []string) error { prevRan = true; return nil },
		RunE:    func(*cobra.Command, []string) error { return nil },
	}
	p := Plugin{
		Name: "demo",
		RegisterFlags: func(fs *pflag.FlagSet) {
			fs.IntVar(&lanes, "demo-lanes", 4, "lanes")
		},
		ValidateFlags: func(*pflag.FlagSet) error {
			if lanes < 1 {
				return errors.New("--demo-lanes must be >= 1")
			}
			return nil
		},
	}
	Install(cmd, p)
	if cmd.Flags().Lookup("demo-lanes") == nil {
		t.Fatal("flag not added")
	}
	if got := FlagNames(p); strings.Join(got, ",") != "demo-lanes" {
		t.Fatalf("FlagNames = %v", got)
	}
	cmd.SetArgs([]string{"--demo-lanes=0"})
	err := cmd.Execute()
	if err == nil || !strings.Contains(err.Error(), "--demo-lanes must be >= 1") {
		t.Fatalf("Execute error = %v, want the validation error", err)
	}
	if !prevRan {
		t.Fatal("the original PreRunE did not run")
	}
	cmd.SetArgs([]string{"--demo-lanes=2"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
}
