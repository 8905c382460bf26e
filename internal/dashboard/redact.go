package dashboard

import "net/url"

// Redact returns rawURL with its password replaced by "xxxxx", or
// "(unparsable URL)" when it cannot be parsed, so that no part of a
// malformed URL holding a password is shown.
func Redact(rawURL string) string {
	if rawURL == "" {
		return ""
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
