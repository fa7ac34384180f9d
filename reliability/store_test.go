package reliability

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	_ "modernc.org/sqlite" // the raw reader of the SQLite store
)

// The tests read the stores the way the session-log contract lays them
// out (§ 6 JSONL, § 7 SQLite), bypassing the agent's own loader, so what
// they judge is what is on disk.

// logEvent is one stored event.
type logEvent struct {
	Type string          `json:"type"`
	Seq  int             `json:"seq"`
	Data json.RawMessage `json:"data"`
}

// readStoredLog returns the stored events of session id (cwd is its
// session cwd) and whether the JSONL file ends in a torn line.
func readStoredLog(store, root, cwd, id string) (events []logEvent, torn bool, err error) {
	switch store {
	case "jsonl":
		sum := sha256.Sum256([]byte(cwd))
		b, err := os.ReadFile(filepath.Join(root, "cwd-"+hex.EncodeToString(sum[:])[:12], id+".jsonl"))
		if err != nil {
			return nil, false, err
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, 64<<20)
		for i := 0; sc.Scan(); i++ {
			if i == 0 {
				continue // the header
			}
			var e logEvent
			if json.Unmarshal(sc.Bytes(), &e) != nil {
				return events, true, nil
			}
			events = append(events, e)
		}
		return events, len(b) > 0 && b[len(b)-1] != '\n', sc.Err()
	case "sqlite":
		db, err := sql.Open("sqlite", "file:"+filepath.Join(root, "sessions.db")+"?mode=ro")
		if err != nil {
			return nil, false, err
		}
		defer db.Close()
		rows, err := db.Query(`SELECT seq, type, data FROM events WHERE session_id = ? ORDER BY seq`, id)
		if err != nil {
			return nil, false, err
		}
		defer rows.Close()
		for rows.Next() {
			var e logEvent
			var data string
			if err := rows.Scan(&e.Seq, &e.Type, &data); err != nil {
				return nil, false, err
			}
			e.Data = json.RawMessage(data)
			events = append(events, e)
		}
		return events, false, rows.Err()
	}
	return nil, false, fmt.Errorf("unknown store %q", store)
}

// storedTurn summarizes one turn of a log.
type storedTurn struct {
	Turn    int
	Users   []string // texts of its user/message events
	End     string   // turn/end reason kind, "" while open
	Calls   int      // tool/call events
	Results int      // tool/result events
	// Interrupted counts the crash closers among its results.
	Interrupted int
	// Uncalled counts the closers of calls that never got a tool/call (the
	// load replay shows each as a card of its own).
	Uncalled int
}

// checkLog checks a log's structure: seqs contiguous from 0, turns
// numbered 1, 2, … each closed by its own turn/end before the next opens,
// every event inside a turn, every tool call an assistant/message
// announces answered by one tool/result in its turn (a tool/call event
// before it, except for crash repair's closer, which answers calls that
// never got one). It returns the turns and the problems found.
func checkLog(events []logEvent) ([]storedTurn, []string) {
	var turns []storedTurn
	var bad []string
	var cur *storedTurn
	open := map[string]bool{}      // announced, not yet answered
	announced := map[string]bool{} // by an assistant/message of this turn
	called := map[string]bool{}    // by a tool/call of this turn
	for i, e := range events {
		if e.Seq != i {
			bad = append(bad, fmt.Sprintf("event %d has seq %d", i, e.Seq))
		}
		var d struct {
			Turn    int             `json:"turn"`
			CallID  string          `json:"callId"`
			Content json.RawMessage `json:"content"`
			Reason  struct {
				Kind string `json:"kind"`
			} `json:"reason"`
			Error *struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		_ = json.Unmarshal(e.Data, &d)
		switch e.Type {
		case "turn/start":
			if cur != nil {
				bad = append(bad, fmt.Sprintf("seq %d: turn %d starts inside open turn %d", e.Seq, d.Turn, cur.Turn))
			}
			if d.Turn != len(turns)+1 {
				bad = append(bad, fmt.Sprintf("seq %d: turn %d starts, want turn %d", e.Seq, d.Turn, len(turns)+1))
			}
			turns = append(turns, storedTurn{Turn: d.Turn})
			cur = &turns[len(turns)-1]
			clear(open)
			clear(announced)
			clear(called)
			continue
		case "turn/end":
			if cur == nil || d.Turn != cur.Turn {
				bad = append(bad, fmt.Sprintf("seq %d: turn/end of turn %d closes no open turn", e.Seq, d.Turn))
				continue
			}
			if len(open) > 0 {
				bad = append(bad, fmt.Sprintf("seq %d: turn %d ends with tool calls %v unanswered", e.Seq, d.Turn, keys(open)))
			}
			cur.End = d.Reason.Kind
			cur = nil
			continue
		}
		if cur == nil {
			bad = append(bad, fmt.Sprintf("seq %d: %s outside any turn", e.Seq, e.Type))
			continue
		}
		switch e.Type {
		case "user/message":
			var blocks []struct {
				Text string `json:"text"`
			}
			_ = json.Unmarshal(d.Content, &blocks)
			var sb strings.Builder
			for _, b := range blocks {
				sb.WriteString(b.Text)
			}
			cur.Users = append(cur.Users, sb.String())
		case "assistant/message":
			var blocks []struct {
				Type string `json:"type"`
				ID   string `json:"id"`
			}
			_ = json.Unmarshal(d.Content, &blocks)
			for _, b := range blocks {
				if b.Type == "tool-call" {
					announced[b.ID] = true
					open[b.ID] = true
				}
			}
		case "tool/call":
			cur.Calls++
			if !announced[d.CallID] {
				bad = append(bad, fmt.Sprintf("seq %d: tool/call %q was not announced by an assistant/message", e.Seq, d.CallID))
			}
			called[d.CallID] = true
		case "tool/result":
			cur.Results++
			closer := d.Error != nil && d.Error.Code == "interrupted"
			if closer {
				cur.Interrupted++
				if !called[d.CallID] {
					cur.Uncalled++
				}
			}
			if !open[d.CallID] || (!called[d.CallID] && !closer) {
				bad = append(bad, fmt.Sprintf("seq %d: tool/result for %q answers no open tool call", e.Seq, d.CallID))
			}
			delete(open, d.CallID)
		}
	}
	if cur != nil {
		bad = append(bad, fmt.Sprintf("the log ends inside turn %d", cur.Turn))
	}
	return turns, bad
}

// turnOf returns the turn whose user message carries marker id.
func turnOf(turns []storedTurn, id string) (storedTurn, int, bool) {
	for i, t := range turns {
		for _, u := range t.Users {
			if sm := markerRE.FindStringSubmatch(u); sm != nil && sm[2] == id {
				return t, i, true
			}
		}
	}
	return storedTurn{}, -1, false
}
