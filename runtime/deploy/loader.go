package deploy

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/internal/docfile"
	"github.com/corral-rt/corral/runtime/resource"
)

// DefaultMaxBytes caps the size of a referenced file or embedded entry:
// a graph, a script, a tool source, settings. It is the size of the
// largest graph document graph.Parse accepts.
const DefaultMaxBytes = 1 << 20

// DefaultMaxModuleBytes caps the size of a referenced WebAssembly module
// (a resource.Source with Module set): the wasm runtime's own default
// max_module_bytes. Modules are larger than documents: a Go guest is a few
// megabytes (examples/mixed's is 3.4 MB). The wasm runtime checks a module
// against its module bounds before it compiles it; this cap bounds what is
// read.
const DefaultMaxModuleBytes = 64 << 20

// LoaderConfig configures NewLoader. The zero value reads files relative to
// the working directory, has no embedded file system, caps content at
// DefaultMaxBytes and modules at DefaultMaxModuleBytes, reads the process
// environment and the user's home directory.
type LoaderConfig struct {
	// BaseDir is the directory that file references are relative to and
	// that ${base} expands to; "" is the working directory.
	BaseDir string
	// Embed serves {embed: name} references; nil refuses them.
	Embed fs.FS
	// MaxBytes caps the size of loaded content; <= 0 means DefaultMaxBytes.
	MaxBytes int64
	// MaxModuleBytes caps the size of a loaded WebAssembly module; <= 0
	// means DefaultMaxModuleBytes, or MaxBytes when that is larger.
	MaxModuleBytes int64
	// LookupEnv serves ${env:NAME}; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Home is what ~ and ${home} expand to; "" means os.UserHomeDir.
	Home string
}

type loader struct {
	cfg  LoaderConfig
	base string
}

var _ resource.Loader = (*loader)(nil)

// NewLoader returns the loader that deploy uses for settings references
// and that factories receive in resource.Input.
//
// Load reads {file: path} relative to BaseDir: an absolute path is a
// Validation error, a path that leaves BaseDir lexically or through a
// symbolic link is Forbidden, a missing file is NotFound, and a file that
// is not regular (a directory, a named pipe, a device, a socket, also
// through a symbolic link) or holds more than MaxBytes (MaxModuleBytes for
// a module) is a Validation error; the open never blocks and no more than
// the cap is read (package internal/docfile). {embed: name} reads Embed
// under the same caps.
//
// Expand replaces ${env:NAME}, ${base}, ${base:rel}, ${home}, ${home:rel},
// and a leading ~ or ~/ in a string. "$${" stands for a literal "${". An
// unset variable, an unterminated or empty ${…} and an unknown kind are
// Validation errors. Expanded text is not expanded again.
func NewLoader(cfg LoaderConfig) resource.Loader {
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.MaxModuleBytes <= 0 {
		cfg.MaxModuleBytes = max(DefaultMaxModuleBytes, cfg.MaxBytes)
	}
	if cfg.LookupEnv == nil {
		cfg.LookupEnv = os.LookupEnv
	}
	base := cfg.BaseDir
	if base == "" {
		base = "."
	}
	if abs, err := filepath.Abs(base); err == nil {
		base = abs
	}
	return &loader{cfg: cfg, base: base}
}

// Load returns the content src refers to.
func (l *loader) Load(ctx context.Context, src resource.Source) ([]byte, error) {
	op := "load " + sourceLabel(src)
	if err := ctx.Err(); err != nil {
		return nil, fault.FromContext(err, op)
	}
	switch {
	case src.File != "" && src.Embed != "":
		return nil, fault.New(fault.Validation, op, "a reference names either a file or an embedded entry, not both")
	case src.File != "":
		return l.loadFile(src.File, op, l.limit(src))
	case src.Embed != "":
		return l.loadEmbed(src.Embed, op, l.limit(src))
	}
	return nil, fault.New(fault.Validation, op, "the reference is empty")
}

// sourceLabel names a reference in messages: file "x.yaml", embed "x".
func sourceLabel(src resource.Source) string {
	if src.File != "" {
		return "file " + strconv.Quote(src.File)
	}
	return "embed " + strconv.Quote(src.Embed)
}

// limit returns the cap for src.
func (l *loader) limit(src resource.Source) int64 {
	if src.Module {
		return l.cfg.MaxModuleBytes
	}
	return l.cfg.MaxBytes
}

func (l *loader) loadFile(name, op string, limit int64) ([]byte, error) {
	switch {
	case strings.ContainsRune(name, 0):
		return nil, fault.New(fault.Validation, op, "the path contains a NUL byte")
	case filepath.IsAbs(name) || strings.HasPrefix(name, "/") || filepath.VolumeName(name) != "":
		return nil, fault.New(fault.Validation, op, "absolute paths are not allowed; write a path relative to the base directory")
	case !filepath.IsLocal(name):
		return nil, fault.New(fault.Forbidden, op, "the path escapes the base directory")
	}
	root, err := os.OpenRoot(l.base)
	if err != nil {
		return nil, classifyOpen(err, op, "base directory")
	}
	defer root.Close()
	data, err := docfile.ReadFile(root, filepath.Clean(name), limit)
	switch kind := fault.KindOf(err); {
	case kind != nil: // refused: not a regular file, or over the cap
		return nil, fault.Wrap(kind, err, op, "")
	case err != nil:
		return nil, classifyOpen(err, op, "file")
	}
	return data, nil
}

