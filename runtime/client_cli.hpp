#pragma once
/// The client commands of the `switchyard` binary, `switchyard <noun> <verb>` (docs/cli.md): each
/// talks to a running server over its public HTTP API (runtime/client_http.hpp) and returns an
/// exit code scripts can trust (runtime/client_output.hpp). Runs on the process's main thread.
///
/// Files: client_cli.cpp (dispatch, jobs), client_batches.cpp (batches), client_watch.cpp
/// (jobs watch, jobs export), client_session.* (the exchange and its errors), client_output.*
/// (what is printed), client_http.* (the HTTP client).

#include "config/client_args.hpp"

namespace sy::runtime {

/// Runs the command `args` names; prints to stdout (results) and stderr (what failed and why).
int run_client(const config::client_args& args);

namespace client {

class session;

/// The commands, one per verb (client_cli.cpp, client_batches.cpp, client_watch.cpp).
int jobs_submit(const session& s);
int jobs_get(const session& s);
int jobs_list(const session& s);
int jobs_cancel(const session& s);
int jobs_watch(const session& s);
int jobs_export(const session& s);
int batches_create(const session& s);
int batches_get(const session& s);
int batches_list(const session& s);
int batches_cancel(const session& s);

}  // namespace client
}  // namespace sy::runtime
