// Package htmlmd turns a fetched HTML page into markdown: the page's
// article (go-readability) unless raw, converted by html-to-markdown. It
// runs in the program worker (cmd/dsh-acp-worker), so that hostile HTML
// fails there and the agent does not link or initialize the HTML stack.
package htmlmd

import (
	"bytes"
	"net/url"
	"strings"

	"codeberg.org/readeck/go-readability/v2"
	htmltomarkdown "github.com/JohannesKaufmann/html-to-markdown/v2"
)

// Convert extracts the page's article (unless raw) and converts it; a page
// that does not convert comes back as its text.
func Convert(body []byte, u *url.URL, raw bool) (title, md string) {
	src := body
	if !raw {
		if art, err := readability.FromReader(bytes.NewReader(body), u); err == nil && art.Node != nil {
			var h bytes.Buffer
			if err := art.RenderHTML(&h); err == nil && h.Len() > 0 {
				src, title = h.Bytes(), art.Title()
			}
		}
	}
	out, err := htmltomarkdown.ConvertString(strings.ToValidUTF8(string(src), "\uFFFD"))
	if err != nil {
		return title, strings.ToValidUTF8(string(body), "\uFFFD")
	}
	return title, out
}
