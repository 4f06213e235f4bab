#include "cli/image_base.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <sstream>
#include <string_view>

#include "cli/image_build.h"

namespace idlegrid::cli {
namespace {

std::string_view Strip(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::vector<std::string> Words(std::string_view s) {
  std::vector<std::string> words;
  std::istringstream in{std::string(s)};
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

bool Contains(const std::vector<std::string>& words, std::string_view word) {
  return std::find(words.begin(), words.end(), word) != words.end();
}

bool IsLowerOrDigit(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// Debian policy 5.6.1: lowercase letters, digits, + - ., two or more,
// starting with a letter or digit.
bool IsPackageName(std::string_view s) {
  return s.size() >= 2 && IsLowerOrDigit(s.front()) &&
         std::all_of(s.begin(), s.end(), [](char c) { return IsLowerOrDigit(c) || c == '+' || c == '-' || c == '.'; });
}

// NAME[:ARCH][=VERSION], as apt (and so mmdebstrap's --include) takes it.
bool IsPackageSpec(std::string_view s) {
  if (size_t eq = s.find('='); eq != std::string_view::npos) {
    std::string_view version = s.substr(eq + 1);
    const bool ok = !version.empty() && std::isalnum(static_cast<unsigned char>(version.front())) &&
                    std::all_of(version.begin(), version.end(), [](char c) {
                      return std::isalnum(static_cast<unsigned char>(c)) ||
                             std::string_view(".+~:-").find(c) != std::string_view::npos;
                    });
    if (!ok) return false;
    s = s.substr(0, eq);
  }
  if (size_t colon = s.find(':'); colon != std::string_view::npos) {
    std::string_view arch = s.substr(colon + 1);
    if (arch.empty() || !std::all_of(arch.begin(), arch.end(), [](char c) { return IsLowerOrDigit(c) || c == '-'; }))
      return false;
    s = s.substr(0, colon);
  }
  return IsPackageName(s);
}

bool IsSuite(std::string_view s) {
  return !s.empty() && IsLowerOrDigit(s.front()) &&
         std::all_of(s.begin(), s.end(), [](char c) { return IsLowerOrDigit(c) || c == '-'; });
}

bool HasScheme(std::string_view url, std::initializer_list<std::string_view> schemes) {
  for (std::string_view scheme : schemes) {
    if (url.size() > scheme.size() && url.substr(0, scheme.size()) == scheme) return true;
  }
  return false;
}

// Debian's codenames since 2005 and its aliases: a suite of the main archive
// (not -updates, -security, -backports, nor Ubuntu's or a vendor's).
constexpr std::array<std::string_view, 18> kDebianSuites = {
    "etch",   "lenny", "squeeze", "wheezy", "jessie",   "stretch", "buster", "bullseye",  "bookworm",
    "trixie", "forky", "duke",    "sid",    "unstable", "testing", "stable", "oldstable", "experimental"};

bool IsDebianMainSuite(std::string_view suite) {
  return std::find(kDebianSuites.begin(), kDebianSuites.end(), suite) != kDebianSuites.end();
}

bool IsMainArchive(const std::string& uri, const std::vector<std::string>& suites,
                   const std::vector<std::string>& components) {
  if (!HasScheme(uri, {"http://", "https://"})) return false;
  if (!Contains(components, "main")) return false;
  return std::any_of(suites.begin(), suites.end(), [](const std::string& s) { return IsDebianMainSuite(s); });
}

std::string WithoutTrailingSlash(std::string url) {
  while (url.size() > 1 && url.back() == '/') url.pop_back();
  return url;
}

// `deb [options] URI SUITE COMPONENT...`; "" unless it is the main archive.
std::string MainArchiveOfLine(std::string_view line) {
  if (size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
  std::vector<std::string> words = Words(line);
  if (words.empty() || words[0] != "deb") return "";
  size_t i = 1;
  if (i < words.size() && words[i].front() == '[') {  // [arch=amd64 signed-by=...]: may span words
    while (i < words.size() && words[i].back() != ']') ++i;
    ++i;
  }
  if (words.size() < i + 3) return "";
  const std::string& uri = words[i];
  std::vector<std::string> suites = {words[i + 1]};
  std::vector<std::string> components(words.begin() + static_cast<long>(i) + 2, words.end());
  return IsMainArchive(uri, suites, components) ? uri : "";
}

// One deb822 stanza's fields (keys lowercased); continuation lines appended.
using Stanza = std::vector<std::pair<std::string, std::string>>;

std::vector<Stanza> Stanzas(const std::string& text) {
  std::vector<Stanza> stanzas(1);
  std::istringstream in(text);
  for (std::string raw; std::getline(in, raw);) {
    std::string_view line = raw;
    if (!line.empty() && line.front() == '#') continue;
    if (Strip(line).empty()) {
      if (!stanzas.back().empty()) stanzas.emplace_back();
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(line.front()))) {
      if (!stanzas.back().empty()) stanzas.back().back().second += " " + std::string(Strip(line));
      continue;
    }
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string key(Strip(line.substr(0, colon)));
    std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return std::tolower(c); });
    stanzas.back().emplace_back(key, std::string(Strip(line.substr(colon + 1))));
  }
  return stanzas;
}

std::string Field(const Stanza& stanza, std::string_view key) {
  for (const auto& [k, v] : stanza) {
    if (k == key) return v;
  }
  return "";
}

std::string MainArchiveOfStanza(const Stanza& stanza) {
  if (!Contains(Words(Field(stanza, "types")), "deb")) return "";
  std::string enabled = Field(stanza, "enabled");
  std::transform(enabled.begin(), enabled.end(), enabled.begin(), [](unsigned char c) { return std::tolower(c); });
  if (enabled == "no" || enabled == "false") return "";
  const std::vector<std::string> suites = Words(Field(stanza, "suites"));
  const std::vector<std::string> components = Words(Field(stanza, "components"));
  for (const std::string& uri : Words(Field(stanza, "uris"))) {
    if (IsMainArchive(uri, suites, components)) return uri;
  }
  return "";
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string Lowercase(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

// What apt prints when it cannot reach a mirror (lowercased).
constexpr std::array<std::string_view, 6> kUnreachableSignatures = {
    "temporary failure resolving", "could not resolve",    "could not connect to",
    "unable to connect to",        "connection timed out", "network is unreachable"};

// apt's words for a package the suite does not have; the name follows.
constexpr std::string_view kUnableToLocate = "Unable to locate package ";

}  // namespace

std::string BaseImageTag(const std::string& name) { return "localhost/" + name + ":latest"; }

Status CheckImageBaseOptions(const ImageBaseOptions& options) {
  if (Status named = CheckImageName(options.name); !named.ok()) {
    std::string message = named.message();
    if (message.rfind("--name", 0) == 0) message.replace(0, 6, "NAME");
    return Status::InvalidArgument(message);
  }
  if (options.packages.empty()) {
    return Status::InvalidArgument(
        "--packages must name at least one Debian package, e.g. --packages python3-numpy,python3-sklearn");
  }
  for (const std::string& package : options.packages) {
    if (!IsPackageSpec(package)) {
      return Status::InvalidArgument("--packages: \"" + package +
                                     "\" is not a Debian package name (lowercase letters, digits and + - ., "
                                     "starting with a letter or digit; optionally :ARCH and =VERSION)");
    }
  }
  if (!IsSuite(options.suite)) {
    return Status::InvalidArgument("--suite \"" + options.suite +
                                   "\" must be a Debian codename or alias such as bookworm or stable");
  }
  if (!options.mirror.empty()) {
    const bool spaced = std::any_of(options.mirror.begin(), options.mirror.end(),
                                    [](unsigned char c) { return std::isspace(c) || std::iscntrl(c); });
    if (spaced || !HasScheme(options.mirror, {"http://", "https://", "file:///"})) {
      return Status::InvalidArgument("--mirror \"" + options.mirror +
                                     "\" must be an http://, https:// or file:/// URL of a Debian archive, e.g. " +
                                     kFallbackMirror);
    }
  }
  return Status::Ok();
}

std::vector<std::string> SplitPackageList(const std::string& list) {
  std::vector<std::string> packages;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    std::string_view part = Strip(std::string_view(list).substr(start, end - start));
    if (!part.empty()) packages.emplace_back(part);
    start = end + 1;
  }
  return packages;
}

MirrorChoice DetectMirror(const std::vector<AptSourcesFile>& files) {
  for (const AptSourcesFile& file : files) {
    std::string found;
    if (EndsWith(file.path, ".sources")) {
      for (const Stanza& stanza : Stanzas(file.text)) {
        found = MainArchiveOfStanza(stanza);
        if (!found.empty()) break;
      }
    } else {
      std::istringstream in(file.text);
      for (std::string line; found.empty() && std::getline(in, line);) found = MainArchiveOfLine(line);
    }
    if (!found.empty()) return {WithoutTrailingSlash(found), "from " + file.path};
  }
  return {kFallbackMirror, "the default: no Debian main archive in the host's apt sources"};
}

std::vector<std::string> MmdebstrapArgv(const ImageBaseOptions& options, const std::string& mirror,
                                        const std::string& tar_path) {
  std::string include;
  for (const std::string& package : options.packages) include += (include.empty() ? "" : ",") + package;
  std::vector<std::string> argv = {"mmdebstrap",
                                   "--mode=auto",
                                   "--variant=minbase",
                                   "--format=tar",
                                   "--include=" + include,
                                   "--dpkgopt=path-exclude=/usr/share/doc/*",
                                   "--dpkgopt=path-include=/usr/share/doc/*/copyright",
                                   "--dpkgopt=path-exclude=/usr/share/man/*",
                                   "--dpkgopt=path-exclude=/usr/share/info/*",
                                   "--dpkgopt=path-exclude=/usr/share/locale/*"};
  if (mirror.find("snapshot.debian.org") != std::string::npos) {
    argv.push_back("--aptopt=Acquire::Check-Valid-Until \"false\"");
  }
  argv.insert(argv.end(), {options.suite, tar_path, "deb " + mirror + " " + options.suite + " main"});
  return argv;
}

std::vector<std::string> PodmanImportArgv(const ImageBaseOptions& options, const std::string& mirror,
                                          const std::string& tar_path) {
  std::string packages;
  for (const std::string& package : options.packages) packages += (packages.empty() ? "" : ",") + package;
  return {"podman",
          "import",
          "--quiet",
          "--change",
          std::string("ENV PATH=") + kBasePath,
          "--change",
          "ENV LANG=C.UTF-8",
          "--change",
          "ENV PYTHONDONTWRITEBYTECODE=1",
          "--change",
          "CMD [\"/bin/sh\"]",
          "--change",
          "LABEL org.idlegrid.base.packages=" + packages,
          "--change",
          "LABEL org.idlegrid.base.suite=" + options.suite,
          "--change",
          "LABEL org.idlegrid.base.mirror=" + mirror,
          "--message",
          "idlegrid image base " + options.name + " --packages " + packages + " --suite " + options.suite,
          tar_path,
          BaseImageTag(options.name)};
}

std::vector<std::string> PodmanImageIdArgv(const std::string& tag) {
  return {"podman", "image", "inspect", "--format", "{{.Id}}", tag};
}

Status MmdebstrapFailure(int exit_code, const std::string& output, const std::string& mirror) {
  std::string message = "mmdebstrap failed (exit " + std::to_string(exit_code) + ")";
  const std::string tail = LastLines(output, kShownOutputLines);
  if (!tail.empty()) message += "; its last lines:\n" + tail;
  if (size_t at = output.find(kUnableToLocate); at != std::string::npos) {
    size_t start = at + kUnableToLocate.size();
    size_t end = output.find_first_of(" \r\n", start);
    const std::string package = output.substr(start, end == std::string::npos ? std::string::npos : end - start);
    message += "\nhint: the package \"" + package + "\" does not exist in this suite at " + mirror +
               " (check its name with apt-cache search, or choose another --suite)";
    return Status::FailedPrecondition(message);
  }
  const std::string lowered = Lowercase(output);
  for (std::string_view signature : kUnreachableSignatures) {
    if (lowered.find(signature) == std::string::npos) continue;
    message += "\nhint: " + std::string(kMirrorUnreachable) + " (" + mirror + ": \"" + std::string(signature) +
               "\"); name a reachable one with --mirror URL (a local mirror or an apt proxy's URL)";
    break;
  }
  return Status::FailedPrecondition(message);
}

}  // namespace idlegrid::cli
