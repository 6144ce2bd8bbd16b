package reftest

import (
	"fmt"
	"go/scanner"
	"go/token"
	"regexp"
	"strconv"
	"strings"
)

// idPattern is one id: a number, then any number of ".N" or ".MN" parts
// (2, 2.1, 2.1.3, 2.1.3.1, 9.M1).
const idPattern = `\d+(?:\.(?:\d+|M\d+))*`

// listedIDPattern is an id after a separator. It needs at least one dot, so
// that a plain number after a comma ("REF 5.2.3, 3 retries") is not taken
// for an id.
const listedIDPattern = `\d+(?:\.(?:\d+|M\d+))+`

// separatorPattern joins the ids of one citation: a list separator or a
// range mark, optionally followed by the keyword again.
const separatorPattern = `\s*(?:,|;|/|–|—|-|\bto\b|\band\b)\s*(?:REF\s+)?`

var (
	keywordRE = regexp.MustCompile(`\bREF\b`)
	listRE    = regexp.MustCompile(`^\s+(` + idPattern + `(?:` + separatorPattern + listedIDPattern + `)*)`)
	idRE      = regexp.MustCompile(idPattern)
)

// maxRange bounds how many ids one range may stand for.
const maxRange = 100

// Found is one citation in a text: what was written and the ids it names.
type Found struct {
	Offset  int      // byte offset of the keyword in the text
	Written string   // the citation as written, such as "REF 2.2.2–2.2.13"
	IDs     []string // the ids it names, ranges expanded
	Err     error    // why the citation cannot be read (no id, a bad range)
}

// CitationsIn returns the citations in text, in order. A citation is the
// keyword, in capitals and as a word of its own, then white space (a line
// break included) and an id list. The keyword in quotes or backquotes is a
// mention, not a citation; anywhere else it must be followed by an id.
func CitationsIn(text string) []Found {
	var out []Found
	end := 0
	for _, loc := range keywordRE.FindAllStringIndex(text, -1) {
		if loc[0] < end || quoted(text, loc[0], loc[1]) {
			continue // inside the previous citation's list, or a mention
		}
		f := Found{Offset: loc[0]}
		m := listRE.FindStringSubmatchIndex(text[loc[1]:])
		if m == nil {
			f.Written = text[loc[0]:loc[1]]
			f.Err = fmt.Errorf("no id follows")
			out = append(out, f)
			continue
		}
		end = loc[1] + m[1]
		f.Written = strings.Join(strings.Fields(text[loc[0]:end]), " ")
		f.IDs, f.Err = ParseIDs(text[loc[1]+m[2] : loc[1]+m[3]])
		out = append(out, f)
	}
	return out
}

// quoted reports whether text[start:end] has a quote or backquote right
// before or right after it.
func quoted(text string, start, end int) bool {
	isQuote := func(c byte) bool { return c == '"' || c == '\'' || c == '`' }
	return (start > 0 && isQuote(text[start-1])) || (end < len(text) && isQuote(text[end]))
}

// ParseIDs returns the ids of an id list such as "1.2.9–1.2.11, 1.11.6".
// A range names both ends and, when they differ only in their last part,
// every id between them; a range whose ends differ elsewhere, that runs
// backwards or that is longer than maxRange is an error.
func ParseIDs(list string) ([]string, error) {
	locs := idRE.FindAllStringIndex(list, -1)
	if len(locs) == 0 {
		return nil, fmt.Errorf("no id in %q", list)
	}
	var out []string
	for i, loc := range locs {
		id := list[loc[0]:loc[1]]
		if i > 0 && isRangeMark(list[locs[i-1][1]:loc[0]]) {
			ids, err := expandRange(list[locs[i-1][0]:locs[i-1][1]], id)
			if err != nil {
				return nil, err
			}
			out = append(out, ids[1:]...) // the start is already in out
			continue
		}
		out = append(out, id)
	}
	return out, nil
}

// isRangeMark reports whether the text between two ids makes a range.
func isRangeMark(between string) bool {
	s := strings.TrimSpace(between)
	s = strings.TrimSpace(strings.TrimSuffix(s, "REF"))
	switch s {
	case "–", "—", "-", "to":
		return true
	}
	return false
}

