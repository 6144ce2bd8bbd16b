package reftest

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// CitationsIn finds every citation in a text and the ids each names: lists,
// ranges in their written forms, M items, sections, text wrapped across
// lines, and the words and numbers around a citation that are not ids.
func TestCitationsIn(t *testing.T) {
	tests := []struct {
		name, text string
		want       [][]string // ids per citation, in order
		bad        []bool     // citations that cannot be read
	}{
		{"one item", "REF 2.1.3", [][]string{{"2.1.3"}}, nil},
		{"nested item", "// REF 2.1.3.1", [][]string{{"2.1.3.1"}}, nil},
		{"section", "(REF 5.4)", [][]string{{"5.4"}}, nil},
		{"M item with a note", "REF 9.M1 (a memory limit)", [][]string{{"9.M1"}}, nil},
		{"sentence end", "holds REF 8.9.", [][]string{{"8.9"}}, nil},
		{"comma list", "REF 1.2.1, 1.2.2, 1.2.5: rules", [][]string{{"1.2.1", "1.2.2", "1.2.5"}}, nil},
		{"list of REFs", "REF 6.2.1, REF 6.2.2: async", [][]string{{"6.2.1", "6.2.2"}}, nil},
		{"several REFs", "REF 2.8.3 REF 1.9.1 REF 1.9.7 (the primitives)", [][]string{{"2.8.3"}, {"1.9.1"}, {"1.9.7"}}, nil},
		{"and, slash, semicolon", "REF 2.8.3 and 1.9; 3.4.2/3.6.7", [][]string{{"2.8.3", "1.9", "3.4.2", "3.6.7"}}, nil},
		{"en dash range", "REF 1.2.9–1.2.11", [][]string{{"1.2.9", "1.2.10", "1.2.11"}}, nil},
		{"hyphen range", "REF 2.7.1-2.7.3", [][]string{{"2.7.1", "2.7.2", "2.7.3"}}, nil},
		{"em dash range", "REF 9.M1—9.M3", [][]string{{"9.M1", "9.M2", "9.M3"}}, nil},
		{"to range", "(REF 2.4.8 to 2.4.10): held", [][]string{{"2.4.8", "2.4.9", "2.4.10"}}, nil},
		{"range then list", "REF 1.3.5, 1.12.2–1.12.4)", [][]string{{"1.3.5", "1.12.2", "1.12.3", "1.12.4"}}, nil},
		{"list then range", "REF 2.4.5, 2.4.6, 2.4.11 to 2.4.13", [][]string{{"2.4.5", "2.4.6", "2.4.11", "2.4.12", "2.4.13"}}, nil},
		{"wrapped", "an interrupt (REF\n 2.2.16). It", [][]string{{"2.2.16"}}, nil},
		{"wrapped list", "in order (REF 2.4.1, 2.4.3,\n 2.4.7).", [][]string{{"2.4.1", "2.4.3", "2.4.7"}}, nil},
		{"step numbers are not ids", "(REF 5.2.3 steps 3 and 6)", [][]string{{"5.2.3"}}, nil},
		{"a count after a comma is not an id", "REF 5.2.3, 3 retries", [][]string{{"5.2.3"}}, nil},
		{"words that contain REF", "PREFIX, REFERENCE, REF_X, refs", nil, nil},
		{"no citation", "see docs/reference 2.1.3", nil, nil},
		{"keyword without an id", "REF and more", [][]string{nil}, []bool{true}},
		{"keyword at the end", "see (REF", [][]string{nil}, []bool{true}},
		{"section sign", "REF §2.1", [][]string{nil}, []bool{true}},
		{"quoted keyword is a mention", "cite as \"REF\" or `REF` and 'REF'", nil, nil},
		{"backward range", "REF 1.2.11–1.2.9", [][]string{nil}, []bool{true}},
		{"range across items", "REF 2.1.7–2.2.3", [][]string{nil}, []bool{true}},
		{"range mixing kinds", "REF 9.10–9.M2", [][]string{nil}, []bool{true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			found := CitationsIn(tt.text)
			var got [][]string
			var bad []bool
			anyBad := false
			for _, f := range found {
				got = append(got, f.IDs)
				bad = append(bad, f.Err != nil)
				anyBad = anyBad || f.Err != nil
				if !strings.HasPrefix(f.Written, "REF") || tt.text[f.Offset:f.Offset+3] != "REF" {
					t.Errorf("citation %+v does not point at its REF", f)
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ids %q, want %q", got, tt.want)
			}
			if anyBad || tt.bad != nil {
				if !reflect.DeepEqual(bad, tt.bad) {
					t.Errorf("unreadable %v, want %v", bad, tt.bad)
				}
			}
		})
	}
}

// FileCitations reads only comments, joins consecutive line comments so
// that a citation may wrap, and gives each id the line of its keyword.
func TestFileCitations(t *testing.T) {
	src := "package p\n" +
		"\n" +
		"// Doc of f (REF\n" + // 3
		"// 2.2.16), then (REF 2.4.1,\n" + // 4
		"// 2.4.3).\n" +
		"func f() {\n" +
		"\tx := \"REF 1.1 is a string\" // REF 1.2.3\n" + // 7
		"\t_ = x\n" +
		"\t/* REF 9.M5 */\n" + // 9
		"}\n" +
		"// REF\n" + // 11: ends the file without an id
		""
	cites, problems := FileCitations("p.go", []byte(src))
	var got []string
	for _, c := range cites {
		got = append(got, c.ID+"@"+strconv.Itoa(c.Line))
	}
	want := []string{"2.2.16@3", "2.4.1@4", "2.4.3@4", "1.2.3@7", "9.M5@9"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("citations %q, want %q", got, want)
	}
	if len(problems) != 1 || problems[0].Line != 11 {
		t.Errorf("problems %v, want one at line 11", problems)
	}
	if cites[1].Ref != cites[2].Ref || cites[0].Ref == cites[1].Ref {
		t.Errorf("ids of one citation must share its Ref: %+v", cites)
	}
}

// ParseReference finds numbered headings and items, not numbers elsewhere.
func TestParseReference(t *testing.T) {
	md := "# 2. Sessions\n" +
		"\n" +
		"## 2.1 Key, Open and GetOrCreate, leases\n" +
		"\n" +
		"- **2.1.3** Open checks:\n" +
		"  - **2.1.3.1** a nil ctx\n" +
		"  - a sub-point without a number\n" +
		"1. **2.1.4** a numbered list works too\n" +
		"Prose that mentions **2.1.5** is no item, and §2.1.6 no anchor.\n" +
		"```\n" +
		"## 2.9 in a fence\n" +
		"```\n" +
		"## Gaps (9.M1 to 9.M9)\n" +
		"- **9.M1** memory\n"
	var got []string
	for _, it := range ParseReference("x.md", []byte(md)) {
		got = append(got, it.ID+"@"+strconv.Itoa(it.Line))
	}
	want := []string{"2@1", "2.1@3", "2.1.3@5", "2.1.3.1@6", "2.1.4@8", "9.M1@14"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("items %q, want %q", got, want)
	}
}
