// Package mysqlfilename converts between the names of MariaDB's and MySQL's
// databases and tables and the names of their files and directories (the
// server's "filename" character set, MySQL Reference Manual, "Mapping of
// Identifiers to File Names"): ASCII letters, digits and '_' stand for
// themselves, the letters of many scripts are '@' and two characters
// (letters.go, generated from the server's own conversion), and every
// other character of the Basic Multilingual Plane is '@' and four
// lowercase hex digits. A file name that is not such an encoding names a
// table the server shows as "#mysql50#" and the file name.
package mysqlfilename

import (
	"fmt"
	"strconv"
	"strings"
)

// oldNamePrefix marks a name whose file name is the name itself, written
// before the encoding (MySQL 5.0 and older).
const oldNamePrefix = "#mysql50#"

var codes = func() map[rune]string {
	m := make(map[rune]string, len(letters))
	for c, r := range letters {
		m[r] = string([]byte{'@', byte(c/80 + '0'), byte(c%80 + '0')})
	}
	return m
}()

func plain(r rune) bool {
	return r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_'
}

// Encode returns the file name of a database or table name. Characters
// beyond the Basic Multilingual Plane have none: the servers do not allow
// them in names.
func Encode(name string) (string, error) {
	if old, ok := strings.CutPrefix(name, oldNamePrefix); ok {
		return old, nil
	}
	var b strings.Builder
	for _, r := range name {
		switch {
		case plain(r):
			b.WriteRune(r)
		case codes[r] != "":
			b.WriteString(codes[r])
		case r > 0 && r <= 0xFFFF:
			fmt.Fprintf(&b, "@%04x", r)
		default:
			return "", fmt.Errorf("name %q: %q has no file name (MariaDB and MySQL allow only U+0001 to U+FFFF in names)", name, r)
		}
	}
	return b.String(), nil
}

// Decode returns the name whose file name is file.
func Decode(file string) string {
	var b strings.Builder
	for i := 0; i < len(file); {
		c := file[i]
		switch {
		case c < 0x80 && plain(rune(c)):
			b.WriteByte(c)
			i++
		case c == '@' && i+3 <= len(file) && letters[code(file[i+1], file[i+2])] != 0:
			b.WriteRune(letters[code(file[i+1], file[i+2])])
			i += 3
		case c == '@' && i+5 <= len(file) && lowerHex(file[i+1:i+5]):
			n, _ := strconv.ParseUint(file[i+1:i+5], 16, 16)
			b.WriteRune(rune(n))
			i += 5
		default:
			return oldNamePrefix + file
		}
	}
	return b.String()
}

func code(c1, c2 byte) uint16 {
	if c1 < '0' || c2 < '0' || c1 >= 0x80 || c2 >= 0x80 {
		return 0
	}
	return uint16(c1-'0')*80 + uint16(c2-'0')
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if !(s[i] >= '0' && s[i] <= '9' || s[i] >= 'a' && s[i] <= 'f') {
			return false
		}
	}
	return true
}
