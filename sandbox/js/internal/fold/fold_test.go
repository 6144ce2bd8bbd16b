package fold

import (
	"strings"
	"testing"

	"github.com/dop251/goja/parser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A logical chain that starts with a constant passes up to MaxLinks
// links, whatever its operators and parentheses; one that starts with a
// name passes at any length.
func TestCheck(t *testing.T) {
	check := func(src string) error {
		prg, err := parser.ParseFile(nil, "", src, 0)
		require.NoError(t, err)
		return Check(prg)
	}
	n := MaxLinks + 1
	for _, src := range []string{
		strings.Repeat("0&&", n) + "0", strings.Repeat("1||", n) + "0", strings.Repeat("0??", n) + "0",
		strings.Repeat("(", n) + "!0" + strings.Repeat("&&1)", n), "f(" + strings.Repeat("-1+2&&", n) + "0)",
		"`a`" + strings.Repeat("&&0", n),
	} {
		assert.Error(t, check(src), src)
	}
	for _, src := range []string{
		strings.Repeat("0&&", MaxLinks-1) + "0", "x" + strings.Repeat("&&0", 500), "f()" + strings.Repeat("||a", 500),
		strings.Repeat("(0&&", 100) + "0" + strings.Repeat(")", 100),
	} {
		assert.NoError(t, check(src), src)
	}
}
