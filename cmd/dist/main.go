// Command dist builds dsh-acp's release (make dist): an archive per ACP
// Registry platform, SHA256SUMS, and the registry entry agent.json with
// its icon, in -out. See package internal/dist.
//
//	go run ./cmd/dist -version 0.3.0 -base-url https://…/releases/download/v0.3.0 ./cmd/dsh-acp
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/dsh-acp/dsh-acp/internal/dist"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	fs := flag.NewFlagSet("dist", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := dist.Config{Log: stderr}
	fs.StringVar(&cfg.Version, "version", "", "the release's semantic version (0.3.0)")
	fs.StringVar(&cfg.BaseURL, "base-url", "", "where the archives are published; agent.json's archive URLs are BASE/<archive>")
	fs.StringVar(&cfg.Out, "out", "dist", "output directory")
	fs.StringVar(&cfg.Root, "root", ".", "the module's root (LICENSE is read there)")
	targets := fs.String("targets", "", "comma-separated registry targets to build (default: all six)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: dist -version V -base-url URL [-out DIR] [-targets T,…] PACKAGE…  (the agent's package first)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfg.Commands = fs.Args()
	if *targets != "" {
		for _, n := range strings.Split(*targets, ",") {
			t, ok := dist.LookupTarget(strings.TrimSpace(n))
			if !ok {
				fmt.Fprintf(stderr, "dist: unknown target %q\n", n)
				return 2
			}
			cfg.Targets = append(cfg.Targets, t)
		}
	}
	if v := getenv("SOURCE_DATE_EPOCH"); v != "" {
		sec, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			fmt.Fprintf(stderr, "dist: SOURCE_DATE_EPOCH=%q is not a number of seconds\n", v)
			return 2
		}
		cfg.ModTime = time.Unix(sec, 0).UTC()
	}
	res, err := dist.Build(ctx, cfg)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	for _, a := range res.Archives {
		fmt.Fprintf(stdout, "%-40s %6.1f MB  %s\n", a.Name, float64(a.Size)/(1<<20), a.SHA256)
	}
	fmt.Fprintf(stdout, "%s\n%s\n%s\n", res.Sums, res.Manifest, res.Icon)
	return 0
}
