//go:build linux

package sandbox

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// sleeperEnv turns the test binary into a process holding a secret in its
// environment: "1" makes it non-dumpable first, "0" leaves it dumpable.
const sleeperEnv = "DSH_SANDBOX_SLEEPER"

func init() {
	v := os.Getenv(sleeperEnv)
	if v == "" {
		return
	}
	if v == "1" {
		if err := SetNonDumpable(); err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
	}
	fmt.Println("ready")
	time.Sleep(time.Minute)
	os.Exit(0)
}

// TestSetNonDumpable checks with a real reader of the same uid (as root:
// both as uid 65534, since root may read anyone's environ) that a
// non-dumpable process's /proc/<pid>/environ is closed to it, and that the
// same read works on a dumpable one.
func TestSetNonDumpable(t *testing.T) {
	bin, err := os.Executable()
	require.NoError(t, err)
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		cred = &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}
		dir := testBase(t)
		require.NoError(t, os.Chmod(dir, 0o755))
		b, err := os.ReadFile(bin)
		require.NoError(t, err)
		bin = filepath.Join(dir, "sleeper.test")
		require.NoError(t, os.WriteFile(bin, b, 0o755))
	}
	secret := fmt.Sprintf("sk-dumpable-%d", time.Now().UnixNano())
	for _, nonDumpable := range []bool{false, true} {
		sleeper := exec.Command(bin)
		sleeper.Env = []string{sleeperEnv + "=" + map[bool]string{false: "0", true: "1"}[nonDumpable], "DSH_SECRET=" + secret}
		sleeper.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
		out, err := sleeper.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, sleeper.Start())
		line, err := bufio.NewReader(out).ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, "ready\n", line)

		reader := exec.Command("cat", "/proc/"+strconv.Itoa(sleeper.Process.Pid)+"/environ")
		reader.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		got, err := reader.CombinedOutput()
		_ = sleeper.Process.Kill()
		_ = sleeper.Wait()
		if nonDumpable {
			require.Error(t, err)
			require.NotContains(t, string(got), secret)
			require.Contains(t, string(got), "Permission denied")
		} else {
			require.NoError(t, err, "%s", got)
			require.Contains(t, string(got), secret, "the control reads a dumpable process's environ")
		}
	}
}
