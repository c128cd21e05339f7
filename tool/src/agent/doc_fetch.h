// What fetch_url (--allow-doc-fetch) may fetch: the model chooses the URL, so
// the tool must not be turned against the machine it runs on or the network
// around it (cloud metadata at 169.254.169.254, services on localhost, the
// private network), nor send the conversation to any host.
//
//   - Only hosts on an allowlist: a short list of documentation hosts
//     (default_hosts()), extended by the user with --doc-fetch-allow ENTRY
//     (repeatable) and KOPT_DOC_FETCH_ALLOW (entries separated by commas or
//     blanks). An entry is [http://|https://]HOST[:PORT] or *.DOMAIN[:PORT]
//     (every subdomain of DOMAIN, not DOMAIN itself).
//   - https only, on port 443; an entry written http://HOST also allows plain
//     http to that host (port 80); an entry with :PORT allows that port
//     instead of the default one.
//   - No credentials in the URL.
//   - The host is resolved once; every address must be public (classify():
//     not loopback, link-local, private, CGNAT, unspecified, multicast or
//     reserved, IPv4-mapped and NAT64 IPv6 addresses judged by their IPv4
//     address). The connection is pinned to the checked addresses
//     (CURLOPT_RESOLVE) and each socket's address is checked again before it
//     connects, so DNS rebinding cannot swap it; no proxy is used.
//   - Redirects are followed by the tool, at most kMaxRedirects, each hop
//     checked like the first.
// Internal to the agent.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

struct sockaddr;

namespace kopt::agent::docfetch {

inline constexpr int kMaxRedirects = 5;

/// The documentation hosts allowed by default (https only).
const std::vector<std::string>& default_hosts();

// ---------------------------------------------------------------------------
// Addresses

enum class AddressClass {
  public_address,
  loopback,      // 127/8, ::1
  link_local,    // 169.254/16, fe80::/10 (cloud metadata lives here)
  private_net,   // 10/8, 172.16/12, 192.168/16, fc00::/7, fec0::/10
  cgnat,         // 100.64/10
  unspecified,   // 0/8, ::
  multicast,     // 224/4, ff00::/8
  reserved,      // 240/4 and broadcast, 192.0.0/24, documentation and benchmarking ranges, 2001:db8::/32, ...
  invalid,       // not an IP address
};

/// "public", "loopback", "link-local", "private", "CGNAT", "unspecified",
/// "multicast", "reserved", "invalid".
const char* class_name(AddressClass c);

/// The class of a numeric IPv4 ("10.0.0.1") or IPv6 ("fe80::1", also in
/// brackets) address; IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible
/// (::a.b.c.d), NAT64 (64:ff9b::/96) and 6to4 (2002::/16) addresses are
/// judged by the IPv4 address inside.
AddressClass classify(const std::string& ip);

/// The same for a socket address (AF_INET or AF_INET6; anything else is
/// `invalid`); `text` (when given) gets the address as text.
AddressClass classify(const sockaddr* address, std::string* text = nullptr);

// ---------------------------------------------------------------------------
// The allowlist

struct AllowEntry {
  std::string host;        // lower case; for *.DOMAIN, DOMAIN
  bool subdomains = false; // *.DOMAIN
  bool http = false;       // http://HOST: plain http allowed too
  std::optional<int> port; // :PORT (else 443 for https, 80 for http)
  std::string text;        // as given
};

/// Parses one entry. Throws UsageError(kopt.agent.104) naming `origin` (the
/// option or variable) for a malformed one.
AllowEntry parse_entry(const std::string& text, const std::string& origin);

struct Policy {
  std::vector<AllowEntry> allow;
  /// Testing only (never from the command line): "host:port" endpoints whose
  /// addresses are not checked, so tests can serve pages from 127.0.0.1.
  std::vector<std::string> unchecked_endpoints;
};

/// The default hosts, then `cli` (--doc-fetch-allow), then the entries of
/// `env_value` (KOPT_DOC_FETCH_ALLOW; null when unset). Throws UsageError
/// (kopt.agent.104) for a malformed entry.
Policy make_policy(const std::vector<std::string>& cli, const char* env_value,
                   const std::vector<std::string>& unchecked_endpoints = {});

/// A URL that passed the checks: where to connect.
struct Target {
  std::string host;                   // lower case, IPv6 without brackets
  int port = 0;
  std::vector<std::string> addresses; // the checked addresses, numeric
  bool unchecked = false;             // a testing endpoint
  /// CURLOPT_RESOLVE's entry pinning the host to `addresses` ("" for an IP literal).
  std::string resolve_entry() const;
};

/// Checks `url` against the policy and resolves its host. Returns the target,
/// or (in `refusal`) why the URL may not be fetched, in words the model can act on.
std::optional<Target> check(const Policy& policy, const std::string& url, std::string& refusal);

}  // namespace kopt::agent::docfetch
