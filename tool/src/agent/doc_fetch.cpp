// fetch_url's guard (see doc_fetch.h): the allowlist, the address classes,
// resolving a host once.
#include "agent/doc_fetch.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <cstring>

#include "util/error.h"
#include "util/url.h"

namespace kopt::agent::docfetch {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

AddressClass classify_v4(uint32_t a) {
  const auto in = [a](uint32_t net, int bits) { return bits == 0 || (a >> (32 - bits)) == (net >> (32 - bits)); };
  if (in(0x00000000, 8)) return AddressClass::unspecified;   // 0.0.0.0/8 "this network"
  if (in(0x7F000000, 8)) return AddressClass::loopback;      // 127/8
  if (in(0x0A000000, 8) || in(0xAC100000, 12) || in(0xC0A80000, 16)) return AddressClass::private_net;
  if (in(0xA9FE0000, 16)) return AddressClass::link_local;   // 169.254/16
  if (in(0x64400000, 10)) return AddressClass::cgnat;        // 100.64/10
  if (in(0xE0000000, 4)) return AddressClass::multicast;     // 224/4
  if (in(0xF0000000, 4)) return AddressClass::reserved;      // 240/4, 255.255.255.255
  if (in(0xC0000000, 24) || in(0xC0000200, 24) || in(0xC6120000, 15) || in(0xC6336400, 24) ||
      in(0xCB007100, 24) || in(0xC0586300, 24))
    return AddressClass::reserved;  // 192.0.0/24, 192.0.2/24, 198.18/15, 198.51.100/24, 203.0.113/24, 192.88.99/24
  return AddressClass::public_address;
}

uint32_t v4_at(const unsigned char* b) {
  return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | uint32_t{b[3]};
}

AddressClass classify_v6(const unsigned char* b) {
  const auto zeros = [b](int from, int to) {
    for (int i = from; i < to; ++i)
      if (b[i]) return false;
    return true;
  };
  if (zeros(0, 16)) return AddressClass::unspecified;
  if (zeros(0, 15) && b[15] == 1) return AddressClass::loopback;
  if (zeros(0, 10) && b[10] == 0xff && b[11] == 0xff) return classify_v4(v4_at(b + 12));  // ::ffff:a.b.c.d
  if (zeros(0, 12)) return classify_v4(v4_at(b + 12));                                    // ::a.b.c.d
  if (b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && zeros(4, 12))
    return classify_v4(v4_at(b + 12));                                                    // 64:ff9b::/96 NAT64
  if (b[0] == 0x20 && b[1] == 0x02) return classify_v4(v4_at(b + 2));                     // 2002::/16 6to4
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) return AddressClass::link_local;            // fe80::/10
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0) return AddressClass::private_net;           // fec0::/10
  if ((b[0] & 0xfe) == 0xfc) return AddressClass::private_net;                           // fc00::/7
  if (b[0] == 0xff) return AddressClass::multicast;                                      // ff00::/8
  if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0d && b[3] == 0xb8) return AddressClass::reserved;  // 2001:db8::/32
  if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x00 && b[3] == 0x00) return AddressClass::reserved;  // Teredo
  if ((b[0] & 0xe0) == 0x20) return AddressClass::public_address;                        // 2000::/3
  return AddressClass::reserved;  // 64:ff9b:1::/48, 100::/64 and everything unassigned
}

bool is_host_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_'; }

/// A DNS name or an IP literal (without brackets).
bool valid_host(const std::string& h, bool bracketed) {
  if (h.empty() || h.size() > 253) return false;
  if (bracketed) return classify(h) != AddressClass::invalid && h.find(':') != std::string::npos;
  return std::all_of(h.begin(), h.end(), is_host_char) && h.front() != '.' && h.back() != '.' &&
         h.find("..") == std::string::npos;
}

std::optional<int> parse_port(const std::string& s) {
  if (s.empty() || s.size() > 5 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  const int p = std::stoi(s);
  if (p < 1 || p > 65535) return std::nullopt;
  return p;
}

std::string host_text(const std::string& host) {
  return host.find(':') != std::string::npos ? "[" + host + "]" : host;
}

std::string allow_list_text(const Policy& p) {
  std::string out;
  size_t n = 0;
  for (const auto& e : p.allow) {
    if (++n > 12) {
      out += ", ...";
      break;
    }
    out += (out.empty() ? "" : ", ") + e.text;
  }
  return out;
}

bool host_matches(const AllowEntry& e, const std::string& host) {
  if (!e.subdomains) return host == e.host;
  return host.size() > e.host.size() + 1 && host.compare(host.size() - e.host.size(), e.host.size(), e.host) == 0 &&
         host[host.size() - e.host.size() - 1] == '.';
}

}  // namespace

