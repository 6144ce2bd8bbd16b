package sandbox

import (
	"strings"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/resource"
)

// RuntimesFromDeps maps the script runtimes a resource binds under dep
// (a Many dep: "<dep>" and "<dep>.<name>") to their names: "<dep>.<name>"
// is named name and the bare "<dep>" is named defaultName. A value that is
// not a Runtime, an empty name, or two deps binding one name are errors
// naming the deps (Validation, Conflict).
func RuntimesFromDeps(in resource.Input, dep, defaultName string) (map[string]Runtime, error) {
	out := map[string]Runtime{}
	keys := map[string]string{}
	for _, d := range in.DepsMany(dep) {
		rt, err := resource.As[Runtime](d.Key, d.Value)
		if err != nil {
			return nil, err
		}
		name := d.Suffix()
		if d.Key == dep {
			name = defaultName
		}
		if strings.TrimSpace(name) == "" {
			return nil, fault.New(fault.Validation, "", "deps.%s: the runtime name is empty", d.Key)
		}
		if other, dup := keys[name]; dup {
			return nil, fault.New(fault.Conflict, "", "deps.%s and deps.%s both bind script runtime %q", other, d.Key, name)
		}
		keys[name], out[name] = d.Key, rt
	}
	return out, nil
}
