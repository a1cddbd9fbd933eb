package fifobackupengine

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// optionLine is one option of a MySQL option file, where it was read.
type optionLine struct {
	File  string
	Line  int
	Group string // lower case, as the tools match groups
	Name  string // dashes for underscores, less loose-/enable-
	Value string // quotes removed; "" when the line has no value
	Off   bool   // a skip-/disable- form: the option turned off
}

func (o optionLine) String() string {
	return fmt.Sprintf("%s line %d ([%s] %s)", o.File, o.Line, o.Group, o.Name)
}

// maxIncludeDepth bounds !include chains (mysys stops at 10 as well).
const maxIncludeDepth = 10

// readOptionFile reads an option file as mysys's my_load_defaults does
// (search_default_file_with_ext): [group] headers matched without case,
// comments from '#' or ';' at the start of a line and from '#' after a value,
// !include FILE and !includedir DIR (its *.cnf files) resolved in place. A
// missing included file or directory is skipped, as the tools do.
func readOptionFile(path string) ([]optionLine, error) {
	var out []optionLine
	err := readOptionFileInto(path, 0, &out)
	return out, err
}

func readOptionFileInto(path string, depth int, out *[]optionLine) error {
	if depth > maxIncludeDepth {
		return fmt.Errorf("option file %s: !include nested deeper than %d", path, maxIncludeDepth)
	}
	f, err := os.Open(path)
	if err != nil {
		if depth > 0 && os.IsNotExist(err) {
			return nil
		}
		return fmt.Errorf("cannot read option file %s: %w", path, err)
	}
	defer f.Close()
	group := ""
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; s.Scan(); n++ {
		line := strings.TrimSpace(s.Text())
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
			continue
		case line[0] == '!':
			if err := readDirective(line, depth, out); err != nil {
				return fmt.Errorf("%s line %d: %w", path, n, err)
			}
			continue
		case line[0] == '[':
			end := strings.IndexByte(line, ']')
			if end < 0 {
				return fmt.Errorf("option file %s line %d: a group header without ']'", path, n)
			}
			group = strings.ToLower(strings.TrimSpace(line[1:end]))
			continue
		case group == "":
			continue // mysys refuses options before any group; the tool will say so
		}
		*out = append(*out, parseOptionLine(path, n, group, line))
	}
	return s.Err()
}

// readDirective follows one !include or !includedir line.
func readDirective(line string, depth int, out *[]optionLine) error {
	word, arg, _ := strings.Cut(line, " ")
	arg = strings.TrimSpace(arg)
	switch word {
	case "!include":
		return readOptionFileInto(arg, depth+1, out)
	case "!includedir":
		names, err := filepath.Glob(filepath.Join(arg, "*.cnf"))
		if err != nil {
			return err
		}
		slices.Sort(names)
		for _, name := range names {
			if err := readOptionFileInto(name, depth+1, out); err != nil {
				return err
			}
		}
		return nil
	}
	return nil // mysys ignores other directives
}

// parseOptionLine splits "name = value # comment" as mysys does.
func parseOptionLine(file string, n int, group, line string) optionLine {
	name, value, hasValue := strings.Cut(line, "=")
	o := optionLine{File: file, Line: n, Group: group}
	name = strings.ReplaceAll(strings.ToLower(strings.TrimSpace(name)), "_", "-")
	for _, p := range []string{"loose-", "enable-"} {
		name = strings.TrimPrefix(name, p)
	}
	for _, p := range []string{"skip-", "disable-"} {
		if rest, ok := strings.CutPrefix(name, p); ok {
			name, o.Off = rest, true
		}
	}
	o.Name = name
	if hasValue {
		o.Value = unquoteOptionValue(strings.TrimSpace(value))
	}
	return o
}

// unquoteOptionValue drops a trailing comment and the quotes around a value.
func unquoteOptionValue(v string) string {
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') {
		if end := strings.IndexByte(v[1:], v[0]); end >= 0 {
			return v[1 : end+1]
		}
	}
	if i := strings.Index(v, " #"); i >= 0 {
		v = v[:i]
	} else if i := strings.Index(v, "\t#"); i >= 0 {
		v = v[:i]
	}
	return strings.TrimSpace(v)
}

// inGroups returns the lines of the given groups (lower case), and of each
// group with the suffix mysys adds from MYSQL_GROUP_SUFFIX
// (--defaults-group-suffix), in file order.
func inGroups(lines []optionLine, groups []string) []optionLine {
	if suffix := strings.ToLower(os.Getenv("MYSQL_GROUP_SUFFIX")); suffix != "" {
		for _, g := range groups {
			groups = append(groups, g+suffix)
		}
	}
	var out []optionLine
	for _, l := range lines {
		if slices.Contains(groups, l.Group) {
			out = append(out, l)
		}
	}
	return out
}

// toolOptionGroups are the groups a tool parses its own options from
// (--compress, --databases, ...), besides the command line:
//   - Percona XtraBackup: xtrabackup.cc, xb_server_default_groups and
//     xb_client_default_groups ({"xtrabackup", "client"}); its server pass
//     over [mysqld] takes only server options.
//   - mariabackup (extra/mariabackup/xtrabackup.cc, handle_options): the
//     client groups {"client", "client-server", "client-mariadb"} and the
//     backup groups {"xtrabackup", "mariabackup", "mariadb-backup"}.
//
// A [client] line meant for the mysql client ("compress") is read by the tool
// as its own option of that name.
func toolOptionGroups(flavor string) []string {
	if flavor == FlavorMariabackup {
		return []string{"client", "client-server", "client-mariadb", "xtrabackup", "mariabackup", "mariadb-backup"}
	}
	return []string{"xtrabackup", "client"}
}

// serverOptionGroups are the groups mysqld reads its options from (MySQL and
// MariaDB, less version-suffixed ones).
var serverOptionGroups = []string{"mysqld", "server", "mariadb", "mariadbd"}

// lastValues returns the last value of each of names in lines (dashes for
// underscores), as the last occurrence wins.
func lastValues(lines []optionLine, names ...string) map[string]string {
	out := map[string]string{}
	for _, l := range lines {
		for _, n := range names {
			if l.Name == strings.ReplaceAll(n, "_", "-") && !l.Off {
				out[n] = l.Value
			}
		}
	}
	return out
}

// ServerOptions reads the last value of each of names (underscores) that the
// server's groups of an option file set, includes resolved: what the server
// started with that file takes.
func ServerOptions(path string, names ...string) (map[string]string, error) {
	lines, err := readOptionFile(path)
	if err != nil {
		return nil, err
	}
	return lastValues(inGroups(lines, serverOptionGroups), names...), nil
}

// ServerOptionValues reads every value of name (underscores) that the
// server's groups of an option file set, in order: the options a server
// adds up (plugin_load_add).
func ServerOptionValues(path, name string) ([]string, error) {
	lines, err := readOptionFile(path)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range inGroups(lines, serverOptionGroups) {
		if l.Name == strings.ReplaceAll(name, "_", "-") && !l.Off {
			out = append(out, l.Value)
		}
	}
	return out, nil
}
