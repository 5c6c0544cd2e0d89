// sy_bench_baseline: the machine's own figures for the building blocks the engine stands on,
// measured the way issue 2 states its reference figures (docs/benchmarks.md, "The machine"):
//
//   1. one fsync'd LMDB write transaction (one put, commit): µs per commit;
//   2. group-committed LMDB puts (1,000 puts per fsync'd transaction): puts/s;
//   3. JetStream asynchronous publish (128-byte messages, file storage): msg/s;
//   4. JetStream pull + ack of those messages (fetch 256 at a time, one ack each): msg/s.
//
// The engine's benchmark results depend on the machine far more than on run-to-run noise
// (fsync latency alone differed 5x between two machines of the same kind); these figures say
// which kind of machine a result was measured on, next to it.
//
//   sy_bench_baseline --dir DIR --nats nats://127.0.0.1:PORT [--messages N] [--commits N]
//
// DIR must be on a real disk (not tmpfs) and is used for the LMDB files. The nats-server must
// run with JetStream; the stream `SYBASE` is created and deleted. Depends only on third-party
// libraries (LMDB, nats.c), like the other load generators.
#include <lmdb.h>
#include <nats/nats.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using steady = std::chrono::steady_clock;

double seconds_since(steady::time_point t0) {
  return std::chrono::duration<double>(steady::now() - t0).count();
}

[[noreturn]] void die(const char* what, const char* detail) {
  std::fprintf(stderr, "baseline: %s: %s\n", what, detail);
  std::exit(1);
}

void check_mdb(int rc, const char* what) {
  if (rc != 0) die(what, mdb_strerror(rc));
}

void check_nats(natsStatus s, const char* what) {
  if (s != NATS_OK) {
    const char* text = nats_GetLastError(nullptr);
    die(what, text != nullptr && *text != '\0' ? text : natsStatus_GetText(s));
  }
}

struct options {
  std::string dir;
  std::string nats_url;
  int messages = 200000;
  int commits = 2000;
};

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    const char* v = argv[i + 1];
    if (k == "--dir") {
      o.dir = v;
    } else if (k == "--nats") {
      o.nats_url = v;
    } else if (k == "--messages") {
      o.messages = std::atoi(v);
    } else if (k == "--commits") {
      o.commits = std::atoi(v);
    } else {
      die("unknown option", k.c_str());
    }
  }
  if (o.dir.empty() || o.nats_url.empty() || o.messages < 1 || o.commits < 1)
    die("usage", "sy_bench_baseline --dir DIR --nats URL [--messages N] [--commits N]");
  return o;
}

/// An LMDB environment in `dir` with the engine's flags (no MDB_NOSYNC: every commit fsyncs).
MDB_env* open_env(const std::string& dir) {
  MDB_env* env = nullptr;
  check_mdb(mdb_env_create(&env), "mdb_env_create");
  check_mdb(mdb_env_set_mapsize(env, size_t{1} << 30), "mdb_env_set_mapsize");
  check_mdb(mdb_env_open(env, dir.c_str(), MDB_NOTLS, 0644), "mdb_env_open");
  return env;
}

/// Puts `n` keys (big-endian counters from `first`: in key order, as the engine's time-ordered
/// ids are, through the ordinary put) with 200-byte values in one transaction and commits it.
void put_and_commit(MDB_env* env, MDB_dbi dbi, uint64_t first, int n) {
  MDB_txn* txn = nullptr;
  check_mdb(mdb_txn_begin(env, nullptr, 0, &txn), "mdb_txn_begin");
  char value[200];
  std::memset(value, 'v', sizeof value);
  for (int i = 0; i < n; ++i) {
    unsigned char key[8];
    uint64_t k = first + static_cast<uint64_t>(i);
    for (int b = 7; b >= 0; --b, k >>= 8) key[b] = static_cast<unsigned char>(k & 0xFF);
    MDB_val kv{sizeof key, key}, vv{sizeof value, value};
    check_mdb(mdb_put(txn, dbi, &kv, &vv, 0), "mdb_put");
  }
  check_mdb(mdb_txn_commit(txn), "mdb_txn_commit");
}

