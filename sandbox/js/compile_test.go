package js

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The program cache finds a program by where its key's strings are (the
// same strings every call of a node hands it) and by their content (a copy
// of the source); it compiles each key once while the key is cached, and
// an evicted key's identity goes with it.
func TestProgramCacheIdentities(t *testing.T) {
	t.Parallel()
	c := newProgramCache(2)
	compiles := map[programKey]int{}
	get := func(key programKey) *compiled {
		t.Helper()
		p, err := c.get(key, func() (*compiled, error) {
			compiles[key]++
			return compileScript(key.name, key.source)
		})
		require.NoError(t, err)
		return p
	}
	src := `board.setVar("x", 1)` + strings.Repeat(" ", 4096)
	a := cacheKey(keyScript, "a", src)
	first := get(a)
	assert.Same(t, first, get(a), "the same strings find the program")
	assert.Same(t, first, get(cacheKey(keyScript, strings.Clone("a"), strings.Clone(src))), "so does a copy")
	assert.Equal(t, 1, compiles[a])
	assert.NotSame(t, first, get(cacheKey(keyExpr, "a", src)), "another kind is another program")

	get(cacheKey(keyScript, "b", "1"))
	get(cacheKey(keyScript, "c", "2")) // evicts a and the expression
	c.mu.Lock()
	assert.Len(t, c.byID, c.order.Len(), "one identity per cached program")
	_, found := c.byID[identityOf(a)]
	c.mu.Unlock()
	assert.False(t, found, "an evicted program's identity is forgotten")
	get(a)
	assert.Equal(t, 2, compiles[a], "an evicted program compiles again")
}
