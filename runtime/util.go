package runtime

import (
	"errors"
	"slices"
	"strconv"
)

func itoa(i int) string { return strconv.Itoa(i) }

func asConfigErr(err error, target **ConfigError) bool { return errors.As(err, target) }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
