// Which attempt an agent's transfer goes under (agent/attempt_grants.h).
#include "agent/attempt_grants.h"

#include <gtest/gtest.h>

namespace idlegrid::agent {
namespace {

v1::Assignment Assign(const std::string& id, const std::string& token, const std::string& image) {
  v1::Assignment a;
  a.set_attempt_id(id);
  a.set_artifact_token(token);
  a.set_image_archive_digest(image);
  auto* in = a.mutable_spec()->add_inputs();
  in->set_artifact("sha256:in-" + id);
  a.mutable_restore()->add_files()->set_digest("sha256:ck-" + id);
  return a;
}

TEST(AttemptGrantsTest, ADownloadGoesUnderAnAttemptThatNeedsTheDigest) {
  AttemptGrants g;
  g.Add(Assign("a1", "t1", "sha256:img"));
  g.Add(Assign("a2", "t2", "sha256:img"));
  auto in = g.ForDownload("sha256:in-a2");
  ASSERT_TRUE(in);
  EXPECT_EQ(in->attempt_id, "a2");
  EXPECT_EQ(in->token, "t2");
  EXPECT_TRUE(g.ForDownload("sha256:ck-a1"));
  EXPECT_TRUE(g.ForDownload("sha256:img"));
  EXPECT_FALSE(g.ForDownload("sha256:someone-elses"));
  g.Remove("a2");
  EXPECT_FALSE(g.ForDownload("sha256:in-a2")) << "a finished attempt's grant is gone";
}

TEST(AttemptGrantsTest, AnUploadGoesUnderTheAttemptWhoseDirectoryHoldsTheFile) {
  AttemptGrants g;
  g.Add(Assign("a1", "t1", "sha256:img"));
  auto up = g.ForUpload("/data/attempts/a1/out/result.json", "/data/attempts");
  ASSERT_TRUE(up);
  EXPECT_EQ(up->attempt_id, "a1");
  EXPECT_EQ(up->token, "t1");
  EXPECT_FALSE(g.ForUpload("/data/attempts/a9/out/x", "/data/attempts")) << "unknown attempt";
  EXPECT_FALSE(g.ForUpload("/elsewhere/a1/out/x", "/data/attempts"));
  EXPECT_FALSE(g.ForUpload("/data/attempts/a1", "/data/attempts")) << "the directory itself is no file in it";
}

}  // namespace
}  // namespace idlegrid::agent
