package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/approval"
	"github.com/dsh-acp/dsh-acp/capabilities"
	"github.com/dsh-acp/dsh-acp/capabilities/web/htmlmd"
	"github.com/dsh-acp/dsh-acp/session"
)

type env struct{ log *session.Log }

func (e env) Cwd() string       { return "/" }
func (e env) Log() *session.Log { return e.log }

func (e env) Host() *capabilities.Host { return nil }

func newEnv() env {
	log := session.NewLog(session.Header{ID: "s", Cwd: "/"}, func() int64 { return 0 }, nil)
	log.Append(session.TypeTurnStart, session.TurnStart{Turn: 1, Trigger: session.Trigger{Kind: "message", Source: session.UserSource}})
	return env{log}
}

// answerer answers every approval with out and counts the questions.
type answerer struct {
	out   approval.Outcome
	asked atomic.Int32
}

func (a *answerer) Answer(_ context.Context, _ string, _ approval.Request) (approval.Outcome, bool, error) {
	a.asked.Add(1)
	return a.out, true, nil
}

func exec(t *testing.T, tools []capabilities.Tool, e env, name, args string) capabilities.Outcome {
	t.Helper()
	return capabilities.NewRegistry(tools...).Execute(context.Background(), e, "c1", name, args)
}

func text(o capabilities.Outcome) string { return o.Content[0].Text }

func fetchArgsJSON(u string) string {
	b, _ := json.Marshal(map[string]string{"url": u})
	return string(b)
}

const article = `<!doctype html><html><head><title>Gophers</title></head><body>
<nav><a href="/">Home</a> | <a href="/about">About</a></nav>
<article><h1>Gophers</h1>
<p>The gopher is a small burrowing rodent. Gophers live in North and Central America and spend most of their lives underground in tunnel systems they dig themselves.</p>
<p>They eat roots, tubers and other plant parts, and they are known for their large cheek pouches, which they use to carry food back to their burrows.</p>
<p>Go's mascot is a gopher, drawn by Renée French, and it appears in <a href="/docs">the documentation</a> and on <strong>many</strong> conference stickers.</p>
</article><footer>© 2026</footer></body></html>`

// convertHere converts in the test's process (the agent converts in its
// program worker, with the same package).
func convertHere(_ context.Context, body []byte, u *url.URL, raw bool) (string, string, error) {
	title, md := htmlmd.Convert(body, u, raw)
	return title, md, nil
}

