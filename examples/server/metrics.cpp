// genie-server: Prometheus metrics (see metrics.hpp).
#include "metrics.hpp"

#include <fmt/format.h>

namespace genie::server {

void Histogram::observe(double v) {
    size_t i = 0;
    while (i < bounds_.size() && v > bounds_[i]) ++i;
    ++counts_[i];
    sum_ += v;
    ++count_;
}

void Histogram::render(std::string& out, const std::string& name, const std::string& help) const {
    out += fmt::format("# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
    uint64_t cumulative = 0;
    for (size_t i = 0; i < bounds_.size(); ++i) {
        cumulative += counts_[i];
        out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, bounds_[i], cumulative);
    }
    cumulative += counts_.back();
    out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n{}_sum {}\n{}_count {}\n", name, cumulative, name, sum_, name, count_);
}

Metrics::Metrics()
    : ttft_({0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}),
      decode_per_token_({0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}),
      duration_({0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}) {}

void Metrics::request(const std::string& path, int status) {
    std::lock_guard lock(mu_);
    ++requests_[{path, status}];
}

void Metrics::generation(int prompt_tokens, int cached_tokens, int completion_tokens, double prompt_ms, double ttft_ms,
                         double decode_ms, double duration_ms) {
    std::lock_guard lock(mu_);
    ++generations_;
    prompt_tokens_ += static_cast<uint64_t>(prompt_tokens - cached_tokens);
    cached_tokens_ += static_cast<uint64_t>(cached_tokens);
    predicted_tokens_ += static_cast<uint64_t>(completion_tokens);
    prompt_seconds_ += prompt_ms / 1e3;
    predicted_seconds_ += decode_ms / 1e3;
    if (completion_tokens > 0) ttft_.observe(ttft_ms / 1e3);
    if (completion_tokens > 1) decode_per_token_.observe(decode_ms / 1e3 / (completion_tokens - 1));
    duration_.observe(duration_ms / 1e3);
}

void Metrics::cancelled() {
    std::lock_guard lock(mu_);
    ++cancelled_;
}

void Metrics::rejected_busy() {
    std::lock_guard lock(mu_);
    ++busy_;
}

std::string Metrics::render(int processing, int waiting, int slots) const {
    std::lock_guard lock(mu_);
    std::string out;
    auto item = [&](const char* name, const char* type, const char* help, double value) {
        out += fmt::format("# HELP {} {}\n# TYPE {} {}\n{} {}\n", name, help, name, type, name, value);
    };
    // llama-server's names (llamacpp: prefix), so existing dashboards keep working.
    item("llamacpp:prompt_tokens_total", "counter", "Number of prompt tokens processed, excluding cached tokens",
         static_cast<double>(prompt_tokens_));
    item("llamacpp:prompt_tokens_cached_total", "counter", "Number of prompt tokens reused from the cache",
         static_cast<double>(cached_tokens_));
    item("llamacpp:prompt_seconds_total", "counter", "Total time spent processing prompts", prompt_seconds_);
    item("llamacpp:tokens_predicted_total", "counter", "Number of generation tokens processed",
         static_cast<double>(predicted_tokens_));
    item("llamacpp:tokens_predicted_seconds_total", "counter", "Total time spent generating tokens", predicted_seconds_);
    item("llamacpp:requests_processing", "gauge", "Number of requests processing", processing);
    item("llamacpp:requests_deferred", "gauge", "Number of requests deferred", waiting);
    // genie-server's own.
    out += "# HELP genie_server_requests_total HTTP requests by path and status code\n"
           "# TYPE genie_server_requests_total counter\n";
    for (const auto& [key, count] : requests_)
        out += fmt::format("genie_server_requests_total{{path=\"{}\",code=\"{}\"}} {}\n", key.first, key.second, count);
    item("genie_server_generations_total", "counter", "Generations run (chat and completions)",
         static_cast<double>(generations_));
    item("genie_server_generations_cancelled_total", "counter", "Generations cancelled because the client went away",
         static_cast<double>(cancelled_));
    item("genie_server_requests_rejected_busy_total", "counter", "Requests refused with 503 because the queue was full",
         static_cast<double>(busy_));
    item("genie_server_slots", "gauge", "Parallel generation slots (--parallel)", slots);
    ttft_.render(out, "genie_server_time_to_first_token_seconds", "Time from request start to the first generated token");
    decode_per_token_.render(out, "genie_server_decode_seconds_per_token",
                             "Mean time per generated token after the first, per generation");
    duration_.render(out, "genie_server_generation_duration_seconds", "Generation time, prompt included");
    return out;
}

}  // namespace genie::server
