#include "runtime/client_output.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <vector>

namespace sy::runtime::client {
namespace {

using json = nlohmann::json;
using table_row = std::vector<std::string>;

/// A field as text: a string as it is, another value as JSON, null or absent as "-".
std::string field_text(const json& object, const char* key) {
  if (!object.is_object()) return "-";
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return "-";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

int64_t count_of(const json& object, const char* key) {
  if (!object.is_object()) return 0;
  auto it = object.find(key);
  return it != object.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

/// Columns padded to their widest cell, two spaces apart.
std::string render_table(const std::vector<table_row>& rows) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()));
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line.append(row[i]);
      if (i + 1 < row.size()) line.append(widths[i] - row[i].size() + 2, ' ');
    }
    out.append(line).append("\n");
  }
  return out;
}

/// "name  value" lines, the names padded to one width.
std::string render_pairs(const std::vector<std::pair<std::string, std::string>>& pairs) {
  std::vector<table_row> rows;
  rows.reserve(pairs.size());
  for (const auto& [name, value] : pairs) rows.push_back({name, value});
  return render_table(rows);
}

/// The objects of a list page's `data`.
json page_data(const json& page) {
  json out = json::array();
  if (!page.is_object() || !page.contains("data") || !page["data"].is_array()) return out;
  for (const auto& item : page["data"])
    if (item.is_object()) out.push_back(item);
  return out;
}

std::string page_footer(const json& page, const char* what) {
  const auto data = page_data(page);
  if (data.empty()) return std::string("no ") + what + "\n";
  if (page.value("has_more", false)) return "more: --after " + field_text(page, "last_id") + "\n";
  return {};
}

std::string format_seconds(int64_t s) {
  char text[32];
  if (s < 60) {
    std::snprintf(text, sizeof text, "%llds", static_cast<long long>(s));
  } else if (s < 3600) {
    std::snprintf(text, sizeof text, "%lldm%02llds", static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  } else {
    std::snprintf(text, sizeof text, "%lldh%02lldm", static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60));
  }
  return text;
}

/// "<a>/<b>", e.g. attempts over max_attempts.
std::string ratio(const std::string& a, const std::string& b) {
  std::string out = a;
  return out.append("/").append(b);
}

std::string counts_text(const json& counts) {
  return "completed " + std::to_string(count_of(counts, "completed")) + ", failed " +
         std::to_string(count_of(counts, "failed")) + ", total " +
         std::to_string(count_of(counts, "total"));
}

}  // namespace

bool is_terminal(std::string_view status) {
  return status == "completed" || status == "failed" || status == "cancelled" ||
         status == "expired";
}

int exit_for_status(std::string_view status) {
  return is_terminal(status) && status != "completed" ? exit_failed : exit_ok;
}

std::string format_time(const json& unix_seconds) {
  if (!unix_seconds.is_number_integer()) return "-";
  const auto t = static_cast<std::time_t>(unix_seconds.get<int64_t>());
  std::tm parts{};
  if (::gmtime_r(&t, &parts) == nullptr) return "-";
  char text[32];
  if (std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &parts) == 0) return "-";
  return text;
}

std::string jobs_table(const json& page) {
  std::vector<table_row> rows{{"ID", "STATUS", "ENDPOINT", "MODEL", "ATTEMPTS", "CREATED (UTC)"}};
  const auto data = page_data(page);
  for (const auto& job : data) {
    rows.push_back({field_text(job, "id"), field_text(job, "status"), field_text(job, "endpoint"),
                    field_text(job, "model"),
                    ratio(field_text(job, "attempts"), field_text(job, "max_attempts")),
                    format_time(job.value("created_at", json()))});
  }
  return (data.empty() ? std::string() : render_table(rows)) + page_footer(page, "jobs");
}

std::string job_details(const json& job) {
  if (!job.is_object()) return job.dump() + "\n";
  std::vector<std::pair<std::string, std::string>> pairs{
      {"id", field_text(job, "id")},
      {"status", field_text(job, "status")},
      {"endpoint", field_text(job, "endpoint")},
      {"model", field_text(job, "model")},
      {"attempts", ratio(field_text(job, "attempts"), field_text(job, "max_attempts"))},
      {"created", format_time(job.value("created_at", json()))},
      {"started", format_time(job.value("started_at", json()))},
      {"finished", format_time(job.value("finished_at", json()))}};
  if (job.contains("task_counts") && job["task_counts"].is_object())
    pairs.emplace_back("tasks", counts_text(job["task_counts"]));
  if (job.contains("metadata") && job["metadata"].is_object() && !job["metadata"].empty())
    pairs.emplace_back("metadata", job["metadata"].dump());
  if (job.contains("error") && job["error"].is_object())
    pairs.emplace_back(
        "error", field_text(job["error"], "code") + ": " + field_text(job["error"], "message"));
  std::string out = render_pairs(pairs);
  if (job.contains("result") && job["result"].is_object()) {
    const auto& result = job["result"];
    out.append("result    HTTP ").append(field_text(result, "status_code")).append("\n");
    if (result.contains("body"))
      out.append(result["body"].is_string() ? result["body"].get<std::string>()
                                            : result["body"].dump(2))
          .append("\n");
  }
  return out;
}

