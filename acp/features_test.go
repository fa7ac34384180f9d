package acp_test

import (
	"reflect"
	"testing"

	"github.com/dsh-acp/dsh-acp/acp"
)

// TestFeatureSets: the default set turns every feature on and the
// upstream set none, so a feature added to Features is on by default
// without another edit, and upstream's wire is untouched by it.
func TestFeatureSets(t *testing.T) {
	def, up := reflect.ValueOf(acp.DefaultFeatures()), reflect.ValueOf(acp.UpstreamExact())
	for i := range def.NumField() {
		name := def.Type().Field(i).Name
		if def.Field(i).Kind() != reflect.Bool {
			t.Fatalf("Features.%s is not an on/off switch; settings belong in Options", name)
		}
		if !def.Field(i).Bool() {
			t.Errorf("DefaultFeatures leaves %s off", name)
		}
		if up.Field(i).Bool() {
			t.Errorf("UpstreamExact turns %s on", name)
		}
	}
}
