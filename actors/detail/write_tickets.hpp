#pragma once
/// The waiters of write_calls (actors/write.hpp), by ticket: what lets a write_call be a plain
/// value (the operation and a number) instead of carrying a callback.
///
/// Owner: one table per process (`write_tickets::process()`). Each live storage writer has a
/// slot in it, keyed by the writer's actor object: spawn_storage_writer opens it before it
/// hands the writer's handle out, and a functor attached to the writer closes it when the writer
/// terminates (CAF runs attached functors after it has closed the mailbox and dropped what was
/// in it).
///
/// Threads: a caller (any thread) adds its waiter to the slot of the writer it sends to and puts
/// the ticket in its write_call; the writer (its own thread) takes the waiters of one commit's
/// tickets under one lock and completes them inside that commit's completion_batch. One mutex
/// guards the table; waiters are completed and destroyed outside it.
///
/// Failure path: a waiter destroyed without being completed completes its caller with
/// storage_unavailable (reply_once's destructor, actors/write.hpp). Closing a slot destroys every
/// waiter still in it — write_calls dropped with the writer's mailbox, or taken in but never
/// committed — and `add` refuses a writer without a slot (gone, or no writer at all), destroying
/// the waiter at once. Whoever removes a waiter from the table under the lock is the only one who
/// completes it, so every caller hears exactly once.

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include <caf/abstract_actor.hpp>
#include <caf/actor_cast.hpp>

#include "actors/storage_writer.hpp"
#include "config/result.hpp"

namespace sy::actors::detail {

/// Someone waiting for the outcome of one write_call.
class write_waiter {
 public:
  virtual ~write_waiter() = default;
  /// Delivers the outcome; called at most once.
  virtual void complete(result<write_reply> r) = 0;
};

using write_waiter_ptr = std::unique_ptr<write_waiter>;

/// Names a writer's slot: its actor object, alive as long as anyone holds a handle to it.
using writer_key = const caf::abstract_actor*;

inline writer_key key_of(const storage_writer_actor& writer) {
  return caf::actor_cast<caf::abstract_actor*>(writer);
}

class write_tickets {
 public:
  /// The table of this process (never destroyed: writers may close their slots late).
  static write_tickets& process() {
    static auto* table = new write_tickets;
    return *table;
  }

  /// Opens the slot of `writer` (spawn_storage_writer).
  void open(writer_key writer) {
    std::lock_guard lock(mu_);
    slots_.try_emplace(writer);
  }

  /// Closes the slot of `writer`, destroying (so failing) every waiter left in it.
  void close(writer_key writer) {
    slot gone;
    {
      std::lock_guard lock(mu_);
      auto it = slots_.find(writer);
      if (it == slots_.end()) return;
      gone = std::move(it->second);
      slots_.erase(it);
    }
  }

  /// Files `w` under a new ticket of `writer`'s slot; nullopt (and `w` destroyed, so failed)
  /// when `writer` has no slot.
  std::optional<uint64_t> add(writer_key writer, write_waiter_ptr w) {
    std::unique_lock lock(mu_);
    auto it = slots_.find(writer);
    if (it == slots_.end()) {
      lock.unlock();
      w.reset();
      return std::nullopt;
    }
    auto ticket = it->second.next++;
    it->second.waiting.emplace(ticket, std::move(w));
    return ticket;
  }

  /// Removes the waiters of `tickets` (one commit's) from `writer`'s slot; `out[i]` is the
  /// waiter of `tickets[i]`, null when it is no longer there.
  void take(writer_key writer, const std::vector<uint64_t>& tickets,
            std::vector<write_waiter_ptr>& out) {
    out.clear();
    out.resize(tickets.size());
    std::lock_guard lock(mu_);
    auto it = slots_.find(writer);
    if (it == slots_.end()) return;
    auto& waiting = it->second.waiting;
    for (size_t i = 0; i < tickets.size(); ++i) {
      auto found = waiting.find(tickets[i]);
      if (found == waiting.end()) continue;
      out[i] = std::move(found->second);
      waiting.erase(found);
    }
  }

  /// Waiters in `writer`'s slot (tests).
  size_t waiting(writer_key writer) {
    std::lock_guard lock(mu_);
    auto it = slots_.find(writer);
    return it == slots_.end() ? 0 : it->second.waiting.size();
  }

 private:
  struct slot {
    uint64_t next = 1;
    std::unordered_map<uint64_t, write_waiter_ptr> waiting;
  };

  std::mutex mu_;
  std::unordered_map<writer_key, slot> slots_;
};

}  // namespace sy::actors::detail
