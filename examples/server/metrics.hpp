// genie-server: Prometheus metrics (GET /metrics, text format 0.0.4).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace genie::server {

/// A cumulative histogram with fixed upper bounds (seconds).
class Histogram {
public:
    explicit Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}
    void observe(double v);
    /// Appends the `_bucket`, `_sum` and `_count` lines of metric `name`.
    void render(std::string& out, const std::string& name, const std::string& help) const;

private:
    std::vector<double> bounds_;
    std::vector<uint64_t> counts_;  // per bucket (not cumulative); last = +Inf
    double sum_ = 0;
    uint64_t count_ = 0;
};

/// Thread-safe counters of the whole server.
class Metrics {
public:
    Metrics();
    /// One finished HTTP request.
    void request(const std::string& path, int status);
    /// One finished generation.
    void generation(int prompt_tokens, int cached_tokens, int completion_tokens, double prompt_ms, double ttft_ms,
                    double decode_ms, double duration_ms);
    void cancelled();
    void rejected_busy();
    /// The Prometheus text; `processing` / `waiting` are the current slot gauges.
    std::string render(int processing, int waiting, int slots) const;

private:
    mutable std::mutex mu_;
    std::map<std::pair<std::string, int>, uint64_t> requests_;
    uint64_t prompt_tokens_ = 0, cached_tokens_ = 0, predicted_tokens_ = 0, generations_ = 0, cancelled_ = 0, busy_ = 0;
    double prompt_seconds_ = 0, predicted_seconds_ = 0;
    Histogram ttft_, decode_per_token_, duration_;
};

}  // namespace genie::server
