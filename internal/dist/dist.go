// Package dist builds the release: for each of the ACP Registry's six
// platform targets an archive holding the executables at its root with
// the license and a short README, a SHA256SUMS file beside them, and the
// registry entry (agent.json, with its 16×16 icon) whose archive URLs
// point under a release base URL.
//
// The build is offline (GOPROXY=off: only the module cache) and
// reproducible: -trimpath, no VCS stamp, an empty build id, CGO_ENABLED=0,
// and archives whose entries are sorted, owned by root and dated by one
// fixed time, so the same tree and toolchain give the same bytes.
package dist

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Target is one platform of the registry.
type Target struct {
	// Name is the registry's identifier (darwin-aarch64).
	Name string
	// GOOS and GOARCH build it.
	GOOS, GOARCH string
}

// Windows reports whether the target's executables end in .exe and its
// archive is a zip.
func (t Target) Windows() bool { return t.GOOS == "windows" }

// Ext is the archive's extension.
func (t Target) Ext() string {
	if t.Windows() {
		return ".zip"
	}
	return ".tar.gz"
}

// Exe is the file name of executable name on the target.
func (t Target) Exe(name string) string {
	if t.Windows() {
		return name + ".exe"
	}
	return name
}

// Targets are the registry's six platforms (FORMAT.md, "Platform
// Targets"), in its order.
func Targets() []Target {
	return []Target{
		{"darwin-aarch64", "darwin", "arm64"},
		{"darwin-x86_64", "darwin", "amd64"},
		{"linux-aarch64", "linux", "arm64"},
		{"linux-x86_64", "linux", "amd64"},
		{"windows-aarch64", "windows", "arm64"},
		{"windows-x86_64", "windows", "amd64"},
	}
}

// LookupTarget returns the target named name.
func LookupTarget(name string) (Target, bool) {
	for _, t := range Targets() {
		if t.Name == name {
			return t, true
		}
	}
	return Target{}, false
}

// HostTarget is the target of the running system, if it is one.
func HostTarget() (Target, bool) {
	for _, t := range Targets() {
		if t.GOOS == runtime.GOOS && t.GOARCH == runtime.GOARCH {
			return t, true
		}
	}
	return Target{}, false
}

// Config is one release build.
type Config struct {
	// Version is the release's semantic version (0.3.0), stamped into
	// every executable (-X main.version) and the registry entry.
	Version string
	// BaseURL is where the archives are published: an archive's URL is
	// BaseURL + "/" + its file name.
	BaseURL string
	// Commands are the packages of the executables shipped ("./cmd/dsh-acp"),
	// the agent's first; each is named after its directory.
	Commands []string
	// Root is the module's root (LICENSE is read from there).
	Root string
	// Out is the output directory; it is emptied of a previous release's
	// files first.
	Out string
	// Targets to build; nil means all six (agent.json then lists only
	// those built).
	Targets []Target
	// ModTime dates every archive entry (SOURCE_DATE_EPOCH); zero means
	// DefaultModTime.
	ModTime time.Time
	// Go is the go command ("go" when empty).
	Go string
	// Log receives progress lines; nil discards them.
	Log io.Writer
}

// DefaultModTime is the entries' date when none is given.
var DefaultModTime = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Artifact is one file written.
type Artifact struct {
	// Target is the archive's platform (zero for agent.json and the
	// icon).
	Target Target
	// Path is the file; Name its base name.
	Path, Name string
	// Size is its length in bytes; SHA256 its digest, hex.
	Size   int64
	SHA256 string
}

// Result is what Build wrote.
type Result struct {
	Archives []Artifact
	// Sums is SHA256SUMS; Manifest is agent.json; Icon the icon beside it.
	Sums, Manifest, Icon string
}

// semver is a semantic version (semver.org's grammar, without a "v").
var semver = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)

// ValidVersion reports whether v is a semantic version.
func ValidVersion(v string) bool { return semver.MatchString(v) }

// ArchiveName is the archive of target for version.
func ArchiveName(version string, t Target) string {
	return "dsh-acp-" + version + "-" + t.Name + t.Ext()
}

