// util/url.h: URLs without their credentials, in URLs and in free text.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "util/url.h"

namespace {

using kopt::url::redact_text;
using kopt::url::redact_url;

TEST(Url, RedactUrlTable) {
  const std::vector<std::pair<std::string, std::string>> table = {
      {"http://user:secret@host/v1", "http://host/v1"},
      {"https://ghp_token123@github.com/x", "https://github.com/x"},
      {"http://u:p@host", "http://host"},
      {"http://u:p@host:8080?q=1", "http://host:8080?q=1"},
      {"http://u:p@[::1]:8080/v1", "http://[::1]:8080/v1"},
      {"http://a@b@host/v1", "http://host/v1"},  // the last '@' ends the user-info
      {"https://h/v1?api-version=2024-10-21&api_key=XYZ", "https://h/v1?api-version=2024-10-21&api_key=[REDACTED]"},
      {"https://h/p?Token=abc&x=1#access_token=t&state=s", "https://h/p?Token=[REDACTED]&x=1#access_token=[REDACTED]&state=s"},
      {"https://acct.blob.core.windows.net/c/b?sv=2022&se=2030&sig=a%2Bb%3D", "https://acct.blob.core.windows.net/c/b?sv=2022&se=2030&sig=[REDACTED]"},
      {"https://s3/x?X-Amz-Credential=AK&X-Amz-Date=1&X-Amz-Signature=ff", "https://s3/x?X-Amz-Credential=[REDACTED]&X-Amz-Date=1&X-Amz-Signature=[REDACTED]"},
      {"https://h/?%61pi_key=zz&KEY=k&password=p&client_secret=c", "https://h/?%61pi_key=[REDACTED]&KEY=[REDACTED]&password=[REDACTED]&client_secret=[REDACTED]"},
      {"https://h/?a=1;key=2", "https://h/?a=1;key=[REDACTED]"},
      {"https://h/v1?passwd=", "https://h/v1?passwd="},        // nothing to mask
      {"https://h/v1?flag&key", "https://h/v1?flag&key"},      // no values
      {"https://h/path@x/y", "https://h/path@x/y"},            // '@' in the path: no user-info
      {"https://h/#section-2", "https://h/#section-2"},        // a plain fragment
      {"https://docs.nvidia.com/cuda/index.html", "https://docs.nvidia.com/cuda/index.html"},
      {"user:pw@host/v1", "host/v1"},                          // no scheme
      {"host/v1?token=t", "host/v1?token=[REDACTED]"},
      {"", ""},
  };
  for (const auto& [in, want] : table) EXPECT_EQ(redact_url(in), want) << in;
}

TEST(Url, CredentialNames) {
  for (const char* yes : {"key", "api_key", "api-key", "API_KEY", "apikey", "token", "access_token", "id_token",
                          "refresh_token", "secret", "client_secret", "password", "passwd", "pwd", "sig", "signature",
                          "X-Amz-Signature", "X-Goog-Credential", "auth", "code", "%6Bey"})
    EXPECT_TRUE(kopt::url::is_credential_name(yes)) << yes;
  for (const char* no : {"api-version", "model", "q", "page", "sv", "se", "state", "x", "signed", ""})
    EXPECT_FALSE(kopt::url::is_credential_name(no)) << no;
}

TEST(Url, Split) {
  auto p = kopt::url::split("HTTPS://User:Pw@Docs.NVIDIA.com:8443/cuda?x=1#y");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->scheme, "https");
  EXPECT_TRUE(p->has_userinfo);
  EXPECT_EQ(p->userinfo, "User:Pw");
  EXPECT_EQ(p->host, "docs.nvidia.com");
  EXPECT_EQ(p->port, "8443");
  EXPECT_EQ(p->rest, "/cuda?x=1#y");
  p = kopt::url::split("http://[FE80::1]/");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->host, "fe80::1");
  EXPECT_TRUE(p->ipv6_literal);
  EXPECT_EQ(p->port, "");
  p = kopt::url::split("http://host?q");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->host, "host");
  EXPECT_EQ(p->rest, "?q");
  for (const char* bad : {"docs.nvidia.com/x", "://h", "1http://h", "http://[::1/", "http://h:8x/", "http://[::1]x/"})
    EXPECT_FALSE(kopt::url::split(bad)) << bad;
}

TEST(Url, SecretsOfAUrl) {
  const auto s = kopt::url::url_secrets("http://user:longsecret99@h/v1?key=abc%2Bdefg&x=1&token=ab");
  EXPECT_NE(std::find(s.begin(), s.end(), "longsecret99"), s.end());
  EXPECT_NE(std::find(s.begin(), s.end(), "abc%2Bdefg"), s.end());
  EXPECT_NE(std::find(s.begin(), s.end(), "abc+defg"), s.end());
  EXPECT_EQ(std::find(s.begin(), s.end(), "user"), s.end()) << "a user name beside a password is not a secret";
  EXPECT_EQ(std::find(s.begin(), s.end(), "ab"), s.end()) << "too short to remove from free text";
  const auto t = kopt::url::url_secrets("https://ghp_0123456789@github.com/");
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0], "ghp_0123456789") << "a user-info without ':' is a token";
  EXPECT_TRUE(kopt::url::url_secrets("https://api.openai.com/v1").empty());
}

TEST(Url, RedactText) {
  const std::string secret = "SENTINEL-6a1f03";
  EXPECT_EQ(redact_text("POST http://u:" + secret + "@h:9/v1/chat/completions: HTTP 404 not_found"),
            "POST http://h:9/v1/chat/completions: HTTP 404 not_found");
  EXPECT_EQ(redact_text("(got 'https://u:p@h/x?token=" + secret + "')"), "(got 'https://h/x?token=[REDACTED]')");
  // In JSON text: the URL ends at the quote, the text stays valid JSON.
  EXPECT_EQ(redact_text(R"({"a":"https://a:b@h/?key=)" + secret + R"(","b":"ftp://x:y@z/"})"),
            R"({"a":"https://h/?key=[REDACTED]","b":"ftp://z/"})");
  EXPECT_EQ(redact_text("two: http://a:b@x/ and https://c@y/?sig=s1 ok"), "two: http://x/ and https://y/?sig=[REDACTED] ok");
  EXPECT_EQ(redact_text("no url here, just a :// and x@y"), "no url here, just a :// and x@y");
  EXPECT_EQ(redact_text("Failed to connect to host: " + secret, {secret}), "Failed to connect to host: [REDACTED]");
  EXPECT_EQ(redact_text(secret + secret, {secret}), "[REDACTED][REDACTED]");
  EXPECT_EQ(redact_text(""), "");
  EXPECT_EQ(redact_text("http://"), "http://");
}

}  // namespace
