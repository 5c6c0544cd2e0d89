#pragma once
/// What the storage writer does with the status changes of a commit once it is durable
/// (storage::op_reply::changes): counts them in the metrics (runtime/metrics.hpp) and, when
/// spans are exported, records the spans they close (runtime/trace.hpp): a job's or a batch's own
/// span when it ends, a job's wait in the queue, a batch's phases. Writer thread; no I/O.

#include "storage/ops.hpp"

namespace sy::actors {

void observe_changes(const storage::op_reply& r);

}  // namespace sy::actors
