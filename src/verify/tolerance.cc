#include "verify/tolerance.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>
#include <vector>

namespace idlegrid::verify {
namespace {

using google::protobuf::Value;

std::string FormatNumber(double value) {
  char buffer[32];
  auto [end, error] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return error == std::errc() ? std::string(buffer, end) : "?";
}

bool WithinBounds(const ToleranceRule& rule, double a, double b) {
  const double allowed = rule.absolute + rule.relative * std::max(std::fabs(a), std::fabs(b));
  return std::fabs(a - b) <= allowed;
}

std::string NumberDifference(const std::string& where, double a, double b, bool tolerant, const ToleranceRule& rule) {
  std::string d = where + ": " + FormatNumber(a) + " vs " + FormatNumber(b);
  if (!tolerant) return d + " (compared exactly)";
  return d + ", allowed " + FormatNumber(rule.absolute + rule.relative * std::max(std::fabs(a), std::fabs(b)));
}

// ---- JSON -------------------------------------------------------------------

Result<Value> ParseJson(const ToleranceRule& rule, std::string_view content) {
  Value value;
  auto status = google::protobuf::util::JsonStringToMessage(std::string(content), &value);
  if (!status.ok()) {
    return Status::InvalidArgument(rule.output + ": not valid JSON: " + std::string(status.message()));
  }
  return value;
}

// The value at a dotted path ("stats.mean", "rows.2.x"), or nullptr.
const Value* Lookup(const Value& root, const std::string& path) {
  const Value* at = &root;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('.', start);
    if (end == std::string::npos) end = path.size();
    const std::string part = path.substr(start, end - start);
    if (at->has_struct_value()) {
      auto it = at->struct_value().fields().find(part);
      if (it == at->struct_value().fields().end()) return nullptr;
      at = &it->second;
    } else if (at->has_list_value()) {
      size_t index = 0;
      auto [p, error] = std::from_chars(part.data(), part.data() + part.size(), index);
      if (error != std::errc() || p != part.data() + part.size() || index >= size_t(at->list_value().values_size())) {
        return nullptr;
      }
      at = &at->list_value().values(int(index));
    } else {
      return nullptr;
    }
    start = end + 1;
  }
  return at;
}

Status CheckJsonFields(const ToleranceRule& rule, const Value& root) {
  for (const std::string& field : rule.fields) {
    const Value* v = Lookup(root, field);
    if (v == nullptr) return Status::InvalidArgument(rule.output + ": has no field \"" + field + "\"");
    if (v->kind_case() != Value::kNumberValue) {
      return Status::InvalidArgument(rule.output + ": field \"" + field + "\" is not a number");
    }
  }
  return Status::Ok();
}

class JsonWalk {
 public:
  explicit JsonWalk(const ToleranceRule& rule) : rule_(rule), listed_(rule.fields.begin(), rule.fields.end()) {}

  // The first difference under `path`, or "" when a and b match.
  std::string Diff(const std::string& path, const Value& a, const Value& b) const {
    const std::string where = path.empty() ? "(top level)" : path;
    if (a.kind_case() != b.kind_case()) return where + ": different kinds of value";
    switch (a.kind_case()) {
      case Value::kNumberValue: {
        const bool tolerant = listed_.empty() || listed_.contains(path);
        const bool equal =
            tolerant ? WithinBounds(rule_, a.number_value(), b.number_value()) : a.number_value() == b.number_value();
        return equal ? "" : NumberDifference(where, a.number_value(), b.number_value(), tolerant, rule_);
      }
      case Value::kStringValue:
        return a.string_value() == b.string_value() ? "" : where + ": strings differ";
      case Value::kBoolValue:
        return a.bool_value() == b.bool_value() ? "" : where + ": booleans differ";
      case Value::kListValue: {
        const auto& x = a.list_value().values();
        const auto& y = b.list_value().values();
        if (x.size() != y.size()) {
          return where + ": " + std::to_string(x.size()) + " vs " + std::to_string(y.size()) + " elements";
        }
        for (int i = 0; i < x.size(); ++i) {
          std::string d = Diff(Join(path, std::to_string(i)), x[i], y[i]);
          if (!d.empty()) return d;
        }
        return "";
      }
      case Value::kStructValue: {
        const auto& x = a.struct_value().fields();
        const auto& y = b.struct_value().fields();
        // Sorted, so the difference reported does not depend on hash order.
        std::set<std::string> keys;
        for (const auto& [k, _] : x) keys.insert(k);
        for (const auto& [k, _] : y) keys.insert(k);
        for (const std::string& k : keys) {
          auto i = x.find(k);
          auto j = y.find(k);
          if (i == x.end() || j == y.end()) return Join(path, k) + ": present in only one";
          std::string d = Diff(Join(path, k), i->second, j->second);
          if (!d.empty()) return d;
        }
        return "";
      }
      default:
        return "";  // both null
    }
  }

 private:
  static std::string Join(const std::string& path, const std::string& part) {
    return path.empty() ? part : path + "." + part;
  }

