package snapshots

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/internal/acpclient"
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
	ctx := context.Background()
	for b.Loop() {
		cmd := exec.Command(bin, "--sessions-root", dir)
		cmd.Env = append(os.Environ(), "DEEPSEEK_API_KEY=")
		p, err := acpclient.Spawn(cmd, acpclient.Options{NoTranscript: true})
		if err != nil {
			b.Fatal(err)
		}
		res, err := p.Initialize(ctx)
		if err != nil || !strings.Contains(string(res), `"protocolVersion":1`) {
			b.Fatalf("no initialize response: %s %v", res, err)
		}
		_ = p.Close(5 * time.Second)
	}
}

// BenchmarkIdleRSS reports the resident memory of the built binary idling
// with one open session (metric rss-MB; one sample per iteration).
func BenchmarkIdleRSS(b *testing.B) {
	bin := binary(b)
	dir, cwd := b.TempDir(), b.TempDir()
	ctx := context.Background()
	var total float64
	n := 0
	for b.Loop() {
		cmd := exec.Command(bin, "--sessions-root", dir)
		cmd.Env = append(os.Environ(), "DEEPSEEK_API_KEY=")
		p, err := acpclient.Spawn(cmd, acpclient.Options{NoTranscript: true})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := p.Initialize(ctx); err != nil {
			b.Fatal(err)
		}
		if _, err := p.Call(ctx, "session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}}); err != nil {
			b.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
		total += rssMB(p.Pid())
		n++
		_ = p.Close(5 * time.Second)
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
