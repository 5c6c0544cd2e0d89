// The batches commands: create (upload, create, wait with a progress bar, download the results),
// get, list, cancel. What each prints and its exit codes: docs/cli.md.

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "runtime/client_cli.hpp"
#include "runtime/client_session.hpp"

namespace sy::runtime::client {
namespace {

using json = nlohmann::json;

/// How often a waiting `batches create` reads the batch.
constexpr std::chrono::milliseconds batch_poll_interval{500};
/// Uploads and downloads may be large (files_max_bytes is 200 MiB by default).
constexpr std::chrono::minutes file_transfer_timeout{10};

std::string batch_line(const json& batch) {
  if (!batch.is_object()) return batch.dump() + "\n";
  return batch.value("id", std::string("-")) + "  " + batch.value("status", std::string("-")) +
         "\n";
}

/// The file name a multipart part may carry: the base name, without quotes or control bytes.
std::string part_filename(const std::string& path) {
  std::string name = std::filesystem::path(path).filename().string();
  for (char& c : name)
    if (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20) c = '_';
  return name;
}

/// POST /v1/files (purpose batch) with the bytes of `path`; the file's id, or an exit code.
reply upload(const session& s, const std::string& path, const std::string& content) {
  const std::string boundary = random_token("switchyard-");
  std::string body;
  body.append("--").append(boundary).append(
      "\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n");
  body.append("--").append(boundary).append(
      "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"");
  body.append(part_filename(path)).append("\"\r\nContent-Type: application/jsonl\r\n\r\n");
  body.append(content).append("\r\n--").append(boundary).append("--\r\n");
  http_call c = make_call("POST", "/v1/files");
  c.headers = {{"Content-Type", "multipart/form-data; boundary=" + boundary}};
  c.body = std::move(body);
  c.timeout = file_transfer_timeout;
  return s.call(c);
}

/// Draws the bar over the last one (\r, then clear to the end of the line).
void draw_bar(const json& batch, std::chrono::steady_clock::time_point start) {
  const auto counts = batch.is_object() ? batch.value("request_counts", json()) : json();
  std::printf("\r%s\033[K", progress_line(progress_of(counts, seconds_since(start))).c_str());
  std::fflush(stdout);
}

/// Writes the batch's file `field` (output_file_id, error_file_id) to `path`; an empty file when
/// the batch has none.
int save_file(const session& s, const json& batch, const char* field, const std::string& path) {
  if (path.empty()) return exit_ok;
  if (!batch.is_object() || !batch.contains(field) || !batch[field].is_string()) {
    std::ofstream empty(path, std::ios::trunc);
    if (!empty) return complain("cannot write " + path, exit_failed);
    return exit_ok;
  }
  http_call c =
      make_call("GET", "/v1/files/" + url_encode(batch[field].get<std::string>()) + "/content");
  c.timeout = file_transfer_timeout;
  return s.download(c, path).exit;
}

/// Reads the batch until it ends or --wait's limit passes, drawing the bar on a terminal; then
/// saves the files asked for and prints the batch.
int wait_for_batch(const session& s, const std::string& id) {
  const auto& a = s.args();
  const bool bar = s.draws_progress();
  const auto start = std::chrono::steady_clock::now();
  const std::string target = "/v1/batches/" + url_encode(id);
  for (;;) {
    auto r = s.call(make_call("GET", target));
    if (r.exit != exit_ok) {
      if (bar) std::printf("\n");
      return r.exit;
    }
    const std::string status = r.doc.is_object() ? r.doc.value("status", std::string()) : "";
    if (bar) draw_bar(r.doc, start);
    const bool done = is_terminal(status);
    const bool late = a.wait_s >= 0 && seconds_since(start) >= static_cast<double>(a.wait_s);
    if (done || late) {
      if (bar) std::printf("\n");
      if (late && !done) {
        s.print(r, batch_details(r.doc));
        return still_running("the batch " + id, status, a.wait_s);
      }
      if (int code = save_file(s, r.doc, "output_file_id", a.output); code != exit_ok) return code;
      if (int code = save_file(s, r.doc, "error_file_id", a.errors); code != exit_ok) return code;
      s.print(r, batch_details(r.doc));
      return exit_for_status(status);
    }
    std::this_thread::sleep_for(batch_poll_interval);
  }
}

}  // namespace

int batches_create(const session& s) {
  const auto& a = s.args();
  std::string content;
  std::string why;
  if (!read_input(a.file, content, why)) return complain(why, exit_usage);
  auto file = upload(s, a.file, content);
  if (file.exit != exit_ok) return file.exit;
  const std::string file_id = file.doc.is_object() ? file.doc.value("id", std::string()) : "";
  if (file_id.empty()) return complain("the upload's answer names no file id", exit_failed);
  http_call c = make_call("POST", "/v1/batches");
  c.headers = {{"Content-Type", "application/json"}};
  c.body = json{{"input_file_id", file_id},
                {"endpoint", a.endpoint},
                {"completion_window", a.completion_window}}
               .dump(-1, ' ', false, json::error_handler_t::replace);
  auto r = s.call(c);
  if (r.exit != exit_ok) return r.exit;
  const std::string id = r.doc.is_object() ? r.doc.value("id", std::string()) : "";
  if (!a.wait || id.empty()) {
    s.print(r, batch_line(r.doc));
    return exit_ok;
  }
  return wait_for_batch(s, id);
}

int batches_get(const session& s) {
  auto r = s.call(make_call("GET", "/v1/batches/" + url_encode(s.args().id)));
  if (r.exit != exit_ok) return r.exit;
  s.print(r, batch_details(r.doc));
  return exit_for_status(r.doc.is_object() ? r.doc.value("status", std::string()) : "");
}

int batches_list(const session& s) {
  const auto& a = s.args();
  std::string query;
  if (a.limit > 0) query.append("?limit=").append(std::to_string(a.limit));
  if (!a.after.empty())
    query.append(query.empty() ? "?" : "&").append("after=").append(url_encode(a.after));
  auto r = s.call(make_call("GET", "/v1/batches" + query));
  if (r.exit != exit_ok) return r.exit;
  s.print(r, batches_table(r.doc));
  return exit_ok;
}

int batches_cancel(const session& s) {
  auto r = s.call(make_call("POST", "/v1/batches/" + url_encode(s.args().id) + "/cancel"));
  if (r.exit != exit_ok) return r.exit;
  s.print(r, batch_line(r.doc));
  return exit_ok;
}

}  // namespace sy::runtime::client
