package bash

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSecretNamesNeverReachCommands(t *testing.T) {
	secrets := []string{
		"DEEPSEEK_API_KEY", "DEEPSEEK_BASE_URL", "OPENAI_API_KEY", "OPENAI_ORG", "ANTHROPIC_AUTH", "MY_API_KEY",
		"CI_JOB_TOKEN", "NPM_TOKEN", "GITHUB_TOKEN", "GH_ENTERPRISE_HOST", "APP_SECRET", "PGPASSWORD",
		"DB_PASSWORD_FILE", "MYSQL_PWD_PASSWD", "GOOGLE_APPLICATION_CREDENTIALS", "REGISTRY_CREDENTIALS",
		"AWS_ACCESS_KEY_ID", "AWS_PROFILE", "AZURE_CLIENT_ID", "aws_session_token", "KEYBOARD",
	}
	kept := []string{"PATH", "HOME", "LANG", "GOPATH", "SSH_AUTH_SOCK", "EDITOR", "GHOST"}
	var environ []string
	for _, n := range append(append([]string(nil), secrets...), kept...) {
		environ = append(environ, n+"=v-"+n)
	}
	got := names(CommandEnv(environ))
	for _, n := range secrets {
		require.NotContains(t, got, n)
	}
	for _, n := range kept {
		require.Contains(t, got, n)
	}
}

func TestEnvPassAndStrip(t *testing.T) {
	environ := []string{"PATH=" + os.Getenv("PATH"), "NPM_TOKEN=npm", "AWS_REGION=eu", "INTERNAL_URL=u", "INTERNAL_OK=ok", "PLAIN=p"}
	p := EnvPolicy{Pass: []string{"aws_region", "NPM_*"}, Strip: []string{"INTERNAL_*", "NPM_TOKEN"}}
	require.NoError(t, p.Check())
	got := names(p.Filter(environ))
	require.Contains(t, got, "AWS_REGION", "passed although it looks like a secret")
	require.Contains(t, got, "NPM_TOKEN", "the allowlist wins over both rules")
	require.NotContains(t, got, "INTERNAL_URL")
	require.NotContains(t, got, "INTERNAL_OK")
	require.Contains(t, got, "PLAIN")
	require.Error(t, EnvPolicy{Strip: []string{"[unclosed"}}.Check())

	// Through the tool: what the command really sees.
	f := newFixture(t, func(o *Options) {
		o.Environ = func() []string { return environ }
		o.EnvPass, o.EnvStrip = p.Pass, p.Strip
	})
	out := f.bashOK(t, `echo "$AWS_REGION $NPM_TOKEN [$INTERNAL_URL] $PLAIN"`, nil)
	require.Equal(t, "eu npm [] p\n", out)
}

func names(env []string) []string {
	out := make([]string, len(env))
	for i, kv := range env {
		out[i], _, _ = strings.Cut(kv, "=")
	}
	return out
}
