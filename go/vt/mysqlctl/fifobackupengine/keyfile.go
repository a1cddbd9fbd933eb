package fifobackupengine

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// errKeyFileEncrypted: the key file is encrypted with a file key
// (file_key_management_filekey; OpenSSL's "Salted__" format), so its keys
// are not read here.
var errKeyFileEncrypted = errors.New("the key file is encrypted with a file key")

// readKeyFile reads a file_key_management key file as the plugin's parser
// does (plugin/file_key_management/parser.cc): one "<id>;<hex key>" a line,
// ids from 1, keys of 16, 24 or 32 bytes, '#' comments and blank lines.
func readKeyFile(path string) (map[uint32][]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read the key file %s: %w", path, err)
	}
	if bytes.HasPrefix(data, []byte("Salted__")) {
		return nil, fmt.Errorf("%s: %w", path, errKeyFileEncrypted)
	}
	keys := map[uint32][]byte{}
	s := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; s.Scan(); n++ {
		line := strings.TrimSpace(s.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		idText, keyText, ok := strings.Cut(line, ";")
		id, err := strconv.ParseUint(idText, 10, 32)
		if !ok || err != nil || id == 0 {
			return nil, fmt.Errorf("key file %s line %d: not <key id>;<hex key>", path, n)
		}
		key, err := hex.DecodeString(strings.Fields(keyText + " ")[0])
		if err != nil || (len(key) != 16 && len(key) != 24 && len(key) != 32) {
			return nil, fmt.Errorf("key file %s line %d: key id %d: not a key of 16, 24 or 32 bytes in hex", path, n, id)
		}
		keys[uint32(id)] = key
	}
	return keys, s.Err()
}
