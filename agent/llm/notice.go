package llm

import "context"

// noticeKey carries a Noticer in a context.
type noticeKey struct{}

// Noticer receives short notices a provider has for the user while a call
// runs ("rate limited, retrying in 4s"); they are not part of the model's
// output.
type Noticer func(text string)

// WithNoticer returns ctx carrying n, for the provider of a call made with
// it.
func WithNoticer(ctx context.Context, n Noticer) context.Context {
	return context.WithValue(ctx, noticeKey{}, n)
}

// Notice hands text to the Noticer ctx carries, if any.
func Notice(ctx context.Context, text string) {
	if n, ok := ctx.Value(noticeKey{}).(Noticer); ok && n != nil {
		n(text)
	}
}