// expandRange returns the ids from first to last.
func expandRange(first, last string) ([]string, error) {
	a, b := strings.Split(first, "."), strings.Split(last, ".")
	if len(a) != len(b) || strings.Join(a[:len(a)-1], ".") != strings.Join(b[:len(b)-1], ".") {
		return nil, fmt.Errorf("range %s to %s: the ends must differ in their last part only", first, last)
	}
	pa, na, err := lastPart(a[len(a)-1])
	if err != nil {
		return nil, err
	}
	pb, nb, err := lastPart(b[len(b)-1])
	if err != nil {
		return nil, err
	}
	switch {
	case pa != pb:
		return nil, fmt.Errorf("range %s to %s mixes numbered and M items", first, last)
	case nb < na:
		return nil, fmt.Errorf("range %s to %s runs backwards", first, last)
	case nb-na >= maxRange:
		return nil, fmt.Errorf("range %s to %s is longer than %d items", first, last, maxRange)
	}
	prefix := strings.Join(a[:len(a)-1], ".")
	if prefix != "" {
		prefix += "."
	}
	var out []string
	for n := na; n <= nb; n++ {
		out = append(out, prefix+pa+strconv.Itoa(n))
	}
	return out, nil
}

// lastPart splits "M7" into ("M", 7) and "12" into ("", 12).
func lastPart(s string) (string, int, error) {
	p := ""
	if strings.HasPrefix(s, "M") {
		p, s = "M", s[1:]
	}
	n, err := strconv.Atoi(s)
	return p, n, err
}

// Citation is one cited id at its place in a Go file.
type Citation struct {
	File    string // slash-separated, relative to the module root
	Line    int
	ID      string
	Written string // the whole citation as written
	Ref     int    // which citation of the file names the id: 1, 2, ...
}

// Problem is a citation, or a reference item, that does not check out.
type Problem struct {
	File string
	Line int
	Msg  string
}

func (p Problem) String() string { return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Msg) }

// commentBlock is the text of a run of comments on consecutive lines, with
// the line each piece of it comes from.
type commentBlock struct {
	text  strings.Builder
	start []int // offsets in text where a source line begins
	line  []int // the source line of each start
	last  int   // the source line of the block's last piece
}

func (b *commentBlock) add(text string, line int) {
	if b.text.Len() > 0 {
		b.text.WriteByte('\n')
	}
	b.start = append(b.start, b.text.Len())
	b.line = append(b.line, line)
	b.text.WriteString(text)
	b.last = line
}

// lineAt returns the source line of offset off of the block's text.
func (b *commentBlock) lineAt(off int) int {
	l := b.line[0]
	for i, s := range b.start {
		if s > off {
			break
		}
		l = b.line[i]
	}
	return l
}

// FileCitations returns the citations in the comments of one Go source
// file. Consecutive line comments are read as one text, so a citation may
// wrap from the end of one line to the start of the next. Citations that
// cannot be read are returned as problems.
func FileCitations(name string, src []byte) ([]Citation, []Problem) {
	fset := token.NewFileSet()
	file := fset.AddFile(name, -1, len(src))
	var s scanner.Scanner
	s.Init(file, src, func(token.Position, string) {}, scanner.ScanComments)

	var (
		cites    []Citation
		problems []Problem
		block    *commentBlock
		ref      int
	)
	flush := func() {
		if block == nil {
			return
		}
		text := block.text.String()
		for _, f := range CitationsIn(text) {
			line := block.lineAt(f.Offset)
			ref++
			if f.Err != nil {
				problems = append(problems, Problem{name, line, fmt.Sprintf("cannot read citation %q: %v", f.Written, f.Err)})
				continue
			}
			for _, id := range f.IDs {
				cites = append(cites, Citation{File: name, Line: line, ID: id, Written: f.Written, Ref: ref})
			}
		}
		block = nil
	}
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		if tok != token.COMMENT {
			if tok != token.SEMICOLON || lit != "\n" { // an automatic semicolon ends nothing
				flush()
			}
			continue
		}
		line := file.Line(pos)
		lineComment := strings.HasPrefix(lit, "//")
		if block != nil && !(lineComment && line == block.last+1) {
			flush()
		}
		if block == nil {
			block = &commentBlock{}
		}
		if lineComment {
			block.add(strings.TrimPrefix(lit, "//"), line)
			continue
		}
		body := strings.TrimSuffix(strings.TrimPrefix(lit, "/*"), "*/")
		for i, l := range strings.Split(body, "\n") {
			block.add(l, line+i)
		}
		flush() // a block comment stands alone
	}
	flush()
	return cites, problems
}
