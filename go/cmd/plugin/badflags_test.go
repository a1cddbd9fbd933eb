package plugin_test

import (
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"vitess.io/vitess/go/vt/mysqlctl"
	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/cmd/plugin"
	"github.com/vtfifo/vtfifo/go/cmd/plugin/engines"
	"github.com/vtfifo/vtfifo/go/cmd/plugin/plugintest"
	"github.com/vtfifo/vtfifo/go/cmd/plugin/storages"
	"github.com/vtfifo/vtfifo/go/cmd/plugin/testrestoreplugin"
)

// allPlugins is what vttablet and vtbackup install (go/cmd/vttablet/main.go).
func allPlugins() []plugin.Plugin {
	return append(append([]plugin.Plugin{testrestoreplugin.Plugin}, engines.All...), storages.All...)
}

// newCommand is vttablet's command as far as the plugins see it: stand-ins for the Vitess
// flags they read, bound to Vitess's variables, and the plugins installed as the mains do.
// Registering the plugins' flags sets their defaults, so each command starts from them.
func newCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "vttablet", RunE: func(*cobra.Command, []string) error { return nil }, SilenceUsage: true, SilenceErrors: true}
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	fs := cmd.Flags()
	fs.String("backup-engine-implementation", "builtin", "")
	fs.StringVar(&backupstorage.BackupStorageImplementation, "backup-storage-implementation", "", "")
	fs.StringVar(&mysqlctl.CompressionEngineName, "compression-engine-name", "pargzip", "")
	fs.StringVar(&mysqlctl.ExternalCompressorCmd, "external-compressor", "", "")
	fs.StringVar(&mysqlctl.ExternalCompressorExt, "external-compressor-extension", "", "")
	plugin.Install(cmd, allPlugins()...)
	return cmd
}

func startup(args ...string) error {
	cmd := newCommand()
	cmd.SetArgs(append(slices.Clone(plugintest.BaseArgs), args...))
	return cmd.Execute()
}

// TestEveryBadFlagValueStopsStartup: every invalid value of every plugin flag (and every
// rule between flags) fails the startup validation with an error that names the flag and
// its allowed values. test/endtoend runs the same table against the built binaries.
func TestEveryBadFlagValueStopsStartup(t *testing.T) {
	if err := startup(); err != nil {
		t.Fatalf("the base flags %v must start: %v", plugintest.BaseArgs, err)
	}
	for _, c := range plugintest.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			err := startup(c.Args...)
			if err == nil {
				t.Fatalf("%s: accepted at startup", strings.Join(c.Args, " "))
			}
			if missing := c.Check(err.Error()); missing != "" {
				t.Fatalf("%s: the error does not name %s:\n%v", strings.Join(c.Args, " "), missing, err)
			}
		})
	}
	if err := startup(); err != nil {
		t.Fatalf("after the cases, the base flags must start again: %v", err)
	}
}

// TestBadFlagTableCoversEveryFlag: a flag the plugins register must be in the table, and a
// constrained one with bad values on every side: an unparsable and a negative value for a
// number, size or duration, and both neighbours of an integer range.
func TestBadFlagTableCoversEveryFlag(t *testing.T) {
	registered := plugin.FlagNames(allPlugins()...)
	missing, stale := plugintest.Uncovered(registered)
	if len(missing) > 0 {
		t.Errorf("plugin flags with no entry in plugintest.Flags (add their bad values, or Free with the reason): %v", missing)
	}
	if len(stale) > 0 {
		t.Errorf("plugintest.Flags lists flags no plugin registers: %v", stale)
	}

	fs := pflag.NewFlagSet("coverage", pflag.ContinueOnError)
	for _, p := range allPlugins() {
		if p.RegisterFlags != nil {
			p.RegisterFlags(fs)
		}
	}
	defer func() { _ = startup() }() // Set below changes the flags' variables: back to the defaults
	intRange := regexp.MustCompile(`^(-?\d+)\.\.(\d+)$`)
	for _, f := range plugintest.All() {
		if f.Free != "" {
			if len(f.Bad) > 0 || f.Allowed != "" {
				t.Errorf("--%s is free but has bad values or allowed values", f.Name)
			}
			continue
		}
		if len(f.Bad) == 0 || f.Allowed == "" {
			t.Errorf("--%s: a constrained flag needs bad values and the allowed values its errors name", f.Name)
			continue
		}
		flag := fs.Lookup(f.Name)
		if flag == nil {
			continue // reported as stale
		}
		switch typ := flag.Value.Type(); typ {
		case "int", "size", "duration":
			unparsable, negative := false, false
			for _, v := range f.Bad {
				if flag.Value.Set(v) != nil {
					unparsable = unparsable || !strings.HasPrefix(v, "-")
				}
				negative = negative || strings.HasPrefix(v, "-")
			}
			if !unparsable || !negative {
				t.Errorf("--%s (%s): bad values %q need an unparsable one and a negative one", f.Name, typ, f.Bad)
			}
			if m := intRange.FindStringSubmatch(f.Allowed); typ == "int" && m != nil {
				lo, _ := strconv.Atoi(m[1])
				hi, _ := strconv.Atoi(m[2])
				for _, want := range []string{strconv.Itoa(lo - 1), strconv.Itoa(hi + 1)} {
					if !slices.Contains(f.Bad, want) {
						t.Errorf("--%s (%s): bad values %q miss %s, just outside the range", f.Name, f.Allowed, f.Bad, want)
					}
				}
			}
		case "bool":
			if !slices.ContainsFunc(f.Bad, func(v string) bool { return flag.Value.Set(v) != nil }) {
				t.Errorf("--%s: bad values %q need one that is not a boolean", f.Name, f.Bad)
			}
		}
	}
}

// TestStockFlagsStockBehaviour: where fifo is not the default engine, the binaries start with
// values of Vitess's own flags that a stock binary starts with (Vitess checks the compressor
// when a backup begins); the fifo engine checks them where it is the default.
func TestStockFlagsStockBehaviour(t *testing.T) {
	for _, args := range [][]string{
		{"--compression-engine-name=brotli"},
		{"--compression-engine-name=external"},
		{"--external-compressor=zstd -c"},
	} {
		if err := startup(args...); err != nil {
			t.Errorf("%v: a stock binary starts with these, ours stopped: %v", args, err)
		}
		if err := startup(append([]string{"--backup-engine-implementation=fifo"}, args...)...); err == nil {
			t.Errorf("%v with fifo the default engine: startup must fail", args)
		}
	}
}
