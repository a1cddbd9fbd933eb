package flagvalue

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestParseAndFormatSize(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "1048576": 1 << 20, "256MiB": 256 << 20, " 1GiB ": 1 << 30, "1.5KiB": 1536, "1MB": 1000000} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"-1", "-1MiB", "abc", "", "8XB", "8EiB", "20EiB"} {
		if got, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", in, got)
		}
	}
	for n, want := range map[int64]string{0: "0", 1: "1", 1023: "1023", 1 << 20: "1MiB", 1<<20 - 1: "1048575", 1280 << 20: "1280MiB",
		5<<30 + 1: "5368709121", 1 << 50: "1PiB"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
	for n, want := range map[int64]string{0: "0 bytes", 1 << 20: "1MiB", 112071803: "107 MiB (112071803 bytes)", 1<<20 - 1: "1024 KiB (1048575 bytes)",
		-5: "-5"} {
		if got := SizeText(n); got != want {
			t.Errorf("SizeText(%d) = %q, want %q", n, got, want)
		}
		if !regexp.MustCompile(`^` + SizeTextPattern + `$`).MatchString(want) {
			t.Errorf("SizeTextPattern does not match %q", want)
		}
	}
}

// The values parse like pflag's, keep pflag's type names (so --help reads the same), and
// name the allowed values when the text does not parse.
func TestValuesNameAllowed(t *testing.T) {
	var (
		i int
		d time.Duration
		s int64
		b bool
	)
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.Var(Int{P: &i, Allowed: "1..64"}, "i", "")
	fs.Var(Duration{P: &d, Allowed: "1s..1h"}, "d", "")
	fs.Var(Size{P: &s, Allowed: "1MiB..5GiB"}, "s", "")
	BoolVar(fs, &b, "b", false, "")
	if err := fs.Parse([]string{"--i=0x10", "--d=90s", "--s=2GiB", "--b"}); err != nil {
		t.Fatal(err)
	}
	if i != 16 || d != 90*time.Second || s != 2<<30 || !b {
		t.Fatalf("parsed i=%d d=%v s=%d b=%v", i, d, s, b)
	}
	for name, typ := range map[string]string{"i": "int", "d": "duration", "s": "size", "b": "bool"} {
		if got := fs.Lookup(name).Value.Type(); got != typ {
			t.Errorf("--%s type %q, want %q", name, got, typ)
		}
	}
	for arg, want := range map[string]string{
		"--i=abc":  "allowed values are 1..64",
		"--d=10":   "allowed values are 1s..1h",
		"--s=-1":   "negative size: allowed values are 1MiB..5GiB",
		"--s=lots": "allowed values are 1MiB..5GiB",
		"--b=yes":  "allowed values are true, false",
	} {
		err := fs.Parse([]string{arg})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want it to contain %q", arg, err, want)
		}
	}
}

// TestAgeTakesDaysAndWeeks: days and weeks besides Go's units; nonsense is refused.
func TestAgeTakesDaysAndWeeks(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"7d": 7 * 24 * time.Hour, "2w": 14 * 24 * time.Hour, "1w3d": 10 * 24 * time.Hour, "36h": 36 * time.Hour,
		"1d12h": 36 * time.Hour, "90m": 90 * time.Minute, "0": 0, " 1d ": 24 * time.Hour,
	} {
		got, err := ParseAge(in)
		if err != nil || got != want {
			t.Errorf("ParseAge(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "d", "7x", "-1d", "1.5d", "d7", "1d-2h"} {
		if _, err := ParseAge(in); err == nil {
			t.Errorf("ParseAge(%q) accepted", in)
		}
	}
	var d time.Duration
	v := Age{P: &d, Allowed: "an age"}
	if err := v.Set("7d"); err != nil || v.String() != "7d" {
		t.Errorf("Set(7d): %v, %s", err, v.String())
	}
	if err := v.Set("soon"); err == nil || err.Error() != "not an age (such as 7d, 2w, 36h, 1d12h): allowed values are an age" {
		t.Errorf("Set(soon): %v", err)
	}
}
