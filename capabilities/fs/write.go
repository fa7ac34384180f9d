package fs

import (
	"bytes"
	"context"

	"github.com/dsh-acp/dsh-acp/capabilities"
)

// writeTool is `write` (tools contract § 5).
type writeTool struct{ *files }

// writeArgs are write's arguments.
type writeArgs struct {
	FilePath string `json:"file_path"`
	Content  string `json:"content"`
}

// Name implements capabilities.Tool.
func (*writeTool) Name() string { return "write" }

// Traits implements capabilities.Tool.
func (*writeTool) Traits() capabilities.Traits { return capabilities.Traits{Writes: true} }

// Description implements capabilities.Tool.
func (*writeTool) Description() string {
	return "Create a file, or replace a whole file, with the given content, written exactly as passed. " +
		"Missing parent directories are created. An existing file can only be replaced after you have read it in this session, " +
		"and only if it has not changed since. For changes to part of a file, prefer edit."
}

// Schema implements capabilities.Tool.
func (*writeTool) Schema() *capabilities.Schema {
	return capabilities.Object(
		capabilities.Req("file_path", capabilities.String("Path of the file to write, absolute or relative to the working directory.")),
		capabilities.Req("content", capabilities.String("The complete new content of the file.")),
	)
}

// PromptSection implements capabilities.Sectioner.
func (*writeTool) PromptSection() capabilities.Section {
	return capabilities.Section{Name: "tool:write", Order: 101, Text: "# Writing files\n" +
		"Use `write` to create new files or to rewrite a file entirely; do not create files with shell redirection or heredocs. " +
		"Before replacing an existing file, read it first. Do not create files that the task does not need."}
}

// Run implements capabilities.Tool.
func (t *writeTool) Run(ctx context.Context, call *capabilities.Call) (capabilities.Result, error) {
	var a writeArgs
	if err := decodeArgs(call.Args, &a); err != nil {
		return capabilities.Result{}, err
	}
	if err := checkFilePath(a.FilePath); err != nil {
		return capabilities.Result{}, err
	}
	tg, err := targetOf(call, a.FilePath)
	if err != nil {
		return capabilities.Result{}, err
	}
	if err := aborted(ctx, "write"); err != nil {
		return capabilities.Result{}, err
	}
	t.policy.mutate.Lock()
	defer t.policy.mutate.Unlock()

	var prev capabilities.FileInfo
	var cur []byte
	r, err := t.probe(ctx, call, OpWrite, tg, func(files capabilities.Files) (err error) {
		prev, cur, err = current(ctx, files, tg.display)
		return err
	})
	if err != nil {
		return capabilities.Result{}, fail(ctx, "write", tg, err)
	}
	before, err := t.checkWrite(ctx, r, tg, prev, cur)
	if err != nil {
		return capabilities.Result{}, err
	}
	if asked, err := t.approve(ctx, call, OpWrite, tg, r); err != nil {
		return capabilities.Result{}, err
	} else if asked {
		// The question took a while: judge the file as it is now.
		if prev, cur, err = current(ctx, r.files, tg.display); err != nil {
			return capabilities.Result{}, fail(ctx, "write", tg, err)
		}
		if before, err = t.checkWrite(ctx, r, tg, prev, cur); err != nil {
			return capabilities.Result{}, err
		}
	}
	after := []byte(a.Content)
	if err := r.files.WriteFile(ctx, tg.display, after); err != nil {
		return capabilities.Result{}, fail(ctx, "write", tg, err)
	}
	if err := t.record(ctx, r, tg); err != nil {
		return capabilities.Result{}, err
	}
	exists := prev.Exists
	t.notify(ctx, Change{CallID: call.CallID, Path: tg.display, Existed: exists, Before: before, After: after})

	verb := "Created"
	if exists {
		verb = "Updated"
	}
	res := capabilities.TextResult("<path>" + tg.display + "</path>\n<type>file</type>\n<content>\n" + verb + " file\n</content>")
	if exists {
		if basis, ok := diffBasis(before); ok {
			if next := normalizeEOL(a.Content); basis != next {
				res.Meta = metaDiffs(Hunks(a.FilePath, basis, next))
			}
		}
	}
	return res, nil
}

// checkWrite applies the fs-policy to a write of the file prev describes
// and returns its current content (cur when it was read with prev; nil
// when it does not exist).
func (t *writeTool) checkWrite(ctx context.Context, r reach, tg target, prev capabilities.FileInfo, cur []byte) ([]byte, error) {
	if prev.Exists && !prev.Regular {
		return nil, fsError(CodeNotRegular, "cannot write "+quote(tg.display)+": not a regular file")
	}
	if seen, ok := t.policy.observed(prev.ID); ok {
		if !prev.Exists {
			return nil, fsError(CodeStaleVersion, "cannot write "+quote(tg.display)+": file no longer exists")
		}
		if prev.Version != seen {
			return nil, fsError(CodeStaleVersion, "cannot write "+quote(tg.display)+": file changed since it was read")
		}
	} else if prev.Exists {
		return nil, fsError(CodeNotObserved, "cannot overwrite existing "+quote(tg.display)+" without reading it first")
	}
	if !prev.Exists {
		return nil, nil
	}
	if cur != nil {
		return cur, nil
	}
	before, _, err := capabilities.ReadFile(ctx, r.files, tg.display)
	if err != nil {
		return nil, fail(ctx, "write", tg, err)
	}
	return before, nil
}

// diffBasis is an overwritten file's old content for the diff: LF-normalized
// text, or false when it held a NUL byte or was not valid UTF-8.
func diffBasis(raw []byte) (string, bool) {
	if bytes.IndexByte(raw, 0) >= 0 {
		return "", false
	}
	d, ok := decode(raw)
	if !ok {
		return "", false
	}
	return normalizeEOL(d.text), true
}
