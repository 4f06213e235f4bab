#pragma once
// The web dashboard's static assets (web/dashboard/), built into the binary
// and served by the HTTPS API at "/" and "/dashboard/...". The page itself
// holds no data: its script calls the JSON API with the token the user typed
// (docs/dashboard.md).
#include <cstddef>
#include <string_view>

namespace httplib {
class Server;
}

namespace idlegrid::api {

// One embedded asset: the path it is served at, its content type, its bytes.
struct DashboardAsset {
  std::string_view path;
  std::string_view content_type;
  std::string_view body;
};

// Every asset, "/" (the page) first.
const DashboardAsset* DashboardAssets(size_t* count);

// Headers every dashboard response carries: a Content-Security-Policy that
// allows only this origin's script, style and API (no inline script, no
// other origin, no framing), and no MIME sniffing or referrer leaks.
std::string_view DashboardContentSecurityPolicy();

// Registers GET routes for the assets (and an empty favicon, so a browser's
// automatic request is not an error) on `server`.
void ServeDashboard(httplib::Server& server);

}  // namespace idlegrid::api
