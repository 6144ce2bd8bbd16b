package replay

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/corral-rt/corral/fault"
)

// openRegular opens file for reading when it is a regular file: a device
// (/dev/zero), a pipe or a directory is a Validation error and is not
// read (a pipe is not even opened, which would wait for a writer).
func openRegular(file string) (*os.File, error) {
	fi, err := os.Stat(file)
	if err != nil {
		return nil, fault.Wrap(fault.NotFound, err, "read recording", "%s", file)
	}
	if !fi.Mode().IsRegular() {
		return nil, fault.New(fault.Validation, "read recording", "%s: not a regular file (%s)", file, fi.Mode().Type())
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, fault.Wrap(fault.NotFound, err, "read recording", "%s", file)
	}
	if fi2, err := f.Stat(); err != nil || !fi2.Mode().IsRegular() || !os.SameFile(fi, fi2) {
		f.Close()
		return nil, fault.New(fault.Validation, "read recording", "%s: not a regular file, or replaced while opened", file)
	}
	return f, nil
}

// DocumentPath resolves the deployment document a recording's header
// names (document, relative to the recording's directory) for the
// recording in file, following symbolic links. The document must lie
// under the recording's directory or under the working directory: a
// recording someone handed over cannot make a replay build and run a
// deployment anywhere else (an absolute path, "../" that climbs out of
// both, a link that leaves them). Anywhere else is a Validation error
// asking for the document to be given explicitly; a header without a
// document is a Validation error too.
func DocumentPath(file, document string) (string, error) {
	const op = "replay document"
	if document == "" {
		return "", fault.New(fault.Validation, op, "%s: the recording names no document: give the deployment document (DOC)", file)
	}
	p := filepath.FromSlash(document)
	if !filepath.IsAbs(p) {
		p = filepath.Join(filepath.Dir(file), p)
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", fault.Wrap(fault.NotFound, err, op, "%s: the document %q the recording names", file, Printable(clip(document)))
	}
	real, err = filepath.Abs(real)
	if err != nil {
		return "", fault.Wrap(fault.Internal, err, op, "%s", file)
	}
	var allowed []string
	if dir, err := filepath.EvalSymlinks(filepath.Dir(file)); err == nil {
		allowed = append(allowed, dir)
	}
	if wd, err := os.Getwd(); err == nil {
		if wd, err := filepath.EvalSymlinks(wd); err == nil {
			allowed = append(allowed, wd)
		}
	}
	for _, dir := range allowed {
		if dir, err := filepath.Abs(dir); err == nil && within(dir, real) {
			return real, nil
		}
	}
	return "", fault.New(fault.Validation, op,
		"%s: the document %q the recording names lies outside both the recording's directory and the working directory: give the deployment document (DOC) to replay against",
		file, Printable(clip(document)))
}

// within reports whether path lies under dir (both absolute and clean).
func within(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// Printable returns s with every control character, format character
// (such as a bidirectional override) and invalid byte escaped as Go
// escapes it (\x1b, \u202e), so that text from a recording printed to a
// terminal or a log cannot rewrite what is around it. Printable text is
// returned as is.
func Printable(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || !strconv.IsPrint(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			b.WriteString(`\x` + strconv.FormatUint(uint64(s[i])|0x100, 16)[1:])
		case strconv.IsPrint(r):
			b.WriteString(s[i : i+n])
		default:
			q := strconv.QuoteRune(r) // '\x1b', '\u202e'
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	return b.String()
}
