package storetest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/session"
)

// holdEnv makes a re-executed test binary hold a session: "<dir>\n<id>".
const holdEnv = "DSH_STORETEST_HOLD"

// DirOpener opens the store kept in dir, outside a test (in a child
// process).
type DirOpener func(dir string) (session.Store, error)

// MaybeHold belongs at the start of a store package's TestMain. In a test
// binary re-executed by RunProcess it opens the store, loads the session
// named by the environment (taking its lock), prints "held" and then waits
// until its stdin ends or it is killed; it never returns there. Otherwise
// it returns at once.
func MaybeHold(open DirOpener) {
	spec, ok := os.LookupEnv(holdEnv)
	if !ok {
		return
	}
	dir, id, _ := strings.Cut(spec, "\n")
	st, err := open(dir)
	if err == nil {
		_, _, err = st.Load(context.Background(), id)
	}
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(2)
	}
	fmt.Println("held")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	_ = st.Close()
	os.Exit(0)
}

// RunProcess is the real two-process case: a child process (this test
// binary, re-executed; its TestMain must call MaybeHold) loads a session,
// this process is refused with an error naming the child's pid and changes
// nothing; once the child is killed (a crash: nobody releases anything) the
// kernel has dropped its lock and this process owns the session.
func RunProcess(t *testing.T, open DirOpener) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := open(dir)
	require.NoError(t, err)
	defer st.Close()
	h := session.Header{ID: "two-processes", CreatedAt: 1, Cwd: "/w"}
	g := NewGen(0)
	g.Turn(1, 1)
	g.TurnStart(2, "left open") // a crash repair would close this turn
	require.NoError(t, st.Append(ctx, h, g.Events))
	require.NoError(t, st.Close()) // this "process" is done with it

	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), holdEnv+"="+dir+"\n"+h.ID)
	stdin, err := child.StdinPipe()
	require.NoError(t, err)
	out, err := child.StdoutPipe()
	require.NoError(t, err)
	child.Stderr = os.Stderr
	require.NoError(t, child.Start())
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
	ready := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		ready <- strings.TrimSpace(line)
	}()
	select {
	case line := <-ready:
		require.Equal(t, "held", line)
	case <-time.After(10 * time.Second):
		t.Fatal("the child did not report holding the session")
	}

	st2, err := open(dir)
	require.NoError(t, err)
	defer st2.Close()
	_, _, err = st2.Load(ctx, h.ID)
	var he *session.HeldError
	require.True(t, errors.As(err, &he), "load of a session another process holds: %v", err)
	require.Equal(t, child.Process.Pid, he.Holder.PID)
	require.Contains(t, err.Error(), fmt.Sprintf("pid %d", child.Process.Pid))
	require.ErrorIs(t, st2.Append(ctx, h, completeTurnAt(len(g.Events)+2, 3)), session.ErrHeld)

	// The child crashes; its lock dies with it.
	require.NoError(t, child.Process.Signal(syscall.SIGKILL))
	_ = child.Wait()
	_ = stdin.Close()
	_, got, err := st2.Load(ctx, h.ID)
	require.NoError(t, err, "a crashed holder's lock is released by the kernel")
	// The child's load repaired the open turn once; nothing else changed.
	want := append(Lines(t, g.Events), fmt.Sprintf(`{"type":"turn/end","seq":%d,"time":%d,"data":{"turn":2,"reason":{"kind":"interrupted"}}}`, len(g.Events), g.Events[len(g.Events)-1].Time))
	require.Equal(t, want, Lines(t, got))
}
