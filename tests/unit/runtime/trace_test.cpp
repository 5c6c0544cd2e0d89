#include "runtime/trace.hpp"

#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace sy::trace {
namespace SY_UNITY_ID {

const std::string tid = "4bf92f3577b34da6a3ce929d0e0e4736";
const std::string sid = "00f067aa0ba902b7";

TEST(Traceparent, ReadsTheW3CExample) {
  auto c = parse("00-" + tid + "-" + sid + "-01", "rojo=00f067aa0ba902b7");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->trace_id, tid);
  EXPECT_EQ(c->span_id, sid);
  EXPECT_EQ(c->flags, 1);
  EXPECT_EQ(c->state, "rojo=00f067aa0ba902b7");
  EXPECT_EQ(c->traceparent(), "00-" + tid + "-" + sid + "-01");
}

TEST(Traceparent, RefusesWhatTheStandardRefuses) {
  for (const std::string& bad : std::vector<std::string>{
           "",
           "00-" + tid + "-" + sid,                               // no flags
           "00-" + tid + "-" + sid + "-01-extra",                 // version 00 is exact
           "ff-" + tid + "-" + sid + "-01",                       // version ff
           "00-00000000000000000000000000000000-" + sid + "-01",  // zero trace id
           "00-" + tid + "-0000000000000000-01",                  // zero span id
           "00-4BF92F3577B34DA6A3CE929D0E0E4736-" + sid + "-01",  // upper case
           "00-" + tid + "-" + sid + "-0g",                       // not hex
           "00_" + tid + "-" + sid + "-01",                       // separator
       })
    EXPECT_FALSE(parse(bad)) << bad;
  // A later version is read by its first four fields.
  EXPECT_TRUE(parse("01-" + tid + "-" + sid + "-01-whatever"));
}

TEST(Traceparent, DropsATracestateThatCouldNotTravelInAHeader) {
  EXPECT_EQ(parse("00-" + tid + "-" + sid + "-01", "a=1\r\nx: y")->state, "");
  EXPECT_EQ(parse("00-" + tid + "-" + sid + "-01", std::string(513, 'a'))->state, "");
}

TEST(StoredTrace, KeepsTheJobsSpanAndItsParent) {
  auto client = *parse("00-" + tid + "-" + sid + "-01", "k=v");
  auto job = begin(client);
  EXPECT_EQ(job.self.trace_id, tid);
  EXPECT_NE(job.self.span_id, sid);
  EXPECT_EQ(job.parent_span_id, sid);
  auto back = load(store(job), "k=v");
  ASSERT_TRUE(back);
  EXPECT_EQ(back->self.traceparent(), job.self.traceparent());
  EXPECT_EQ(back->parent_span_id, sid);
  EXPECT_EQ(back->self.state, "k=v");
  // Without a client's context: a new root.
  auto root = begin(context{});
  EXPECT_TRUE(root.self.valid());
  EXPECT_EQ(root.parent_span_id, "");
  EXPECT_EQ(load(store(root))->parent_span_id, "");
  EXPECT_FALSE(load(""));
}

TEST(StoredTrace, AJobWithoutAClientTraceKeepsNothingAndDerivesItsOwn) {
  EXPECT_EQ(to_keep(context{}), "");
  auto a = of("job_01HX", "");
  auto b = of("job_01HX", "");
  EXPECT_TRUE(a.self.valid());
  EXPECT_EQ(a.self.traceparent(), b.self.traceparent());  // every reader finds the same ids
  EXPECT_EQ(a.parent_span_id, "");
  EXPECT_NE(of("job_01HY", "").self.trace_id, a.self.trace_id);
  // With a client's context, what is kept wins.
  auto client = *parse("00-" + tid + "-" + sid + "-01");
  auto kept = of("job_01HX", to_keep(client), "s=1");
  EXPECT_EQ(kept.self.trace_id, tid);
  EXPECT_EQ(kept.parent_span_id, sid);
  EXPECT_EQ(kept.self.state, "s=1");
}

TEST(StoredTrace, ChildrenShareTheTraceAndGetNewSpans) {
  auto a = start();
  auto b = a.child();
  EXPECT_EQ(b.trace_id, a.trace_id);
  EXPECT_NE(b.span_id, a.span_id);
  EXPECT_EQ(new_trace_id().size(), 32U);
  EXPECT_EQ(new_span_id().size(), 16U);
}

TEST(Otlp, EncodesSpansAsOtlpJson) {
  auto s = make_span(context{tid, sid, 1, {}}, "1111111111111111", "job", span_kind::server,
                     1'700'000'000'000, 1'700'000'000'250);
  s.attributes = {{"job.id", "job_1"}};
  s.int_attributes = {{"attempt", 2}};
  s.error = true;
  s.status_message = "gateway_error";
  auto j = nlohmann::json::parse(otlp_json({s}, "switchyard"));
  const auto& rs = j["resourceSpans"][0];
  EXPECT_EQ(rs["resource"]["attributes"][0]["key"], "service.name");
  EXPECT_EQ(rs["resource"]["attributes"][0]["value"]["stringValue"], "switchyard");
  const auto& span = rs["scopeSpans"][0]["spans"][0];
  EXPECT_EQ(span["traceId"], tid);
  EXPECT_EQ(span["spanId"], sid);
  EXPECT_EQ(span["parentSpanId"], "1111111111111111");
  EXPECT_EQ(span["kind"], 2);
  EXPECT_EQ(span["startTimeUnixNano"], "1700000000000000000");
  EXPECT_EQ(span["endTimeUnixNano"], "1700000000250000000");
  EXPECT_EQ(span["attributes"][0]["value"]["stringValue"], "job_1");
  EXPECT_EQ(span["attributes"][1]["value"]["intValue"], "2");
  EXPECT_EQ(span["status"]["code"], 2);
  EXPECT_EQ(span["status"]["message"], "gateway_error");
}

TEST(Exporter, RefusesAnEndpointItCannotReach) {
  std::string why;
  exporter_options o;
  o.endpoint = "https://collector:4318";
  EXPECT_FALSE(start_exporter(o, &why));
  EXPECT_FALSE(why.empty());
  o.endpoint = "not a url";
  EXPECT_FALSE(start_exporter(o, &why));
  EXPECT_FALSE(enabled());
}

}  // namespace SY_UNITY_ID
}  // namespace sy::trace
