#include "api/dashboard.h"

#include <httplib.h>

#include "common/embed_file.h"

#ifndef IDLEGRID_DASHBOARD_DIR
#error "IDLEGRID_DASHBOARD_DIR (web/dashboard) must be defined by the build"
#endif

IDLEGRID_EMBED_FILE(dashboard_html, IDLEGRID_DASHBOARD_DIR "/index.html");
IDLEGRID_EMBED_FILE(dashboard_js, IDLEGRID_DASHBOARD_DIR "/app.js");
IDLEGRID_EMBED_FILE(dashboard_css, IDLEGRID_DASHBOARD_DIR "/app.css");

namespace idlegrid::api {

const DashboardAsset* DashboardAssets(size_t* count) {
  static const DashboardAsset kAssets[] = {
      {"/", "text/html; charset=utf-8", IDLEGRID_EMBEDDED(dashboard_html)},
      {"/dashboard/app.js", "text/javascript; charset=utf-8", IDLEGRID_EMBEDDED(dashboard_js)},
      {"/dashboard/app.css", "text/css; charset=utf-8", IDLEGRID_EMBEDDED(dashboard_css)},
  };
  *count = sizeof(kAssets) / sizeof(kAssets[0]);
  return kAssets;
}

std::string_view DashboardContentSecurityPolicy() {
  // connect-src 'self': the script talks to this coordinator's API only.
  // img-src data: is for the empty favicon link in the page.
  return "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
         "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
}

namespace {

void SecurityHeaders(httplib::Response& res) {
  res.set_header("Content-Security-Policy", std::string(DashboardContentSecurityPolicy()));
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Referrer-Policy", "no-referrer");
  res.set_header("X-Frame-Options", "DENY");
  // The assets change with the binary; a stale script against a newer API
  // would be worse than a refetch of a few kilobytes.
  res.set_header("Cache-Control", "no-cache");
}

}  // namespace

void ServeDashboard(httplib::Server& server) {
  size_t count = 0;
  const DashboardAsset* assets = DashboardAssets(&count);
  for (size_t i = 0; i < count; ++i) {
    const DashboardAsset asset = assets[i];
    server.Get(std::string(asset.path), [asset](const httplib::Request&, httplib::Response& res) {
      SecurityHeaders(res);
      res.set_content(asset.body.data(), asset.body.size(), std::string(asset.content_type));
    });
  }
  server.Get("/favicon.ico", [](const httplib::Request&, httplib::Response& res) {
    SecurityHeaders(res);
    res.status = 204;
  });
}

}  // namespace idlegrid::api
