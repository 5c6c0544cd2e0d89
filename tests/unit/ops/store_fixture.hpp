#pragma once
/// A fresh LMDB store in a temp dir, and one operation per committed transaction: the fixture of
/// the state-machine tests (ops_test.cpp, list_ops_test.cpp).

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>

#include "storage/lmdb_env.hpp"
#include "storage/ops.hpp"
#include "tests/support/temp_dir.hpp"

namespace sy::storage {

class store_fixture : public ::testing::Test {
 protected:
  void SetUp() override {
    auto e = environment::open(dir_.path(), 64 << 20);
    ASSERT_TRUE(e.ok()) << e.error().message;
    env_ = std::move(e.value());
  }

  /// Applies `op` in a transaction of its own and commits it.
  op_reply run(const write_op& op) {
    auto txn = env_->begin_write();
    EXPECT_TRUE(txn.ok());
    auto r = apply(*txn, op, policy_);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
    EXPECT_TRUE(txn->commit().ok());
    return r.value();
  }

  std::optional<job_record> job(const std::string& id) {
    auto txn = env_->begin_read();
    return get_job(txn, id);
  }

  size_t count(db d) {
    auto txn = env_->begin_read();
    size_t n = 0;
    txn.scan(d, "", [&](auto, auto) { return ++n, true; });
    return n;
  }

  test::temp_dir dir_;
  std::unique_ptr<environment> env_;
  store_policy policy_;
};

}  // namespace sy::storage
