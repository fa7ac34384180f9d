package acpschema

import _ "embed"

// The wire spec every frame is validated against is embedded, so a test
// never skips validation for want of ../shared. Both files are byte-for-byte
// copies of ../shared/acp (ACP protocol version 1, from the npm package
// @agentclientprotocol/sdk 2.4.0, schema/v1/; provenance and SHA-256 sums in
// ../shared/acp/README.md); TestEmbeddedSchemaIsShared fails when the
// shared copy moves on and these do not.
var (
	//go:embed schema.json
	stableSchema []byte
	//go:embed schema.unstable.json
	unstableSchema []byte
)

// Stable compiles the stable ACP v1 schema (schema.json).
func Stable() (*Validator, error) { return compile("schema.json", stableSchema) }

// Unstable compiles the ACP v1 schema with every unstable feature
// (schema.unstable.json, a superset of the stable one).
func Unstable() (*Validator, error) { return compile("schema.unstable.json", unstableSchema) }
