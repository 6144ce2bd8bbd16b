package serve

import (
	"strings"
	"testing"
)

// FuzzBearerKey: any Authorization header yields a key without spaces,
// or none; the key is what follows the scheme.
func FuzzBearerKey(f *testing.F) {
	for _, seed := range []string{"", "Bearer", "Bearer ", "Bearer k", "bearer  k", "Basic k", "Bearer k k", "Bearer\tk", " Bearer k "} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, h string) {
		key, ok := bearerKey([]string{h})
		if !ok {
			if key != "" {
				t.Fatalf("%q: no key but %q", h, key)
			}
			return
		}
		if key == "" || strings.ContainsAny(key, " \t") || !strings.HasSuffix(strings.TrimSpace(h), key) {
			t.Fatalf("%q: key %q", h, key)
		}
		if _, ok := bearerKey([]string{h, h}); ok {
			t.Fatalf("two headers gave a key")
		}
	})
}
