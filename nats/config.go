package nats

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"time"
	"unicode"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/nats-io/nats.go/jetstream"
)

// Defaults of Config.
const (
	DefaultSubjectPrefix  = "corral"
	DefaultStream         = "CORRAL_EVENTS"
	DefaultMaxAge         = 24 * time.Hour
	DefaultLeaseBucket    = "CORRAL_SESSIONS"
	DefaultLeaseTTL       = 10 * time.Second
	DefaultConnectTimeout = 5 * time.Second
	DefaultPublishTimeout = 5 * time.Second
	// MinLeaseTTL is the shortest lease: the server checks key TTLs about
	// once a second, so a shorter lease would lapse later than it says.
	MinLeaseTTL = time.Second
)

// maxNameLen is the longest node, stream or bucket name; the server
// refuses longer stream names (a bucket's stream is KV_ and its name).
const maxNameLen = 250

// DefaultEphemeral are the patterns published on core NATS unless
// Config.Ephemeral says otherwise: the stream deltas of every run.
var DefaultEphemeral = []string{"agent.run.*.stream.>"}

// Config configures Connect. The zero value of each field but URL is its
// default.
type Config struct {
	// URL is the NATS server, or several separated by commas (every
	// server of a cluster, so that the client fails over). Required.
	URL string
	// Node names this node: the connection's name and the owner a
	// session lease names. "": the host name and 4 random bytes.
	Node string
	// Advertise is where clients reach this node (a URL of its serve
	// endpoint, say); a turn refused because this node owns the session
	// names it. "": none.
	Advertise string
	// SubjectPrefix is the first token of every NATS subject the bus
	// uses, so that several deployments share one NATS. "": corral.
	SubjectPrefix string
	// Stream is the JetStream stream of the durable events; the bus
	// creates it, or updates its settings, when it connects. "":
	// CORRAL_EVENTS.
	Stream string
	// Replicas is how many servers keep the stream and the lease bucket
	// (1 to 5; a cluster of three uses 3). 0: 1.
	Replicas int
	// Memory keeps the stream in server memory instead of files.
	Memory bool
	// MaxAge is how long the stream keeps an event. 0: 24 h.
	MaxAge time.Duration
	// Ephemeral are the patterns whose events go over core NATS (not
	// stored, not resumable by cursor). nil: DefaultEphemeral; an empty,
	// non-nil list stores every event.
	Ephemeral []string
	// Bus configures the node's local fan-out (buffers, route cache) as
	// it does a MemoryBus.
	Bus event.BusConfig
	// LeaseBucket is the JetStream key-value bucket of session leases.
	// "": CORRAL_SESSIONS.
	LeaseBucket string
	// LeaseTTL is how long a session lease lives without renewal; the
	// owner renews it every third of it. 0: 10 s; below MinLeaseTTL is a
	// Validation error.
	LeaseTTL time.Duration
	// NoDiscovery connects only to the servers URL lists, never to those
	// the cluster announces: for servers behind a proxy or an address
	// translation, whose announced addresses a node cannot reach.
	NoDiscovery bool
	// ConnectTimeout bounds the first connection. 0: 5 s.
	ConnectTimeout time.Duration
	// PublishTimeout bounds how long a durable event's publish asks for
	// the stream's acknowledgement when its ctx cannot end (or a Block
	// subscription used it up); a publish whose ctx can end asks for as
	// long as it lasts. It also bounds a checkpoint store's write whose
	// ctx has no deadline. 0: 5 s.
	PublishTimeout time.Duration
}

