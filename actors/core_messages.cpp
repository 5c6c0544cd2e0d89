#include "actors/core_messages.hpp"

#include <chrono>
#include <vector>

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>

#include "actors/detail/caf_inspect.hpp"

namespace sy::actors::core {
namespace {

/// The first byte of every encoded request and reply: a node refuses another version's bytes
/// instead of misreading them.
constexpr char wire_version = 1;

template <class Variant>
std::string encode_variant(const Variant& v) {
  std::vector<char> buf{wire_version};
  // No actor handles inside, so no actor system is needed to write or read them.
  caf::binary_serializer sink{nullptr, buf};
  // Inspectors take their values by reference; a saving one only reads them, so the request
  // (with its bodies) is not copied to be written.
  (void)sink(storage::variant_field{const_cast<Variant&>(v)});
  return {buf.begin(), buf.end()};
}

template <class Variant>
result<Variant> decode_variant(std::string_view bytes, const char* what) {
  auto refuse = [&](const std::string& why) {
    return make_error(errc::invalid_request, std::string("cannot read the ") + what + ": " + why);
  };
  if (bytes.empty() || bytes.front() != wire_version)
    return refuse(bytes.empty() ? "it is empty" : "it is of another version");
  bytes.remove_prefix(1);
  caf::binary_deserializer source{nullptr, bytes.data(), bytes.size()};
  Variant out;
  if (auto err = source(storage::variant_field{out})) return refuse(caf::to_string(err));
  if (source.remaining() != 0)
    return refuse(std::to_string(source.remaining()) + " bytes are left over");
  return out;
}

template <class T>
reply answer(result<T> r) {
  if (!r) return std::move(r).error();
  return std::move(*r);
}

reply answer(const status& s) {
  if (!s) return s.error();
  return done{};
}

boost::asio::awaitable<reply> worker(worker_service& workers, admitted<worker_request> call,
                                     std::shared_ptr<caller_presence> caller) {
  switch (call->what) {
    case worker_request::kind::lease:
      co_return answer(co_await workers.lease(std::move(call), std::move(caller)));
    case worker_request::kind::heartbeat:
      co_return answer(co_await workers.heartbeat(std::move(call)));
    case worker_request::kind::complete:
      co_return answer(co_await workers.complete(std::move(call)));
    case worker_request::kind::fail:
      co_return answer(co_await workers.fail(std::move(call)));
    case worker_request::kind::credentials:
      co_return answer(co_await workers.credentials(std::move(call)));
  }
  co_return make_error(errc::invalid_request, "a worker call of no known kind");
}

/// A call of the Files and Batch API.
boost::asio::awaitable<reply> files(batch_service& batches, request r) {
  if (auto* m = std::get_if<create_file>(&r))
    co_return answer(co_await batches.create_file(std::move(m->request)));
  if (auto* m = std::get_if<get_file>(&r)) co_return answer(batches.get_file(m->tenant, m->id));
  if (auto* m = std::get_if<list_files>(&r))
    co_return answer(batches.list_files(m->tenant, m->purpose, m->ascending, m->after, m->limit));
  if (auto* m = std::get_if<delete_file>(&r))
    co_return answer(co_await batches.delete_file(m->tenant, m->id));
  if (auto* m = std::get_if<create_batch>(&r))
    co_return answer(co_await batches.create_batch(std::move(m->request)));
  if (auto* m = std::get_if<get_batch>(&r)) co_return answer(batches.get_batch(m->tenant, m->id));
  if (auto* m = std::get_if<list_batches>(&r))
    co_return answer(batches.list_batches(m->tenant, m->after, m->limit));
  auto& m = std::get<cancel_batch>(r);
  co_return answer(co_await batches.cancel_batch(m.tenant, m.id));
}

/// The Files and Batch API's requests come last in `request`, from create_file on.
constexpr size_t first_file_request = 14;
static_assert(std::is_same_v<std::variant_alternative_t<first_file_request, request>, create_file>);

}  // namespace

boost::asio::awaitable<reply> serve(const services& core, request r,
                                    std::shared_ptr<caller_presence> caller) {
  auto& jobs = core.jobs;
  auto* workers = core.workers;
  if (r.index() >= first_file_request) {
    if (!core.batches)
      co_return make_error(errc::not_found, "The Files and Batch API is not enabled here.");
    co_return co_await files(*core.batches, std::move(r));
  }
  using std::chrono::milliseconds;
  if (auto* m = std::get_if<submit_job>(&r))
    co_return answer(co_await jobs.submit(std::move(m->request)));
  if (auto* m = std::get_if<get_job>(&r)) co_return answer(jobs.get(m->tenant, m->id));
  if (auto* m = std::get_if<wait_job>(&r))
    co_return answer(co_await jobs.wait_terminal(m->tenant, m->id, milliseconds(m->timeout_ms)));
  if (auto* m = std::get_if<job_events>(&r))
    co_return answer(
        co_await jobs.next_events(m->tenant, m->id, m->after_seq, milliseconds(m->timeout_ms)));
  if (auto* m = std::get_if<cancel_job>(&r))
    co_return answer(co_await jobs.cancel(m->tenant, m->id));
  if (auto* m = std::get_if<delete_job>(&r))
    co_return answer(co_await jobs.remove(m->tenant, m->id));
  if (auto* m = std::get_if<rerun_job>(&r)) co_return answer(co_await jobs.rerun(m->tenant, m->id));
  if (auto* m = std::get_if<list_jobs>(&r))
    co_return answer(jobs.list(m->tenant, m->status, m->kind, m->limit, m->after));
  if (auto* m = std::get_if<list_tasks>(&r))
    co_return answer(jobs.list_tasks(m->tenant, m->id, m->status, m->limit, m->after));
  if (auto* m = std::get_if<get_task>(&r))
    co_return answer(jobs.get_task(m->tenant, m->id, m->task));
  if (auto* m = std::get_if<append_tasks>(&r))
    co_return answer(co_await jobs.append(m->id, std::move(m->request)));
  if (!workers) co_return make_error(errc::not_found, "this listener serves no worker calls");
  if (auto* m = std::get_if<worker_call>(&r))
    co_return co_await worker(*workers, std::move(m->request), std::move(caller));
  if (std::holds_alternative<rotate_keys>(r)) co_return answer(co_await workers->rotate_keys());
  co_return answer(co_await workers->jwks());
}

boost::asio::awaitable<status> ask_done(client& c, request r) {
  auto rep = co_await c.call(std::move(r));
  if (auto* e = std::get_if<sy::error>(&rep)) co_return std::move(*e);
  if (std::holds_alternative<done>(rep)) co_return ok;
  co_return make_error(errc::internal_error, "the core answered a call with another type");
}

std::string encode(const request& r) { return encode_variant(r); }
std::string encode(const reply& r) { return encode_variant(r); }

result<request> decode_request(std::string_view bytes) {
  return decode_variant<request>(bytes, "request");
}
result<reply> decode_reply(std::string_view bytes) { return decode_variant<reply>(bytes, "reply"); }

}  // namespace sy::actors::core
