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
reply answer(result<T>&& r) {
  if (!r) return r.error();
  return std::move(*r);
}

reply answer(status&& s) {
  if (!s) return s.error();
  return done{};
}

using boost::asio::awaitable;

awaitable<reply> worker(worker_service& workers, admitted<worker_request> call,
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

using std::chrono::milliseconds;
using caller_ptr = std::shared_ptr<caller_presence>;

error not_served(const char* what) { return make_error(errc::not_found, what); }
constexpr const char* no_workers = "this listener serves no worker calls";
constexpr const char* no_files = "The Files and Batch API is not enabled here.";

// One small coroutine per request: each has a frame of its own size (one coroutine for all of
// them would carry every branch's temporaries in every request's frame). A request is moved
// into its coroutine's parameter before `serve` returns.

awaitable<reply> run(const services& c, submit_job m, caller_ptr) {
  co_return answer(co_await c.jobs.submit(std::move(m.request)));
}
awaitable<reply> run(const services& c, get_job m, caller_ptr) {
  co_return answer(c.jobs.get(m.tenant, m.id));
}
awaitable<reply> run(const services& c, wait_job m, caller_ptr) {
  co_return answer(co_await c.jobs.wait_terminal(m.tenant, m.id, milliseconds(m.timeout_ms)));
}
awaitable<reply> run(const services& c, job_events m, caller_ptr) {
  co_return answer(
      co_await c.jobs.next_events(m.tenant, m.id, m.after_seq, milliseconds(m.timeout_ms)));
}
awaitable<reply> run(const services& c, cancel_job m, caller_ptr) {
  co_return answer(co_await c.jobs.cancel(m.tenant, m.id));
}
awaitable<reply> run(const services& c, delete_job m, caller_ptr) {
  co_return answer(co_await c.jobs.remove(m.tenant, m.id));
}
awaitable<reply> run(const services& c, rerun_job m, caller_ptr) {
  co_return answer(co_await c.jobs.rerun(m.tenant, m.id));
}
awaitable<reply> run(const services& c, list_jobs m, caller_ptr) {
  co_return answer(c.jobs.list(m.tenant, m.status, m.kind, m.limit, m.after));
}
awaitable<reply> run(const services& c, list_tasks m, caller_ptr) {
  co_return answer(c.jobs.list_tasks(m.tenant, m.id, m.status, m.limit, m.after));
}
awaitable<reply> run(const services& c, get_task m, caller_ptr) {
  co_return answer(c.jobs.get_task(m.tenant, m.id, m.task));
}
awaitable<reply> run(const services& c, append_tasks m, caller_ptr) {
  co_return answer(co_await c.jobs.append(m.id, std::move(m.request)));
}
awaitable<reply> run(const services& c, worker_call m, caller_ptr caller) {
  if (!c.workers) co_return not_served(no_workers);
  co_return co_await worker(*c.workers, std::move(m.request), std::move(caller));
}
awaitable<reply> run(const services& c, get_jwks, caller_ptr) {
  if (!c.workers) co_return not_served(no_workers);
  co_return answer(co_await c.workers->jwks());
}
awaitable<reply> run(const services& c, rotate_keys, caller_ptr) {
  if (!c.workers) co_return not_served(no_workers);
  co_return answer(co_await c.workers->rotate_keys());
}
awaitable<reply> run(const services& c, create_file m, caller_ptr) {
  if (!c.batches) co_return not_served(no_files);
  co_return answer(co_await c.batches->create_file(std::move(m.request)));
}
awaitable<reply> run(const services& c, get_file m, caller_ptr) {
  if (!c.batches) co_return not_served(no_files);
  co_return answer(c.batches->get_file(m.tenant, m.id));
}
awaitable<reply> run(const services& c, list_files m, caller_ptr) {
  if (!c.batches) co_return not_served(no_files);
  co_return answer(c.batches->list_files(m.tenant, m.purpose, m.ascending, m.after, m.limit));
}
awaitable<reply> run(const services& c, delete_file m, caller_ptr) {
  if (!c.batches) co_return not_served(no_files);
  co_return answer(co_await c.batches->delete_file(m.tenant, m.id));
}
awaitable<reply> run(const services& c, create_batch m, caller_ptr) {
  if (!c.batches) co_return not_served(no_files);
  co_return answer(co_await c.batches->create_batch(std::move(m.request)));
}
awaitable<reply> run(const services& c, get_batch m, caller_ptr) {
  if (!c.batches) co_return not_served(no_files);
  co_return answer(c.batches->get_batch(m.tenant, m.id));
}
awaitable<reply> run(const services& c, list_batches m, caller_ptr) {
  if (!c.batches) co_return not_served(no_files);
  co_return answer(c.batches->list_batches(m.tenant, m.after, m.limit));
}
awaitable<reply> run(const services& c, cancel_batch m, caller_ptr) {
  if (!c.batches) co_return not_served(no_files);
  co_return answer(co_await c.batches->cancel_batch(m.tenant, m.id));
}

}  // namespace

awaitable<reply> serve(const services& core, request r, std::shared_ptr<caller_presence> caller) {
  return std::visit([&](auto& m) { return run(core, std::move(m), std::move(caller)); }, r);
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
