// The engine's part of the metrics (runtime/metrics.hpp): its limits, and the gauges read when
// /metrics is scraped from the state that holds them — the LMDB store and the NATS connection.
#include "actors/engine.hpp"

namespace sy::actors {

void engine::start_metrics() {
  metrics::set_global_limit(deps_.cfg.global_concurrency);
  storage::environment* env = &deps_.env;
  runtime::js_client* js = &deps_.js;
  auto one = [](double v) { return std::vector<metrics::sample>{{{}, v}}; };
  metric_readers_.push_back(metrics::add_reader(
      "switchyard_storage_map_size_bytes", "The LMDB map's size (it grows by doubling).",
      [env, one] { return one(static_cast<double>(env->map_bytes())); }));
  metric_readers_.push_back(metrics::add_reader(
      "switchyard_storage_map_used_bytes", "Bytes of the LMDB map up to its last used page.",
      [env, one] { return one(static_cast<double>(env->used_bytes())); }));
  metric_readers_.push_back(
      metrics::add_reader("switchyard_outbox_records",
                          "Records in the outbox, waiting to be published to NATS.", [env, one] {
                            auto txn = env->begin_read();
                            return one(static_cast<double>(txn.entries(storage::db::outbox)));
                          }));
  metric_readers_.push_back(
      metrics::add_reader("switchyard_nats_connected", "1 while the NATS connection is up, else 0.",
                          [js, one] { return one(js->connected() ? 1 : 0); }));
  metric_readers_.push_back(metrics::add_reader(
      "switchyard_nats_reconnects_total", "Reconnects of the NATS connection since start.",
      [js, one] { return one(static_cast<double>(js->reconnects())); }, metrics::kind::counter));
}

}  // namespace sy::actors
