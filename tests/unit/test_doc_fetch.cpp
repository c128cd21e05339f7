// agent/doc_fetch.h: what fetch_url may fetch. The address classes (table
// tests for IPv4, IPv6 and IPv4 inside IPv6), the allowlist's entries, and
// check() refusing hosts, schemes, ports, credentials and non-public
// addresses. No network: every host here is an IP literal or localhost. The
// tool itself against a local server is in test_agent.cpp (AgentTools.FetchUrl*).
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "agent/doc_fetch.h"
#include "util/error.h"

namespace {

namespace df = kopt::agent::docfetch;
using df::AddressClass;

TEST(DocFetch, ClassifiesIPv4) {
  const std::vector<std::pair<const char*, AddressClass>> table = {
      {"8.8.8.8", AddressClass::public_address},
      {"93.184.216.34", AddressClass::public_address},
      {"1.1.1.1", AddressClass::public_address},
      {"0.0.0.0", AddressClass::unspecified},
      {"0.1.2.3", AddressClass::unspecified},
      {"127.0.0.1", AddressClass::loopback},
      {"127.255.255.254", AddressClass::loopback},
      {"10.0.0.1", AddressClass::private_net},
      {"10.255.255.255", AddressClass::private_net},
      {"172.16.0.1", AddressClass::private_net},
      {"172.31.255.255", AddressClass::private_net},
      {"172.15.255.255", AddressClass::public_address},
      {"172.32.0.0", AddressClass::public_address},
      {"192.168.1.1", AddressClass::private_net},
      {"192.169.0.1", AddressClass::public_address},
      {"169.254.169.254", AddressClass::link_local},  // cloud metadata
      {"169.254.0.1", AddressClass::link_local},
      {"169.255.0.1", AddressClass::public_address},
      {"100.64.0.1", AddressClass::cgnat},
      {"100.127.255.255", AddressClass::cgnat},
      {"100.63.255.255", AddressClass::public_address},
      {"100.128.0.0", AddressClass::public_address},
      {"224.0.0.1", AddressClass::multicast},
      {"239.255.255.250", AddressClass::multicast},
      {"240.0.0.1", AddressClass::reserved},
      {"255.255.255.255", AddressClass::reserved},
      {"192.0.0.8", AddressClass::reserved},
      {"192.0.2.1", AddressClass::reserved},
      {"198.18.0.1", AddressClass::reserved},
      {"198.51.100.7", AddressClass::reserved},
      {"203.0.113.9", AddressClass::reserved},
  };
  for (const auto& [ip, want] : table) EXPECT_EQ(df::classify(ip), want) << ip << ": " << df::class_name(df::classify(ip));
}

TEST(DocFetch, ClassifiesIPv6AndIPv4InsideIt) {
  const std::vector<std::pair<const char*, AddressClass>> table = {
      {"2606:4700:4700::1111", AddressClass::public_address},
      {"2a00:1450:4001:82b::200e", AddressClass::public_address},
      {"::", AddressClass::unspecified},
      {"::1", AddressClass::loopback},
      {"[::1]", AddressClass::loopback},
      {"0:0:0:0:0:0:0:1", AddressClass::loopback},
      {"fe80::1", AddressClass::link_local},
      {"fe80::1%eth0", AddressClass::link_local},
      {"febf::1", AddressClass::link_local},
      {"fec0::1", AddressClass::private_net},
      {"fc00::1", AddressClass::private_net},
      {"fd12:3456:789a::1", AddressClass::private_net},
      {"ff02::1", AddressClass::multicast},
      {"2001:db8::1", AddressClass::reserved},
      {"2001:0:4136:e378::1", AddressClass::reserved},  // Teredo
      {"100::1", AddressClass::reserved},
      {"4000::1", AddressClass::reserved},
      // IPv4-mapped, -compatible, NAT64 and 6to4: judged by the IPv4 address.
      {"::ffff:127.0.0.1", AddressClass::loopback},
      {"::ffff:7f00:1", AddressClass::loopback},
      {"::ffff:169.254.169.254", AddressClass::link_local},
      {"::ffff:10.1.2.3", AddressClass::private_net},
      {"::ffff:8.8.8.8", AddressClass::public_address},
      {"::127.0.0.1", AddressClass::loopback},
      {"64:ff9b::a9fe:a9fe", AddressClass::link_local},
      {"64:ff9b::808:808", AddressClass::public_address},
      {"2002:7f00:1::1", AddressClass::loopback},
      {"2002:c0a8:101::1", AddressClass::private_net},
      {"2002:808:808::1", AddressClass::public_address},
  };
  for (const auto& [ip, want] : table) EXPECT_EQ(df::classify(ip), want) << ip << ": " << df::class_name(df::classify(ip));
  for (const char* bad : {"", "localhost", "1.2.3", "256.1.1.1", "::g", "01.2.3.4x", "docs.nvidia.com"})
    EXPECT_EQ(df::classify(bad), AddressClass::invalid) << bad;
}

TEST(DocFetch, ClassifiesSocketAddresses) {
  sockaddr_in in{};
  in.sin_family = AF_INET;
  inet_pton(AF_INET, "169.254.169.254", &in.sin_addr);
  std::string text;
  EXPECT_EQ(df::classify(reinterpret_cast<const sockaddr*>(&in), &text), AddressClass::link_local);
  EXPECT_EQ(text, "169.254.169.254");
  sockaddr_in6 in6{};
  in6.sin6_family = AF_INET6;
  inet_pton(AF_INET6, "::ffff:127.0.0.1", &in6.sin6_addr);
  EXPECT_EQ(df::classify(reinterpret_cast<const sockaddr*>(&in6), &text), AddressClass::loopback);
  inet_pton(AF_INET6, "2606:4700:4700::1111", &in6.sin6_addr);
  EXPECT_EQ(df::classify(reinterpret_cast<const sockaddr*>(&in6), &text), AddressClass::public_address);
  EXPECT_EQ(df::classify(nullptr), AddressClass::invalid);
}

TEST(DocFetch, AllowlistEntries) {
  df::AllowEntry e = df::parse_entry("Docs.Example.com", "--doc-fetch-allow");
  EXPECT_EQ(e.host, "docs.example.com");
  EXPECT_FALSE(e.http);
  EXPECT_FALSE(e.subdomains);
  EXPECT_FALSE(e.port);
  e = df::parse_entry("http://intranet.example:8080/", "--doc-fetch-allow");
  EXPECT_TRUE(e.http);
  EXPECT_EQ(e.port, 8080);
  e = df::parse_entry("*.readthedocs.io", "x");
  EXPECT_TRUE(e.subdomains);
  EXPECT_EQ(e.host, "readthedocs.io");
  e = df::parse_entry("https://[2606:4700::1]:443", "x");
  EXPECT_EQ(e.host, "2606:4700::1");
  EXPECT_EQ(e.port, 443);
  for (const char* bad : {"", "ftp://h", "https://h/path", "u:p@h", "h:0", "h:70000", "h:", "*.com", "*.[::1]",
                          "bad host", "h..x", "[::1", "https://h?x"}) {
    try {
      df::parse_entry(bad, "KOPT_DOC_FETCH_ALLOW");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const kopt::UsageError& err) {
      EXPECT_EQ(err.id(), "kopt.agent.104");
      EXPECT_EQ(std::string(err.what()).rfind("[kopt.agent.104] KOPT_DOC_FETCH_ALLOW '", 0), 0u) << err.what();
    }
  }
  const df::Policy p = df::make_policy({"a.example"}, "b.example, http://c.example:81  *.d.example");
  ASSERT_EQ(p.allow.size(), df::default_hosts().size() + 4);
  EXPECT_EQ(p.allow[df::default_hosts().size()].host, "a.example");
  EXPECT_EQ(p.allow.back().host, "d.example");
  EXPECT_THROW(df::make_policy({}, "ok.example,bad/one"), kopt::UsageError);
}

/// check()'s refusal for `url`, "" when it passes.
std::string refusal(const df::Policy& p, const std::string& url) {
  std::string why;
  return df::check(p, url, why) ? "" : why;
}

TEST(DocFetch, RefusesWhatIsNotAnAllowedHttpsHost) {
  const df::Policy p = df::make_policy({"http://intranet.example:8080", "*.mirror.example"}, nullptr);
  EXPECT_NE(refusal(p, "https://evil.example.com/x").find("'evil.example.com' is not on the documentation allowlist "
                                                         "(docs.nvidia.com, developer.nvidia.com"),
            std::string::npos);
  EXPECT_NE(refusal(p, "https://evil.example.com/x").find("--doc-fetch-allow"), std::string::npos);
  EXPECT_NE(refusal(p, "https://docs.nvidia.com.evil.example/").find("not on the documentation allowlist"),
            std::string::npos);
  EXPECT_NE(refusal(p, "https://mirror.example/").find("not on the documentation allowlist"), std::string::npos)
      << "*.DOMAIN is the subdomains only";
  EXPECT_NE(refusal(p, "http://docs.nvidia.com/cuda/").find("plain http:// is not allowed for 'docs.nvidia.com'"),
            std::string::npos);
  EXPECT_NE(refusal(p, "https://docs.nvidia.com:8443/").find("port 8443 is not allowed for 'docs.nvidia.com' (allowed: 443)"),
            std::string::npos);
  EXPECT_NE(refusal(p, "http://intranet.example/").find("port 80 is not allowed"), std::string::npos);
  EXPECT_NE(refusal(p, "https://user:pw@docs.nvidia.com/").find("must not carry credentials"), std::string::npos);
  for (const char* u : {"file:///etc/passwd", "gopher://docs.nvidia.com/", "docs.nvidia.com/cuda", "ftp://x/"})
    EXPECT_NE(refusal(p, u).find("only http(s) URLs can be fetched"), std::string::npos) << u;
}

TEST(DocFetch, RefusesLoopbackLinkLocalAndPrivateAddressesEvenWhenAllowed) {
  const df::Policy p = df::make_policy({"http://127.0.0.1:8000", "http://[::1]:8000", "http://169.254.169.254",
                                        "http://[::ffff:127.0.0.1]", "http://10.0.0.7", "http://localhost:8000",
                                        "http://0.0.0.0", "http://100.64.1.1", "http://224.0.0.1"},
                                       nullptr);
  EXPECT_EQ(refusal(p, "http://127.0.0.1:8000/x"),
            "127.0.0.1 is a loopback address: fetching from this machine or a private network is refused");
  EXPECT_NE(refusal(p, "http://[::1]:8000/").find("[::1] is a loopback address"), std::string::npos);
  EXPECT_NE(refusal(p, "http://169.254.169.254/latest/meta-data/").find("a link-local address"), std::string::npos);
  EXPECT_NE(refusal(p, "http://[::ffff:127.0.0.1]/").find("a loopback address"), std::string::npos);
  EXPECT_NE(refusal(p, "http://10.0.0.7/").find("a private address"), std::string::npos);
  EXPECT_NE(refusal(p, "http://0.0.0.0/").find("an unspecified address"), std::string::npos);
  EXPECT_NE(refusal(p, "http://100.64.1.1/").find("a CGNAT address"), std::string::npos);
  EXPECT_NE(refusal(p, "http://224.0.0.1/").find("a multicast address"), std::string::npos);
  // A name that resolves to loopback (from /etc/hosts: no network needed).
  EXPECT_NE(refusal(p, "http://localhost:8000/").find("'localhost' resolves to "), std::string::npos)
      << refusal(p, "http://localhost:8000/");
  EXPECT_NE(refusal(p, "http://localhost:8000/").find("a loopback address"), std::string::npos);
}

TEST(DocFetch, TargetsArePinnedToTheCheckedAddresses) {
  df::Target t;
  t.host = "docs.example";
  t.port = 443;
  t.addresses = {"93.184.216.34", "2606:2800:220:1::1"};
  EXPECT_EQ(t.resolve_entry(), "docs.example:443:93.184.216.34,[2606:2800:220:1::1]");
  t.host = "93.184.216.34";
  EXPECT_EQ(t.resolve_entry(), "") << "an IP literal needs no pin";
  // A testing endpoint skips the address check (and only that endpoint).
  const df::Policy p = df::make_policy({"http://127.0.0.1:8000"}, nullptr, {"127.0.0.1:8000"});
  std::string why;
  const auto target = df::check(p, "http://127.0.0.1:8000/guide", why);
  ASSERT_TRUE(target) << why;
  EXPECT_TRUE(target->unchecked);
  EXPECT_EQ(target->port, 8000);
  EXPECT_EQ(target->addresses, std::vector<std::string>{"127.0.0.1"});
  EXPECT_NE(refusal(p, "http://127.0.0.1:8001/").find("port 8001 is not allowed"), std::string::npos);
}

}  // namespace
