// The client subcommands on CLI11 (config/detail/client_commands.hpp). CLI11 throws; the caller
// (config/cli.cpp) catches everything it throws.

#include "config/detail/client_commands.hpp"

#include "config/detail/text.hpp"

namespace sy::config::detail {
namespace {

std::string server_help() {
  return std::string("The server, http://HOST:PORT [env: SWITCHYARD_URL] [default: ") +
         default_server_url + "]";
}

/// The options every client command takes.
void add_common(CLI::App& leaf, client_flags& f) {
  leaf.add_option("--server", f.args.server, server_help())->type_name("URL");
  leaf.add_option("--api-key-file", f.api_key_file,
                  "File holding the API key [default: env SWITCHYARD_API_KEY, if set]")
      ->type_name("FILE");
  leaf.add_flag("--json", f.args.json, "Print the server's JSON (one document) instead of text");
}

CLI::App* add_leaf(CLI::App& noun, client_flags& f, const std::string& verb,
                   const std::string& help) {
  CLI::App* leaf = noun.add_subcommand(verb, help);
  add_common(*leaf, f);
  f.leaves.push_back({leaf, {noun.get_name(), verb}});
  return leaf;
}

void add_wait(CLI::App& leaf, client_flags& f, const std::string& what) {
  leaf.add_flag("--wait", f.wait_text,
                "Wait until the " + what +
                    " has ended (--wait=SECONDS: at most that long; exit code 4 if it is still "
                    "running then)")
      ->type_name("[=SECONDS]");
}

void add_id(CLI::App& leaf, client_flags& f, const std::string& what) {
  leaf.add_option("ID", f.args.id, "The " + what + " id")->required();
}

void add_paging(CLI::App& leaf, client_flags& f) {
  leaf.add_option("--limit", f.args.limit, "At most N per page (1..100) [default: 20]")
      ->check(CLI::Range(1, 100))
      ->type_name("N");
  leaf.add_option("--after", f.args.after, "Start after this id (the last id of the page before)")
      ->type_name("ID");
}

void add_jobs(CLI::App& app, client_flags& f) {
  CLI::App* jobs = app.add_subcommand("jobs", "Submit, read, list, cancel and follow jobs");
  jobs->require_subcommand(1);
  CLI::App* submit = add_leaf(*jobs, f, "submit", "Submit a job (the POST /v1/jobs body)");
  submit->add_option("FILE", f.args.file, "The request body; - or none: read from stdin");
  add_wait(*submit, f, "job");
  submit->add_option("--idempotency-key", f.args.idempotency_key,
                     "Idempotency-Key header [default: a new random key]");
  add_id(*add_leaf(*jobs, f, "get", "Show a job"), f, "job");
  CLI::App* list = add_leaf(*jobs, f, "list", "List jobs, newest first");
  list->add_option("--status", f.args.status,
                   "Only jobs in this status (queued, in_progress, cancelling, completed, "
                   "failed, cancelled, expired)");
  add_paging(*list, f);
  add_id(*add_leaf(*jobs, f, "cancel", "Cancel a job"), f, "job");
  add_id(*add_leaf(*jobs, f, "watch",
                   "Follow a job's state changes until it ends (a progress bar for a task "
                   "list when stdout is a terminal)"),
         f, "job");
  CLI::App* exp = add_leaf(*jobs, f, "export", "Download a task-list job's outcomes as JSONL");
  add_id(*exp, f, "job");
  exp->add_option("--output", f.args.output, "Write to FILE")->required()->type_name("FILE");
  exp->add_flag("--gzip", f.args.gzip, "Ask for gzip and write it as it comes (FILE.gz)");
}

void add_batches(CLI::App& app, client_flags& f) {
  CLI::App* batches = app.add_subcommand("batches", "Create, read, list and cancel batches");
  batches->require_subcommand(1);
  CLI::App* create =
      add_leaf(*batches, f, "create", "Upload a JSONL file of requests and create a batch from it");
  create->add_option("--file", f.args.file, "The batch input file (.jsonl)")
      ->required()
      ->type_name("FILE");
  create->add_option("--endpoint", f.args.endpoint, "The endpoint of every request")
      ->capture_default_str();
  create->add_option("--completion-window", f.args.completion_window, "The completion window")
      ->capture_default_str();
  add_wait(*create, f, "batch");
  create->add_option("--output", f.args.output, "With --wait: write the output file here")
      ->type_name("FILE");
  create->add_option("--errors", f.args.errors, "With --wait: write the error file here")
      ->type_name("FILE");
  add_id(*add_leaf(*batches, f, "get", "Show a batch"), f, "batch");
  add_paging(*add_leaf(*batches, f, "list", "List batches, newest first"), f);
  add_id(*add_leaf(*batches, f, "cancel", "Cancel a batch"), f, "batch");
}

std::string env_value(const env_map& env, const char* name) {
  auto it = env.find(name);
  return it == env.end() ? std::string() : it->second;
}

}  // namespace

void add_client_commands(CLI::App& app, client_flags& flags) {
  add_jobs(app, flags);
  add_batches(app, flags);
}

bool client_command_parsed(const client_flags& flags) {
  for (const auto& leaf : flags.leaves)
    if (leaf.first->parsed()) return true;
  return false;
}

result<client_args> finish_client_command(client_flags& flags, const env_map& env) {
  client_args out = flags.args;
  for (const auto& [leaf, names] : flags.leaves) {
    if (!leaf->parsed()) continue;
    out.noun = names.first;
    out.verb = names.second;
  }
  if (out.server.empty()) out.server = env_value(env, "SWITCHYARD_URL");
  if (out.server.empty()) out.server = default_server_url;
  if (!flags.api_key_file.empty()) {
    auto key = read_file(flags.api_key_file, "--api-key-file");
    if (!key) return make_error(errc::invalid_arguments, key.error().message);
    out.api_key = std::string(trim(*key));
  } else {
    out.api_key = env_value(env, "SWITCHYARD_API_KEY");
  }
  out.wait = !flags.wait_text.empty();
  // CLI11 gives a flag without a value the text "true".
  if (out.wait && flags.wait_text != "true" &&
      (!parse_int64(flags.wait_text, out.wait_s) || out.wait_s < 0))
    return make_error(errc::invalid_arguments,
                      "--wait=" + flags.wait_text + ": the wait must be a whole number of seconds");
  if ((!out.output.empty() || !out.errors.empty()) && out.verb == "create" && !out.wait)
    return make_error(errc::invalid_arguments, "--output and --errors need --wait");
  return out;
}

}  // namespace sy::config::detail
