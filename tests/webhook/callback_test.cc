// Webhook rules (webhook/callback.h) on plain data: which URLs parse, what
// the operator's allow list admits, signatures a receiver can check, and the
// backoff a failing receiver gets until the delivery is given up.
#include "webhook/callback.h"

#include <gtest/gtest.h>

namespace idlegrid::webhook {
namespace {

TEST(CallbackUrlTest, ParsesHostPortAndPath) {
  auto url = ParseCallbackUrl("https://Hooks.Example.org/ci/done?x=1");
  ASSERT_TRUE(url.ok()) << url.status().message();
  EXPECT_TRUE(url->https);
  EXPECT_EQ(url->host, "hooks.example.org");
  EXPECT_EQ(url->port, 443);
  EXPECT_EQ(url->path, "/ci/done?x=1");
  auto plain = ParseCallbackUrl("http://127.0.0.1:8080");
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->https);
  EXPECT_EQ(plain->port, 8080);
  EXPECT_EQ(plain->path, "/");
  auto v6 = ParseCallbackUrl("http://[::1]:9000/h");
  ASSERT_TRUE(v6.ok()) << v6.status().message();
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 9000);
}

TEST(CallbackUrlTest, RefusesWhatIsNotAPlainHttpUrl) {
  for (const char* bad : {"ftp://h/x", "h/x", "http://", "http://user:pw@h/x", "http://h:0/", "http://h:99999/",
                          "http://h:8x/", "http://h/x#frag", "http://h/a b", "http://[::1/x"}) {
    auto url = ParseCallbackUrl(bad);
    EXPECT_FALSE(url.ok()) << bad;
    if (!url.ok()) EXPECT_NE(url.status().message().find("callback URL"), std::string::npos) << bad;
  }
}

TEST(CallbackUrlTest, TheAllowListAdmitsHostsOrHostPorts) {
  const CallbackUrl url = *ParseCallbackUrl("http://127.0.0.1:8080/h");
  EXPECT_TRUE(CheckAllowed(url, {"127.0.0.1"}).ok());
  EXPECT_TRUE(CheckAllowed(url, {"example.org", "127.0.0.1:8080"}).ok());
  EXPECT_FALSE(CheckAllowed(url, {"127.0.0.1:9090"}).ok());
  Status none = CheckAllowed(url, {});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.code(), Code::kPermissionDenied);
  EXPECT_NE(none.message().find("--webhook-allow"), std::string::npos) << none.message();
  EXPECT_TRUE(CheckAllowed(*ParseCallbackUrl("http://[::1]:9/"), {"[::1]:9"}).ok());
}

TEST(SignatureTest, AReceiverVerifiesBodyAndTimeAndNothingElse) {
  const std::string body = R"({"event":"job.succeeded"})";
  const std::string header = Sign("key", 1700000000000, body);
  EXPECT_EQ(header.rfind("t=1700000000000,v1=", 0), 0u) << header;
  EXPECT_EQ(header.size(), std::string("t=1700000000000,v1=").size() + 64);
  EXPECT_TRUE(Verify("key", header, body));
  EXPECT_FALSE(Verify("other", header, body));
  EXPECT_FALSE(Verify("key", header, body + " "));
  std::string moved = header;
  moved[2] = '2';  // another time, same MAC
  EXPECT_FALSE(Verify("key", moved, body));
  EXPECT_FALSE(Verify("key", "garbage", body));
  // A known vector: HMAC-SHA256("key", "1.{}") computed independently (openssl dgst).
  EXPECT_EQ(Sign("key", 1, "{}"), "t=1,v1=1ba6b8171186efc613e8bcc0cbdab2748f24984d7c5a84faa2637afa0e40d224");
}

TEST(DeliveryTest, BacksOffThenDeliversOrGivesUp) {
  EXPECT_EQ(RetryDelayMs(1), 1000);
  EXPECT_EQ(RetryDelayMs(2), 2000);
  EXPECT_EQ(RetryDelayMs(5), 16000);
  EXPECT_EQ(RetryDelayMs(30), 300000);  // capped at 5 minutes

  v1::WebhookDelivery d;
  d.set_state("pending");
  RecordTry(&d, 0, "connection refused", 10'000);
  EXPECT_EQ(d.state(), "pending");
  EXPECT_EQ(d.attempts(), 1u);
  EXPECT_EQ(d.next_attempt_ms(), 11'000);
  EXPECT_EQ(d.last_error(), "connection refused");
  RecordTry(&d, 503, "", 11'000);
  EXPECT_EQ(d.next_attempt_ms(), 13'000);
  EXPECT_EQ(d.last_error(), "HTTP 503");
  RecordTry(&d, 204, "", 13'000);
  EXPECT_EQ(d.state(), "delivered");
  EXPECT_EQ(d.delivered_at_ms(), 13'000);
  EXPECT_EQ(d.attempts(), 3u);
  EXPECT_TRUE(d.last_error().empty());

  v1::WebhookDelivery doomed;
  for (uint32_t i = 0; i < kMaxTries; ++i) RecordTry(&doomed, 500, "", 1000 * i);
  EXPECT_EQ(doomed.state(), "failed");
  EXPECT_EQ(doomed.attempts(), kMaxTries);
  EXPECT_EQ(EventName("job", "SUCCEEDED"), "job.succeeded");
}

}  // namespace
}  // namespace idlegrid::webhook
