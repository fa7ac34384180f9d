package search

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/internal/proctree"
	"github.com/dsh-acp/dsh-acp/sandbox"
)

// maxRecord bounds one stdout line of rg kept in memory; the rest of a
// longer line (a minified file's single line) is read and dropped.
const maxRecord = 1 << 20

// maxStderr bounds the stderr kept of one run.
const maxStderr = 64 << 10

// run is one finished rg process.
type run struct {
	exitCode int    // -1 when killed or never exited normally
	stderr   string // bounded
	stopped  bool   // the consumer stopped reading (enough results)
	timedOut bool
}

// errStop is returned by a line consumer that has enough.
var errStop = errors.New("enough results")

// exec runs argv (rg and its fixed arguments, never a shell line) confined
// for the call, in dir, in its own process group, feeding each stdout line
// to each. The run ends at rg's exit, when each returns errStop (the group
// is killed), at the budget (killed, timedOut) or when ctx ends (killed,
// the ctx error is returned).
func (o Options) exec(ctx context.Context, call *capabilities.Call, dir string, argv []string, budget time.Duration, each func(line []byte) error) (run, error) {
	var setup func(*exec.Cmd)
	if sb := o.Sandbox; sb != nil {
		policy := sandbox.Policy{Mode: sandbox.Mode(sb.Mode(call)), WorkspaceRoot: sb.Root(call),
			ExtraRoots: capabilities.HostOf(call.Session).Roots}
		if sb.Hidden != nil {
			// ripgrep never needs the network, and reads no secret.
			policy.NoNetwork, policy.Hidden = true, sb.Hidden(call)
		}
		c, err := sb.Confiner.Confine(ctx, argv, policy)
		if err != nil {
			return run{}, err
		}
		argv, setup = c.Argv, c.Setup
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()

	start := func(withSetup bool) (*exec.Cmd, io.ReadCloser, *os.File, error) {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = dir
		cmd.Env = o.Env.Filter(os.Environ())
		proctree.Prepare(cmd)
		if withSetup && setup != nil {
			setup(cmd)
			proctree.Prepare(cmd)
		}
		errF, err := os.CreateTemp("", "dsh-acp-rg-stderr-")
		if err != nil {
			return nil, nil, nil, fmt.Errorf("search: stderr file: %w", err)
		}
		_ = os.Remove(errF.Name())
		cmd.Stderr = errF
		out, err := cmd.StdoutPipe()
		if err != nil {
			_ = errF.Close()
			return nil, nil, nil, fmt.Errorf("search: stdout pipe: %w", err)
		}
		if err := cmd.Start(); err != nil {
			_ = errF.Close()
			return nil, nil, nil, err
		}
		return cmd, out, errF, nil
	}
	cmd, out, errF, err := start(true)
	if err != nil && setup != nil {
		cmd, out, errF, err = start(false)
	}
	if err != nil {
		return run{}, fmt.Errorf("search: start rg: %w", err)
	}
	defer func() { _ = errF.Close() }()
	pgid := cmd.Process.Pid
	kill := func() { _ = proctree.KillTree(pgid) }
	stopWatch := context.AfterFunc(ctx, kill)
	defer stopWatch()

	var r run
	br := bufio.NewReaderSize(out, 64<<10)
	for {
		line, rerr := readRecord(br)
		if len(line) > 0 {
			if cerr := each(line); cerr != nil {
				r.stopped = true
				kill()
				break
			}
		}
		if rerr != nil {
			break
		}
	}
	_, _ = io.Copy(io.Discard, out) // after a kill: drain until the pipe closes
	werr := cmd.Wait()
	kill() // nothing rg started outlives it
	r.exitCode = -1
	if cmd.ProcessState != nil && cmd.ProcessState.Exited() {
		r.exitCode = cmd.ProcessState.ExitCode()
	}
	if _, err := errF.Seek(0, io.SeekStart); err == nil {
		b, _ := io.ReadAll(io.LimitReader(errF, maxStderr))
		r.stderr = strings.TrimSpace(string(b))
	}
	switch {
	case r.stopped:
		return r, nil
	case parent.Err() != nil:
		return r, fmt.Errorf("search aborted: %w", parent.Err())
	case ctx.Err() != nil && r.exitCode < 0:
		r.timedOut = true
		return r, nil
	}
	var ee *exec.ExitError
	if werr != nil && !errors.As(werr, &ee) {
		return r, fmt.Errorf("search: wait for rg: %w", werr)
	}
	return r, nil
}

// execAll runs argv(scope) for each scope in turn within one budget,
// feeding each stdout line to each with the scope's index. The combined
// run is stopped or timed out when one run was (later scopes then do not
// run), its exit code the gravest (an odd code, then 2, then 0, then 1)
// and its stderr every run's.
func (o Options) execAll(ctx context.Context, call *capabilities.Call, scopes []scope, argv func(sc scope) []string,
	budget time.Duration, each func(i int, line []byte) error) (run, error) {
	deadline := time.Now().Add(budget)
	all := run{exitCode: 1}
	var stderr []string
	for i, sc := range scopes {
		left := time.Until(deadline)
		if left <= 0 {
			all.timedOut = true
			break
		}
		r, err := o.exec(ctx, call, sc.dir, argv(sc), left, func(line []byte) error { return each(i, line) })
		if err != nil {
			return all, err
		}
		if i == 0 || gravity(r.exitCode) > gravity(all.exitCode) {
			all.exitCode = r.exitCode
		}
		if r.stderr != "" {
			stderr = append(stderr, r.stderr)
		}
		all.stopped, all.timedOut = r.stopped, r.timedOut
		if r.stopped || r.timedOut {
			break
		}
	}
	all.stderr = strings.Join(stderr, "\n")
	return all, nil
}

// gravity orders rg exit codes: no match, match, error, anything else.
func gravity(code int) int {
	switch code {
	case 1:
		return 0
	case 0:
		return 1
	case 2:
		return 2
	}
	return 3
}

// readRecord reads one line without its newline, keeping at most
// maxRecord bytes of it.
func readRecord(br *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(buf)+len(chunk) <= maxRecord {
			buf = append(buf, chunk...)
		} else if len(buf) < maxRecord {
			buf = append(buf, chunk[:maxRecord-len(buf)]...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return trimNL(buf), err
	}
}

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}
