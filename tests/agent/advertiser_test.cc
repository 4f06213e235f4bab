// The agent's advertisement sequence and fingerprint (agent/advertiser.h).
#include "agent/advertiser.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>

#include "advert/advertisement.h"
#include "common/fs.h"

namespace idlegrid::agent {
namespace {

std::string TempDir() {
  char tmpl[] = "/tmp/igadvXXXXXX";
  EXPECT_NE(::mkdtemp(tmpl), nullptr);
  return tmpl;
}

uint64_t SequenceOf(const v1::SignedAdvertisement& signed_ad) {
  v1::Advertisement ad;
  EXPECT_TRUE(ad.ParseFromString(signed_ad.advertisement()));
  return ad.sequence();
}

TEST(Advertiser, SequencesKeepRisingAcrossARestartWithTheClockSteppedBack) {
  const std::string file = TempDir() + "/advertisement.sequence";
  advert::NodeKey key = advert::NodeKey::Generate();
  uint64_t before = 0;
  {
    Advertiser first(key, 180'000, file);
    auto ad = first.Next(v1::Advertisement(), 1'800'000'000'000, true);
    ASSERT_TRUE(ad.has_value());
    before = SequenceOf(*ad);
    EXPECT_EQ(before, 1'800'000'000'000u);
  }
  // Ten minutes earlier by the clock, after a restart: still above.
  Advertiser again(key, 180'000, file);
  auto ad = again.Next(v1::Advertisement(), 1'800'000'000'000 - 600'000, true);
  ASSERT_TRUE(ad.has_value());
  EXPECT_EQ(SequenceOf(*ad), before + 1);
  // Without the file, the clock alone would have gone back.
  Advertiser forgetful(key);
  EXPECT_LT(SequenceOf(*forgetful.Next(v1::Advertisement(), 1'800'000'000'000 - 600'000, true)), before);
}

TEST(Advertiser, AnUnreadableSequenceFileStartsFromTheClock) {
  const std::string file = TempDir() + "/advertisement.sequence";
  for (const char* bad : {"not a number\n", "-1\n", "", "99999999999999999999999\n"}) {
    ASSERT_TRUE(WriteFileAtomic(file, bad).ok());
    Advertiser a(advert::NodeKey::Generate(), 180'000, file);
    EXPECT_EQ(SequenceOf(*a.Next(v1::Advertisement(), 5000, true)), 5000u) << bad;
    EXPECT_EQ(*ReadFile(file), "5000\n");
  }
}

TEST(Advertiser, ADiskFillingUpIsWorthReadvertisingOtherFreeSpaceChangesAreNot) {
  v1::Advertisement ad;
  auto* disk = ad.mutable_inventory()->add_disks();
  disk->set_total_bytes(uint64_t{256} << 20);
  disk->set_free_bytes(uint64_t{200} << 20);
  const std::string roomy = Fingerprint(ad);
  disk->set_free_bytes(uint64_t{100} << 20);
  EXPECT_EQ(Fingerprint(ad), roomy);
  disk->set_free_bytes(0);
  EXPECT_NE(Fingerprint(ad), roomy);
}

}  // namespace
}  // namespace idlegrid::agent
