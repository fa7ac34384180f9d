package jsonl

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"unicode/utf16"
)

// NoCwdBucket is the bucket directory of sessions without a cwd.
const NoCwdBucket = "_no-cwd"

// fileExt is the extension of every session log file.
const fileExt = ".jsonl"

// lockExt ends the name of a session's ownership lock file.
const lockExt = ".lock"

// errEmptyID is returned for the empty session id, which has no file name.
var errEmptyID = errors.New("session id must not be empty")

// EncodeID maps a session id to its file name stem (without ".jsonl"),
// injectively over UTF-16 (session-log contract § 6): every UTF-16 code unit
// matching [A-Za-z0-9._-] is kept, any other (including "~") becomes "~" and
// four uppercase hex digits. The whole ids "." and ".." encode as "~002E" and
// "~002E~002E"; the empty id is an error. A Go string that is not valid UTF-8
// has its invalid bytes read as U+FFFD, as a JSON decoder would.
func EncodeID(id string) (string, error) {
	switch id {
	case "":
		return "", errEmptyID
	case ".":
		return "~002E", nil
	case "..":
		return "~002E~002E", nil
	}
	var b strings.Builder
	b.Grow(len(id))
	for _, u := range utf16.Encode([]rune(id)) {
		if keepUnit(u) {
			b.WriteByte(byte(u))
			continue
		}
		fmt.Fprintf(&b, "~%04X", u)
	}
	return b.String(), nil
}

func keepUnit(u uint16) bool {
	switch {
	case u >= 'a' && u <= 'z', u >= 'A' && u <= 'Z', u >= '0' && u <= '9':
		return true
	case u == '.', u == '_', u == '-':
		return true
	}
	return false
}

// Bucket returns the bucket directory name of sessions with cwd:
// "cwd-" and the first 12 lowercase hex digits of sha256(cwd), or
// NoCwdBucket when cwd is empty.
func Bucket(cwd string) string {
	if cwd == "" {
		return NoCwdBucket
	}
	sum := sha256.Sum256([]byte(cwd))
	return "cwd-" + hex.EncodeToString(sum[:])[:12]
}
