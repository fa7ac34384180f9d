package session

import (
	"crypto/rand"
	"fmt"
	"time"
)

// NewID returns a fresh random UUID v4 (lowercase, hyphenated).
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// WallClock is the real clock in epoch milliseconds.
func WallClock() int64 { return time.Now().UnixMilli() }
