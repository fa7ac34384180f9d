package fs

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/dsh-acp/dsh-acp/capabilities"
)

// editTool is `edit` (tools contract § 6).
type editTool struct{ *files }

// editArgs are edit's arguments.
type editArgs struct {
	FilePath   string `json:"file_path"`
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll bool   `json:"replace_all"`
}

// Name implements capabilities.Tool.
func (*editTool) Name() string { return "edit" }

// Traits implements capabilities.Tool.
func (*editTool) Traits() capabilities.Traits { return capabilities.Traits{Writes: true} }

// Description implements capabilities.Tool.
func (*editTool) Description() string {
	return "Replace an exact piece of text in a file with new text. The file must have been read in this session and be unchanged since. " +
		"old_string must match the file literally (without the line-number prefixes read shows) and occur exactly once, " +
		"unless replace_all is true, in which case every occurrence is replaced. Line endings are handled for you: CRLF files stay CRLF."
}

// Schema implements capabilities.Tool.
func (*editTool) Schema() *capabilities.Schema {
	return capabilities.Object(
		capabilities.Req("file_path", capabilities.String("Path of the file to change, absolute or relative to the working directory.")),
		capabilities.Req("old_string", capabilities.String("The exact text to find; include enough surrounding lines to make it unique.")),
		capabilities.Req("new_string", capabilities.String("The text to put in its place; must differ from old_string.")),
		capabilities.Opt("replace_all", capabilities.Boolean("Replace every occurrence instead of requiring exactly one. Defaults to false.")),
	)
}

// PromptSection implements capabilities.Sectioner.
func (*editTool) PromptSection() capabilities.Section {
	return capabilities.Section{Name: "tool:edit", Order: 102, Text: "# Editing files\n" +
		"Prefer `edit` for changing existing files; do not patch files with sed, awk or scripts. " +
		"Read the file first, copy old_string exactly as it appears (keep the indentation, drop the line-number prefix), " +
		"and make it long enough to match only once or use replace_all for a deliberate rename."}
}

// Run implements capabilities.Tool.
func (t *editTool) Run(ctx context.Context, call *capabilities.Call) (capabilities.Result, error) {
	var a editArgs
	if err := decodeArgs(call.Args, &a); err != nil {
		return capabilities.Result{}, err
	}
	if err := checkFilePath(a.FilePath); err != nil {
		return capabilities.Result{}, err
	}
	if a.OldString == "" {
		return capabilities.Result{}, errors.New(msgOldString)
	}
	if a.OldString == a.NewString {
		return capabilities.Result{}, errors.New(msgMustDiffer)
	}
	tg, err := targetOf(call, a.FilePath)
	if err != nil {
		return capabilities.Result{}, err
	}
	t.policy.mutate.Lock()
	defer t.policy.mutate.Unlock()

	var prev capabilities.FileInfo
	var cur []byte
	r, err := t.probe(ctx, call, OpEdit, tg, func(files capabilities.Files) (err error) {
		prev, cur, err = current(ctx, files, tg.display)
		return err
	})
	if err != nil {
		return capabilities.Result{}, fail(ctx, "edit", tg, err)
	}
	ed, err := t.prepare(ctx, r, tg, prev, cur, a)
	if err != nil {
		return capabilities.Result{}, err
	}
	if asked, err := t.approve(ctx, call, OpEdit, tg, r); err != nil {
		return capabilities.Result{}, err
	} else if asked {
		// The question took a while: edit the file as it is now.
		if prev, cur, err = current(ctx, r.files, tg.display); err != nil {
			return capabilities.Result{}, fail(ctx, "edit", tg, err)
		}
		if ed, err = t.prepare(ctx, r, tg, prev, cur, a); err != nil {
			return capabilities.Result{}, err
		}
	}
	if err := r.files.WriteFile(ctx, tg.display, ed.after); err != nil {
		return capabilities.Result{}, fail(ctx, "edit", tg, err)
	}
	if err := t.record(ctx, r, tg); err != nil {
		return capabilities.Result{}, err
	}
	t.notify(ctx, Change{CallID: call.CallID, Path: tg.display, Existed: true, Before: ed.raw, After: ed.after})

	msg := "The file " + tg.display + " has been updated successfully."
	if a.ReplaceAll {
		msg = "The file " + tg.display + " has been updated. All occurrences were successfully replaced."
	}
	res := capabilities.TextResult(msg)
	res.Meta = metaDiffs(Hunks(a.FilePath, ed.content, ed.updated))
	return res, nil
}

// edited is an edit computed but not yet written.
type edited struct {
	raw, after       []byte // the file's bytes before and after
	content, updated string // LF-normalized text before and after
}

// prepare applies the fs-policy to an edit of the file prev describes,
// reads it (unless cur holds its content, read with prev) and computes the
// replacement.
func (t *editTool) prepare(ctx context.Context, r reach, tg target, prev capabilities.FileInfo, cur []byte, a editArgs) (edited, error) {
	seen, ok := t.policy.observed(prev.ID)
	if !ok {
		return edited{}, fsError(CodeNotObserved, "edit requires reading "+quote(tg.display)+" first")
	}
	switch {
	case !prev.Exists:
		return edited{}, fsError(CodeStaleVersion, "cannot edit "+quote(tg.display)+": file changed since it was read")
	case !prev.Regular:
		return edited{}, fsError(CodeNotRegular, "cannot edit "+quote(tg.display)+": not a regular file")
	case prev.Version != seen:
		return edited{}, fsError(CodeStaleVersion, "cannot edit "+quote(tg.display)+": file changed since it was read")
	}
	if err := aborted(ctx, "edit"); err != nil {
		return edited{}, err
	}
	raw := cur
	if raw == nil {
		var now capabilities.FileInfo
		var err error
		if raw, now, err = capabilities.ReadFile(ctx, r.files, tg.display); err != nil {
			return edited{}, fail(ctx, "edit", tg, err)
		}
		if now.Version != seen {
			return edited{}, fsError(CodeStaleVersion, "cannot edit "+quote(tg.display)+": file changed since it was read")
		}
	}
	if bytes.IndexByte(raw, 0) >= 0 {
		return edited{}, fsError(CodeNotText, "cannot edit "+quote(tg.display)+": binary file")
	}
	text, ok := decode(raw)
	if !ok {
		return edited{}, fsError(CodeNotText, "cannot edit "+quote(tg.display)+": invalid UTF-8 text")
	}
	content := normalizeEOL(text.text)
	updated, err := replace(content, normalizeEOL(a.OldString), normalizeEOL(a.NewString), a.ReplaceAll, tg.display)
	if err != nil {
		return edited{}, err
	}
	out := updated
	if prefersCRLF(text.text) {
		out = toCRLF(updated)
	}
	after := make([]byte, 0, len(bom)+len(out))
	if text.bom {
		after = append(after, bom...)
	}
	after = append(after, out...)
	return edited{raw: raw, after: after, content: content, updated: updated}, nil
}

// replace applies a literal replacement to LF-normalized content: the
// single occurrence of old, or with all every non-overlapping one.
func replace(content, old, new string, all bool, display string) (string, error) {
	n := strings.Count(content, old)
	switch {
	case n == 0:
		return "", fsError(CodeEditNotFound, "old_string was not found in "+quote(display))
	case n > 1 && !all:
		return "", fsError(CodeAmbiguousEdit, "old_string matched "+strconv.Itoa(n)+" times in "+quote(display)+
			"; provide a more specific old_string or set replace_all to true")
	case all:
		return strings.ReplaceAll(content, old, new), nil
	default:
		return strings.Replace(content, old, new, 1), nil
	}
}
