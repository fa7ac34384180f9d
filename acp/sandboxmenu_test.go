package acp

import (
	"strings"
	"testing"
)

// TestSandboxMenuSaysWhereCommandsFailClosed checks the menu per system:
// unchanged where a backend exists, a note on both confined modes (and not
// on Full access) on Windows.
func TestSandboxMenuSaysWhereCommandsFailClosed(t *testing.T) {
	for _, goos := range []string{"linux", "darwin"} {
		for i, c := range sandboxMenu(goos) {
			if c != sandboxChoices[i] {
				t.Errorf("%s: %q changed to %q", goos, sandboxChoices[i].description, c.description)
			}
		}
	}
	for _, c := range sandboxMenu("windows") {
		has := strings.HasSuffix(c.description, noSandboxNote)
		if want := c.value != "danger-full-access"; has != want {
			t.Errorf("windows %s: note present = %v, want %v", c.value, has, want)
		}
	}
	if strings.HasSuffix(sandboxChoices[0].description, noSandboxNote) {
		t.Fatal("sandboxMenu must not modify the shared choices")
	}
}
