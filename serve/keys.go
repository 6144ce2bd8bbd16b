package serve

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
	goruntime "runtime"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/corral-rt/corral/fault"
)

// Keys maps API keys to tenants. It holds only the SHA-256 of each key:
// Tenant hashes the presented key and compares it with every stored hash
// in constant time, so neither the file nor the timing of a refusal tells
// a key. The zero value has no keys and admits no one.
type Keys struct {
	entries []keyEntry
}

type keyEntry struct {
	tenant string
	sum    [sha256.Size]byte
}

// keysFile is the shape of a keys file.
type keysFile struct {
	Tenants map[string]keysTenant `yaml:"tenants"`
}

type keysTenant struct {
	Keys []string `yaml:"keys"`
}

// HashKey returns the form a keys file stores a key in:
// "sha256:" and the key's SHA-256 in lowercase hex.
func HashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ParseKeys reads a keys file (YAML; see docs/serve.md):
//
//	tenants:
//	  acme:
//	    keys: ["sha256:<64 hex digits>"]
//
// Unknown keys, a tenant with no keys, a key not in the hashed form and a
// hash listed twice are Validation errors naming name and the line.
func ParseKeys(name string, data []byte) (*Keys, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fault.Wrap(fault.Validation, err, "parse keys", "%s", name)
	}
	var f keysFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			return nil, fault.New(fault.Validation, "parse keys", "%s", shapeProblems(name, te.Errors))
		}
		return nil, fault.Wrap(fault.Validation, err, "parse keys", "%s", name)
	}
	if len(f.Tenants) == 0 {
		return nil, fault.New(fault.Validation, "parse keys", "%s: tenants: no tenant is declared", name)
	}
	lines := tenantLines(&root)
	k := &Keys{}
	seen := map[[sha256.Size]byte]string{}
	for _, tenant := range slices.Sorted(maps.Keys(f.Tenants)) {
		at := fmt.Sprintf("%s:%d: tenants.%s", name, lines[tenant], tenant)
		if strings.TrimSpace(tenant) == "" || tenant != strings.TrimSpace(tenant) {
			return nil, fault.New(fault.Validation, "parse keys", "%s: the tenant id is empty or has surrounding space", at)
		}
		t := f.Tenants[tenant]
		if len(t.Keys) == 0 {
			return nil, fault.New(fault.Validation, "parse keys", "%s.keys: the tenant has no key", at)
		}
		for i, h := range t.Keys {
			sum, err := parseHash(h)
			if err != nil {
				return nil, fault.Wrap(fault.Validation, err, "parse keys", "%s.keys[%d]", at, i)
			}
			if sum == emptyKeySum {
				return nil, fault.New(fault.Validation, "parse keys", "%s.keys[%d]: the hash of the empty key, which no request can present", at, i)
			}
			if other, dup := seen[sum]; dup {
				return nil, fault.New(fault.Validation, "parse keys", "%s.keys[%d]: the key is listed already (tenant %q)", at, i, other)
			}
			seen[sum] = tenant
			k.entries = append(k.entries, keyEntry{tenant: tenant, sum: sum})
		}
	}
	return k, nil
}

// emptyKeySum is the SHA-256 of the empty key.
var emptyKeySum = sha256.Sum256(nil)

// The decoder's messages of a keys file of the wrong shape; they name the
// server's Go types, which shapeProblems tells in the file's terms.
var (
	unknownField = regexp.MustCompile(`^line (\d+): field (.*) not found in type \S+$`)
	wrongType    = regexp.MustCompile(`^line (\d+): cannot unmarshal !!(\w+)(?: .*)? into (\S+)$`)
)

