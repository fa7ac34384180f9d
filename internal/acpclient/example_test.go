package acpclient_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/dsh-acp/dsh-acp/internal/acpclient"
)

// A client that hosts a project's files with one unsaved buffer, serving
// an agent in-process (acp.Server.Serve is a ServeFunc too).
func ExampleServe() {
	dir, _ := os.MkdirTemp("", "acpclient-example-")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "main.go")
	_ = os.WriteFile(path, []byte("package main // saved\n"), 0o644)
	fsys := acpclient.NewFS(dir)
	fsys.SetBuffer(path, "package main // unsaved\n")

	c := acpclient.Serve(tinyAgent, acpclient.Options{FS: fsys})
	defer c.CloseWrite()
	ctx := context.Background()
	if _, err := c.Initialize(ctx); err != nil {
		fmt.Println(err)
		return
	}
	res, _ := c.Call(ctx, "session/new", map[string]any{"cwd": dir, "mcpServers": []any{}})
	fmt.Println(string(res))
	script := fmt.Sprintf(`[{"method":"fs/read_text_file","params":{"sessionId":"s1","path":%q}}]`, path)
	res, _ = c.Call(ctx, "session/prompt", map[string]any{"sessionId": "s1", "prompt": []any{map[string]any{"type": "text", "text": script}}})
	fmt.Println(string(res))
	for _, call := range fsys.Calls() {
		fmt.Println(call.Method, filepath.Base(call.Path), "from the buffer:", call.Buffer)
	}
	fmt.Println(string(c.Transcript()[0].Data))
	// Output:
	// {"sessionId":"s1"}
	// {"stopReason":"end_turn"}
	// fs/read_text_file main.go from the buffer: true
	// {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true}},"protocolVersion":1}}
}
