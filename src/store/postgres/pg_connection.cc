#include "store/postgres/pg_connection.h"

#include <endian.h>

#include <cstdio>
#include <cstring>

namespace idlegrid::store::pg {

namespace {

// Type OIDs from the server's catalog (pg_type.h), stable across versions.
constexpr Oid kBoolOid = 16;
constexpr Oid kByteaOid = 17;
constexpr Oid kInt8Oid = 20;
constexpr Oid kInt2Oid = 21;
constexpr Oid kInt4Oid = 23;
constexpr Oid kFloat4Oid = 700;
constexpr Oid kFloat8Oid = 701;

}  // namespace

Params& Params::Add(std::string value, int format, unsigned type) {
  lengths_.push_back(static_cast<int>(value.size()));
  values_.push_back(std::move(value));
  formats_.push_back(format);
  types_.push_back(type);
  return *this;
}

const char* const* Params::values() const {
  pointers_.clear();
  for (const auto& v : values_) pointers_.push_back(v.data());
  return pointers_.data();
}

Params& Params::Int(int64_t v) { return Add(std::to_string(v), 0, 0); }

Params& Params::Double(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);  // round-trips every double
  return Add(buf, 0, 0);
}

Params& Params::Text(std::string_view v) { return Add(std::string(v), 0, 0); }

Params& Params::Bytes(std::string_view v) { return Add(std::string(v), 1, kByteaOid); }

Params& Params::TextArray(const std::vector<std::string>& v) {
  std::string literal = "{";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 0) literal += ',';
    literal += '"';
    for (char c : v[i]) {
      if (c == '"' || c == '\\') literal += '\\';
      literal += c;
    }
    literal += '"';
  }
  literal += '}';
  return Add(std::move(literal), 0, 0);
}

Params& Params::IntArray(const std::vector<int64_t>& v) {
  std::string literal = "{";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 0) literal += ',';
    literal += std::to_string(v[i]);
  }
  literal += '}';
  return Add(std::move(literal), 0, 0);
}

Rows& Rows::operator=(Rows&& other) noexcept {
  if (this != &other) {
    PQclear(result_);
    result_ = other.result_;
    other.result_ = nullptr;
  }
  return *this;
}

int64_t Rows::affected() const {
  const char* n = result_ ? PQcmdTuples(result_) : "";
  return *n ? std::strtoll(n, nullptr, 10) : 0;
}

int64_t Rows::Int(int row, int col) const {
  if (PQgetisnull(result_, row, col)) return 0;
  const char* v = PQgetvalue(result_, row, col);
  switch (PQftype(result_, col)) {
    case kInt8Oid: {
      uint64_t x;
      std::memcpy(&x, v, 8);
      return static_cast<int64_t>(be64toh(x));
    }
    case kInt4Oid: {
      uint32_t x;
      std::memcpy(&x, v, 4);
      return static_cast<int32_t>(be32toh(x));
    }
    case kInt2Oid: {
      uint16_t x;
      std::memcpy(&x, v, 2);
      return static_cast<int16_t>(be16toh(x));
    }
    case kBoolOid:
      return v[0] != 0;
    default:
      return 0;  // a query/accessor mismatch; the tests read every column
  }
}

double Rows::Double(int row, int col) const {
  if (PQgetisnull(result_, row, col)) return 0;
  const char* v = PQgetvalue(result_, row, col);
  switch (PQftype(result_, col)) {
    case kFloat8Oid: {
      uint64_t x;
      std::memcpy(&x, v, 8);
      x = be64toh(x);
      double d;
      std::memcpy(&d, &x, 8);
      return d;
    }
    case kFloat4Oid: {
      uint32_t x;
      std::memcpy(&x, v, 4);
      x = be32toh(x);
      float f;
      std::memcpy(&f, &x, 4);
      return f;
    }
    default:
      return static_cast<double>(Int(row, col));
  }
}

std::string Rows::Text(int row, int col) const {
  if (PQgetisnull(result_, row, col)) return "";
  return std::string(PQgetvalue(result_, row, col), PQgetlength(result_, row, col));
}

