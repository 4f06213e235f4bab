#pragma once
// What the coordinator's service tests stand on: a real SQLite store and a
// real artifact store in a fresh temporary directory, and a manual clock.
// A test class derives from ServiceTest, calls ServiceTest::SetUp() first and
// builds its service on store_, artifacts_ and clock_ (which outlive it).
#include <gtest/gtest.h>

#include <memory>

#include "artifacts/artifact_store.h"
#include "common/clock.h"
#include "common/test_support.h"
#include "store/store.h"

namespace idlegrid::coordinator {

class ServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = store::OpenSqliteStore(dir_.path() + "/state.db");
    ASSERT_TRUE(store.ok()) << store.status().message();
    store_ = std::move(*store);
    artifacts_ = std::make_unique<artifacts::ArtifactStore>(dir_.path() + "/artifacts", &clock_);
    ASSERT_TRUE(artifacts_->Init().ok());
  }

  testing::TempDir dir_;
  ManualClock clock_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<artifacts::ArtifactStore> artifacts_;
};

}  // namespace idlegrid::coordinator