// Build builds cfg's release into cfg.Out.
func Build(ctx context.Context, cfg Config) (Result, error) {
	if err := cfg.check(); err != nil {
		return Result{}, err
	}
	targets := cfg.Targets
	if targets == nil {
		targets = Targets()
	}
	license, err := os.ReadFile(filepath.Join(cfg.Root, "LICENSE"))
	if err != nil {
		return Result{}, fmt.Errorf("dist: the archives ship the license: %w", err)
	}
	if err := cleanOut(cfg.Out); err != nil {
		return Result{}, err
	}
	modTime := cfg.ModTime
	if modTime.IsZero() {
		modTime = DefaultModTime
	}
	work, err := os.MkdirTemp(cfg.Out, ".build-")
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(work)

	var res Result
	for _, t := range targets {
		files := []file{{name: "LICENSE", data: license, mode: 0o644}, {name: "README.md", data: readme(cfg, t), mode: 0o644}}
		for _, pkg := range cfg.Commands {
			exe := t.Exe(commandName(pkg))
			bin := filepath.Join(work, t.Name, exe)
			cfg.logf("build %s %s", t.Name, pkg)
			if err := cfg.goBuild(ctx, t, pkg, bin); err != nil {
				return Result{}, err
			}
			data, err := os.ReadFile(bin)
			if err != nil {
				return Result{}, err
			}
			files = append(files, file{name: exe, data: data, mode: 0o755})
		}
		slices.SortFunc(files, func(a, b file) int { return strings.Compare(a.name, b.name) })
		var buf bytes.Buffer
		if t.Windows() {
			err = writeZip(&buf, files, modTime)
		} else {
			err = writeTarGz(&buf, files, modTime)
		}
		if err != nil {
			return Result{}, fmt.Errorf("dist: pack %s: %w", t.Name, err)
		}
		a, err := writeArtifact(cfg.Out, ArchiveName(cfg.Version, t), buf.Bytes())
		if err != nil {
			return Result{}, err
		}
		a.Target = t
		cfg.logf("wrote %s (%d bytes)", a.Name, a.Size)
		res.Archives = append(res.Archives, a)
	}

	var sums strings.Builder
	for _, a := range res.Archives { // target order is name order
		fmt.Fprintf(&sums, "%s  %s\n", a.SHA256, a.Name)
	}
	s, err := writeArtifact(cfg.Out, "SHA256SUMS", []byte(sums.String()))
	if err != nil {
		return Result{}, err
	}
	res.Sums = s.Path
	manifest, err := Manifest(cfg, res.Archives)
	if err != nil {
		return Result{}, err
	}
	m, err := writeArtifact(cfg.Out, "agent.json", manifest)
	if err != nil {
		return Result{}, err
	}
	res.Manifest = m.Path
	ic, err := writeArtifact(cfg.Out, "icon.svg", Icon)
	if err != nil {
		return Result{}, err
	}
	res.Icon = ic.Path
	return res, nil
}

func (cfg Config) check() error {
	var errs []error
	if !ValidVersion(cfg.Version) {
		errs = append(errs, fmt.Errorf("version %q is not a semantic version (like 0.3.0)", cfg.Version))
	}
	if err := checkBaseURL(cfg.BaseURL); err != nil {
		errs = append(errs, err)
	}
	if len(cfg.Commands) == 0 {
		errs = append(errs, errors.New("no command to ship"))
	}
	if cfg.Out == "" {
		errs = append(errs, errors.New("no output directory"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("dist: %w", err)
	}
	return nil
}

// commandName is the executable's name: its package's directory.
func commandName(pkg string) string { return filepath.Base(filepath.FromSlash(pkg)) }

// goBuild builds pkg for t into out, reproducibly and offline.
func (cfg Config) goBuild(ctx context.Context, t Target, pkg, out string) error {
	goTool := cfg.Go
	if goTool == "" {
		goTool = "go"
	}
	cmd := exec.CommandContext(ctx, goTool, "build", "-trimpath", "-buildvcs=false", "-mod=readonly",
		"-ldflags", "-s -w -buildid= -X main.version="+cfg.Version, "-o", out, pkg)
	cmd.Dir = cfg.Root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+t.GOOS, "GOARCH="+t.GOARCH, "GOPROXY=off", "GOFLAGS=", "GOARM64=", "GOAMD64=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Stdout = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("dist: build %s for %s: %w\n%s", pkg, t.Name, err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// cleanOut makes out hold no release files of an earlier build (other
// files are left alone).
func cleanOut(out string) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		return err
	}
	for _, e := range entries {
		n := e.Name()
		if strings.HasPrefix(n, "dsh-acp-") || n == "SHA256SUMS" || n == "agent.json" || n == "icon.svg" || strings.HasPrefix(n, ".build-") {
			if err := os.RemoveAll(filepath.Join(out, n)); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeArtifact writes data to dir/name and describes it.
func writeArtifact(dir, name string, data []byte) (Artifact, error) {
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return Artifact{}, err
	}
	sum := sha256.Sum256(data)
	return Artifact{Path: path, Name: name, Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:])}, nil
}

func (cfg Config) logf(format string, args ...any) {
	if cfg.Log != nil {
		fmt.Fprintf(cfg.Log, "dist: "+format+"\n", args...)
	}
}

// Icon is the agent's 16×16 SVG icon (monochrome, currentColor, so it
// follows the client's theme).
//
//go:embed icon.svg
var Icon []byte

//go:embed README.tmpl
var readmeTemplate string

// readme is the archive's short README for t.
func readme(cfg Config, t Target) []byte {
	exe := t.Exe(commandName(cfg.Commands[0]))
	r := strings.NewReplacer("{{version}}", cfg.Version, "{{target}}", t.Name, "{{exe}}", exe)
	return []byte(r.Replace(readmeTemplate))
}
