//go:build linux

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/dsh-acp/dsh-acp/bench/mockllm"
)

// options are the command's flags.
type options struct {
	n        int
	settle   time.Duration
	prompt   bool
	idle     bool
	sections bool
	packages int
	maps     int
}

func main() {
	var o options
	flag.IntVar(&o.n, "n", 5, "runs (medians are printed)")
	flag.DurationVar(&o.settle, "settle", 300*time.Millisecond, "wait after session/new (with -idle: after the start) before the last reading")
	flag.BoolVar(&o.prompt, "prompt", false, "also run one text turn and read the memory after it")
	flag.BoolVar(&o.idle, "idle", false, "speak no ACP: start the command with stdin open, wait -settle and read (for a binary that idles after its package initializers)")
	flag.BoolVar(&o.sections, "sections", false, "print the executable's resident pages per ELF section (last run)")
	flag.IntVar(&o.packages, "packages", 0, "print the N Go packages owning most resident text pages (last run)")
	flag.IntVar(&o.maps, "maps", 0, "print the N mappings with the most RSS (last run)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: memprobe [flags] BINARY [ARGS…]")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := probe(o, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "memprobe:", err)
		os.Exit(1)
	}
}

func probe(o options, argv []string) error {
	mock, err := mockllm.New(mockllm.Options{})
	if err != nil {
		return err
	}
	defer mock.Close()
	exe, err := exec.LookPath(argv[0])
	if err != nil {
		return err
	}
	if exe, err = filepath.Abs(exe); err != nil {
		return err
	}
	layout, err := readLayout(exe)
	if err != nil {
		return err
	}
	var runs []run
	for i := 0; i < o.n; i++ {
		r, err := once(o, mock.URL(), exe, argv[1:], layout)
		if err != nil {
			return fmt.Errorf("run %d: %w", i+1, err)
		}
		runs = append(runs, r)
	}
	st, err := os.Stat(exe)
	if err != nil {
		return err
	}
	fmt.Printf("%s: %.1f MB on disk; %d runs, medians\n\n", exe, mb(st.Size()), o.n)
	printRuns(os.Stdout, runs, !o.idle)
	last := runs[len(runs)-1].points
	at := last[len(last)-1]
	if o.sections {
		fmt.Println()
		printSections(os.Stdout, at, layout)
	}
	if o.maps > 0 {
		fmt.Println()
		printMaps(os.Stdout, at, o.maps)
	}
	if o.packages > 0 {
		fmt.Println()
		printPackages(os.Stdout, at, layout, o.packages)
	}
	return nil
}

// run is one agent start: the spawn → initialize time and the readings.
type run struct {
	spawnInit time.Duration
	points    []reading
}

// reading is the memory of the agent at one moment.
type reading struct {
	label   string
	rollup  map[string]int64 // smaps_rollup, in bytes
	maps    []mapping        // smaps, with the resident pages of the executable
	resides []bool           // per page of the executable's mapped image, whether it is resident
	minflt  int64            // minor page faults so far
	cpu     time.Duration    // CPU time so far (user + system, in clock ticks of 10 ms)
}

