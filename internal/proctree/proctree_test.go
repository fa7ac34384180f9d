package proctree

import (
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestKillEndsTheWholeTree starts a shell that leaves a background child
// and checks that Kill ends both, the child included, on the system the
// test runs on.
func TestKillEndsTheWholeTree(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("needs a POSIX sh (Git for Windows' on Windows): ", err)
	}
	cmd := exec.Command(sh, "-c", "sleep 60 & echo $!; wait")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	g, err := Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	buf := make([]byte, 32)
	n, _ := out.Read(buf)
	child, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil {
		t.Fatalf("child pid: %q: %v", buf[:n], err)
	}
	if runtime.GOOS != "windows" && !Running(child) {
		t.Fatal("the background child does not run")
	}
	if !g.Alive() {
		t.Fatal("the tree is not alive")
	}
	if err := g.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for g.Alive() || (runtime.GOOS != "windows" && Running(child)) {
		if time.Now().After(deadline) {
			t.Fatalf("the tree outlived Kill (child %d running: %v)", child, Running(child))
		}
		time.Sleep(5 * time.Millisecond)
	}
}
