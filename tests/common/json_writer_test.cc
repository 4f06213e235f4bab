#include "common/json_writer.h"

#include <gtest/gtest.h>

namespace idlegrid {
namespace {

TEST(JsonString, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(JsonString("plain"), "\"plain\"");
  EXPECT_EQ(JsonString("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(JsonString("l1\nl2\tx\r"), "\"l1\\nl2\\tx\\r\"");
  EXPECT_EQ(JsonString(std::string("\x01\x1f", 2)), "\"\\u0001\\u001f\"");
  EXPECT_EQ(JsonString("\xc3\xa9"), "\"\xc3\xa9\"");  // UTF-8 passes through
}

TEST(JsonWriter, SeparatesElementsAndNestsContainers) {
  JsonWriter w;
  w.BeginObject().Key("a").Number(1).Key("b").BeginArray().String("x").SignedNumber(-2).Bool(false).Null().EndArray();
  w.Key("c").BeginObject().EndObject().Key("d").Strings({"p", "q"}).EndObject();
  EXPECT_EQ(w.Take(), R"({"a":1,"b":["x",-2,false,null],"c":{},"d":["p","q"]})");
}

}  // namespace
}  // namespace idlegrid
