#include "manifest/image_ref.h"

#include <algorithm>
#include <cstdint>
#include <optional>

#include "common/digest.h"
#include "manifest/quote.h"

namespace idlegrid::manifest {
namespace {

// Docker's reference grammar: a name (host and repository) of at most 255
// characters, a tag of at most 128.
constexpr size_t kMaxNameLength = 255;
constexpr size_t kMaxTagLength = 128;
constexpr uint32_t kMaxPort = 65535;

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsHex(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f'); }

std::string NotPinned(std::string_view image) {
  return Quote(image) +
         " is not pinned by digest; images must be pinned by digest, as \"sha256:<64 hex>\" or "
         "\"name@sha256:<64 hex>\" (tags such as \":latest\" are not allowed), or come from an OCI registry "
         "as \"HOST[:PORT]/REPO@sha256:<64 hex>\"";
}

std::optional<std::string> DigestProblem(std::string_view digest) {
  if (IsValidDigest(digest)) return std::nullopt;
  return "invalid digest " + Quote(digest) + ": expected \"sha256:\" followed by 64 lowercase hex characters";
}

std::optional<std::string> PortProblem(std::string_view host, std::string_view port) {
  if (port.empty() || port.size() > 5 || !std::all_of(port.begin(), port.end(), IsDigit)) {
    return "registry " + Quote(host) + " has no valid port after \":\"";
  }
  const uint32_t value = static_cast<uint32_t>(std::stoul(std::string(port)));
  if (value == 0 || value > kMaxPort) return "registry " + Quote(host) + " has a port outside 1-65535";
  return std::nullopt;
}

// A DNS name or IPv4 address: labels of a-z 0-9 -, not starting or ending
// with "-", separated by single dots.
std::optional<std::string> HostNameProblem(std::string_view host, std::string_view name) {
  if (name.empty()) return "registry " + Quote(host) + " has no host name";
  size_t start = 0;
  while (true) {
    const size_t dot = name.find('.', start);
    const std::string_view label =
        name.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (label.empty() || label.front() == '-' || label.back() == '-' ||
        !std::all_of(label.begin(), label.end(), [](char c) { return IsLowerAlnum(c) || c == '-'; })) {
      return "registry host " + Quote(host) +
             " must be a host name or address of lowercase letters, digits, \"-\" and single dots";
    }
    if (dot == std::string_view::npos) return std::nullopt;
    start = dot + 1;
  }
}

// Why `host` is not HOST[:PORT] (HOST a name, an IPv4 address or a
// bracketed IPv6 address), or nullopt.
std::optional<std::string> HostProblem(std::string_view host) {
  if (host.starts_with('[')) {
    const size_t close = host.find(']');
    const std::string_view ip = close == std::string_view::npos ? std::string_view() : host.substr(1, close - 1);
    if (ip.empty() || !std::all_of(ip.begin(), ip.end(), [](char c) { return IsHex(c) || c == ':'; })) {
      return "registry " + Quote(host) + " is not a bracketed IPv6 address";
    }
    const std::string_view rest = host.substr(close + 1);
    if (rest.empty()) return std::nullopt;
    if (rest.front() != ':') return "registry " + Quote(host) + ": expected \":PORT\" after \"]\"";
    return PortProblem(host, rest.substr(1));
  }
  const size_t colon = host.find(':');
  if (auto problem = HostNameProblem(host, host.substr(0, colon))) return problem;
  if (colon == std::string_view::npos) return std::nullopt;
  return PortProblem(host, host.substr(colon + 1));
}

// Path components of a-z 0-9 . _ -, each starting and ending with a letter
// or digit, separated by single slashes.
std::optional<std::string> RepositoryProblem(std::string_view image, std::string_view repository) {
  size_t start = 0;
  while (true) {
    const size_t slash = repository.find('/', start);
    const std::string_view part =
        repository.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (part.empty() || !IsLowerAlnum(part.front()) || !IsLowerAlnum(part.back()) ||
        !std::all_of(part.begin(), part.end(),
                     [](char c) { return IsLowerAlnum(c) || c == '.' || c == '_' || c == '-'; })) {
      return "repository in " + Quote(image) +
             " must be path components of lowercase letters, digits, \".\", \"_\" and \"-\", each starting and "
             "ending with a letter or digit";
    }
    if (slash == std::string_view::npos) return std::nullopt;
    start = slash + 1;
  }
}

std::optional<std::string> TagProblem(std::string_view image, std::string_view tag) {
  auto word = [](char c) { return IsLowerAlnum(c) || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (tag.empty() || tag.size() > kMaxTagLength || !word(tag.front()) ||
      !std::all_of(tag.begin(), tag.end(), [&](char c) { return word(c) || c == '.' || c == '-'; })) {
    return "tag in " + Quote(image) + " must be 1 to 128 of A-Z a-z 0-9 _ . - not starting with . or -";
  }
  return std::nullopt;
}

Result<ImageRef> ParsePushed(std::string_view image, size_t at) {
  ImageRef ref;
  if (at == std::string_view::npos) {
    if (!image.starts_with("sha256:")) return Status::InvalidArgument(NotPinned(image));
    if (auto problem = DigestProblem(image)) return Status::InvalidArgument(*problem);
    ref.digest = std::string(image);
    return ref;
  }
  const std::string_view name = image.substr(0, at);
  if (name.empty()) return Status::InvalidArgument("expected an image name before \"@\" in " + Quote(image));
  if (name.size() > kMaxNameLength) return Status::InvalidArgument("image name is too long");
  for (char c : name) {
    if (!IsLowerAlnum(c) && std::string_view("._-/:").find(c) == std::string_view::npos) {
      return Status::InvalidArgument("image name " + Quote(name) +
                                     " may contain only lowercase letters, digits and . _ - / :");
    }
  }
  if (auto problem = DigestProblem(image.substr(at + 1))) return Status::InvalidArgument(*problem);
  ref.label = std::string(name);
  ref.digest = std::string(image.substr(at + 1));
  return ref;
}

}  // namespace

Result<ImageRef> ParseImageRef(std::string_view image) {
  const size_t at = image.rfind('@');
  const std::string_view name = image.substr(0, at);
  const size_t slash = name.find('/');
  const std::string_view first = name.substr(0, slash);
  const bool registry = slash != std::string_view::npos &&
                        (first.find_first_of(".:") != std::string_view::npos || first.starts_with('['));
  if (!registry) return ParsePushed(image, at);

  if (name.size() > kMaxNameLength) return Status::InvalidArgument("image name is too long");
  if (auto problem = HostProblem(first)) return Status::InvalidArgument(*problem);
  // The repository has no ":", so one after the last "/" starts a tag.
  const std::string_view rest = name.substr(slash + 1);
  const size_t colon = rest.rfind(':');
  ImageRef ref;
  ref.registry = std::string(first);
  ref.repository = std::string(rest.substr(0, colon));
  if (auto problem = RepositoryProblem(image, ref.repository)) return Status::InvalidArgument(*problem);
  if (colon != std::string_view::npos) {
    ref.tag = std::string(rest.substr(colon + 1));
    if (auto problem = TagProblem(image, ref.tag)) return Status::InvalidArgument(*problem);
  }
  if (at == std::string_view::npos) {
    if (ref.tag.empty()) {
      return Status::InvalidArgument(Quote(image) +
                                     " names a registry image by neither digest nor tag: add \"@sha256:<64 hex>\"");
    }
    return ref;
  }
  if (auto problem = DigestProblem(image.substr(at + 1))) return Status::InvalidArgument(*problem);
  ref.digest = std::string(image.substr(at + 1));
  return ref;
}

Result<std::string> ParseRegistryHost(std::string_view host) {
  std::string lower(host);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; });
  if (lower.empty()) return Status::InvalidArgument("a registry is named HOST[:PORT], got \"\"");
  if (auto problem = HostProblem(lower)) return Status::InvalidArgument(*problem);
  return lower;
}

}  // namespace idlegrid::manifest
