package acp

import (
	"context"
	"errors"
	"fmt"

	"github.com/dsh-acp/dsh-acp/capabilities"
)

// ReadTextFileRequest is the params of fs/read_text_file (agent→client).
type ReadTextFileRequest struct {
	SessionID string `json:"sessionId"`
	Path      string `json:"path"`
}

// WriteTextFileRequest is the params of fs/write_text_file (agent→client).
type WriteTextFileRequest struct {
	SessionID string `json:"sessionId"`
	Path      string `json:"path"`
	Content   string `json:"content"`
}

// clientFiles reaches file contents through the client's fs/read_text_file
// and fs/write_text_file for one session (capabilities.TextFiles): reads
// see the editor's unsaved buffers, writes land in its review. A method the
// client did not advertise fails with errors.ErrUnsupported at once, so the
// file tools use the local file instead. The tools reach it only through
// capabilities.Through, which checks every path beneath the session's
// roots locally before a request is sent.
type clientFiles struct {
	s           *Server
	sessionID   string
	read, write bool
}

// clientFiles returns the client's files for session id, or nil when the
// composition keeps files local (Options.EditorFiles off) or the client
// advertised neither fs method.
func (s *Server) clientFiles(id string) capabilities.TextFiles {
	if !s.opts.EditorFiles {
		return nil
	}
	s.mu.Lock()
	fs := s.client.FS
	s.mu.Unlock()
	if fs == nil || !fs.ReadTextFile && !fs.WriteTextFile {
		return nil
	}
	return clientFiles{s: s, sessionID: id, read: fs.ReadTextFile, write: fs.WriteTextFile}
}

// Offers implements capabilities.TextFiles: what the client advertised.
func (c clientFiles) Offers() (read, write bool) { return c.read, c.write }

// ReadText implements capabilities.TextFiles.
func (c clientFiles) ReadText(ctx context.Context, path string) (string, error) {
	if !c.read {
		return "", errors.ErrUnsupported
	}
	var res struct {
		Content string `json:"content"`
	}
	if err := c.s.call(ctx, MethodReadTextFile, ReadTextFileRequest{SessionID: c.sessionID, Path: path}, &res); err != nil {
		return "", fmt.Errorf("the editor could not read it: %w", err)
	}
	return res.Content, nil
}

// WriteText implements capabilities.TextFiles.
func (c clientFiles) WriteText(ctx context.Context, path, content string) error {
	if !c.write {
		return errors.ErrUnsupported
	}
	var res struct{}
	if err := c.s.call(ctx, MethodWriteTextFile, WriteTextFileRequest{SessionID: c.sessionID, Path: path, Content: content}, &res); err != nil {
		return fmt.Errorf("the editor could not write it: %w", err)
	}
	return nil
}
