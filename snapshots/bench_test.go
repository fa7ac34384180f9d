package snapshots

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/internal/shared"
)

// BenchmarkReplayTextTurn replays upstream's text-turn end to end in
// process: temp workspace, handshake, one streamed turn, log persistence,
// normalization and comparison.
func BenchmarkReplayTextTurn(b *testing.B) {
	sc, err := Load(filepath.Join(shared.Dir(b, shared.Upstream), "acp-agent", "text-turn"))
	if err != nil {
		b.Skipf("upstream corpus not available: %v", err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if r := Run(context.Background(), sc, InProcess{}, Options{}); !r.Passed {
			b.Fatal(r.Message)
		}
	}
}

// BenchmarkSpawnToInitialize measures the built binary from exec to the
// initialize response on its stdout.
func BenchmarkSpawnToInitialize(b *testing.B) {
	bin := binary(b)
	dir := b.TempDir()
	req := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}` + "\n"
	for b.Loop() {
		cmd := exec.Command(bin, "--sessions-root", dir)
		cmd.Env = append(os.Environ(), "DEEPSEEK_API_KEY=")
		in, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		_, _ = in.Write([]byte(req))
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil || !strings.Contains(line, `"protocolVersion":1`) {
			b.Fatalf("no initialize response: %q %v", line, err)
		}
		_ = in.Close()
		_ = cmd.Wait()
	}
}

// BenchmarkIdleRSS reports the resident memory of the built binary idling
// with one open session (metric rss-MB; one sample per iteration).
func BenchmarkIdleRSS(b *testing.B) {
	bin := binary(b)
	dir, cwd := b.TempDir(), b.TempDir()
	var total float64
	n := 0
	for b.Loop() {
		cmd := exec.Command(bin, "--sessions-root", dir)
		cmd.Env = append(os.Environ(), "DEEPSEEK_API_KEY=")
		in, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		r := bufio.NewReader(out)
		_, _ = in.Write([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}` + "\n"))
		_, _ = r.ReadString('\n')
		_, _ = in.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"` + cwd + `","mcpServers":[]}}` + "\n"))
		_, _ = r.ReadString('\n')
		time.Sleep(50 * time.Millisecond)
		total += rssMB(cmd.Process.Pid)
		n++
		_ = in.Close()
		_ = cmd.Wait()
	}
	b.ReportMetric(total/float64(n), "rss-MB")
}

func rssMB(pid int) float64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			f := strings.Fields(l)
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}
