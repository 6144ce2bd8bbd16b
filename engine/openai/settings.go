package openai

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/resource"
)

// The defaults of Settings.
const (
	DefaultBaseURL      = "https://api.openai.com/v1"
	DefaultRetries      = 2
	DefaultTimeout      = 5 * time.Minute
	DefaultRetryBackoff = 500 * time.Millisecond
	DefaultMaxRetryWait = 30 * time.Second
	// DefaultAzureAPIVersion is the api-version of Azure OpenAI requests
	// when settings.azure.api_version is empty.
	DefaultAzureAPIVersion = "2024-10-21"
)

// The auth schemes of Settings.Auth.Scheme.
const (
	AuthBearer = "bearer" // Authorization: Bearer <api_key> (the default)
	AuthHeader = "header" // <auth.header>: <api_key>, for gateways that want their own header
	AuthNone   = "none"   // no credential, for local servers
)

// Settings are the settings of a model.Provider/openai, decoded strictly
// after ${env:NAME} expansion of every string.
type Settings struct {
	// ID is the provider's id, the one request extensions name in their
	// provider; default "openai".
	ID string `json:"id,omitempty"`
	// BaseURL is the API root, up to and including /v1; default
	// https://api.openai.com/v1. It must be http or https.
	BaseURL string `json:"base_url,omitempty"`
	// APIKey is the credential, usually "${env:OPENAI_API_KEY}". Required
	// unless auth.scheme is none.
	APIKey string `json:"api_key,omitempty"`
	// Auth says how the key travels.
	Auth AuthSettings `json:"auth,omitzero"`
	// Model is the model used when a request names none.
	Model string `json:"model,omitempty"`
	// Organization and Project are sent as OpenAI-Organization and
	// OpenAI-Project.
	Organization string `json:"organization,omitempty"`
	Project      string `json:"project,omitempty"`
	// Headers are extra headers sent with every request.
	Headers map[string]string `json:"headers,omitempty"`
	// Azure, when present, speaks to an Azure OpenAI resource: the model
	// name is the deployment name and the key goes in the api-key header.
	Azure *AzureSettings `json:"azure,omitempty"`
	// Timeout bounds one attempt, the stream included; default 5m.
	Timeout string `json:"timeout,omitempty"`
	// Retries is how many times a failed attempt (429, 408, 5xx, a broken
	// connection before the first byte) is retried; default 2, 0 = none.
	Retries *int `json:"retries,omitempty"`
	// RetryBackoff is the wait before the first retry, doubled for each
	// later one, when the server sends no Retry-After; default 500ms.
	RetryBackoff string `json:"retry_backoff,omitempty"`
	// MaxRetryWait caps how long a Retry-After is honoured: a server that
	// asks for a longer wait fails the call at once; default 30s.
	MaxRetryWait string `json:"max_retry_wait,omitempty"`
	// IncludeUsage asks streams for a last chunk with the usage
	// (stream_options.include_usage); default true. Some older servers
	// refuse the option.
	IncludeUsage *bool `json:"include_usage,omitempty"`
	// Profiles are other credentials and endpoints of the same provider,
	// picked by a request's profile (REF 8.2).
	Profiles []ProfileSettings `json:"profiles,omitempty"`
}

// AuthSettings are settings.auth.
type AuthSettings struct {
	Scheme string `json:"scheme,omitempty"` // bearer (default), header or none
	Header string `json:"header,omitempty"` // the header of scheme "header"
}

// AzureSettings are settings.azure.
type AzureSettings struct {
	APIVersion string `json:"api_version,omitempty"` // default DefaultAzureAPIVersion
}

// config is Settings checked and completed with defaults.
type config struct {
	id           string
	baseURL      string
	apiKey       string
	auth         AuthSettings
	model        string
	organization string
	project      string
	headers      http.Header
	azure        *AzureSettings
	timeout      time.Duration
	retries      int
	backoff      time.Duration
	maxRetryWait time.Duration
	includeUsage bool
}

// DecodeSettings decodes raw strictly into Settings (no expansion).
func DecodeSettings(raw json.RawMessage) (Settings, error) {
	return resource.DecodeTyped[Settings](raw)
}

