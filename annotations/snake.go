package annotations

import (
	"strings"
	"unicode"
)

// SnakeCase returns the lower snake_case of a Go identifier, keeping
// acronyms together: SendEmail -> send_email, SendHTTPRequest ->
// send_http_request, UserID -> user_id, OAuth2Token -> o_auth2_token,
// Send_Email -> send_email.
func SnakeCase(name string) string {
	rs := []rune(name)
	var b strings.Builder
	for i, r := range rs {
		if unicode.IsUpper(r) && i > 0 {
			prev := rs[i-1]
			nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
			// A word starts at an upper case letter after a lower case
			// letter or digit (sendEmail, v2Job), and at the last upper
			// case letter of an acronym followed by lower case (HTTPRequest).
			if unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && nextLower) {
				b.WriteByte('_')
			}
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}
