package fs

import (
	"bytes"
	"context"
	"errors"
	iofs "io/fs"
	"os"

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
	tg, err := resolve(cwdOf(call), a.FilePath, t.opts.Confine)
	if err != nil {
		return capabilities.Result{}, err
	}
	if err := aborted(ctx, "write"); err != nil {
		return capabilities.Result{}, err
	}
	t.policy.mutate.Lock()
	defer t.policy.mutate.Unlock()

	prev, err := os.Stat(tg.key)
	exists := err == nil
	if err != nil && !errors.Is(err, iofs.ErrNotExist) {
		return capabilities.Result{}, ioError("write", tg.display, err)
	}
	if exists && !prev.Mode().IsRegular() {
		return capabilities.Result{}, fsError(CodeNotRegular, "cannot write "+quote(tg.display)+": not a regular file")
	}
	if seen, ok := t.policy.observed(tg.key); ok {
		if !exists {
			return capabilities.Result{}, fsError(CodeStaleVersion, "cannot write "+quote(tg.display)+": file no longer exists")
		}
		if versionOf(prev) != seen {
			return capabilities.Result{}, fsError(CodeStaleVersion, "cannot write "+quote(tg.display)+": file changed since it was read")
		}
	} else if exists {
		return capabilities.Result{}, fsError(CodeNotObserved, "cannot overwrite existing "+quote(tg.display)+" without reading it first")
	}

	var before []byte
	if exists {
		if before, err = os.ReadFile(tg.key); err != nil {
			return capabilities.Result{}, ioError("write", tg.display, err)
		}
	} else {
		prev = nil
	}
	after := []byte(a.Content)
	if err := writeAtomic(ctx, tg.key, after, prev, tg.display); err != nil {
		return capabilities.Result{}, err
	}
	if err := t.record(tg); err != nil {
		return capabilities.Result{}, err
	}
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

// record stats the file just written and records its version.
func (f *files) record(tg target) error {
	fi, err := os.Stat(tg.key)
	if err != nil {
		return ioError("stat", tg.display, err)
	}
	f.policy.observe(tg.key, versionOf(fi))
	return nil
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
