// Package flagvalue has the pflag.Values of the plugins' typed flags. pflag's own int,
// duration and bool values refuse unparsable text with Go's parse error only
// (`strconv.ParseInt: parsing "abc": invalid syntax`); these name the allowed values instead,
// so every bad value of a plugin flag stops the process with the flag and what it accepts.
// They parse only: ranges are checked by the plugins' Validate, which also serves configs
// built in code. Type() is pflag's, so --help reads the same.
package flagvalue

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/pflag"
)

// MaxSize is the largest size a Size flag parses.
const MaxSize = 1 << 62

// Int is an int flag; Allowed (e.g. "1..64") is named when the text is not an integer.
type Int struct {
	P       *int
	Allowed string
}

func (v Int) String() string {
	if v.P == nil {
		return "0"
	}
	return strconv.Itoa(*v.P)
}

func (v Int) Type() string { return "int" }

func (v Int) Set(s string) error {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 0, strconv.IntSize)
	if err != nil {
		return fmt.Errorf("not an integer: allowed values are %s", v.Allowed)
	}
	*v.P = int(n)
	return nil
}

// Duration is a duration flag (Go syntax: 500ms, 30s, 2m); Allowed is named when the text
// does not parse.
type Duration struct {
	P       *time.Duration
	Allowed string
}

func (v Duration) String() string {
	if v.P == nil {
		return "0s"
	}
	return v.P.String()
}

func (v Duration) Type() string { return "duration" }

func (v Duration) Set(s string) error {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("not a duration (such as 500ms, 30s, 2m): allowed values are %s", v.Allowed)
	}
	*v.P = d
	return nil
}

// Age is a duration flag that also takes days and weeks, as backup ages
// are said: 7d, 2w, 1w3d, 36h, 1d12h. Allowed is named when the text does
// not parse.
type Age struct {
	P       *time.Duration
	Allowed string
}

func (v Age) String() string {
	if v.P == nil {
		return "0s"
	}
	return FormatAge(*v.P)
}

func (v Age) Type() string { return "age" }

func (v Age) Set(s string) error {
	d, err := ParseAge(s)
	if err != nil {
		return fmt.Errorf("not an age (such as 7d, 2w, 36h, 1d12h): allowed values are %s", v.Allowed)
	}
	*v.P = d
	return nil
}

// ParseAge parses an Age: whole weeks (w) and days (d) first, then a Go
// duration for the rest.
func ParseAge(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("empty age")
	}
	var d time.Duration
	for _, unit := range []struct {
		suffix string
		d      time.Duration
	}{{"w", 7 * 24 * time.Hour}, {"d", 24 * time.Hour}} {
		i := strings.Index(s, unit.suffix)
		if i < 0 {
			continue
		}
		n, err := strconv.ParseUint(s[:i], 10, 32)
		if err != nil {
			return 0, fmt.Errorf("invalid age %q", s)
		}
		d += time.Duration(n) * unit.d
		s = s[i+1:]
	}
	if s == "" {
		return d, nil
	}
	rest, err := time.ParseDuration(s)
	if err != nil || rest < 0 {
		return 0, fmt.Errorf("invalid age %q", s)
	}
	return d + rest, nil
}

// FormatAge writes d with days where it has whole ones: 7d, 1d12h0m0s.
func FormatAge(d time.Duration) string {
	day := 24 * time.Hour
	if d < day || d < 0 {
		return d.String()
	}
	if d%day == 0 {
		return fmt.Sprintf("%dd", d/day)
	}
	return fmt.Sprintf("%dd%s", d/day, d%day)
}

// Size is a byte size flag: a number of bytes or a size with units (8MiB, 1GiB, 1.5GB).
// Negative and unparsable sizes are refused naming Allowed.
type Size struct {
	P       *int64
	Allowed string
}

func (v Size) String() string {
	if v.P == nil {
		return "0"
	}
	return FormatSize(*v.P)
}

func (v Size) Type() string { return "size" }

func (v Size) Set(s string) error {
	n, err := ParseSize(s)
	if err != nil {
		return fmt.Errorf("%v: allowed values are %s", err, v.Allowed)
	}
	*v.P = n
	return nil
}

// AutoSizeValue is what an AutoSize flag holds for "auto".
const AutoSizeValue = -1

// AutoSize is a Size flag that also takes "auto" (AutoSizeValue): the
// program picks the size when it needs it.
type AutoSize struct {
	P       *int64
	Allowed string
}

func (v AutoSize) String() string {
	if v.P != nil && *v.P == AutoSizeValue {
		return "auto"
	}
	return Size(v).String()
}