func once(o options, mockURL, exe string, args []string, layout *layout) (run, error) {
	home, err := os.MkdirTemp("", "memprobe-")
	if err != nil {
		return run{}, err
	}
	defer os.RemoveAll(home)
	ws := filepath.Join(home, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		return run{}, err
	}
	base := mockURL + "/agent/memprobe"
	cmd := exec.Command(exe, args...)
	cmd.Dir = ws
	cmd.Env = append(os.Environ(),
		"DEEPSEEK_BASE_URL="+base+"/v1", "DEEPSEEK_API_KEY=mock-key",
		"NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost",
		"HOME="+home, "XDG_CONFIG_HOME="+home+"/.config", "XDG_STATE_HOME="+home+"/.local/state",
		"XDG_DATA_HOME="+home+"/.local/share", "XDG_CACHE_HOME="+home+"/.cache", "CODEX_HOME="+home+"/.codex",
		"DSH_ACP_CONFIG=")
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return run{}, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return run{}, err
	}
	c := &client{w: stdin, r: bufio.NewReaderSize(stdout, 1<<16)}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return run{}, err
	}
	defer func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}()
	var r run
	pid := cmd.Process.Pid
	read := func(label string) error {
		p, err := readMemory(pid, label, layout)
		if err == nil {
			r.points = append(r.points, p)
		}
		return err
	}
	if o.idle {
		time.Sleep(o.settle)
		return r, read(fmt.Sprintf("%v after the start", o.settle))
	}
	if _, err := c.call("initialize", `{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":false}}`); err != nil {
		return r, err
	}
	r.spawnInit = time.Since(start)
	if err := read("after initialize"); err != nil {
		return r, err
	}
	res, err := c.call("session/new", fmt.Sprintf(`{"cwd":%q,"mcpServers":[]}`, ws))
	if err != nil {
		return r, err
	}
	if err := read("after session/new"); err != nil {
		return r, err
	}
	time.Sleep(o.settle)
	if err := read(fmt.Sprintf("after session/new + %v", o.settle)); err != nil {
		return r, err
	}
	if o.prompt {
		var sess struct {
			SessionID string `json:"sessionId"`
		}
		if err := json.Unmarshal(res, &sess); err != nil {
			return r, err
		}
		if _, err := c.call("session/prompt", fmt.Sprintf(`{"sessionId":%q,"prompt":[{"type":"text","text":"Say hello."}]}`, sess.SessionID)); err != nil {
			return r, err
		}
		if err := read("after one text turn"); err != nil {
			return r, err
		}
	}
	return r, nil
}

// client is the least ACP client that gets an agent to a session: it
// sends requests one at a time, skips notifications and answers the
// agent's own requests with a method-not-found error.
type client struct {
	w    io.Writer
	r    *bufio.Reader
	next int
}

