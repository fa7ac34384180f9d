// Command startcpu measures what starting an ACP agent costs: for each
// command, in interleaved rounds, it spawns the agent (a private HOME and
// workspace, as acpbench and memprobe do), sends initialize, reads the
// answer, closes stdin and waits for the exit. It prints the medians (and
// quartiles) of the spawn → initialize wall time and of the process's
// whole CPU time (user + system, from its rusage), and each command's
// ratio to the last one, the floor.
//
//	go run ./bench/startcpu [-n 100] [-exit] 'BINARY [ARGS…]' … 'FLOOR [ARGS…]'
//
// A command may start with NAME=VALUE words, added to its environment.
// With -exit it sends nothing and waits for the exit on a closed stdin
// (for `BINARY --version`, say).
//
// Each binary is first copied to a temporary directory with 32 KiB
// write(2)s, as an archive extraction writes it, and that copy is what
// runs. How a file entered the page cache changes what its pages cost to
// map: on this project's Linux 6.18 machine a binary just written by the
// Go linker (through mmap) took 1.3–1.7 ms more CPU per start than a
// plain-written copy of the same bytes, so without the copy the
// comparison would follow how each binary happened to be written.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// agent is one measured command.
type agent struct {
	label string
	env   []string
	argv  []string
	cpu   []float64 // ms per run
	wall  []float64 // ms per run
}

func main() {
	n := flag.Int("n", 100, "rounds (each runs every command once)")
	exitOnly := flag.Bool("exit", false, "send nothing: measure start to exit on a closed stdin")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: startcpu [-n N] [-exit] 'BINARY [ARGS…]'… 'FLOOR [ARGS…]'")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := measure(*n, *exitOnly, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "startcpu:", err)
		os.Exit(1)
	}
}

func measure(n int, exitOnly bool, cmds []string) error {
	dir, err := os.MkdirTemp("", "startcpu-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var agents []*agent
	for i, c := range cmds {
		a := &agent{label: c}
		f := strings.Fields(c)
		for len(f) > 0 && strings.Contains(f[0], "=") {
			a.env, f = append(a.env, f[0]), f[1:]
		}
		if len(f) == 0 {
			return fmt.Errorf("%q: no command", c)
		}
		exe, err := copyExecutable(f[0], filepath.Join(dir, fmt.Sprintf("%d-%s", i, filepath.Base(f[0]))))
		if err != nil {
			return err
		}
		a.argv = append([]string{exe}, f[1:]...)
		agents = append(agents, a)
	}
	for round := 0; round < n; round++ {
		for _, a := range agents {
			cpu, wall, err := once(a, exitOnly)
			if err != nil {
				return fmt.Errorf("%s: %w", a.label, err)
			}
			a.cpu, a.wall = append(a.cpu, cpu), append(a.wall, wall)
		}
	}
	floor := agents[len(agents)-1]
	what := "spawn → initialize"
	if exitOnly {
		what = "spawn → exit"
	}
	fmt.Printf("%d rounds, medians (p25–p75); the last command is the floor\n\n", n)
	fmt.Printf("| command | CPU per start, ms | × floor | %s, ms | × floor |\n| --- | ---: | ---: | ---: | ---: |\n", what)
	for _, a := range agents {
		fmt.Printf("| `%s` | %.2f (%.2f–%.2f) | %.2f | %.2f (%.2f–%.2f) | %.2f |\n", a.label,
			quantile(a.cpu, .5), quantile(a.cpu, .25), quantile(a.cpu, .75), quantile(a.cpu, .5)/quantile(floor.cpu, .5),
			quantile(a.wall, .5), quantile(a.wall, .25), quantile(a.wall, .75), quantile(a.wall, .5)/quantile(floor.wall, .5))
	}
	return nil
}

// once starts a, returning its CPU time and the spawn → initialize (or
// exit) time, in milliseconds.
func once(a *agent, exitOnly bool) (cpu, wall float64, err error) {
	home, err := os.MkdirTemp("", "startcpu-home-")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(home)
	cmd := exec.Command(a.argv[0], a.argv[1:]...)
	cmd.Dir = home
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home+"/.config", "XDG_STATE_HOME="+home+"/.local/state",
		"XDG_DATA_HOME="+home+"/.local/share", "XDG_CACHE_HOME="+home+"/.cache", "CODEX_HOME="+home+"/.codex",
		"DSH_ACP_CONFIG=", "DEEPSEEK_API_KEY=startcpu", "DEEPSEEK_BASE_URL=http://127.0.0.1:9/v1")
	cmd.Env = append(cmd.Env, a.env...)
	start := time.Now()
	if exitOnly {
		if err := cmd.Run(); err != nil {
			return 0, 0, err
		}
		wall = ms(time.Since(start))
	} else {
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return 0, 0, err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return 0, 0, err
		}
		if err := cmd.Start(); err != nil {
			return 0, 0, err
		}
		r := bufio.NewReader(stdout)
		_, werr := io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":false}}}`+"\n")
		_, rerr := r.ReadBytes('\n')
		wall = ms(time.Since(start))
		stdin.Close()
		_, _ = io.Copy(io.Discard, r)
		if err := cmd.Wait(); err != nil {
			return 0, 0, err
		}
		if werr != nil || rerr != nil {
			return 0, 0, fmt.Errorf("initialize: write: %v, read: %v", werr, rerr)
		}
	}
	ps := cmd.ProcessState
	return ms(ps.UserTime() + ps.SystemTime()), wall, nil
}

// copyExecutable copies the executable named by name (a path, or a
// command looked up in PATH) to dst with plain writes and returns dst.
func copyExecutable(name, dst string) (string, error) {
	src, err := exec.LookPath(name)
	if err != nil {
		return "", err
	}
	in, err := os.Open(src)
	if err != nil {
		return "", err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return "", err
	}
	// A plain writer, so that io.Copy makes 32 KiB writes (no
	// copy_file_range, which shares the source's page-cache state).
	if _, err := io.Copy(struct{ io.Writer }{out}, in); err != nil {
		out.Close()
		return "", err
	}
	return dst, out.Close()
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// quantile returns the q-quantile of xs (nearest rank; xs is sorted).
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sort.Float64s(xs)
	return xs[int(q*float64(len(xs)-1)+0.5)]
}