func (v AutoSize) Type() string { return "size" }

func (v AutoSize) Set(s string) error {
	if strings.TrimSpace(s) == "auto" {
		*v.P = AutoSizeValue
		return nil
	}
	return Size(v).Set(s)
}

// ParseSize parses a byte size: bytes or units (256MiB, 1GiB); never negative, at most MaxSize.
func ParseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 0 {
			return 0, fmt.Errorf("negative size")
		}
		return n, nil
	}
	if strings.HasPrefix(s, "-") {
		return 0, fmt.Errorf("negative size")
	}
	u, err := humanize.ParseBytes(s)
	if err != nil {
		return 0, fmt.Errorf("not a size (such as 8MiB, 1GiB or a number of bytes)")
	}
	if u > MaxSize {
		return 0, fmt.Errorf("size too large")
	}
	return int64(u), nil
}

// Bool is a boolean flag that names its allowed values when the text is not one; register
// it with BoolVar so that a bare --flag means true.
type Bool struct{ P *bool }

func (v Bool) String() string { return strconv.FormatBool(v.P != nil && *v.P) }

func (v Bool) Type() string { return "bool" }

func (v Bool) IsBoolFlag() bool { return true }

func (v Bool) Set(s string) error {
	b, err := strconv.ParseBool(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("not a boolean: allowed values are true, false")
	}
	*v.P = b
	return nil
}

// BoolVar registers a Bool flag; a bare --name sets it to true, as with fs.BoolVar.
func BoolVar(fs *pflag.FlagSet, p *bool, name string, def bool, usage string) {
	*p = def
	fs.Var(Bool{P: p}, name, usage)
	fs.Lookup(name).NoOptDefVal = "true"
	Document(name, "true, false")
}

// FormatSize writes n exactly, as a flag takes it: in the largest binary unit that divides
// it (256MiB, 1GiB), else in bytes. Errors use it so that a value just off a limit does not
// read as the limit (humanize would write 1MiB-1 as "1.0 MiB").
func FormatSize(n int64) string {
	if n <= 0 {
		return strconv.FormatInt(n, 10)
	}
	for _, u := range []struct {
		name string
		size int64
	}{{"EiB", 1 << 60}, {"PiB", 1 << 50}, {"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}

// SizeText writes n for a message about room: as FormatSize where a binary unit divides it,
// else about so many with the exact bytes beside ("106.9 MiB (112071803 bytes)"), so that an
// amount of free space reads at a glance and is still exact.
func SizeText(n int64) string {
	s := FormatSize(n)
	switch {
	case n == 0:
		return "0 bytes"
	case n < 0 || strings.TrimLeft(s, "0123456789") != "": // in a unit, exact
		return s
	}
	return fmt.Sprintf("%s (%d bytes)", humanize.IBytes(uint64(n)), n)
}

// SizeTextPattern is a regular expression that matches what SizeText writes.
const SizeTextPattern = `(?:\d+(?:\.\d+)? ?(?:[KMGTPE]i)?B(?: \(\d+ bytes\))?|\d+ bytes|-?\d+)`

var (
	documentedMu sync.Mutex
	documented   = map[string]string{}
)

// Document records the allowed values of flag name as its validation
// names them, where the flag is declared: the flags reference
// (docs/flags.md, scripts/gen-flags-doc.sh) prints them from here, so help,
// errors and docs say the same.
func Document(name, allowed string) {
	if allowed == "" {
		return
	}
	documentedMu.Lock()
	defer documentedMu.Unlock()
	documented[name] = allowed
}

// Documented returns the allowed values Document recorded, by flag name.
func Documented() map[string]string {
	documentedMu.Lock()
	defer documentedMu.Unlock()
	out := make(map[string]string, len(documented))
	for k, v := range documented {
		out[k] = v
	}
	return out
}

// Problems collects what a validation finds, each entry naming its flag and,
// where a value was refused, the allowed values.
type Problems []string

// Add records a problem described by format.
func (p *Problems) Add(format string, args ...any) { *p = append(*p, fmt.Sprintf(format, args...)) }

// Invalid records that value is not allowed for --flag.
func (p *Problems) Invalid(flag string, value any, allowed string) {
	p.Add("invalid value %q for --%s: allowed values are %s", fmt.Sprint(value), flag, allowed)
}

// Required records that --flag must be set when the condition holds, unless value is set.
func (p *Problems) Required(flag, value, when string) {
	if value == "" {
		p.Add("--%s must be set when %s", flag, when)
	}
}
