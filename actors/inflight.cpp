#include "actors/engine_context.hpp"

namespace sy::actors {

uint64_t inflight_registry::add(std::string task_id, std::shared_ptr<runtime::abort_handle> h) {
  std::lock_guard lock{mu_};
  auto id = next_++;
  running_.emplace(id, entry{std::move(task_id), std::move(h)});
  return id;
}

void inflight_registry::remove(uint64_t id) {
  std::lock_guard lock{mu_};
  running_.erase(id);
}

void inflight_registry::abort_all() {
  std::lock_guard lock{mu_};
  for (auto& [id, e] : running_) e.handle->abort();
}

bool inflight_registry::abort_task(const std::string& task_id) {
  std::lock_guard lock{mu_};
  bool found = false;
  for (auto& [id, e] : running_) {
    if (e.task_id != task_id) continue;
    e.handle->abort();
    found = true;
  }
  return found;
}

}  // namespace sy::actors
