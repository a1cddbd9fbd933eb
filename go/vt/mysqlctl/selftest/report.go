package selftest

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// WriteText writes the report as an operator reads it (and attaches it to a
// bug): the verdict, versions, host, every step with its time, the first
// error in full.
func (r Report) WriteText(w io.Writer) {
	verdict := "PASSED"
	if !r.Passed {
		verdict = "FAILED"
	}
	fmt.Fprintf(w, "vtfifo selftest: %s\n", verdict)
	fmt.Fprintf(w, "versions: %s\n", joinMap(r.Versions))
	fmt.Fprintf(w, "host: %s\n", joinMap(r.Host))
	for _, s := range r.Steps {
		mark := map[string]string{Passed: "PASS", Failed: "FAIL", Skipped: "SKIP"}[s.Status]
		line := fmt.Sprintf("  %s  %s", mark, s.Name)
		if s.Status != Skipped {
			line += fmt.Sprintf(" (%.1f s)", s.Seconds)
		}
		switch {
		case s.Error != "":
			line += ": " + firstLine(s.Error)
		case s.Detail != "":
			line += ": " + s.Detail
		}
		fmt.Fprintln(w, line)
	}
	if r.FirstError != "" {
		fmt.Fprintf(w, "first error, in full:\n%s\n", r.FirstError)
	}
	if r.Kept != "" {
		fmt.Fprintf(w, "kept for a bug report (server stopped): %s\n", r.Kept)
	}
}

func joinMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + " " + m[k]
	}
	return strings.Join(parts, ", ")
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