std::string batches_table(const json& page) {
  std::vector<table_row> rows{
      {"ID", "STATUS", "ENDPOINT", "DONE/TOTAL", "FAILED", "CREATED (UTC)"}};
  const auto data = page_data(page);
  for (const auto& batch : data) {
    const auto counts = batch.value("request_counts", json::object());
    rows.push_back(
        {field_text(batch, "id"), field_text(batch, "status"), field_text(batch, "endpoint"),
         ratio(std::to_string(count_of(counts, "completed") + count_of(counts, "failed")),
               std::to_string(count_of(counts, "total"))),
         std::to_string(count_of(counts, "failed")),
         format_time(batch.value("created_at", json()))});
  }
  return (data.empty() ? std::string() : render_table(rows)) + page_footer(page, "batches");
}

std::string batch_details(const json& batch) {
  if (!batch.is_object()) return batch.dump() + "\n";
  std::string out = render_pairs({{"id", field_text(batch, "id")},
                                  {"status", field_text(batch, "status")},
                                  {"endpoint", field_text(batch, "endpoint")},
                                  {"requests", counts_text(batch.value("request_counts", json()))},
                                  {"input_file", field_text(batch, "input_file_id")},
                                  {"output_file", field_text(batch, "output_file_id")},
                                  {"error_file", field_text(batch, "error_file_id")},
                                  {"created", format_time(batch.value("created_at", json()))},
                                  {"expires", format_time(batch.value("expires_at", json()))}});
  const auto errors = batch.value("errors", json());
  if (errors.is_object() && errors.contains("data") && errors["data"].is_array()) {
    for (const auto& e : errors["data"]) {
      out.append("error     ");
      if (e.contains("line") && !e["line"].is_null())
        out.append("line ").append(field_text(e, "line")).append(": ");
      out.append(field_text(e, "code")).append(": ").append(field_text(e, "message")).append("\n");
    }
  }
  return out;
}

progress progress_of(const nlohmann::json& counts, double elapsed_s) {
  auto count = [&counts](const char* key) -> int64_t {
    return counts.is_object() && counts.contains(key) && counts[key].is_number_integer()
               ? counts[key].get<int64_t>()
               : 0;
  };
  return progress{.completed = count("completed"),
                  .failed = count("failed"),
                  .total = count("total"),
                  .elapsed_s = elapsed_s};
}

std::string progress_line(const progress& p, int width) {
  const int64_t done = p.completed + p.failed;
  const double fraction =
      p.total > 0 ? std::min(1.0, static_cast<double>(done) / static_cast<double>(p.total)) : 0.0;
  const auto marks = static_cast<size_t>(fraction * width);
  std::string out = "[";
  out.append(marks, '#').append(static_cast<size_t>(width) - marks, '-').append("] ");
  out.append(std::to_string(done)).append("/").append(std::to_string(p.total));
  out.append("  completed ").append(std::to_string(p.completed));
  out.append("  failed ").append(std::to_string(p.failed));
  if (done > 0 && p.elapsed_s > 0) {
    const double rate = static_cast<double>(done) / p.elapsed_s;
    char text[32];
    std::snprintf(text, sizeof text, "  %.1f/s", rate);
    out.append(text);
    if (p.total > done)
      out.append("  ETA ").append(format_seconds(
          static_cast<int64_t>(std::llround(static_cast<double>(p.total - done) / rate))));
  }
  return out;
}

std::string error_text(std::string_view body) {
  const auto doc = json::parse(body, nullptr, false);
  if (doc.is_object() && doc.contains("error") && doc["error"].is_object()) {
    const auto& e = doc["error"];
    std::string out = field_text(e, "message");
    if (e.contains("code") && e["code"].is_string())
      out.append(" (code ").append(e["code"].get<std::string>()).append(")");
    return out;
  }
  return body.empty() ? std::string("(no body)") : std::string(body);
}

}  // namespace sy::runtime::client
