#include "common/utf8.h"

#include <gtest/gtest.h>

#include <string>

namespace idlegrid {
namespace {

constexpr size_t kValid = std::string_view::npos;

TEST(Utf8, WellFormedTextPasses) {
  EXPECT_EQ(FirstInvalidUtf8(""), kValid);
  EXPECT_EQ(FirstInvalidUtf8("plain ascii\n\t\x01"), kValid);
  EXPECT_EQ(FirstInvalidUtf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), kValid);  // 2, 3 and 4 bytes
  EXPECT_EQ(FirstInvalidUtf8("\xf4\x8f\xbf\xbf"), kValid);                           // U+10FFFF
}

TEST(Utf8, TheFirstBadByteIsFound) {
  const struct {
    std::string text;
    size_t at;
  } cases[] = {
      {"ab\x84", 2},            // a lone continuation byte
      {"\xc0\xaf", 0},          // overlong '/'
      {"\xe0\x80\xaf", 0},      // overlong, 3 bytes
      {"\xed\xa0\x80", 0},      // a UTF-16 surrogate
      {"\xf4\x90\x80\x80", 0},  // past U+10FFFF
      {"x\xe2\x82", 1},         // cut short
      {"ok \xc3\xa9 \xff", 6},  // 0xFF never appears
      {"\xe2\x28\xa1", 0},      // a bad second byte
  };
  for (const auto& c : cases) EXPECT_EQ(FirstInvalidUtf8(c.text), c.at) << c.text;
}

}  // namespace
}  // namespace idlegrid
