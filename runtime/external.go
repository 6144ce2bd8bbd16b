package runtime

import (
	"strings"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
)

// ExternalDependency declares a caller-owned value that the document's
// resources, engines and hooks may consume by Name (REF 1.7).
type ExternalDependency struct {
	Name     string `json:"name"`
	Contract string `json:"contract"`
}

// ExternalResource is an injected value for a declared ExternalDependency.
// The runtime borrows it: it never builds, wires or closes it, and the same
// value serves every generation. The application keeps it valid until
// Runtime.Close returns.
type ExternalResource struct {
	ExternalDependency
	Value any
}

func (d ExternalDependency) validate(path string) (ExternalDependency, error) {
	d.Name = strings.TrimSpace(d.Name)
	d.Contract = strings.TrimSpace(d.Contract)
	switch {
	case d.Name == "":
		return d, configErr(path+".name", fault.Validation, "external dependency name is required")
	case strings.Contains(d.Name, "/"):
		return d, configErr(path+".name", fault.Validation, "external dependency name %q must not contain '/'", d.Name)
	case d.Contract == "":
		return d, configErr(path+".contract", fault.Validation, "external dependency %q: contract is required", d.Name)
	}
	return d, nil
}

// normalizeExternalDeps trims and validates the document's declarations
// (REF 1.7.1).
func normalizeExternalDeps(in []ExternalDependency) ([]ExternalDependency, error) {
	seen := map[string]bool{}
	out := make([]ExternalDependency, 0, len(in))
	for i, d := range in {
		path := "runtime.external_deps[" + itoa(i) + "]"
		d, err := d.validate(path)
		if err != nil {
			return nil, err
		}
		if seen[d.Name] {
			return nil, configErr(path+".name", fault.Conflict, "external dependency %q is declared twice", d.Name)
		}
		seen[d.Name] = true
		out = append(out, d)
	}
	return out, nil
}

// validateInjected checks one WithExternalResource value (REF 1.7.2).
func validateInjected(r ExternalResource) (ExternalResource, error) {
	d, err := r.ExternalDependency.validate("external resource")
	if err != nil {
		var ce *ConfigError
		if asConfigErr(err, &ce) {
			err = ce.Err
		}
		return r, fault.Wrap(fault.Validation, err, "with external resource", "")
	}
	r.ExternalDependency = d
	if agent.IsNil(r.Value) {
		return r, fault.New(fault.Validation, "with external resource", "%q: value must not be nil", d.Name)
	}
	return r, nil
}

// matchExternals checks declarations against injections at Build
// (REF 1.7.3). With allowUndeclared (Reload), injected values the
// document no longer declares are ignored.
func matchExternals(declared []ExternalDependency, injected map[string]ExternalResource, allowUndeclared bool) error {
	want := map[string]bool{}
	for i, d := range declared {
		want[d.Name] = true
		got, ok := injected[d.Name]
		path := "runtime.external_deps[" + itoa(i) + "]"
		if !ok {
			return configErr(path, fault.Validation, "external dependency %q is declared but no external resource was injected", d.Name)
		}
		if got.Contract != d.Contract {
			return configErr(path+".contract", fault.Validation,
				"external dependency %q: declared contract %q but the injected value has contract %q", d.Name, d.Contract, got.Contract)
		}
	}
	if allowUndeclared {
		return nil
	}
	for _, name := range sortedKeys(injected) {
		if !want[name] {
			return configErr("runtime.external_deps", fault.Validation,
				"external resource %q was injected but the document does not declare it", name)
		}
	}
	return nil
}
