package bash

import (
	"fmt"
	"path"
	"strings"
)

// secretPatterns are the names (case-insensitive globs, path.Match syntax)
// of environment variables that never reach a command unless an
// [EnvPolicy] passes them: anything holding a key, secret, token, password
// or credential, and the variables of the cloud and model providers whose
// values are credentials or point at them.
var secretPatterns = [...]string{
	"*KEY*", "*SECRET*", "*TOKEN*", "*PASSWORD*", "*PASSWD*", "*CREDENTIAL*",
	"AWS_*", "AZURE_*", "GOOGLE_APPLICATION_CREDENTIALS", "GH_*", "GITHUB_TOKEN", "NPM_TOKEN",
	"DEEPSEEK_*", "OPENAI_*", "ANTHROPIC_*",
}

// forcedEnv returns the variables appended to every command's environment,
// in this order.
func forcedEnv() []string {
	return []string{"NO_COLOR=1", "TERM=dumb", "PAGER=cat", "GIT_PAGER=cat"}
}

// EnvPolicy decides which of the agent's environment variables reach a
// command. Names are matched case-insensitively against glob patterns
// (path.Match syntax: `*`, `?`, `[…]`).
type EnvPolicy struct {
	// Pass are patterns of names passed even when they look like secrets;
	// they win over every stripping rule.
	Pass []string
	// Strip are patterns of further names that are never passed.
	Strip []string
}

// Check reports the first malformed pattern.
func (p EnvPolicy) Check() error {
	for _, pat := range append(append([]string(nil), p.Pass...), p.Strip...) {
		if _, err := path.Match(pat, ""); err != nil {
			return fmt.Errorf("environment pattern %q: %w", pat, err)
		}
	}
	return nil
}

// Filter derives a command's environment from the agent's: a variable
// matching Pass is kept; otherwise one that looks like a secret
// (secretPatterns, which include every name matching /KEY|SECRET|TOKEN/i)
// or matches Strip is dropped. NO_COLOR=1, TERM=dumb, PAGER=cat and
// GIT_PAGER=cat are set last, replacing any inherited values.
func (p EnvPolicy) Filter(environ []string) []string {
	forced := forcedEnv()
	out := make([]string, 0, len(environ)+len(forced))
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if isForced(name) {
			continue
		}
		upper := strings.ToUpper(name)
		if !matchAny(p.Pass, upper) && (matchAny(secretPatterns[:], upper) || matchAny(p.Strip, upper)) {
			continue
		}
		out = append(out, kv)
	}
	return append(out, forced...)
}

// CommandEnv is the default [EnvPolicy]'s Filter: secret-looking names are
// dropped and the forced variables set.
func CommandEnv(environ []string) []string { return EnvPolicy{}.Filter(environ) }

// matchAny reports whether the upper-cased name matches one of patterns.
func matchAny(patterns []string, upper string) bool {
	for _, pat := range patterns {
		if ok, _ := path.Match(strings.ToUpper(pat), upper); ok {
			return true
		}
	}
	return false
}

func isForced(name string) bool {
	for _, kv := range forcedEnv() {
		if n, _, _ := strings.Cut(kv, "="); n == name {
			return true
		}
	}
	return false
}
