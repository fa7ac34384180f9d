package mcp_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The test binary doubles as a stdio MCP server: with DSH_MCP_TEST_SERVER
// set it serves (mode "serve"), or never answers (mode "hang").
func init() {
	switch os.Getenv("DSH_MCP_TEST_SERVER") {
	case "serve":
		if f := os.Getenv("DSH_MCP_TEST_PIDFILE"); f != "" {
			_ = os.WriteFile(f, []byte(strconv.Itoa(os.Getpid())), 0o644)
		}
		fmt.Fprintln(os.Stderr, "test server starting")
		if err := testServer(nil).Run(context.Background(), &sdk.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	case "hang":
		fmt.Fprintln(os.Stderr, "hanging on purpose")
		time.Sleep(time.Hour)
		os.Exit(0)
	case "exit":
		fmt.Fprintln(os.Stderr, "cannot open the database")
		os.Exit(2)
	}
}

type echoIn struct {
	Text  string `json:"text" jsonschema:"the text to echo"`
	Times int    `json:"times,omitempty" jsonschema:"how often"`
}

type none struct{}

// testServer is a real MCP server: echo, env (reads a variable), header
// (what the request's X-Test header said), fail (an error result) and
// crash (the process dies mid-call).
func testServer(r *http.Request) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "dsh-test", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echo text back."}, func(_ context.Context, _ *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
		n := max(in.Times, 1)
		out := ""
		for range n {
			out += in.Text
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "echo: " + out}}}, nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "env", Description: "Read DSH_MCP_TEST_VALUE."}, func(context.Context, *sdk.CallToolRequest, none) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "value=" + os.Getenv("DSH_MCP_TEST_VALUE")}}}, nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "header", Description: "The X-Test header."}, func(context.Context, *sdk.CallToolRequest, none) (*sdk.CallToolResult, any, error) {
		h := ""
		if r != nil {
			h = r.Header.Get("X-Test")
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "header=" + h}}}, nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "fail", Description: "Always fails."}, func(context.Context, *sdk.CallToolRequest, none) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "the widget is broken"}}}, nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "grow", Description: "Adds the tool grown."}, func(context.Context, *sdk.CallToolRequest, none) (*sdk.CallToolResult, any, error) {
		sdk.AddTool(s, &sdk.Tool{Name: "grown", Description: "Added while running."}, func(context.Context, *sdk.CallToolRequest, none) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "grown here"}}}, nil, nil
		})
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "grew"}}}, nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "crash", Description: "Kills the server."}, func(context.Context, *sdk.CallToolRequest, none) (*sdk.CallToolResult, any, error) {
		if r == nil {
			fmt.Fprintln(os.Stderr, "crashing now")
			os.Exit(3)
		}
		return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "cannot crash over http"}}}, nil, nil
	})
	return s
}
