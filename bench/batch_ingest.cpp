// batch_ingest_bench: generates an OpenAI batch input file (LINES lines of about LINE_BYTES
// bytes, 3 models, 20 distinct system prompts, random-ish user content) in a temporary directory,
// then times sy::runtime::batch::ingest() on it and reports throughput and peak RSS growth.
// The file was just written, so it is read from the page cache: this measures the scan itself
// (parsing, validation, plan writing with fsync), not the disk.
//
// Environment: LINES (default 50000), LINE_BYTES (default 4000), RUNS (default 3).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "runtime/batch_plan.hpp"

namespace {

long env_or(const char* name, long fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::strtol(v, nullptr, 10) : fallback;
}

/// A field of /proc/self/status in KiB (VmRSS, VmHWM), or -1.
long status_kib(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0)
      return std::strtol(line.c_str() + field.size() + 1, nullptr, 10);
  }
  return -1;
}

/// Resets VmHWM to the current RSS; false when the kernel does not allow it.
bool reset_peak() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return out.good();
}

std::string random_text(std::mt19937_64& rng, size_t n) {
  static const std::string words[] = {
      "the ", "batch ",          "request ",    "model ", "token ",     "cache ", "prefix ",
      "\\n",  "\\\"quoted\\\" ", "caf\\u00e9 ", "12345 ", "summarise ", "this ",  "paragraph. "};
  // Whole words only, so that no escape sequence is cut in half; then pad to exactly n bytes.
  std::string out;
  for (;;) {
    const std::string& w = words[rng() % std::size(words)];
    if (out.size() + w.size() > n) break;
    out += w;
  }
  out.append(n - out.size(), '.');
  return out;
}

std::string generate(const std::string& path, long lines, long line_bytes) {
  std::mt19937_64 rng(42);
  const char* models[] = {"gpt-4o-mini", "meta-llama/Llama-3.1-8B-Instruct", "qwen2.5:7b"};
  std::vector<std::string> systems;
  for (int i = 0; i < 20; ++i) {
    systems.push_back("You are assistant #" + std::to_string(i) + ". " +
                      random_text(rng, 200 + 40 * static_cast<size_t>(i)));
  }
  std::ofstream out(path, std::ios::binary);
  for (long i = 0; i < lines; ++i) {
    std::string line = R"({"custom_id":"request-)" + std::to_string(i) +
                       R"(","method":"POST","url":"/v1/chat/completions","body":{"model":")" +
                       models[rng() % 3] + R"(","messages":[{"role":"system","content":")" +
                       systems[rng() % systems.size()] + R"("},{"role":"user","content":")";
    const size_t tail = 40;  // the closing text below
    const size_t want = static_cast<size_t>(line_bytes);
    line += random_text(rng, want > line.size() + tail ? want - line.size() - tail : 10);
    line += R"("}],"max_tokens":256,"temperature":0.7}})";
    out << line << '\n';
  }
  return path;
}

}  // namespace

int main() {
  const long lines = env_or("LINES", 50'000);
  const long line_bytes = env_or("LINE_BYTES", 4'000);
  const long runs = env_or("RUNS", 3);

  char tmpl[] = "/tmp/sy-batch-bench-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) {
    std::perror("mkdtemp");
    return 1;
  }
  const std::string dir = tmpl;
  const long rss_start = status_kib("VmRSS");
  const std::string input = generate(dir + "/input.jsonl", lines, line_bytes);
  const double mb = static_cast<double>(std::filesystem::file_size(input)) / 1e6;
  std::printf("input: %ld lines, %.1f MB, RSS %ld KiB before generating, %ld KiB after\n", lines,
              mb, rss_start, status_kib("VmRSS"));

  sy::runtime::batch::ingest_options o;
  o.input_path = input;
  o.endpoint = "/v1/chat/completions";
  o.work_dir = dir + "/work";
  o.max_lines = lines;

  std::printf("%-4s %10s %10s %12s %14s %s\n", "run", "seconds", "MB/s", "lines/s", "peak RSS +KiB",
              "models");
  int status = 0;
  for (long run = 1; run <= runs; ++run) {
    const long rss_before = status_kib("VmRSS");
    const bool reset = reset_peak();
    const auto t0 = std::chrono::steady_clock::now();
    auto r = sy::runtime::batch::ingest(o);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const long peak = status_kib("VmHWM") - rss_before;
    if (!r.ok() || !r->errors.empty()) {
      std::fprintf(stderr, "ingest failed: %s\n",
                   r.ok() ? r->errors[0].message.c_str() : r.error().message.c_str());
      status = 1;
      break;
    }
    std::printf("%-4ld %10.3f %10.0f %12.0f %14ld %zu%s\n", run, s, mb / s,
                static_cast<double>(r->line_count) / s, peak, r->models.size(),
                reset ? "" : "  (clear_refs refused: peak is VmHWM since start)");
  }
  std::printf(
      "peak RSS +KiB: VmHWM after ingest minus VmRSS before it; runs after the first reuse "
      "memory the allocator kept, so the first run is the one to read.\n");
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return status;
}
