package jsonl

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"strings"

	"github.com/dsh-acp/dsh-acp/session"
)

var _ session.Titler = (*Store)(nil)

// Title implements session.Titler: it reads the log up to its first
// user/message (at most 1 MiB) and returns "" when there is none.
func (s *Store) Title(ctx context.Context, id string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	name, err := EncodeID(id)
	if err != nil {
		return "", err
	}
	path, err := s.find(name)
	if err != nil || path == "" {
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			return "", &NotFoundError{ID: id}
		}
		return "", err
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	read := 0
	for sc.Scan() && read < 1<<20 {
		line := sc.Bytes()
		read += len(line)
		if !strings.Contains(string(line[:min(len(line), 40)]), `"user/message"`) {
			continue
		}
		var ev session.Event
		var m session.Message
		if json.Unmarshal(line, &ev) != nil || ev.Decode(&m) != nil {
			continue
		}
		for _, b := range m.Content {
			if b.Type == session.BlockText && strings.TrimSpace(b.Text) != "" {
				return session.TitleOf(b.Text), nil
			}
		}
	}
	return "", nil
}
