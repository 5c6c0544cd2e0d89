#include "actors/engine_context.hpp"

namespace sy::actors {

uint64_t inflight_registry::add(std::shared_ptr<runtime::abort_handle> h) {
  std::lock_guard lock{mu_};
  auto id = next_++;
  running_.emplace(id, std::move(h));
  return id;
}

void inflight_registry::remove(uint64_t id) {
  std::lock_guard lock{mu_};
  running_.erase(id);
}

void inflight_registry::abort_all() {
  std::lock_guard lock{mu_};
  for (auto& [id, h] : running_) h->abort();
}

}  // namespace sy::actors