// resolve fills in the defaults and checks the rest.
func (c Config) resolve() (Config, error) {
	const op = "nats config"
	c.URL = strings.TrimSpace(c.URL)
	if c.URL == "" {
		return c, invalidf(op, "url", "required")
	}
	if c.Node == "" {
		c.Node = defaultNode()
	}
	c.SubjectPrefix = cmp.Or(c.SubjectPrefix, DefaultSubjectPrefix)
	if err := event.ValidateSubject(c.SubjectPrefix); err != nil {
		return c, invalid(op, "subject_prefix", err)
	}
	c.Stream = cmp.Or(c.Stream, DefaultStream)
	c.LeaseBucket = cmp.Or(c.LeaseBucket, DefaultLeaseBucket)
	if first, _, _ := strings.Cut(c.SubjectPrefix, "."); strings.HasPrefix(first, "$") || first == "_INBOX" {
		return c, invalidf(op, "subject_prefix", "%q is in the server's namespace ($…, _INBOX)", c.SubjectPrefix)
	}
	for _, n := range []struct{ name, v string }{{"node", c.Node}, {"stream", c.Stream}, {"lease_bucket", c.LeaseBucket}} {
		if strings.ContainsAny(n.v, " \t\r\n.*>/\\") || strings.ContainsFunc(n.v, unicode.IsControl) {
			return c, invalidf(op, n.name, "%q must not hold spaces, control characters, '.', '*', '>' or slashes", n.v)
		}
		if len(n.v) > maxNameLen {
			return c, invalidf(op, n.name, "%.20q... is %d bytes, over %d", n.v, len(n.v), maxNameLen)
		}
	}
	if strings.ContainsFunc(c.LeaseBucket, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-')
	}) {
		return c, invalidf(op, "lease_bucket", "%q must hold only letters A-Z and a-z, digits, '_' and '-'", c.LeaseBucket)
	}
	c.Replicas = cmp.Or(c.Replicas, 1)
	if c.Replicas < 1 || c.Replicas > 5 {
		return c, invalidf(op, "replicas", "%d is outside 1..5", c.Replicas)
	}
	c.MaxAge = cmp.Or(c.MaxAge, DefaultMaxAge)
	c.LeaseTTL = cmp.Or(c.LeaseTTL, DefaultLeaseTTL)
	c.ConnectTimeout = cmp.Or(c.ConnectTimeout, DefaultConnectTimeout)
	c.PublishTimeout = cmp.Or(c.PublishTimeout, DefaultPublishTimeout)
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"max_age", c.MaxAge}, {"lease_ttl", c.LeaseTTL}, {"connect_timeout", c.ConnectTimeout}, {"publish_timeout", c.PublishTimeout}} {
		if d.v < 0 {
			return c, invalidf(op, d.name, "%s must not be negative", d.v)
		}
	}
	if c.LeaseTTL < MinLeaseTTL {
		return c, invalidf(op, "lease_ttl", "%s is below %s", c.LeaseTTL, MinLeaseTTL)
	}
	if c.Ephemeral == nil {
		c.Ephemeral = DefaultEphemeral
	}
	for i, p := range c.Ephemeral {
		if err := event.ValidatePattern(p); err != nil {
			return c, invalid(op, fmt.Sprintf("ephemeral[%d]", i), err)
		}
	}
	return c, nil
}

// invalid is the Validation error of the setting key: a
// *resource.FieldError at key, so that a deployment document names the
// file and line of the setting, wherever the layers put it.
func invalid(op, key string, cause error) error {
	return fault.Wrap(fault.Validation, &resource.FieldError{Path: key, Msg: cause.Error()}, op, "")
}

func invalidf(op, key, format string, args ...any) error {
	return invalid(op, key, fmt.Errorf(format, args...))
}

func (c Config) storage() jetstream.StorageType {
	if c.Memory {
		return jetstream.MemoryStorage
	}
	return jetstream.FileStorage
}

func defaultNode() string {
	host, _ := os.Hostname()
	host = strings.Map(func(r rune) rune {
		if strings.ContainsRune(" \t\r\n.*>/\\", r) {
			return '_'
		}
		return r
	}, host)
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return cmp.Or(host, "node") + "-" + hex.EncodeToString(b)
}
