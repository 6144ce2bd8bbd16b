package fnname_test

import (
	"strings"
	"testing"

	"github.com/corral-rt/corral/sandbox/js/internal/fnname"
	"github.com/dop251/goja/parser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Check refuses the names a function takes from the source when they are
// longer than MaxChars, and nothing else: data keys, computed keys and
// strings may be as long as they like.
func TestCheck(t *testing.T) {
	long := strings.Repeat("a", fnname.MaxChars+1)
	most := long[:fnname.MaxChars]
	for _, c := range []struct {
		src    string
		refuse bool
	}{
		{"function " + long + "() {}", true},
		{"function " + most + "() {}", false},
		{"let " + long + " = 1", true},
		{"(" + long + ") => 1", true},
		{"x." + long, true}, // any identifier, a member's name too (none is so long)
		{"({" + long + "})", true},
		{"const {" + long + " = () => 1} = {}", true}, // a shorthand pattern's default takes its name
		{"({" + long + "() {}})", true},
		{"({get " + long + "() { return 1 }})", true},
		{`({"` + long + `": function () {}})`, true},
		{`({"` + long + `": () => 1})`, true},
		{`({"` + long + `": class {}})`, true},
		{`({"` + long + `": 1})`, false},
		{`({["` + long + `"]: function () {}})`, false}, // computed: named at run time, not in a frame
		{"class C { " + long + "() {} }", true},
		{"class C { static " + long + " = () => 1 }", true},
		{"class C { static " + long + " = 1 }", false}, // data
		{"class C { #" + long + " = 1 }", true},
		{`const s = "` + long + `"`, false},
		{"({" + strings.Repeat("1", fnname.MaxChars+1) + ": function () {}})", false}, // named Infinity
		{"({0x" + strings.Repeat("f", 900) + "n: function () {}})", true},             // 1084 digits in decimal
		{"function " + strings.Repeat("ж", fnname.MaxChars) + "() {}", false},         // characters, not bytes
		{"class C { #" + most + "() {} }", true},                                      // # and the name
	} {
		prg, err := parser.ParseFile(nil, "t.js", c.src, 0)
		require.NoError(t, err, c.src[:30])
		err = fnname.Check(prg)
		if !c.refuse {
			assert.NoError(t, err, c.src[:30])
			continue
		}
		require.Error(t, err, c.src[:30])
		assert.Contains(t, err.Error(), "line 1, column ")
		assert.Contains(t, err.Error(), "more than 1024")
	}
}