// classifyOpen maps an open error to a kind: a missing file is NotFound, a
// path that a symbolic link leads out of the root is Forbidden.
func classifyOpen(err error, op, what string) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fault.New(fault.NotFound, op, "%s not found", what)
	case strings.Contains(err.Error(), "escapes"):
		return fault.New(fault.Forbidden, op, "the path escapes the base directory")
	case errors.Is(err, fs.ErrPermission):
		return fault.New(fault.Forbidden, op, "permission denied")
	}
	return fault.Wrap(fault.Validation, err, op, "")
}

func (l *loader) loadEmbed(name, op string, limit int64) ([]byte, error) {
	if l.cfg.Embed == nil {
		return nil, fault.New(fault.NotFound, op, "no embedded file system was given")
	}
	if !fs.ValidPath(name) {
		if strings.HasPrefix(name, "/") {
			return nil, fault.New(fault.Validation, op, "absolute names are not allowed")
		}
		if slices.Contains(strings.Split(name, "/"), "..") {
			return nil, fault.New(fault.Forbidden, op, "the name escapes the embedded file system")
		}
		return nil, fault.New(fault.Validation, op, "%q is not a valid embedded name", name)
	}
	f, err := l.cfg.Embed.Open(path.Clean(name))
	if err != nil {
		return nil, classifyOpen(err, op, "embedded entry")
	}
	defer f.Close()
	if info, err := f.Stat(); err == nil && !info.Mode().IsRegular() {
		return nil, fault.New(fault.Validation, op, "not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fault.Wrap(fault.Validation, err, op, "")
	}
	if int64(len(data)) > limit {
		return nil, fault.New(fault.Validation, op, "content is larger than %d bytes", limit)
	}
	return data, nil
}

// Expand expands s; see NewLoader.
func (l *loader) Expand(s string) (string, error) {
	var out strings.Builder
	i := 0
	if s == "~" || strings.HasPrefix(s, "~/") {
		home, err := l.home()
		if err != nil {
			return "", err
		}
		out.WriteString(home)
		i = 1
	}
	for i < len(s) {
		j := strings.IndexByte(s[i:], '$')
		if j < 0 {
			out.WriteString(s[i:])
			break
		}
		out.WriteString(s[i : i+j])
		i += j
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			out.WriteString("${")
			i += 3
		case strings.HasPrefix(s[i:], "${"):
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				return "", fault.New(fault.Validation, "expand", "unterminated ${ at byte %d", i)
			}
			v, err := l.expandOne(s[i+2 : i+2+end])
			if err != nil {
				return "", err
			}
			out.WriteString(v)
			i += end + 3
		default:
			out.WriteByte('$')
			i++
		}
	}
	return out.String(), nil
}

// expandOne resolves the text between ${ and }.
func (l *loader) expandOne(expr string) (string, error) {
	kind, arg, hasArg := strings.Cut(expr, ":")
	if strings.ContainsAny(expr, "${") {
		return "", fault.New(fault.Validation, "expand", "malformed ${%s}: nested expansions are not allowed", expr)
	}
	switch kind {
	case "env":
		if arg == "" {
			return "", fault.New(fault.Validation, "expand", "${env:NAME} needs a variable name")
		}
		v, ok := l.cfg.LookupEnv(arg)
		if !ok {
			return "", fault.New(fault.Validation, "expand", "environment variable %q is not set", arg)
		}
		return v, nil
	case "base":
		return joinUnder(l.base, arg, hasArg, kind)
	case "home":
		home, err := l.home()
		if err != nil {
			return "", err
		}
		return joinUnder(home, arg, hasArg, kind)
	case "":
		return "", fault.New(fault.Validation, "expand", "malformed ${%s}: no kind", expr)
	}
	return "", fault.New(fault.Validation, "expand", "unknown expansion ${%s} (want env, base or home)", kind)
}

func joinUnder(dir, rel string, hasRel bool, kind string) (string, error) {
	switch {
	case !hasRel:
		return dir, nil
	case rel == "":
		return "", fault.New(fault.Validation, "expand", "${%s:} needs a relative path", kind)
	case filepath.IsAbs(rel) || strings.HasPrefix(rel, "/"):
		return "", fault.New(fault.Validation, "expand", "${%s:%s}: the path must be relative", kind, rel)
	}
	return filepath.Join(dir, rel), nil
}

func (l *loader) home() (string, error) {
	home := l.cfg.Home
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil || h == "" {
			return "", fault.New(fault.Validation, "expand", "the home directory is unknown")
		}
		home = h
	}
	if len(home) > 1 {
		home = strings.TrimRight(home, "/")
	}
	return home, nil
}
