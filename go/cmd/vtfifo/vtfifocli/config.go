package vtfifocli

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"
)

// Flag files: the tablets' own configuration, read as it is. --flags-file
// reads the project's flag files (config/*.flags: one flag per line, '#'
// comments, ${VAR} from the environment); --config-file a Vitess-style YAML
// file whose keys are flag names. Flags on the command line win; a file's
// flags that vtfifo does not take (a vttablet's --port) are named on stderr
// and skipped, so the tablets' file works unchanged.
type configFiles struct {
	flagsFiles []string
	configFile string
}

func (c *configFiles) register(fs *pflag.FlagSet) {
	fs.StringSliceVar(&c.flagsFiles, "flags-file", nil, "read flags from this file (one --flag=value per line, # comments, ${VAR} from the "+
		"environment), as the tablets' flag files hold them; repeatable; the command line wins")
	fs.StringVar(&c.configFile, "config-file", "", "read flags from this YAML file (flag-name: value), as Vitess's --config-file; the command line wins")
}

// apply sets, from the files, every flag the command line left unset.
func (c *configFiles) apply(fs *pflag.FlagSet, prog string, stderr io.Writer) error {
	type setting struct{ where, name, value string }
	var settings []setting
	for _, path := range c.flagsFiles {
		pairs, err := readFlagsFile(path)
		if err != nil {
			return err
		}
		for _, p := range pairs {
			settings = append(settings, setting{p[0], p[1], p[2]})
		}
	}
	if c.configFile != "" {
		doc, err := os.ReadFile(c.configFile)
		if err != nil {
			return fmt.Errorf("--config-file: %w", err)
		}
		var m map[string]any
		if err := yaml.Unmarshal(doc, &m); err != nil {
			return fmt.Errorf("--config-file %s: not a YAML map of flag names to values: %s", c.configFile, strings.Join(strings.Fields(err.Error()), " "))
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			v := m[k]
			value := fmt.Sprint(v)
			if list, ok := v.([]any); ok {
				parts := make([]string, len(list))
				for i, e := range list {
					parts[i] = fmt.Sprint(e)
				}
				value = strings.Join(parts, ",")
			}
			settings = append(settings, setting{c.configFile, strings.ReplaceAll(k, "_", "-"), value})
		}
	}
	var skipped []string
	byFile := map[string]bool{} // a later file may set a flag again; the command line wins over all
	for _, s := range settings {
		f := fs.Lookup(s.name)
		switch {
		case f == nil:
			skipped = append(skipped, "--"+s.name)
		case fs.Changed(s.name) && !byFile[s.name]:
			// The command line wins.
		default:
			if err := fs.Set(s.name, s.value); err != nil {
				return fmt.Errorf("%s: --%s: %w", s.where, s.name, err)
			}
			byFile[s.name] = true
		}
	}
	if len(skipped) > 0 {
		fmt.Fprintf(stderr, "%s: skipped flags from the flag files that vtfifo does not take: %s\n", prog, strings.Join(skipped, " "))
	}
	return nil
}

// readFlagsFile returns (where, name, value) for each flag line of path.
func readFlagsFile(path string) ([][3]string, error) {
	doc, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--flags-file: %w", err)
	}
	var out [][3]string
	sc := bufio.NewScanner(bytes.NewReader(doc))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		where := fmt.Sprintf("%s:%d", path, n)
		var missing []string
		line = os.Expand(line, func(v string) string {
			val, ok := os.LookupEnv(v)
			if !ok {
				missing = append(missing, v)
			}
			return val
		})
		if len(missing) > 0 {
			return nil, fmt.Errorf("%s: ${%s} is not set in the environment", where, strings.Join(missing, "}, ${"))
		}
		if !strings.HasPrefix(line, "--") {
			return nil, fmt.Errorf("%s: %q is not a flag (one --name=value per line)", where, line)
		}
		name, value, hasValue := strings.Cut(strings.TrimPrefix(line, "--"), "=")
		if !hasValue {
			value = "true" // a boolean flag alone on its line
		}
		out = append(out, [3]string{where, strings.TrimSpace(name), value})
	}
	return out, sc.Err()
}