  const ToleranceRule& rule_;
  const std::set<std::string> listed_;
};

// ---- CSV --------------------------------------------------------------------

using Rows = std::vector<std::vector<std::string>>;

// RFC 4180: comma-separated, "" quoting, CRLF or LF line ends; the first row
// is the header. Every row must be as wide as the header.
Result<Rows> ParseCsv(const ToleranceRule& rule, std::string_view text) {
  Rows rows;
  std::vector<std::string> row;
  std::string cell;
  bool quoted = false, in_quotes = false, any = false;
  size_t line = 1;
  auto end_row = [&]() -> Status {
    row.push_back(std::move(cell));
    cell.clear();
    if (!rows.empty() && row.size() != rows.front().size()) {
      return Status::InvalidArgument(rule.output + ": line " + std::to_string(line) + " has " +
                                     std::to_string(row.size()) + " columns, the header " +
                                     std::to_string(rows.front().size()));
    }
    rows.push_back(std::move(row));
    row.clear();
    quoted = any = false;
    return Status::Ok();
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_quotes) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        cell.push_back('"');
        ++i;
      } else if (c == '"') {
        in_quotes = false;
      } else {
        if (c == '\n') ++line;
        cell.push_back(c);
      }
      continue;
    }
    if (c == '"' && cell.empty() && !quoted) {
      in_quotes = quoted = any = true;
    } else if (c == ',') {
      row.push_back(std::move(cell));
      cell.clear();
      quoted = false;
      any = true;
    } else if (c == '\n' || (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n')) {
      if (c == '\r') ++i;
      IG_RETURN_IF_ERROR(end_row());
      ++line;
    } else if (quoted) {
      return Status::InvalidArgument(rule.output + ": line " + std::to_string(line) + ": text after a closing quote");
    } else {
      cell.push_back(c);
      any = true;
    }
  }
  if (in_quotes) return Status::InvalidArgument(rule.output + ": line " + std::to_string(line) + ": unclosed quote");
  if (any || !cell.empty()) IG_RETURN_IF_ERROR(end_row());
  if (rows.empty()) return Status::InvalidArgument(rule.output + ": empty CSV (no header)");
  return rows;
}

std::optional<double> ParseNumber(const std::string& s) {
  double value = 0;
  auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (s.empty() || error != std::errc() || end != s.data() + s.size() || !std::isfinite(value)) return std::nullopt;
  return value;
}

Status CheckCsvColumns(const ToleranceRule& rule, const Rows& rows) {
  const std::vector<std::string>& header = rows.front();
  for (const std::string& field : rule.fields) {
    auto column = std::find(header.begin(), header.end(), field);
    if (column == header.end()) return Status::InvalidArgument(rule.output + ": has no column \"" + field + "\"");
    const size_t c = size_t(column - header.begin());
    for (size_t r = 1; r < rows.size(); ++r) {
      if (!ParseNumber(rows[r][c])) {
        return Status::InvalidArgument(rule.output + ": line " + std::to_string(r + 1) + ", column \"" + field +
                                       "\": not a number");
      }
    }
  }
  return Status::Ok();
}

std::string DiffCsv(const ToleranceRule& rule, const Rows& a, const Rows& b) {
  if (a.front() != b.front()) return "headers differ";
  if (a.size() != b.size()) return std::to_string(a.size() - 1) + " vs " + std::to_string(b.size() - 1) + " rows";
  const std::vector<std::string>& header = a.front();
  for (size_t r = 1; r < a.size(); ++r) {
    for (size_t c = 0; c < header.size(); ++c) {
      const std::string& x = a[r][c];
      const std::string& y = b[r][c];
      const bool listed = std::find(rule.fields.begin(), rule.fields.end(), header[c]) != rule.fields.end();
      std::optional<double> nx = ParseNumber(x), ny = ParseNumber(y);
      const std::string where = "line " + std::to_string(r + 1) + ", column \"" + header[c] + "\"";
      if ((listed || rule.fields.empty()) && nx && ny) {
        if (!WithinBounds(rule, *nx, *ny)) return NumberDifference(where, *nx, *ny, true, rule);
      } else if (x != y) {
        return where + ": values differ";
      }
    }
  }
  return "";
}

}  // namespace

Status CheckWellFormed(const ToleranceRule& rule, std::string_view content) {
  if (rule.format == TableFormat::kJson) {
    IG_ASSIGN_OR_RETURN(Value root, ParseJson(rule, content));
    return CheckJsonFields(rule, root);
  }
  IG_ASSIGN_OR_RETURN(Rows rows, ParseCsv(rule, content));
  return CheckCsvColumns(rule, rows);
}

Result<Comparison> CompareWithTolerance(const ToleranceRule& rule, std::string_view first, std::string_view second) {
  Status a_ok = CheckWellFormed(rule, first);
  if (!a_ok.ok()) return a_ok.WithContext("first");
  Status b_ok = CheckWellFormed(rule, second);
  if (!b_ok.ok()) return b_ok.WithContext("second");
  std::string difference;
  if (rule.format == TableFormat::kJson) {
    Value a = std::move(ParseJson(rule, first)).value();
    Value b = std::move(ParseJson(rule, second)).value();
    difference = JsonWalk(rule).Diff("", a, b);
  } else {
    difference = DiffCsv(rule, ParseCsv(rule, first).value(), ParseCsv(rule, second).value());
  }
  if (!difference.empty()) difference = rule.output + ": " + difference;
  return Comparison{difference.empty(), difference};
}

}  // namespace idlegrid::verify