// shapeProblems tells the decoder's errors as file:line and what the
// keys file must have there (tenants: {<tenant>: {keys: [<hash>, ...]}}).
func shapeProblems(name string, msgs []string) string {
	out := make([]string, 0, len(msgs))
	for _, m := range msgs {
		switch sub := unknownField.FindStringSubmatch(m); {
		case sub != nil:
			out = append(out, fmt.Sprintf("%s:%s: unknown field %q (a keys file is tenants: {<tenant>: {keys: [...]}})", name, sub[1], sub[2]))
		default:
			sub = wrongType.FindStringSubmatch(m)
			if sub == nil {
				out = append(out, name+": the file is not a keys file (tenants: {<tenant>: {keys: [...]}})")
				continue
			}
			out = append(out, fmt.Sprintf("%s:%s: %s where %s is expected", name, sub[1], yamlTagKind(sub[2]), goKind(sub[3])))
		}
	}
	return strings.Join(out, "; ")
}

// yamlTagKind names a YAML tag's kind of value.
func yamlTagKind(tag string) string {
	switch tag {
	case "int", "float":
		return "a number"
	case "bool":
		return "a boolean"
	case "seq":
		return "a list"
	case "map":
		return "a mapping"
	case "null":
		return "null"
	}
	return "a string"
}

// goKind names what a Go type of the keys file is in YAML.
func goKind(t string) string {
	switch {
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case t == "string":
		return "a string"
	}
	return "a mapping"
}

// LoadKeys reads the keys file at path. On Unix, a file that its group or
// other users may write is a Forbidden error: whoever can write it can
// give themselves a tenant's key.
func LoadKeys(path string) (*Keys, error) {
	f, err := os.Open(path)
	if err != nil {
		kind := fault.Internal
		if os.IsNotExist(err) {
			kind = fault.NotFound
		}
		return nil, fault.Wrap(kind, err, "load keys", "")
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && goruntime.GOOS != "windows" && fi.Mode().Perm()&0o022 != 0 {
		return nil, fault.New(fault.Forbidden, "load keys", "%s: its group or other users may write it (mode %04o): chmod go-w %s",
			path, fi.Mode().Perm(), path)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fault.Wrap(fault.Internal, err, "load keys", "%s", path)
	}
	return ParseKeys(path, data)
}

func parseHash(h string) ([sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	hexPart, ok := strings.CutPrefix(h, "sha256:")
	if !ok || len(hexPart) != 2*sha256.Size {
		return sum, fault.New(fault.Validation, "", "a key is stored as \"sha256:\" and 64 hex digits (corral serve hash-key makes one), not as it is")
	}
	if _, err := hex.Decode(sum[:], []byte(hexPart)); err != nil {
		return sum, fault.New(fault.Validation, "", "the hash is not hex")
	}
	return sum, nil
}

// Tenant returns the tenant of key, or false. Every stored hash is
// compared, in constant time, whatever matches.
func (k *Keys) Tenant(key string) (string, bool) {
	if k == nil || key == "" {
		return "", false
	}
	sum := sha256.Sum256([]byte(key))
	tenant, found := "", 0
	for _, e := range k.entries {
		eq := subtle.ConstantTimeCompare(sum[:], e.sum[:])
		if eq == 1 {
			tenant = e.tenant
		}
		found |= eq
	}
	return tenant, found == 1
}

// Tenants lists the tenants that have keys, sorted.
func (k *Keys) Tenants() []string {
	var out []string
	for _, e := range k.entries {
		if !slices.Contains(out, e.tenant) {
			out = append(out, e.tenant)
		}
	}
	slices.Sort(out)
	return out
}

// tenantLines finds the line of each tenant's key in a keys file.
func tenantLines(root *yaml.Node) map[string]int {
	out := map[string]int{}
	if root == nil || len(root.Content) == 0 {
		return out
	}
	doc := root.Content[0]
	for i := 0; i+1 < len(doc.Content); i += 2 {
		if doc.Content[i].Value != "tenants" {
			continue
		}
		ts := doc.Content[i+1]
		for j := 0; j+1 < len(ts.Content); j += 2 {
			out[ts.Content[j].Value] = ts.Content[j].Line
		}
	}
	return out
}