void lmdb_figures(const options& o) {
  MDB_env* env = open_env(o.dir);
  MDB_txn* txn = nullptr;
  MDB_dbi dbi = 0;
  check_mdb(mdb_txn_begin(env, nullptr, 0, &txn), "mdb_txn_begin");
  check_mdb(mdb_dbi_open(txn, nullptr, 0, &dbi), "mdb_dbi_open");
  check_mdb(mdb_txn_commit(txn), "mdb_txn_commit");

  uint64_t next = 0;
  std::vector<double> us;
  us.reserve(static_cast<size_t>(o.commits));
  for (int i = 0; i < o.commits; ++i) {
    auto t0 = steady::now();
    put_and_commit(env, dbi, next++, 1);
    us.push_back(seconds_since(t0) * 1e6);
  }
  std::sort(us.begin(), us.end());
  double sum = 0;
  for (double u : us) sum += u;
  std::printf(
      "lmdb fsync'd transaction (1 put): %d commits, mean %.0f us, p50 %.0f us, p99 %.0f us\n",
      o.commits, sum / o.commits, us[us.size() / 2], us[us.size() * 99 / 100]);

  constexpr int per_txn = 1000;
  const int txns = 1000;
  auto t0 = steady::now();
  for (int i = 0; i < txns; ++i) {
    put_and_commit(env, dbi, next, per_txn);
    next += per_txn;
  }
  double secs = seconds_since(t0);
  std::printf("lmdb group-committed puts: %d puts in %d fsync'd transactions, %.0f puts/s\n",
              per_txn * txns, txns, per_txn * txns / secs);
  std::printf("RESULT_LMDB commit_us=%.0f commit_p50_us=%.0f puts_per_s=%.0f\n", sum / o.commits,
              us[us.size() / 2], per_txn * txns / secs);
  mdb_env_close(env);
}

void jetstream_figures(const options& o) {
  natsConnection* nc = nullptr;
  check_nats(natsConnection_ConnectTo(&nc, o.nats_url.c_str()), "connect");
  jsOptions jo;
  jsOptions_Init(&jo);
  jo.PublishAsync.MaxPending = 4096;
  jsCtx* js = nullptr;
  check_nats(natsConnection_JetStream(&js, nc, &jo), "jetstream context");

  jsStreamConfig sc;
  jsStreamConfig_Init(&sc);
  sc.Name = "SYBASE";
  const char* subjects[] = {"sybase.>"};
  sc.Subjects = subjects;
  sc.SubjectsLen = 1;
  sc.Storage = js_FileStorage;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  js_DeleteStream(js, "SYBASE", nullptr, &jerr);  // a previous run's, if any
  check_nats(js_AddStream(nullptr, js, &sc, nullptr, &jerr), "add stream");

  std::string payload(128, 'p');
  auto t0 = steady::now();
  for (int i = 0; i < o.messages; ++i)
    check_nats(js_PublishAsync(js, "sybase.tasks", payload.data(), static_cast<int>(payload.size()),
                               nullptr),
               "publish async");
  jsPubOptions po;
  jsPubOptions_Init(&po);
  po.MaxWait = 60000;
  check_nats(js_PublishAsyncComplete(js, &po), "publish async complete");
  double pub_secs = seconds_since(t0);
  std::printf("jetstream async publish: %d messages of %zu bytes, %.0f msg/s\n", o.messages,
              payload.size(), o.messages / pub_secs);

  natsSubscription* sub = nullptr;
  check_nats(js_PullSubscribe(&sub, js, "sybase.tasks", "base", nullptr, nullptr, &jerr),
             "pull subscribe");
  int got = 0;
  t0 = steady::now();
  while (got < o.messages) {
    natsMsgList list{};
    check_nats(natsSubscription_Fetch(&list, sub, 256, 5000, &jerr), "fetch");
    for (int i = 0; i < list.Count; ++i) check_nats(natsMsg_Ack(list.Msgs[i], nullptr), "ack");
    got += list.Count;
    natsMsgList_Destroy(&list);
  }
  check_nats(natsConnection_Flush(nc), "flush");
  double pull_secs = seconds_since(t0);
  std::printf("jetstream pull + ack: %d messages, fetch 256, %.0f msg/s\n", got, got / pull_secs);
  std::printf("RESULT_JS publish_per_s=%.0f pull_ack_per_s=%.0f\n", o.messages / pub_secs,
              got / pull_secs);

  natsSubscription_Destroy(sub);
  js_DeleteStream(js, "SYBASE", nullptr, &jerr);
  jsCtx_Destroy(js);
  natsConnection_Destroy(nc);
}

}  // namespace

int main(int argc, char** argv) {
  options o = parse(argc, argv);
  lmdb_figures(o);
  jetstream_figures(o);
  nats_Close();
  return 0;
}