const std::vector<std::string>& default_hosts() {
  static const std::vector<std::string> hosts = {
      "docs.nvidia.com",     // CUDA C++ Programming Guide, Best Practices, PTX ISA, Nsight Compute
      "developer.nvidia.com",
      "nvidia.github.io",    // CUTLASS, CCCL (CUB, Thrust, libcu++)
      "en.cppreference.com",
      "cppreference.com",
      "cplusplus.com",
      "www.cplusplus.com",
      "docs.python.org",
      "numpy.org",
      "pytorch.org",
      "docs.pytorch.org",
  };
  return hosts;
}

const char* class_name(AddressClass c) {
  switch (c) {
    case AddressClass::public_address: return "public";
    case AddressClass::loopback: return "loopback";
    case AddressClass::link_local: return "link-local";
    case AddressClass::private_net: return "private";
    case AddressClass::cgnat: return "CGNAT";
    case AddressClass::unspecified: return "unspecified";
    case AddressClass::multicast: return "multicast";
    case AddressClass::reserved: return "reserved";
    case AddressClass::invalid: return "invalid";
  }
  return "invalid";
}

AddressClass classify(const std::string& text) {
  std::string ip = text;
  if (ip.size() >= 2 && ip.front() == '[' && ip.back() == ']') ip = ip.substr(1, ip.size() - 2);
  if (const size_t zone = ip.find('%'); zone != std::string::npos && ip.find(':') != std::string::npos)
    ip.erase(zone);  // fe80::1%eth0
  unsigned char buf[16];
  if (inet_pton(AF_INET, ip.c_str(), buf) == 1) return classify_v4(v4_at(buf));
  if (inet_pton(AF_INET6, ip.c_str(), buf) == 1) return classify_v6(buf);
  return AddressClass::invalid;
}

AddressClass classify(const sockaddr* a, std::string* text) {
  if (!a) return AddressClass::invalid;
  char buf[INET6_ADDRSTRLEN] = {0};
  if (a->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(a);
    if (text && inet_ntop(AF_INET, &in->sin_addr, buf, sizeof buf)) *text = buf;
    return classify_v4(ntohl(in->sin_addr.s_addr));
  }
  if (a->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(a);
    if (text && inet_ntop(AF_INET6, &in6->sin6_addr, buf, sizeof buf)) *text = buf;
    return classify_v6(in6->sin6_addr.s6_addr);
  }
  return AddressClass::invalid;
}

AllowEntry parse_entry(const std::string& raw, const std::string& origin) {
  const auto bad = [&](const std::string& why) -> AllowEntry {
    throw UsageError("kopt.agent.104", origin + " '" + raw.substr(0, 200) + "': " + why +
                                           " (expected [http://|https://]HOST[:PORT] or *.DOMAIN[:PORT])");
  };
  AllowEntry e;
  e.text = trim(raw);
  std::string s = lower(e.text);
  if (s.empty()) return bad("an empty entry");
  if (s.rfind("http://", 0) == 0) {
    e.http = true;
    s = s.substr(7);
  } else if (s.rfind("https://", 0) == 0) {
    s = s.substr(8);
  } else if (s.find("://") != std::string::npos) {
    return bad("only http:// and https:// can be allowed");
  }
  if (!s.empty() && s.back() == '/') s.pop_back();
  if (s.find_first_of("/?#@ \t") != std::string::npos) return bad("a host, not a URL with a path or credentials");
  if (s.rfind("*.", 0) == 0) {
    e.subdomains = true;
    s = s.substr(2);
  }
  std::string port;
  bool bracketed = false;
  if (!s.empty() && s.front() == '[') {
    const size_t close = s.find(']');
    if (close == std::string::npos) return bad("an unclosed '['");
    e.host = s.substr(1, close - 1);
    bracketed = true;
    const std::string after = s.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return bad("text after the IPv6 address");
      port = after.substr(1);
      if (port.empty()) return bad("an empty port");
    }
  } else {
    const size_t colon = s.find(':');
    e.host = s.substr(0, colon);
    if (colon != std::string::npos) {
      port = s.substr(colon + 1);
      if (port.empty()) return bad("an empty port");
    }
  }
  if (!valid_host(e.host, bracketed)) return bad("not a host name or IP address");
  if (e.subdomains && (bracketed || classify(e.host) != AddressClass::invalid || e.host.find('.') == std::string::npos))
    return bad("*. needs a domain with a dot, such as *.example.com");
  if (!port.empty()) {
    e.port = parse_port(port);
    if (!e.port) return bad("the port must be 1 to 65535");
  }
  return e;
}

