package acp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/dsh-acp/dsh-acp/internal/jsonx"
	"github.com/dsh-acp/dsh-acp/session"
)

// MaxContextFileBytes bounds the content one attached file or resource
// adds to a prompt; the rest is left out with a note naming the path.
const MaxContextFileBytes = 256 << 10

// withContext rewrites a prompt's context blocks (Options.PromptContext)
// as text blocks for the model: an embedded resource's text and a linked
// local file's content, each bounded and named by its path. Images and
// audio are refused with a message the user can act on.
func withContext(blocks []ContentBlock, cwd string, images bool) ([]ContentBlock, error) {
	out := make([]ContentBlock, 0, len(blocks))
	for _, b := range blocks {
		switch b.Type {
		case "text":
			out = append(out, b)
		case "resource":
			if b.Resource == nil {
				return nil, invalidParams("a resource block has no resource")
			}
			out = append(out, ContentBlock{Type: "text", Text: embedded(*b.Resource)})
		case "resource_link":
			out = append(out, ContentBlock{Type: "text", Text: linked(b, cwd)})
		case "image":
			if !images {
				return nil, invalidParams("the model of this session does not take image input; describe it in text, or attach a file it can read instead")
			}
			if b.Data == "" {
				return nil, invalidParams("an image block has no data")
			}
			out = append(out, ContentBlock{Type: "image", MimeType: b.MimeType, Data: b.Data})
		case "audio":
			return nil, invalidParams("the model of this session does not take %s input; describe it in text, or attach a file it can read instead", b.Type)
		default:
			return nil, invalidParams("prompt content of type %q is not supported", b.Type)
		}
	}
	return out, nil
}

// splitImages separates a prompt's image blocks (as logged blocks) from
// the rest.
func splitImages(blocks []ContentBlock) ([]ContentBlock, []session.Block) {
	var rest []ContentBlock
	var images []session.Block
	for _, b := range blocks {
		if b.Type != "image" {
			rest = append(rest, b)
			continue
		}
		images = append(images, session.Block{Type: "image", Raw: jsonx.MustMarshal(struct {
			Type     string `json:"type"`
			MimeType string `json:"mimeType"`
			Data     string `json:"data"`
		}{"image", b.MimeType, b.Data})})
	}
	return rest, images
}

// imagesAccepted reports whether the session's current model takes
// images.
func (s *Server) imagesAccepted(ctx context.Context, ls *binding) bool {
	if !s.opts.Images {
		return false
	}
	model, ok := ls.s.Knob(optionModel)
	if !ok || s.opts.Models == nil {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, modelListWait)
	defer cancel()
	for _, m := range s.models(ctx, model) {
		if m.ID == model {
			return m.Images
		}
	}
	return false
}

// embedded is an embedded resource as context text.
func embedded(r EmbeddedResource) string {
	name := resourcePath(r.URI)
	if r.Text == "" && r.Blob != "" {
		return "\n[attached " + name + ": binary content (" + nonEmpty(r.MimeType, "unknown type") + ") not included]\n"
	}
	text, cut := bound(r.Text)
	return contextText(name, text, cut)
}

// linked is a resource_link as context text: a local file's content,
// else a note naming what could not be read.
func linked(b ContentBlock, cwd string) string {
	name := nonEmpty(b.Name, b.URI)
	p, ok := localPath(b.URI, cwd)
	if !ok {
		return "\n[linked: " + name + " (" + b.URI + "), not a local file]\n"
	}
	text, cut, err := readBounded(p)
	if err != nil {
		return "\n[linked: " + p + ", not readable: " + err.Error() + "]\n"
	}
	return contextText(p, text, cut)
}

// contextText frames a file's content for the model.
func contextText(name, text string, cut bool) string {
	var b strings.Builder
	b.WriteString("\n<file path=\"" + name + "\">\n")
	b.WriteString(text)
	if !strings.HasSuffix(text, "\n") {
		b.WriteByte('\n')
	}
	if cut {
		fmt.Fprintf(&b, "[… cut at %d KiB; read %s for the rest]\n", MaxContextFileBytes>>10, name)
	}
	b.WriteString("</file>\n")
	return b.String()
}

// localPath is the file a URI names: a file:// URI, or a path (relative
// ones against cwd).
func localPath(uri, cwd string) (string, bool) {
	if u, err := url.Parse(uri); err == nil && u.Scheme != "" {
		if u.Scheme != "file" || (u.Host != "" && u.Host != "localhost") {
			return "", false
		}
		return filepath.Clean(u.Path), u.Path != ""
	}
	if uri == "" {
		return "", false
	}
	if !filepath.IsAbs(uri) {
		uri = filepath.Join(cwd, uri)
	}
	return filepath.Clean(uri), true
}

// resourcePath is the path an embedded resource's URI names, else the URI.
func resourcePath(uri string) string {
	if u, err := url.Parse(uri); err == nil && u.Scheme == "file" && u.Path != "" {
		return u.Path
	}
	return uri
}

// readBounded reads up to MaxContextFileBytes of a regular text file.
func readBounded(p string) (string, bool, error) {
	f, err := os.Open(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", false, errors.New("no such file")
		}
		return "", false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", false, err
	}
	if fi.IsDir() {
		return "", false, errors.New("a directory (ask the agent to look into it)")
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxContextFileBytes+1))
	if err != nil {
		return "", false, err
	}
	text, cut := bound(string(data))
	if !utf8.ValidString(text) {
		return "", false, errors.New("not a text file")
	}
	return text, cut || fi.Size() > MaxContextFileBytes, nil
}

// bound cuts text to MaxContextFileBytes on a rune boundary.
func bound(text string) (string, bool) {
	if len(text) <= MaxContextFileBytes {
		return text, false
	}
	cut := MaxContextFileBytes
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut], true
}

func nonEmpty(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}
