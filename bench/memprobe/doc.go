// Command memprobe shows where an ACP agent's resident memory goes. It
// starts the agent the way acpbench does (a private HOME, the scripted
// mock LLM from bench/mockllm on loopback, a fresh workspace), sends
// initialize and session/new, and after each, and once more after a
// settle delay, reads the agent's /proc/PID/smaps_rollup, /proc/PID/smaps
// and /proc/PID/pagemap: RSS, PSS and their private and shared parts, per
// mapping of the executable (text, rodata with the pclntab, data, bss) and
// anonymous memory (heap arenas, stacks), huge-page mappings
// (FilePmdMapped, AnonHugePages), and which ELF sections and which Go
// packages own the resident pages of the executable.
//
//	go run ./bench/memprobe [-n 5] [-settle 300ms] [-prompt] [-sections] [-packages 15] BINARY [ARGS…]
//
// It prints medians over -n runs; -sections and -packages break the
// executable's resident pages down for the last run. Page attribution needs
// a Linux kernel with /proc/PID/pagemap (readable by the agent's owner).
package main