Policy make_policy(const std::vector<std::string>& cli, const char* env_value,
                   const std::vector<std::string>& unchecked_endpoints) {
  Policy p;
  for (const auto& h : default_hosts()) p.allow.push_back(parse_entry(h, "the default allowlist"));
  for (const auto& c : cli) p.allow.push_back(parse_entry(c, "--doc-fetch-allow"));
  if (env_value) {
    std::string item;
    const std::string v = env_value;
    for (size_t i = 0; i <= v.size(); ++i) {
      const char c = i < v.size() ? v[i] : ',';
      if (c == ',' || std::isspace(static_cast<unsigned char>(c))) {
        if (!item.empty()) p.allow.push_back(parse_entry(item, "KOPT_DOC_FETCH_ALLOW"));
        item.clear();
      } else {
        item += c;
      }
    }
  }
  p.unchecked_endpoints = unchecked_endpoints;
  return p;
}

std::string Target::resolve_entry() const {
  if (classify(host) != AddressClass::invalid || addresses.empty()) return "";
  std::string out = host + ":" + std::to_string(port) + ":";
  for (size_t i = 0; i < addresses.size(); ++i) out += (i ? "," : "") + host_text(addresses[i]);
  return out;
}

std::optional<Target> check(const Policy& policy, const std::string& url, std::string& refusal) {
  const auto refuse = [&](const std::string& why) -> std::optional<Target> {
    refusal = why;
    return std::nullopt;
  };
  const std::optional<url::Parts> parts = url::split(url);
  if (!parts || (parts->scheme != "https" && parts->scheme != "http"))
    return refuse("only http(s) URLs can be fetched: https://, or http:// for a host the user allowed as http://HOST");
  if (parts->has_userinfo) return refuse("the URL must not carry credentials (user:password@)");
  const std::string& host = parts->host;
  if (host.empty()) return refuse("the URL has no host");
  const bool https = parts->scheme == "https";
  int port = https ? 443 : 80;
  if (!parts->port.empty()) {
    const std::optional<int> p = parse_port(parts->port);
    if (!p) return refuse("the URL's port must be 1 to 65535");
    port = *p;
  }

  // The allowlist.
  bool host_listed = false, scheme_ok = false;
  std::vector<int> ports;
  for (const auto& e : policy.allow) {
    if (!host_matches(e, host)) continue;
    host_listed = true;
    if (!https && !e.http) continue;
    scheme_ok = true;
    const int allowed = e.port ? *e.port : (https ? 443 : 80);
    if (allowed == port) {
      ports.clear();
      ports.push_back(-1);  // allowed
      break;
    }
    ports.push_back(allowed);
  }
  const std::string shown = host_text(host);
  const std::string extend = "; the user can allow more with --doc-fetch-allow ENTRY or KOPT_DOC_FETCH_ALLOW";
  if (!host_listed)
    return refuse("'" + shown + "' is not on the documentation allowlist (" + allow_list_text(policy) + ")" + extend);
  if (!scheme_ok)
    return refuse("plain http:// is not allowed for '" + shown + "': use https://" + extend + " (http://HOST allows http)");
  if (ports.empty() || ports.front() != -1) {
    std::string list;
    for (int p : ports) list += (list.empty() ? "" : ", ") + std::to_string(p);
    return refuse("port " + std::to_string(port) + " is not allowed for '" + shown + "' (allowed: " + list + ")" + extend);
  }

  Target t;
  t.host = host;
  t.port = port;
  const std::string endpoint = shown + ":" + std::to_string(port);
  t.unchecked = std::find(policy.unchecked_endpoints.begin(), policy.unchecked_endpoints.end(), endpoint) !=
                policy.unchecked_endpoints.end();

  // Resolve once; every address must be public.
  if (classify(host) != AddressClass::invalid) {
    t.addresses = {host};
  } else {
    addrinfo hints;
    std::memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res);
    if (rc != 0) return refuse("cannot resolve '" + shown + "': " + gai_strerror(rc));
    for (const addrinfo* a = res; a; a = a->ai_next) {
      std::string text;
      if (classify(a->ai_addr, &text) == AddressClass::invalid || text.empty()) continue;
      if (std::find(t.addresses.begin(), t.addresses.end(), text) == t.addresses.end()) t.addresses.push_back(text);
    }
    freeaddrinfo(res);
    if (t.addresses.empty()) return refuse("cannot resolve '" + shown + "': no IPv4 or IPv6 address");
  }
  if (!t.unchecked)
    for (const auto& a : t.addresses) {
      const AddressClass c = classify(a);
      if (c == AddressClass::public_address) continue;
      const std::string what = std::string(c == AddressClass::unspecified ? "an " : "a ") + class_name(c) + " address";
      return refuse((a == host ? shown + " is " + what : "'" + shown + "' resolves to " + a + ", " + what) +
                    ": fetching from this machine or a private network is refused");
    }
  return t;
}

}  // namespace kopt::agent::docfetch
