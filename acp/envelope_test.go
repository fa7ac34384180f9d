package acp

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestScanEnvelope(t *testing.T) {
	for _, c := range []struct {
		in                      string
		id, method, params, cut string
		complete, ok            bool
	}{
		{in: `{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":[1,"]}"]}}`, id: "1", method: `"m"`, params: `{"a":[1,"]}"]}`, complete: true, ok: true},
		{in: ` { "id" : "a\"b" , "method" : "x" } `, id: `"a\"b"`, method: `"x"`, complete: true, ok: true},
		{in: `{"id":1,"id":2}`, id: "2", complete: true, ok: true},
		{in: `{"\u0069d":3}`, id: "3", complete: true, ok: true},
		{in: `{"params":"\\\\","id":4}`, id: "4", params: `"\\\\"`, complete: true, ok: true},
		{in: `{}`, complete: true, ok: true},
		{in: `{"id":5,"method":"session/prompt","params":{"prompt":[{"text":"aaaa`, id: "5", method: `"session/prompt"`, cut: "params", ok: true},
		{in: `{"jsonrpc":"2.0","id":6,"resu`, id: "6", ok: true},
		{in: `{"id":-12e3`, cut: "id", ok: true},
		{in: `[1]`},
		{in: `x`},
		{in: `{"a" 1}`},
		{in: `{"a":]}`},
		{in: ``},
	} {
		env, complete, ok := scanEnvelope([]byte(c.in))
		assert.Equal(t, c.ok, ok, c.in)
		assert.Equal(t, c.complete, complete, c.in)
		assert.Equal(t, c.id, string(env.id), c.in)
		assert.Equal(t, c.method, string(env.method), c.in)
		assert.Equal(t, c.params, string(env.params), c.in)
		assert.Equal(t, c.cut, env.cut, c.in)
	}
}

func TestValidID(t *testing.T) {
	for id, want := range map[string]bool{
		`1`: true, `-1`: true, `0`: true, `-0`: true, `1e3`: true, `1E+3`: true, `2.50e1`: true, `1.0`: true,
		`123456789012345678901234567890`: true, `1e999999999999999999`: true, `0e-5`: true, `0.000`: true,
		`"x"`: true, `""`: true, `null`: true,
		`1.5`: false, `1e-3`: false, `12.34e1`: false, `1e-999999999999999999`: false, `true`: false, `{}`: false, `[]`: false,
	} {
		assert.Equal(t, want, validID([]byte(id)), id)
	}
}

func TestFormatSize(t *testing.T) {
	assert.Equal(t, "16 MiB", formatSize(16<<20))
	assert.Equal(t, "1.5 MiB", formatSize(3<<19))
	assert.Equal(t, "64 KiB", formatSize(64<<10))
	assert.Equal(t, "1.5 KiB", formatSize(1536))
	assert.Equal(t, "200 bytes", formatSize(200))
}
