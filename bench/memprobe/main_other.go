//go:build !linux

package main

import (
	"fmt"
	"os"
)

// main reports that the probe reads Linux's /proc and exits.
func main() {
	fmt.Fprintln(os.Stderr, "memprobe: reads /proc/PID/smaps and /proc/PID/pagemap, which only Linux has")
	os.Exit(2)
}
