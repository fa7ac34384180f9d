// Command mockllm serves bench/mockllm on a loopback address until
// interrupted, so that ACP agents can be pointed at it by hand:
//
//	mockllm -addr 127.0.0.1:8765 -tool 'anthropic=Write:{"file_path":"{{path}}","content":"x"}'
//
// It prints the base URL on stdout and logs one line per request on
// stderr.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/dsh-acp/dsh-acp/bench/mockllm"
)

// toolFlags collects repeatable -tool flags.
type toolFlags map[string]mockllm.ToolCall

func (t toolFlags) String() string { return fmt.Sprint(map[string]mockllm.ToolCall(t)) }

func (t toolFlags) Set(v string) error {
	key, tc, err := mockllm.ParseToolFlag(v)
	if err != nil {
		return err
	}
	t[key] = tc
	return nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mockllm", flag.ContinueOnError)
	fs.SetOutput(stderr)
	tools := toolFlags{}
	var o mockllm.Options
	fs.StringVar(&o.Addr, "addr", "127.0.0.1:0", "loopback listen address")
	fs.Var(tools, "tool", "tool-call script `[LABEL/]DIALECT=NAME:{json}` (repeatable; dialects: openai, responses, anthropic, gemini)")
	fs.DurationVar(&o.ChunkDelay, "chunk-delay", 0, "delay between the chunks of ordinary replies")
	fs.DurationVar(&o.SlowInterval, "slow-interval", mockllm.DefaultSlowInterval, "delay between MOCK:SLOW chunks")
	fs.DurationVar(&o.SlowMax, "slow-max", mockllm.DefaultSlowMax, "longest MOCK:SLOW stream")
	fs.IntVar(&o.MaxChunks, "max-chunks", mockllm.DefaultMaxChunks, "largest MOCK:CHUNKS=N")
	lifetime := fs.Duration("lifetime", time.Hour, "exit after this long (0: never)")
	quiet := fs.Bool("quiet", false, "do not log requests")
	fs.StringVar(&o.DumpDir, "dump", "", "write every request body to this directory")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	o.Tools = tools
	srv, err := mockllm.New(o)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	defer srv.Close()
	fmt.Fprintln(stdout, srv.URL())
	if *lifetime > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *lifetime)
		defer cancel()
	}
	var seen uint64
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return 0
		case <-tick.C:
		}
		for _, r := range srv.Records(seen) {
			seen = r.Seq
			if !*quiet {
				fmt.Fprintf(stderr, "#%d %s %s %s chunks=%d bytes=%d %s%s\n", r.Seq, strings.TrimSpace(r.Label+" "+r.Dialect),
					r.Kind, r.Duration().Round(time.Microsecond), r.Chunks, r.Bytes, abort(r.Aborted), "")
			}
		}
	}
}

func abort(b bool) string {
	if b {
		return "aborted"
	}
	return ""
}
