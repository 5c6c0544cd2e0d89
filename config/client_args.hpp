#pragma once
/// The parsed command line of a client command, `switchyard <noun> <verb>` (docs/cli.md):
/// what to ask a running server over its public HTTP API. Parsed and checked in config/cli.cpp;
/// run by runtime/client_cli.hpp.

#include <cstdint>
#include <string>

namespace sy::config {

/// One client command with everything it needs; the server URL and the API key are resolved
/// (flag, then environment, then default).
struct client_args {
  std::string noun;  ///< "jobs" or "batches"
  std::string verb;  ///< jobs: submit get list cancel watch export; batches: create get list cancel
  std::string server;   ///< http://host:port[/prefix]: --server, SWITCHYARD_URL, or the default
  std::string api_key;  ///< from --api-key-file or SWITCHYARD_API_KEY; empty: none
  bool json = false;    ///< --json: the server's JSON on stdout instead of text for people
  std::string id;       ///< get, cancel, watch, export: the job or batch id
  std::string file;     ///< jobs submit: FILE ("-" or empty: stdin); batches create: --file
  bool wait = false;    ///< --wait given
  int64_t wait_s = -1;  ///< --wait=SECONDS; -1: no limit
  std::string idempotency_key;  ///< jobs submit: --idempotency-key; empty: one is made up
  std::string status;           ///< jobs list: --status
  int64_t limit = 0;            ///< list: --limit; 0: the server's default
  std::string after;            ///< list: --after (a cursor id)
  std::string output;           ///< batches create, jobs export: --output
  std::string errors;           ///< batches create: --errors
  bool gzip = false;            ///< jobs export: --gzip
  std::string endpoint = "/v1/chat/completions";  ///< batches create: --endpoint
  std::string completion_window = "24h";          ///< batches create: --completion-window
};

/// The server URL when neither --server nor SWITCHYARD_URL names one.
inline constexpr const char* default_server_url = "http://127.0.0.1:8080";

}  // namespace sy::config
