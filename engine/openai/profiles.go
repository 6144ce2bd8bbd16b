package openai

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/corral-rt/corral/fault"
	goopenai "github.com/sashabaranov/go-openai"
)

// The operations a profile may list.
const (
	OpGenerate = "generate"
	OpEmbed    = "embed"
	OpImage    = "image"
	OpTTS      = "tts"
)

// ProfileSettings is one of settings.profiles (REF 8.2): a named
// credential and endpoint of the provider. What the profile leaves out is
// the provider's (the key, the base URL, ...); its headers are added to the
// provider's.
type ProfileSettings struct {
	// ID names the profile in model refs ({id: {...}, profile: <id>}).
	ID string `json:"id"`
	// Operations are what the profile serves (generate, embed, image,
	// tts); empty means all of them. This provider generates only, so a
	// profile without generate cannot be asked.
	Operations []string `json:"operations,omitempty"`
	// Secrets hold the profile's credential.
	Secrets ProfileSecrets `json:"secrets,omitzero"`
	// Spec is the profile's endpoint.
	Spec ProfileSpec `json:"spec,omitzero"`
}

// ProfileSecrets are profiles[].secrets: api_key only.
type ProfileSecrets struct {
	APIKey string `json:"api_key,omitempty"`
}

// ProfileSpec is profiles[].spec.
type ProfileSpec struct {
	BaseURL      string            `json:"base_url,omitempty"`
	Organization string            `json:"organization,omitempty"`
	Project      string            `json:"project,omitempty"`
	Headers      map[string]string `json:"headers,omitempty"`
}

// profileID is the form of a profile id.
var profileID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// profile is a checked profile: its client and operations.
type profile struct {
	client     *goopenai.Client
	operations []string
}

// buildProfiles checks the profiles and makes their clients, all sending
// through hc.
func buildProfiles(base config, list []ProfileSettings, hc *http.Client) (map[string]profile, error) {
	out := make(map[string]profile, len(list))
	for i, ps := range list {
		key := fmt.Sprintf("profiles[%d]", i)
		if !profileID.MatchString(ps.ID) {
			return nil, invalidSetting(key+".id", "%q is not a profile id (letters, digits, '.', '_', '-')", ps.ID)
		}
		if _, dup := out[ps.ID]; dup {
			return nil, invalidSetting(key+".id", "profile %q is listed twice", ps.ID)
		}
		for j, op := range ps.Operations {
			if !slices.Contains([]string{OpGenerate, OpEmbed, OpImage, OpTTS}, op) {
				return nil, invalidSetting(fmt.Sprintf("%s.operations[%d]", key, j), "%q is not one of generate, embed, image, tts", op)
			}
		}
		cfg, err := base.withProfile(key, ps)
		if err != nil {
			return nil, err
		}
		out[ps.ID] = profile{client: newClient(cfg, hc), operations: slices.Clone(ps.Operations)}
	}
	return out, nil
}

// withProfile is c with the profile's key, endpoint and headers.
func (c config) withProfile(key string, ps ProfileSettings) (config, error) {
	if ps.Secrets.APIKey != "" {
		c.apiKey = ps.Secrets.APIKey
	}
	if ps.Spec.BaseURL != "" {
		u, err := url.Parse(ps.Spec.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return c, invalidSetting(key+".spec.base_url", "%q is not an http(s) URL", ps.Spec.BaseURL)
		}
		c.baseURL = strings.TrimRight(ps.Spec.BaseURL, "/")
	}
	if ps.Spec.Organization != "" {
		c.organization = ps.Spec.Organization
	}
	if ps.Spec.Project != "" {
		c.project = ps.Spec.Project
	}
	extra, err := headerOf(ps.Spec.Headers)
	if err != nil {
		return c, fault.Wrap(fault.Validation, err, "", "settings.%s.spec", key)
	}
	c.headers = c.headers.Clone()
	for k, vs := range extra {
		c.headers[k] = vs
	}
	if err := c.checkAuth(); err != nil {
		return c, fault.Wrap(fault.Validation, err, "", "settings.%s.secrets", key)
	}
	return c, nil
}

// CheckProfile returns nil when the provider can generate with profile:
// the empty profile, or one of settings.profiles that serves generate.
// Otherwise it is a Validation error naming the profile.
func (p *Provider) CheckProfile(name string) error {
	_, err := p.clientFor(name)
	return err
}

// clientFor returns the client of a request's profile.
func (p *Provider) clientFor(name string) (*goopenai.Client, error) {
	if name == "" {
		return p.client, nil
	}
	pr, ok := p.profiles[name]
	if !ok {
		have := "none"
		if len(p.profiles) > 0 {
			have = strings.Join(slices.Sorted(maps.Keys(p.profiles)), ", ")
		}
		return nil, fault.New(fault.Validation, opGenerate, "profile %q: the provider has no such profile (profiles: %s)", name, have)
	}
	if len(pr.operations) > 0 && !slices.Contains(pr.operations, OpGenerate) {
		return nil, fault.New(fault.Validation, opGenerate, "profile %q does not serve generate (operations: %s)",
			name, strings.Join(pr.operations, ", "))
	}
	return pr.client, nil
}
