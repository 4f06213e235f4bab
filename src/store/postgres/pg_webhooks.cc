// Webhook rows in PostgreSQL (docs/webhooks.md): the rules are src/webhook's,
// the schedule the coordinator's; this file stores what they decided.
#include "store/postgres/pg_codec.h"
#include "store/postgres/postgres_store.h"

namespace idlegrid::store {

using pg::Connection;
using pg::Isolation;
using pg::Params;
using pg::Rows;

namespace {

Result<WebhookRow> RowOf(const Rows& q, int r) {
  WebhookRow row;
  if (!row.delivery.ParseFromString(q.Text(r, 0))) return Status::DataLoss("stored webhook delivery does not parse");
  row.secret = q.Text(r, 1);
  row.body = q.Text(r, 2);
  return row;
}

}  // namespace

Status PgWebhooks::AddWebhook(const WebhookRow& row) {
  const v1::WebhookDelivery& d = row.delivery;
  return Tx(Isolation::kAutocommit, [&](Connection& c) -> Status {
    return c
        .Exec(
            "INSERT INTO webhooks(id, subject, subject_id, state, next_ms, delivery, secret, body) "
            "VALUES($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT(id) DO NOTHING",
            Params()
                .Text(d.id())
                .Text(d.subject())
                .Text(d.subject_id())
                .Text(d.state())
                .Int(d.next_attempt_ms())
                .Bytes(d.SerializeAsString())
                .Text(row.secret)
                .Bytes(row.body))
        .status();
  });
}

Result<std::vector<WebhookRow>> PgWebhooks::DueWebhooks(const std::string& state, int64_t now_ms, size_t limit) {
  std::vector<WebhookRow> out;
  IG_RETURN_IF_ERROR(Tx(Isolation::kAutocommit, [&](Connection& c) -> Status {
    out.clear();
    IG_ASSIGN_OR_RETURN(Rows q, c.Exec("SELECT delivery, secret, body FROM webhooks WHERE state = $1 AND next_ms <= $2 "
                                       "ORDER BY next_ms, id LIMIT $3",
                                       Params().Text(state).Int(now_ms).Int(static_cast<int64_t>(limit))));
    for (int r = 0; r < q.size(); ++r) {
      IG_ASSIGN_OR_RETURN(WebhookRow row, RowOf(q, r));
      out.push_back(std::move(row));
    }
    return Status::Ok();
  }));
  return out;
}

Result<bool> PgWebhooks::UpdateWebhook(const WebhookRow& row, const std::string& from_state, int64_t from_next_ms) {
  const v1::WebhookDelivery& d = row.delivery;
  bool written = false;
  IG_RETURN_IF_ERROR(Tx(Isolation::kAutocommit, [&](Connection& c) -> Status {
    IG_ASSIGN_OR_RETURN(Rows up, c.Exec("UPDATE webhooks SET state = $1, next_ms = $2, delivery = $3, body = $4 "
                                        "WHERE id = $5 AND state = $6 AND next_ms = $7 RETURNING id",
                                        Params()
                                            .Text(d.state())
                                            .Int(d.next_attempt_ms())
                                            .Bytes(d.SerializeAsString())
                                            .Bytes(row.body)
                                            .Text(d.id())
                                            .Text(from_state)
                                            .Int(from_next_ms)));
    written = up.size() > 0;
    return Status::Ok();
  }));
  return written;
}

Result<std::vector<v1::WebhookDelivery>> PgWebhooks::WebhooksOf(const std::string& subject,
                                                                const std::string& subject_id) {
  std::vector<v1::WebhookDelivery> out;
  IG_RETURN_IF_ERROR(Tx(Isolation::kAutocommit, [&](Connection& c) -> Status {
    out.clear();
    IG_ASSIGN_OR_RETURN(Rows q, c.Exec("SELECT delivery, secret, body FROM webhooks "
                                       "WHERE subject = $1 AND subject_id = $2 ORDER BY id",
                                       Params().Text(subject).Text(subject_id)));
    for (int r = 0; r < q.size(); ++r) {
      IG_ASSIGN_OR_RETURN(WebhookRow row, RowOf(q, r));
      out.push_back(std::move(row.delivery));
    }
    return Status::Ok();
  }));
  return out;
}

}  // namespace idlegrid::store
