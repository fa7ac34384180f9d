package dist

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"encoding/xml"
	"os"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// registrySchema is the ACP Registry's agent schema (testdata/SOURCE.md
// says where it comes from).
//
//go:embed testdata/agent.schema.json
var registrySchema []byte

func compileRegistrySchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(registrySchema))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	const id = "https://cdn.agentclientprotocol.com/registry/v1/latest/agent.schema.json"
	require.NoError(t, c.AddResource(id, doc))
	s, err := c.Compile(id)
	require.NoError(t, err)
	return s
}

func validate(t *testing.T, s *jsonschema.Schema, b []byte) error {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	require.NoError(t, err)
	return s.Validate(v)
}

// fakeArchives stands for a build of targets.
func fakeArchives(version string, targets []Target) []Artifact {
	var as []Artifact
	for _, t := range targets {
		as = append(as, Artifact{Target: t, Name: ArchiveName(version, t)})
	}
	return as
}

// agent.json, as Build writes it, is a valid registry entry: the schema
// (with its uri formats asserted) accepts it, every target's archive is
// under the base URL, and cmd names the executable inside.
func TestManifestIsAValidRegistryEntry(t *testing.T) {
	s := compileRegistrySchema(t)
	// The validator is not a pushover: the registry's own example passes,
	// broken entries fail.
	example, err := os.ReadFile("../../../shared/acp-registry/example-codex-acp.agent.json")
	if err == nil {
		require.NoError(t, validate(t, s, example))
	} else if os.Getenv("DSH_SHARED_REQUIRE") != "" {
		t.Fatalf("../shared/acp-registry: %v", err)
	}
	for _, bad := range []string{
		`{"id":"dsh-acp","name":"x","description":"x","distribution":{"binary":{"linux-x86_64":{"archive":"https://x/a.tar.gz","cmd":"./a"}}}}`,
		`{"id":"dsh-acp","name":"x","version":"0.3","description":"x","distribution":{"binary":{"linux-x86_64":{"archive":"https://x/a.tar.gz","cmd":"./a"}}}}`,
		`{"id":"dsh-acp","name":"x","version":"0.3.0","description":"x","distribution":{"binary":{"linux-amd64":{"archive":"https://x/a.tar.gz","cmd":"./a"}}}}`,
		`{"id":"dsh-acp","name":"x","version":"0.3.0","description":"x","distribution":{"binary":{"linux-x86_64":{"archive":"not a uri","cmd":"./a"}}}}`,
	} {
		require.Error(t, validate(t, s, []byte(bad)), bad)
	}

	const base = "https://github.com/dsh-acp/dsh-acp/releases/download/v0.3.0"
	cfg := Config{Version: "0.3.0", BaseURL: base + "/", Commands: []string{"./cmd/dsh-acp", "./cmd/dsh-acp-worker"}}
	b, err := Manifest(cfg, fakeArchives(cfg.Version, Targets()))
	require.NoError(t, err)
	require.NoError(t, validate(t, s, b), string(b))

	var e struct {
		ID, Name, Version, Description, Repository, License string
		Authors                                             []string
		Distribution                                        struct {
			Binary map[string]struct{ Archive, Cmd string }
		}
	}
	require.NoError(t, json.Unmarshal(b, &e))
	assert.Equal(t, "dsh-acp", e.ID)
	assert.Equal(t, "0.3.0", e.Version)
	assert.Equal(t, "MIT", e.License)
	assert.NotEmpty(t, e.Authors)
	require.Len(t, e.Distribution.Binary, 6)
	assert.Equal(t, base+"/dsh-acp-0.3.0-linux-x86_64.tar.gz", e.Distribution.Binary["linux-x86_64"].Archive)
	assert.Equal(t, "./dsh-acp", e.Distribution.Binary["darwin-aarch64"].Cmd)
	assert.Equal(t, base+"/dsh-acp-0.3.0-windows-aarch64.zip", e.Distribution.Binary["windows-aarch64"].Archive)
	assert.Equal(t, "./dsh-acp.exe", e.Distribution.Binary["windows-x86_64"].Cmd)

	// The key order is the registry's (FORMAT.md).
	var keys []string
	dec := json.NewDecoder(bytes.NewReader(b))
	_, _ = dec.Token()
	for dec.More() {
		k, _ := dec.Token()
		keys = append(keys, k.(string))
		var skip json.RawMessage
		require.NoError(t, dec.Decode(&skip))
	}
	assert.Equal(t, []string{"id", "name", "version", "description", "repository", "authors", "license", "distribution"}, keys)
}

func TestConfigIsChecked(t *testing.T) {
	for _, c := range []Config{
		{Version: "v0.3.0", BaseURL: "https://x/r", Commands: []string{"./cmd/dsh-acp"}, Out: "d"},
		{Version: "0.3", BaseURL: "https://x/r", Commands: []string{"./cmd/dsh-acp"}, Out: "d"},
		{Version: "0.3.0", BaseURL: "x/r", Commands: []string{"./cmd/dsh-acp"}, Out: "d"},
		{Version: "0.3.0", BaseURL: "ftp://x/r", Commands: []string{"./cmd/dsh-acp"}, Out: "d"},
		{Version: "0.3.0", BaseURL: "https://x/r?a=1", Commands: []string{"./cmd/dsh-acp"}, Out: "d"},
		{Version: "0.3.0", BaseURL: "https://x/r"},
	} {
		_, err := Build(t.Context(), c)
		require.Error(t, err, "%+v", c)
	}
	for _, v := range []string{"0.3.0", "0.3.0-dev+0123456789ab", "1.2.3-rc.1", "10.0.0+build.5"} {
		assert.True(t, ValidVersion(v), v)
	}
	for _, v := range []string{"0.3", "v0.3.0", "01.2.3", "0.3.0-", "0.3.0+"} {
		assert.False(t, ValidVersion(v), v)
	}
}

// The icon is a 16×16 SVG (FORMAT.md: preferred size, square).
func TestIconIs16x16SVG(t *testing.T) {
	var svg struct {
		XMLName xml.Name
		Width   string `xml:"width,attr"`
		Height  string `xml:"height,attr"`
		ViewBox string `xml:"viewBox,attr"`
	}
	require.NoError(t, xml.Unmarshal(Icon, &svg))
	assert.Equal(t, "svg", svg.XMLName.Local)
	assert.Equal(t, "http://www.w3.org/2000/svg", svg.XMLName.Space)
	assert.Equal(t, "16", svg.Width)
	assert.Equal(t, "16", svg.Height)
	assert.Equal(t, "0 0 16 16", svg.ViewBox)
}