func (c *client) call(method, params string) (json.RawMessage, error) {
	c.next++
	id := c.next
	if _, err := fmt.Fprintf(c.w, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", id, method, params); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		line, err := c.r.ReadBytes('\n')
		if err != nil {
			return nil, fmt.Errorf("%s: %w", method, err)
		}
		var f struct {
			ID     *json.RawMessage `json:"id"`
			Method string           `json:"method"`
			Result json.RawMessage  `json:"result"`
			Error  json.RawMessage  `json:"error"`
		}
		if err := json.Unmarshal(line, &f); err != nil {
			return nil, fmt.Errorf("%s: bad frame %q: %w", method, line, err)
		}
		switch {
		case f.ID == nil: // a notification
		case f.Method != "": // the agent asks something: no
			fmt.Fprintf(c.w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"not supported"}}`+"\n", *f.ID)
		case string(*f.ID) == fmt.Sprint(id):
			if len(f.Error) > 0 {
				return nil, fmt.Errorf("%s: %s", method, f.Error)
			}
			return f.Result, nil
		}
	}
	return nil, errors.New(method + ": timed out")
}

// median of xs (xs is reordered).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sort.Float64s(xs)
	if len(xs)%2 == 1 {
		return xs[len(xs)/2]
	}
	return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
}

func mb(b int64) float64 { return float64(b) / 1e6 }

// rollupRows are the smaps_rollup fields printed, in order.
var rollupRows = []struct{ key, label string }{
	{"Rss", "RSS"},
	{"Pss", "PSS"},
	{"Pss_Anon", "  PSS anonymous"},
	{"Pss_File", "  PSS file"},
	{"Private_Clean", "private clean"},
	{"Private_Dirty", "private dirty"},
	{"Shared_Clean", "shared clean"},
	{"Anonymous", "anonymous"},
	{"AnonHugePages", "AnonHugePages"},
	{"FilePmdMapped", "FilePmdMapped"},
}

func printRuns(w io.Writer, runs []run, timed bool) {
	if timed {
		var si []float64
		for _, r := range runs {
			si = append(si, float64(r.spawnInit.Microseconds())/1000)
		}
		fmt.Fprintf(w, "spawn → initialize: %.2f ms\n\n", median(si))
	}
	points := len(runs[0].points)
	fmt.Fprintf(w, "| MB |")
	for _, p := range runs[0].points {
		fmt.Fprintf(w, " %s |", p.label)
	}
	fmt.Fprintf(w, "\n| --- |%s\n", strings.Repeat(" ---: |", points))
	row := func(label string, f func(reading) int64) {
		fmt.Fprintf(w, "| %s |", label)
		for i := 0; i < points; i++ {
			var xs []float64
			for _, r := range runs {
				xs = append(xs, mb(f(r.points[i])))
			}
			fmt.Fprintf(w, " %.2f |", median(xs))
		}
		fmt.Fprintln(w)
	}
	for _, k := range rollupRows {
		row(k.label, func(p reading) int64 { return p.rollup[k.key] })
	}
	fmt.Fprintf(w, "| minor page faults (count) |")
	for i := 0; i < points; i++ {
		var xs []float64
		for _, r := range runs {
			xs = append(xs, float64(r.points[i].minflt))
		}
		fmt.Fprintf(w, " %.0f |", median(xs))
	}
	fmt.Fprintln(w)
	for _, kind := range mappingKinds {
		row("RSS "+string(kind), func(p reading) int64 {
			var s int64
			for _, m := range p.maps {
				if m.kind == kind {
					s += m.fields["Rss"]
				}
			}
			return s
		})
	}
}

// printSections is the executable's resident memory per ELF section.
func printSections(w io.Writer, p reading, l *layout) {
	fmt.Fprintf(w, "resident pages of the executable per section (%s)\n\n| section | size MB | resident MB | %% |\n| --- | ---: | ---: | ---: |\n", p.label)
	for _, s := range l.sections {
		res := residentBytes(p.resides, l, s.addr, s.addr+s.size)
		fmt.Fprintf(w, "| %s | %.2f | %.2f | %.0f |\n", s.name, mb(int64(s.size)), mb(res), 100*float64(res)/float64(max(s.size, 1)))
	}
}

// printPackages is the resident text per Go package, most first.
func printPackages(w io.Writer, p reading, l *layout, top int) {
	type row struct {
		pkg           string
		size, resides int64
	}
	by := map[string]*row{}
	for _, f := range l.funcs {
		r := by[f.pkg]
		if r == nil {
			r = &row{pkg: f.pkg}
			by[f.pkg] = r
		}
		r.size += int64(f.end - f.entry)
		r.resides += residentBytes(p.resides, l, f.entry, f.end)
	}
	var rows []*row
	for _, r := range by {
		rows = append(rows, r)
	}
	slices.SortFunc(rows, func(a, b *row) int { return int(b.resides - a.resides) })
	fmt.Fprintf(w, "resident text per package (%s), top %d of %d\n\n| package | text MB | resident MB |\n| --- | ---: | ---: |\n", p.label, top, len(rows))
	for i, r := range rows {
		if i == top {
			break
		}
		fmt.Fprintf(w, "| %s | %.2f | %.2f |\n", r.pkg, mb(r.size), mb(r.resides))
	}
}

// printMaps lists the mappings with the most RSS.
func printMaps(w io.Writer, p reading, top int) {
	ms := slices.Clone(p.maps)
	slices.SortFunc(ms, func(a, b mapping) int { return int(b.fields["Rss"] - a.fields["Rss"]) })
	fmt.Fprintf(w, "largest mappings (%s)\n\n| mapping | kind | size MB | RSS MB | private dirty MB | FilePmdMapped MB |\n| --- | --- | ---: | ---: | ---: | ---: |\n", p.label)
	for i, m := range ms {
		if i == top {
			break
		}
		fmt.Fprintf(w, "| %x-%x %s %s | %s | %.2f | %.2f | %.2f | %.2f |\n", m.lo, m.hi, m.perms, filepath.Base(m.path), m.kind,
			mb(int64(m.hi-m.lo)), mb(m.fields["Rss"]), mb(m.fields["Private_Dirty"]), mb(m.fields["FilePmdMapped"]))
	}
}
