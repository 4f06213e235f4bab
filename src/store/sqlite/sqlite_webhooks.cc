// Webhook rows in SQLite (docs/webhooks.md): the rules are src/webhook's,
// the schedule the coordinator's; this file stores what they decided.
#include "store/sqlite/sqlite_store.h"

namespace idlegrid::store {
namespace {

Result<WebhookRow> RowOf(const Stmt& q) {
  WebhookRow row;
  if (!row.delivery.ParseFromString(q.Blob(0))) return Status::DataLoss("stored webhook delivery does not parse");
  row.secret = q.Text(1);
  row.body = q.Blob(2);
  return row;
}

}  // namespace

Status SqliteWebhooks::AddWebhook(const WebhookRow& row) {
  std::lock_guard<std::mutex> lock(mu_);
  const v1::WebhookDelivery& d = row.delivery;
  Stmt ins(db_,
           "INSERT INTO webhooks(id, subject, subject_id, state, next_ms, delivery, secret, body) "
           "VALUES(?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO NOTHING");
  ins.Bind(1, d.id()).Bind(2, d.subject()).Bind(3, d.subject_id()).Bind(4, d.state()).Bind(5, d.next_attempt_ms());
  ins.BindBlob(6, d.SerializeAsString()).Bind(7, row.secret).BindBlob(8, row.body);
  ins.Step();
  return ins.status();
}

Result<std::vector<WebhookRow>> SqliteWebhooks::DueWebhooks(const std::string& state, int64_t now_ms, size_t limit) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt q(db_,
         "SELECT delivery, secret, body FROM webhooks WHERE state = ? AND next_ms <= ? "
         "ORDER BY next_ms, id LIMIT ?");
  q.Bind(1, state).Bind(2, now_ms).Bind(3, static_cast<int64_t>(limit));
  std::vector<WebhookRow> out;
  while (q.Step()) {
    IG_ASSIGN_OR_RETURN(WebhookRow row, RowOf(q));
    out.push_back(std::move(row));
  }
  IG_RETURN_IF_ERROR(q.status());
  return out;
}

Result<bool> SqliteWebhooks::UpdateWebhook(const WebhookRow& row, const std::string& from_state, int64_t from_next_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  const v1::WebhookDelivery& d = row.delivery;
  Stmt up(db_,
          "UPDATE webhooks SET state = ?, next_ms = ?, delivery = ?, body = ? "
          "WHERE id = ? AND state = ? AND next_ms = ?");
  up.Bind(1, d.state()).Bind(2, d.next_attempt_ms()).BindBlob(3, d.SerializeAsString()).BindBlob(4, row.body);
  up.Bind(5, d.id()).Bind(6, from_state).Bind(7, from_next_ms);
  up.Step();
  IG_RETURN_IF_ERROR(up.status());
  return sqlite3_changes(db_) > 0;
}

Result<std::vector<v1::WebhookDelivery>> SqliteWebhooks::WebhooksOf(const std::string& subject,
                                                                    const std::string& subject_id) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt q(db_, "SELECT delivery, secret, body FROM webhooks WHERE subject = ? AND subject_id = ? ORDER BY rowid");
  q.Bind(1, subject).Bind(2, subject_id);
  std::vector<v1::WebhookDelivery> out;
  while (q.Step()) {
    IG_ASSIGN_OR_RETURN(WebhookRow row, RowOf(q));
    out.push_back(std::move(row.delivery));
  }
  IG_RETURN_IF_ERROR(q.status());
  return out;
}

}  // namespace idlegrid::store
