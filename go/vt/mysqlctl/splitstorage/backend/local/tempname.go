package local

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"strings"
)

// A Put writes its object under a temporary name first. A write cut short
// (kill -9, power loss) leaves that file behind, and only this backend may
// ever remove it: so its name proves who made it. It is the object's name,
// tempMark, a random nonce and a check of both (tempCheck):
//
//	lane-000.xbstream.part-00000001.tmp-<16 hex nonce><16 hex check>
//
// A name whose check does not hold (an operator's notes.tmp-1, another
// tool's file, or the unchecked <name>.tmp-<16 hex> of versions before
// 2026-11-29) is not ours: List shows it like any other file and Delete
// never removes it, so the directory that holds it stays.
const tempMark = ".tmp-"

// tempName is a new temporary name for the object at p.
func tempName(p string) string {
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	return p + tempMark + hex.EncodeToString(nonce[:]) + tempCheck(filepath.Base(p), nonce[:])
}

func tempCheck(object string, nonce []byte) string {
	h := sha256.New()
	h.Write([]byte("vtfifo local backend temporary file\x00" + object + "\x00"))
	h.Write(nonce)
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// ownTemp reports whether the file name is a temporary file of a Put of
// this backend (tempName).
func ownTemp(name string) bool {
	i := strings.LastIndex(name, tempMark)
	if i <= 0 {
		return false
	}
	suffix := name[i+len(tempMark):]
	if len(suffix) != 32 || strings.ToLower(suffix) != suffix {
		return false
	}
	nonce, err := hex.DecodeString(suffix[:16])
	return err == nil && suffix[16:] == tempCheck(name[:i], nonce)
}
