// Tracing (docs/operations.md, "Tracing") on the real binary: a client's traceparent is kept with
// its job and goes on to the gateway and the webhook receiver; the spans the engine exports over
// OTLP/HTTP reach a collector (tests/fakes/otlp_collector) with every parent/child link intact;
// a collector that is down costs dropped, counted spans and nothing else.

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "tests/fakes/otlp_collector.hpp"
#include "tests/fakes/webhook_receiver.hpp"
#include "tests/support/multipart_form.hpp"
#include "tests/support/wait.hpp"
#include "tests/system/system_env.hpp"

namespace sy::test {
namespace SY_UNITY_ID {

const std::string client_trace = "4bf92f3577b34da6a3ce929d0e0e4736";
const std::string client_span = "00f067aa0ba902b7";

/// The one span named `name` whose attribute `key` is `value`; fails the test when there is not
/// exactly one.
fakes::collected_span one(const fakes::otlp_collector& c, const std::string& name,
                          const std::string& key, const std::string& value) {
  std::vector<fakes::collected_span> found;
  for (auto& s : c.named(name))
    if (s.attributes[key] == value) found.push_back(std::move(s));
  EXPECT_EQ(found.size(), 1U) << name << " with " << key << "=" << value;
  return found.empty() ? fakes::collected_span{} : found.front();
}

double metric(const std::string& text, const std::string& series) {
  std::istringstream in(text);
  double sum = 0;
  for (std::string line; std::getline(in, line);)
    if (line.rfind(series, 0) == 0) sum += std::stod(line.substr(line.rfind(' ') + 1));
  return sum;
}

TEST(tracing, a_clients_trace_runs_through_the_job_the_gateway_and_the_webhook) {
  fakes::otlp_collector collector;
  ASSERT_EQ(collector.start(), "");
  fakes::webhook_receiver hooks;
  ASSERT_EQ(hooks.start(), "");
  system_env env;
  env.start_gateway(20);
  env.start_engine({"--otlp-endpoint", collector.url(), "--webhook-allow-loopback", "true"});
  http_client c(env.port());
  nlohmann::json body = {{"endpoint", "/v1/chat/completions"},
                         {"webhook_url", hooks.url() + "/hook"},
                         {"body",
                          {{"model", "sys-model"},
                           {"messages", {{{"role", "user"}, {"content", "hi"}}}},
                           {"fake", {{"key", "traced"}}}}}};
  auto r = c.post_json("/v1/jobs", body,
                       {{"traceparent", "00-" + client_trace + "-" + client_span + "-01"},
                        {"tracestate", "vendor=x1"}});
  ASSERT_EQ(r.status, 202) << r.body;
  const std::string id = r.json()["id"];
  // A second job without trace context starts a trace of its own.
  const std::string own = env.submit(c, "untraced");
  ASSERT_EQ(env.wait_terminal(c, id), "completed");
  ASSERT_EQ(env.wait_terminal(c, own), "completed");
  ASSERT_TRUE(hooks.wait_delivered(2, 30'000));

  // The job's span ends with the job, at its terminal commit (recorded by the storage writer);
  // its attempt's span only once the job actor has that commit's answer, so it can reach the
  // collector in a later export (every second) than the job's, while its gateway.call child came
  // in an earlier one: wait for both jobs' job and attempt spans. (The webhooks' spans: below.)
  auto has_span = [&](const std::string& name, const std::string& job_id) {
    const auto spans = collector.named(name);
    return std::any_of(spans.begin(), spans.end(), [&](const fakes::collected_span& s) {
      const auto it = s.attributes.find("job.id");
      return it != s.attributes.end() && it->second == job_id;
    });
  };
  ASSERT_TRUE(wait_for(
      [&] {
        return collector.named("job").size() == 2 && has_span("attempt", id) &&
               has_span("attempt", own);
      },
      std::chrono::seconds(30)))
      << collector.spans().size() << " spans";
  EXPECT_EQ(collector.link_problems({client_span}), "");
  EXPECT_EQ(collector.malformed(), 0);

  const auto job = one(collector, "job", "job.id", id);
  EXPECT_EQ(job.trace_id, client_trace);
  EXPECT_EQ(job.parent_span_id, client_span);
  EXPECT_EQ(job.service, "switchyard");
  for (const char* child : {"submit", "queue.wait"}) {
    auto spans = collector.named(child);
    const bool under_job = std::any_of(spans.begin(), spans.end(), [&](const auto& s) {
      return s.parent_span_id == job.span_id && s.trace_id == client_trace;
    });
    EXPECT_TRUE(under_job) << child;
  }
  const auto attempt = one(collector, "attempt", "job.id", id);
  EXPECT_EQ(attempt.parent_span_id, job.span_id);
  EXPECT_EQ(attempt.attributes.at("outcome"), "succeeded");
  std::vector<fakes::collected_span> calls;
  for (auto& s : collector.named("gateway.call"))
    if (s.parent_span_id == attempt.span_id) calls.push_back(s);
  ASSERT_EQ(calls.size(), 1U);
  EXPECT_EQ(calls[0].kind, 3);  // client
  EXPECT_EQ(calls[0].attributes.at("http.status_code"), "200");

  // What the gateway and the webhook receiver were sent: the spans' own ids, in the same trace.
  auto stats = http_client(env.gateway_port()).get("/_fake/stats").json();
  EXPECT_EQ(stats["traceparent_by_key"]["traced"],
            "00-" + client_trace + "-" + calls[0].span_id + "-01");
  // One delivery per transition, each its own span under the job's, named in its header.
  ASSERT_TRUE(wait_for([&] { return collector.named("webhook.deliver").size() == 2; }));
  std::set<std::string> sent, recorded;
  for (const auto& d : hooks.deliveries()) {
    sent.insert(d.headers.at("traceparent"));
    EXPECT_EQ(d.headers.at("tracestate"), "vendor=x1");
  }
  for (const auto& s : collector.named("webhook.deliver")) {
    EXPECT_EQ(s.attributes.at("job.id"), id);
    EXPECT_EQ(s.parent_span_id, job.span_id);
    recorded.insert("00-" + client_trace + "-" + s.span_id + "-01");
  }
  EXPECT_EQ(sent, recorded);

  const auto root = one(collector, "job", "job.id", own);
  EXPECT_EQ(root.parent_span_id, "");
  EXPECT_NE(root.trace_id, client_trace);
  EXPECT_EQ(stats["traceparent_by_key"]["untraced"].get<std::string>().substr(3, 32),
            root.trace_id);
  // Counted by the exporter once the collector has answered the export, so after the collector
  // holds the spans: wait for the count of the last export too.
  std::string text;
  EXPECT_TRUE(wait_for(
      [&] {
        text = c.get("/metrics").body;
        return metric(text, "switchyard_trace_spans_exported_total") > 5;
      },
      std::chrono::seconds(10)))
      << text;
}

TEST(tracing, a_batch_has_the_seeds_span_and_one_span_per_phase) {
  fakes::otlp_collector collector;
  ASSERT_EQ(collector.start(), "");
  system_env env;
  env.start_gateway(0);
  env.start_engine({"--otlp-endpoint", collector.url()});
  http_client c(env.port());
  std::string lines;
  for (int i = 0; i < 3; ++i)
    lines += nlohmann::json{{"custom_id", "r" + std::to_string(i)},
                            {"method", "POST"},
                            {"url", "/v1/chat/completions"},
                            {"body",
                             {{"model", "sys-model"},
                              {"messages", {{{"role", "user"}, {"content", "hi"}}}},
                              {"fake", {{"key", "line" + std::to_string(i)}}}}}}
                 .dump() +
             "\n";
  auto file = upload(c, form({{"purpose", "batch"}}, "in.jsonl", lines));
  ASSERT_EQ(file.status, 200) << file.body;
  auto created = c.post_json("/v1/batches",
                             {{"input_file_id", file.json()["id"]},
                              {"endpoint", "/v1/chat/completions"},
                              {"completion_window", "24h"}},
                             {{"traceparent", "00-" + client_trace + "-" + client_span + "-01"}});
  ASSERT_EQ(created.status, 200) << created.body;
  const std::string id = created.json()["id"];
  ASSERT_TRUE(wait_for([&] { return !collector.named("process-batch").empty(); },
                       std::chrono::seconds(60)));
  EXPECT_EQ(c.get("/v1/batches/" + id).json()["status"], "completed");
  EXPECT_EQ(collector.link_problems({client_span}), "");
  const auto batch = one(collector, "process-batch", "batch.id", id);
  EXPECT_EQ(batch.trace_id, client_trace);
  EXPECT_EQ(batch.parent_span_id, client_span);
  EXPECT_EQ(batch.attributes.at("batch.request.total"), "3");
  EXPECT_EQ(batch.attributes.at("batch.request.completed"), "3");
  EXPECT_EQ(batch.attributes.at("file.id"), file.json()["id"]);
  EXPECT_FALSE(batch.attributes.at("batch.output_file.id").empty());
  for (const char* phase : {"submit", "batch.ingest", "batch.execute", "batch.finalize"}) {
    auto spans = collector.named(phase);
    ASSERT_EQ(spans.size(), 1U) << phase;
    EXPECT_EQ(spans[0].parent_span_id, batch.span_id) << phase;
  }
  // Every line went to the gateway as a child of the batch's span.
  auto stats = http_client(env.gateway_port()).get("/_fake/stats").json();
  EXPECT_EQ(stats["traceparent_by_key"]["line2"],
            "00-" + client_trace + "-" + batch.span_id + "-01");
}

TEST(tracing, a_collector_that_is_down_costs_dropped_spans_and_nothing_else) {
  fakes::otlp_collector collector;
  ASSERT_EQ(collector.start(), "");
  collector.fail_next(1'000'000, 503);
  system_env env;
  env.start_gateway(0);
  env.start_engine({"--otlp-endpoint", collector.url()});
  http_client c(env.port());
  std::vector<std::string> ids;
  for (int i = 0; i < 10; ++i) ids.push_back(env.submit(c, "down-" + std::to_string(i)));
  for (const auto& id : ids) EXPECT_EQ(env.wait_terminal(c, id), "completed");
  std::string text;
  ASSERT_TRUE(wait_for(
      [&] {
        text = c.get("/metrics").body;
        return metric(text, R"(switchyard_trace_spans_dropped_total{reason="export_failed"})") >=
               10;
      },
      std::chrono::seconds(30)))
      << text;
  EXPECT_EQ(metric(text, "switchyard_trace_spans_exported_total"), 0);
  EXPECT_TRUE(collector.spans().empty());
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