// config checks s and fills in the defaults. Errors are Validation errors
// naming the settings key.
func (s Settings) config() (config, error) {
	c := config{id: s.ID, baseURL: s.BaseURL, apiKey: s.APIKey, auth: s.Auth, model: s.Model,
		organization: s.Organization, project: s.Project, azure: s.Azure, retries: DefaultRetries, includeUsage: true}
	if c.id == "" {
		c.id = DefaultID
	}
	if c.baseURL == "" {
		c.baseURL = DefaultBaseURL
	}
	if u, err := url.Parse(c.baseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return c, invalidSetting("base_url", "%q is not an http(s) URL", c.baseURL)
	}
	c.baseURL = strings.TrimRight(c.baseURL, "/")
	if err := c.checkAuth(); err != nil {
		return c, err
	}
	var err error
	if c.headers, err = headerOf(s.Headers); err != nil {
		return c, err
	}
	if s.Retries != nil {
		if *s.Retries < 0 || *s.Retries > 10 {
			return c, invalidSetting("retries", "must be between 0 and 10, got %d", *s.Retries)
		}
		c.retries = *s.Retries
	}
	if s.IncludeUsage != nil {
		c.includeUsage = *s.IncludeUsage
	}
	durations := []struct {
		key, val string
		def      time.Duration
		out      *time.Duration
	}{
		{"timeout", s.Timeout, DefaultTimeout, &c.timeout},
		{"retry_backoff", s.RetryBackoff, DefaultRetryBackoff, &c.backoff},
		{"max_retry_wait", s.MaxRetryWait, DefaultMaxRetryWait, &c.maxRetryWait},
	}
	for _, d := range durations {
		if *d.out, err = parseDuration(d.key, d.val, d.def); err != nil {
			return c, err
		}
	}
	if c.azure != nil && c.azure.APIVersion == "" {
		c.azure = &AzureSettings{APIVersion: DefaultAzureAPIVersion}
	}
	return c, nil
}

// checkAuth checks the scheme and the key: a key is required unless the
// scheme is none, and scheme none takes no key.
func (c *config) checkAuth() error {
	switch c.auth.Scheme {
	case "":
		c.auth.Scheme = AuthBearer
	case AuthBearer, AuthNone:
	case AuthHeader:
		if http.CanonicalHeaderKey(strings.TrimSpace(c.auth.Header)) == "" || !validHeaderName(c.auth.Header) {
			return invalidSetting("auth.header", "scheme %q needs a valid header name, got %q", AuthHeader, c.auth.Header)
		}
	default:
		return invalidSetting("auth.scheme", "%q is not one of bearer, header, none", c.auth.Scheme)
	}
	if c.auth.Scheme != AuthHeader && c.auth.Header != "" {
		return invalidSetting("auth.header", "only scheme %q takes a header", AuthHeader)
	}
	switch {
	case c.auth.Scheme == AuthNone && c.apiKey != "":
		return invalidSetting("api_key", "auth.scheme none sends no key; remove api_key or pick another scheme")
	case c.auth.Scheme != AuthNone && strings.TrimSpace(c.apiKey) == "":
		return invalidSetting("api_key", "required (write api_key: ${env:OPENAI_API_KEY}, or auth: {scheme: none} for a local server)")
	}
	return nil
}

func headerOf(m map[string]string) (http.Header, error) {
	h := http.Header{}
	for k, v := range m {
		if !validHeaderName(k) {
			return nil, invalidSetting("headers", "%q is not a valid header name", k)
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return nil, invalidSetting("headers."+k, "the value holds a line break or NUL")
		}
		h.Set(k, v)
	}
	return h, nil
}

// validHeaderName reports whether s is an HTTP token.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r > 0x7e || r <= 0x20 || strings.ContainsRune("\"(),/:;<=>?@[\\]{}", r) {
			return false
		}
	}
	return true
}

func parseDuration(key, s string, def time.Duration) (time.Duration, error) {
	if s == "" {
		return def, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, invalidSetting(key, "%q is not a duration like \"30s\"", s)
	}
	return d, nil
}

func invalidSetting(key, format string, args ...any) error {
	return fault.New(fault.Validation, "openai provider", "settings."+key+": "+format, args...)
}
