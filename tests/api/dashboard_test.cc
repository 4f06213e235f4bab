// The dashboard's embedded assets against the rules its security rests on:
// no inline script or style the policy would have to allow, every asset the
// page names is served, and the script never builds markup from strings.
#include "api/dashboard.h"

#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <string>

namespace idlegrid::api {
namespace {

std::string Asset(std::string_view path) {
  size_t count = 0;
  const DashboardAsset* assets = DashboardAssets(&count);
  for (size_t i = 0; i < count; ++i) {
    if (assets[i].path == path) return std::string(assets[i].body);
  }
  return "";
}

TEST(Dashboard, AssetsAreEmbeddedWithTheirTypesPageFirst) {
  size_t count = 0;
  const DashboardAsset* assets = DashboardAssets(&count);
  ASSERT_EQ(count, 3u);
  EXPECT_EQ(assets[0].path, "/");
  EXPECT_EQ(assets[0].content_type, "text/html; charset=utf-8");
  for (size_t i = 0; i < count; ++i) EXPECT_GT(assets[i].body.size(), 100u) << assets[i].path;
  EXPECT_NE(Asset("/").find("<!doctype html>"), std::string::npos);
  EXPECT_NE(Asset("/dashboard/app.js").find("'use strict';"), std::string::npos);
}

TEST(Dashboard, PolicyAllowsOnlyThisOriginsScriptAndNothingInline) {
  const std::string csp(DashboardContentSecurityPolicy());
  EXPECT_NE(csp.find("default-src 'none'"), std::string::npos);
  EXPECT_NE(csp.find("script-src 'self'"), std::string::npos);
  EXPECT_NE(csp.find("connect-src 'self'"), std::string::npos);
  EXPECT_NE(csp.find("frame-ancestors 'none'"), std::string::npos);
  EXPECT_EQ(csp.find("unsafe"), std::string::npos) << csp;
}

TEST(Dashboard, PageHasNoInlineScriptOrStyleAndNamesOnlyServedAssets) {
  const std::string html = Asset("/");
  // Every <script> has a src and nothing between its tags.
  const std::regex script(R"(<script([^>]*)>([^<]*)</script>)");
  int scripts = 0;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), script); it != std::sregex_iterator(); ++it) {
    ++scripts;
    EXPECT_NE((*it)[1].str().find("src=\"/dashboard/"), std::string::npos) << it->str();
    EXPECT_EQ((*it)[2].str(), "") << it->str();
  }
  EXPECT_EQ(scripts, 1);
  EXPECT_EQ(html.find("<style"), std::string::npos);
  EXPECT_EQ(html.find(" style="), std::string::npos);
  EXPECT_FALSE(std::regex_search(html, std::regex(R"(\son[a-z]+=)"))) << "inline event handler";
  // Whatever the page loads from this origin is an embedded asset.
  const std::regex ref(R"re((?:src|href)="(/[^"]*)")re");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), ref); it != std::sregex_iterator(); ++it) {
    EXPECT_NE(Asset((*it)[1].str()), "") << (*it)[1].str() << " is not served";
  }
}

TEST(Dashboard, ScriptInsertsServerDataAsTextOnly) {
  std::string js = Asset("/dashboard/app.js");
  for (const char* banned :
       {"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"}) {
    EXPECT_EQ(js.find(banned), std::string::npos) << banned;
  }
  // Only this origin's API, with the token from the tab's session storage
  // (the SVG namespace is a name, not a place it goes).
  const std::string svg_ns = "'http://www.w3.org/2000/svg'";
  if (size_t at = js.find(svg_ns); at != std::string::npos) js.erase(at, svg_ns.size());
  EXPECT_EQ(js.find("http://"), std::string::npos);
  EXPECT_EQ(js.find("https://"), std::string::npos);
  EXPECT_NE(js.find("sessionStorage"), std::string::npos);
  EXPECT_EQ(js.find("localStorage"), std::string::npos);
}

}  // namespace
}  // namespace idlegrid::api