func TestFetchTurnsHTMLIntoMarkdown(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/page":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, article)
		case "/data.json":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"a":1}`)
		case "/missing":
			http.Error(w, "no such page", http.StatusNotFound)
		}
	}))
	defer srv.Close()
	tools := New(Options{AllowPrivate: true, Markdown: convertHere}) // the test server is on loopback
	out := exec(t, tools, newEnv(), "web_fetch", fetchArgsJSON(srv.URL+"/page"))
	require.False(t, out.IsError, text(out))
	got := text(out)
	require.True(t, strings.HasPrefix(got, "URL: "+srv.URL+"/page\nTitle: Gophers\n"), got)
	require.Contains(t, got, "The gopher is a small burrowing rodent.")
	require.Contains(t, got, "**many**")
	require.Contains(t, got, "[the documentation]("+srv.URL+"/docs)")
	require.NotContains(t, got, "<p>")

	out = exec(t, tools, newEnv(), "web_fetch", `{"url":"`+srv.URL+`/page","raw":true}`)
	require.Contains(t, text(out), "[About](/about)", "raw keeps the navigation")

	out = exec(t, tools, newEnv(), "web_fetch", fetchArgsJSON(srv.URL+"/data.json"))
	require.Equal(t, "URL: "+srv.URL+"/data.json\n\n"+`{"a":1}`, text(out))

	out = exec(t, tools, newEnv(), "web_fetch", fetchArgsJSON(srv.URL+"/missing"))
	require.Equal(t, "URL: "+srv.URL+"/missing\nStatus: 404 Not Found\n\nno such page", text(out))
}

func TestFetchBadInput(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/endless":
			w.Header().Set("Content-Type", "text/plain")
			chunk := []byte(strings.Repeat("all work and no play ", 100) + "\n")
			for r.Context().Err() == nil {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		case "/slow":
			w.Header().Set("Content-Type", "text/plain")
			for r.Context().Err() == nil {
				_, _ = w.Write([]byte("."))
				w.(http.Flusher).Flush()
				time.Sleep(50 * time.Millisecond)
			}
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		case "/away":
			http.Redirect(w, r, "http://example.invalid/x", http.StatusFound)
		case "/image":
			w.Header().Set("Content-Type", "image/png")
			_, _ = w.Write([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"))
		case "/sneaky":
			w.Header().Set("Content-Type", "text/plain")
			_, _ = w.Write([]byte("ELF\x00\x00\x01\x02"))
		}
	}))
	defer srv.Close()
	tools := New(Options{MaxBytes: 64 << 10, Timeout: 500 * time.Millisecond, AllowPrivate: true, Resolver: noDNS{}})

	out := exec(t, tools, newEnv(), "web_fetch", fetchArgsJSON(srv.URL+"/endless"))
	require.False(t, out.IsError)
	require.True(t, strings.HasSuffix(text(out), "\n\n[page cut: only the first 65536 bytes were read]"))
	require.Less(t, len(text(out)), 66<<10)

	start := time.Now()
	out = exec(t, tools, newEnv(), "web_fetch", fetchArgsJSON(srv.URL+"/slow"))
	require.Less(t, time.Since(start), 5*time.Second)
	require.Equal(t, "Error: fetch "+srv.URL+"/slow timed out after 500ms and was stopped", text(out))

	out = exec(t, tools, newEnv(), "web_fetch", fetchArgsJSON(srv.URL+"/loop"))
	require.Equal(t, "Error: fetch "+srv.URL+"/loop: stopped after 5 redirects (last to "+srv.URL+"/loop)", text(out))

	out = exec(t, tools, newEnv(), "web_fetch", fetchArgsJSON(srv.URL+"/away"))
	require.True(t, out.IsError)
	require.Contains(t, text(out), "example.invalid")

	out = exec(t, tools, newEnv(), "web_fetch", fetchArgsJSON(srv.URL+"/image"))
	require.Equal(t, "URL: "+srv.URL+"/image\n\n[binary content (image/png, 16 bytes) not shown]", text(out))
	out = exec(t, tools, newEnv(), "web_fetch", fetchArgsJSON(srv.URL+"/sneaky"))
	require.Contains(t, text(out), "[binary content (text/plain, 7 bytes) not shown]")

	for _, u := range []string{"ftp://x/y", "/relative", "file:///etc/passwd", ""} {
		out = exec(t, tools, newEnv(), "web_fetch", fetchArgsJSON(u))
		require.True(t, out.IsError)
		require.Contains(t, text(out), "expected an absolute http:// or https:// URL")
	}
}

// noDNS resolves nothing: no test sends a query to a resolver.
type noDNS struct{}

func (noDNS) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	return nil, &net.DNSError{Err: "no such host (tests resolve nothing)", Name: host, IsNotFound: true}
}

func TestFetchAsksOncePerOriginUnderAsk(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "ok")
	}))
	defer srv.Close()

	always := &answerer{out: approval.AllowedAlways}
	svc := approval.NewService("ask", func() string { return "id" }, always)
	tools := New(Options{Approver: svc})
	e := newEnv()
	for range 3 {
		out := exec(t, tools, e, "web_fetch", fetchArgsJSON(srv.URL+"/a"))
		require.False(t, out.IsError, text(out))
	}
	require.Equal(t, int32(1), always.asked.Load(), "always: asked once for the domain")
	var asked int
	for _, ev := range e.log.Events() {
		if ev.Type == "approval/asked" {
			asked++
			require.Contains(t, string(ev.Data), "the first request to "+srv.URL+" in this session")
		}
	}
	require.Equal(t, 1, asked, "the question is in the session log")

	once := &answerer{out: approval.AllowedOnce}
	tools = New(Options{Approver: approval.NewService("ask", func() string { return "id" }, once)})
	exec(t, tools, newEnv(), "web_fetch", fetchArgsJSON(srv.URL+"/a"))
	exec(t, tools, newEnv(), "web_fetch", fetchArgsJSON(srv.URL+"/b"))
	require.Equal(t, int32(2), once.asked.Load(), "once: asked every time")

	before := hits.Load()
	no := &answerer{out: approval.Rejected}
	tools = New(Options{Approver: approval.NewService("ask", func() string { return "id" }, no)})
	out := exec(t, tools, newEnv(), "web_fetch", fetchArgsJSON(srv.URL+"/a"))
	require.Equal(t, "Error: fetch "+srv.URL+"/a: the user (or the approval policy \"never\") refused access to "+srv.URL, text(out))
	require.Equal(t, before, hits.Load(), "nothing was fetched")

	never := &answerer{out: approval.AllowedAlways}
	tools = New(Options{Approver: approval.NewService("never", func() string { return "id" }, never)})
	out = exec(t, tools, newEnv(), "web_fetch", fetchArgsJSON(srv.URL+"/a"))
	require.True(t, out.IsError, "policy never refuses without asking")
	require.Equal(t, int32(0), never.asked.Load())
}

func TestWebSearchOnlyWithAProvider(t *testing.T) {
	require.Len(t, New(Options{}), 1, "no provider, no web_search")

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Subscription-Token") != "k" {
			http.Error(w, `{"error":"bad token"}`, http.StatusUnauthorized)
			return
		}
		require.Equal(t, "go generics", r.URL.Query().Get("q"))
		require.Equal(t, "2", r.URL.Query().Get("count"))
		fmt.Fprint(w, `{"web":{"results":[{"title":"Generics","url":"https://go.dev/doc/tutorial/generics","description":"A tutorial."},{"title":"Spec","url":"https://go.dev/ref/spec","description":""}]}}`)
	}))
	defer srv.Close()
	tools := New(Options{Search: &Brave{APIKey: "k", BaseURL: srv.URL}})
	require.Len(t, tools, 2)
	out := exec(t, tools, newEnv(), "web_search", `{"query":"go generics","count":2}`)
	require.Equal(t, "1. Generics\n   https://go.dev/doc/tutorial/generics\n   A tutorial.\n\n2. Spec\n   https://go.dev/ref/spec", text(out))

	tools = New(Options{Search: &Brave{APIKey: "wrong", BaseURL: srv.URL}})
	out = exec(t, tools, newEnv(), "web_search", `{"query":"go generics","count":2}`)
	require.Equal(t, `Error: web search failed: brave search: HTTP 401: {"error":"bad token"}`, text(out))
}

func TestCards(t *testing.T) {
	v := (&Fetch{}).PresentCall(json.RawMessage(`{"url":"https://go.dev"}`))
	require.Equal(t, capabilities.ToolKindFetch, v.ToolKind)
	require.Equal(t, "Fetch https://go.dev", v.Title)
	v = (&Search{}).PresentCall(json.RawMessage(`{"query":"x"}`))
	require.Equal(t, `Web search "x"`, v.Title)
}