Result<std::unique_ptr<Connection>> Connection::Open(const std::string& conninfo) {
  // A link to the database that dies without a reset (a partition, a cut
  // cable, a NAT that forgot us) must fail the connection within seconds,
  // not after TCP's quarter of an hour of retransmissions: the pool then
  // replaces it and callers hear Unavailable. Defaults only: the URL's own
  // settings, processed after them, win. (Unix sockets ignore them.)
  static const char* const kKeys[] = {"connect_timeout",  "keepalives",       "keepalives_idle", "keepalives_interval",
                                      "keepalives_count", "tcp_user_timeout", "dbname",          nullptr};
  const char* const values[] = {"10", "1", "10", "3", "3", "15000", conninfo.c_str(), nullptr};
  PGconn* conn = PQconnectdbParams(kKeys, values, /*expand_dbname=*/1);
  if (conn == nullptr) return Status::Internal("postgres: out of memory");
  if (PQstatus(conn) != CONNECTION_OK) {
    std::string msg = PQerrorMessage(conn);
    PQfinish(conn);
    while (!msg.empty() && msg.back() == '\n') msg.pop_back();
    return Status::Unavailable("cannot connect to PostgreSQL: " + msg +
                               "; check the --db URL (postgresql://USER@HOST/DB), that the server runs and that "
                               "the database exists (createdb DB)");
  }
  auto c = std::unique_ptr<Connection>(new Connection(conn));
  // Numbers in text parameters and timestamps never depend on the server's locale.
  IG_RETURN_IF_ERROR(c->ExecScript("SET client_min_messages = warning; SET application_name = 'idlegrid'"));
  return c;
}

Connection::~Connection() { PQfinish(conn_); }

bool Connection::in_transaction() const {
  PGTransactionStatusType s = PQtransactionStatus(conn_);
  return s == PQTRANS_INTRANS || s == PQTRANS_INERROR || s == PQTRANS_ACTIVE;
}

Status Connection::Reset() {
  PQreset(conn_);
  prepared_.clear();
  if (PQstatus(conn_) != CONNECTION_OK) {
    return Status::Unavailable(std::string("cannot reconnect to PostgreSQL: ") + PQerrorMessage(conn_));
  }
  return Status::Ok();
}

Status Connection::ErrorFrom(PGresult* result, const char* what, const char* sql) {
  const char* state = result ? PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
  last_sqlstate_ = state ? state : "";
  std::string msg = result ? PQresultErrorMessage(result) : PQerrorMessage(conn_);
  while (!msg.empty() && msg.back() == '\n') msg.pop_back();
  PQclear(result);
  // The statement only names where it failed: a migration's DDL would bury the cause.
  std::string where = sql;
  if (where.size() > 120) where = where.substr(0, 117) + "...";
  msg = std::string("postgres ") + what + ": " + msg + " in: " + where;
  // Class 08: connection exceptions; 57P01..57P03: the server is shutting down or starting;
  // no SQLSTATE at all: libpq's own report of a lost server (every server error has one).
  if (!healthy() || last_sqlstate_.empty() || last_sqlstate_.rfind("08", 0) == 0 ||
      last_sqlstate_.rfind("57P", 0) == 0) {
    return Status::Unavailable(msg);
  }
  if (IsRetryable(last_sqlstate_)) return Status::Unavailable(msg);
  return Status::Internal(msg);
}

Result<Rows> Connection::Exec(const char* sql, const Params& params) {
  auto it = prepared_.find(sql);
  if (it == prepared_.end()) {
    std::string name = "ig" + std::to_string(prepared_.size() + 1);
    std::vector<Oid> types(params.types().begin(), params.types().end());
    PGresult* p = PQprepare(conn_, name.c_str(), sql, params.size(), types.empty() ? nullptr : types.data());
    if (p == nullptr || PQresultStatus(p) != PGRES_COMMAND_OK) return ErrorFrom(p, "prepare", sql);
    PQclear(p);
    it = prepared_.emplace(sql, std::move(name)).first;
  }
  PGresult* r = PQexecPrepared(conn_, it->second.c_str(), params.size(), params.values(), params.lengths(),
                               params.formats(), /*resultFormat=*/1);
  ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
  if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) return ErrorFrom(r, "exec", sql);
  return Rows(r);
}

Status Connection::ExecScript(const char* sql) {
  PGresult* r = PQexec(conn_, sql);
  ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
  if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) return ErrorFrom(r, "exec", sql);
  PQclear(r);
  return Status::Ok();
}

bool IsRetryable(const std::string& sqlstate) {
  return sqlstate == "40001" /* serialization_failure */ || sqlstate == "40P01" /* deadlock_detected */;
}

}  // namespace idlegrid::store::pg
