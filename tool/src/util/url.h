// URLs as the tool shows them: credentials removed before a URL is printed,
// logged or stored (the real URL is still the one requests go to).
//
// A URL may carry secrets in two places: the user-info
// (`https://user:password@host/...`, or a token as the user name) and query or
// fragment parameters whose names look like credentials (`?api_key=...`,
// `&sig=...`). redact_url() removes the user-info and masks those values;
// redact_text() does the same to every URL inside a longer text (an error
// message, a saved request) and also removes the secret pieces themselves
// wherever they occur alone.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace kopt::url {

/// What a masked value is replaced by.
inline constexpr const char* kRedacted = "[REDACTED]";

/// The parts of `scheme://userinfo@host:port/path?query#fragment`.
struct Parts {
  std::string scheme;    // lower case ("https")
  std::string userinfo;  // as written, without the '@' ("" when none)
  bool has_userinfo = false;
  std::string host;      // lower case; an IPv6 literal without its brackets
  bool ipv6_literal = false;
  std::string port;      // as written ("" when none)
  std::string rest;      // path, query and fragment as written ("/v1?x=1")
};

/// Splits an absolute URL. nullopt when `url` has no `scheme://`, or when its
/// authority is malformed (an unclosed '[', a port that is not digits).
std::optional<Parts> split(const std::string& url);

/// Whether a query parameter's name looks like a credential: case-insensitive,
/// '-' taken as '_', percent-decoded; key, api_key, apikey, token,
/// access_token, secret, password, passwd, pwd, auth, sig, signature,
/// credential, and any name containing key, token, secret, passw,
/// signature or credential (x-amz-signature, client_secret, refresh_token...).
bool is_credential_name(const std::string& name);

/// `url` for display: the user-info removed ("https://u:p@h/x" ->
/// "https://h/x") and the value of every credential-like parameter of the
/// query and the fragment replaced by kRedacted. A text without "scheme://"
/// loses anything up to an '@' before its first '/', '?' or '#'.
std::string redact_url(const std::string& url);

/// The secret pieces of `url` that redact_text() also removes from free text:
/// the password (or, without a ':', the whole user-info, which is then a
/// token) and every credential-like parameter value, each as written and
/// percent-decoded; pieces shorter than 6 characters are left out (they would
/// match ordinary words).
std::vector<std::string> url_secrets(const std::string& url);

/// `text` with every URL in it ("scheme://" up to a blank, a quote, '<', '>',
/// '`' or '\') passed through redact_url(), then every string of `secrets`
/// replaced by kRedacted.
std::string redact_text(const std::string& text, const std::vector<std::string>& secrets = {});

}  // namespace kopt::url
