// The memory planner (lib/model/memory_plan, include/genie/memory_plan.hpp) and backend
// selection, on the CPU: no device is needed. The planner reads only the GGUF header.
#include "support/test_support.hpp"

#include "backend/cuda_entry.hpp"
#include "core/system_memory.hpp"
#include "model/memory_plan.hpp"

#include <genie/error.hpp>
#include <genie/memory_plan.hpp>
#include <genie/model.hpp>
#include <genie/session.hpp>

#include <catch2/catch.hpp>

#include <string>

using namespace genie;

namespace {

std::filesystem::path stories() { return test::testdata_dir() / "models" / "stories260K.gguf"; }

ModelOptions cpu_options(uint64_t budget = 0) {
    ModelOptions o;
    o.backend = BackendKind::Cpu;
    o.memory_budget_bytes = budget;
    return o;
}

SessionOptions context(int32_t n, KvType kv = KvType::F16) {
    SessionOptions s;
    s.context_length = n;
    s.kv_type = kv;
    return s;
}

}  // namespace

TEST_CASE("memory plan: the parts add up and follow the model's shape", "[memory_plan]") {
    const Model model = Model::load(stories(), cpu_options());
    const ModelInfo& info = model.info();
    const MemoryPlan p = plan_memory(stories(), cpu_options(uint64_t{1} << 40), context(1000));
    CHECK(p.backend == BackendKind::Cpu);
    CHECK(p.context_length == 1000);
    CHECK(p.n_ctx_train == info.n_ctx_train);
    CHECK(p.weights == info.weight_bytes);
    // F16: K and V, 2 bytes per value, n_layer * n_head_kv * head_dim values per token.
    const uint64_t per_token = 2ull * info.n_layer * info.n_head_kv * info.head_dim * 2;
    CHECK(p.kv_per_token == per_token);
    CHECK(p.kv == per_token * 1000);
    CHECK(p.device_overhead == 0);
    CHECK(p.scratch > 0);
    CHECK(p.margin > 0);
    CHECK(p.total == p.weights + p.kv + p.scratch + p.device_overhead + p.margin);
    CHECK(p.budget == uint64_t{1} << 40);
    CHECK(p.budget_source == "memory_budget_bytes");
    CHECK(p.fits());
    CHECK(p.max_context_that_fits == info.n_ctx_train);  // capped at the training context
    // F32 doubles the KV cache; the same plan for a loaded model.
    CHECK(plan_memory(stories(), cpu_options(uint64_t{1} << 40), context(1000, KvType::F32)).kv == 2 * per_token * 1000);
    CHECK(plan_memory(model, context(1000)).weights == p.weights);
    const std::string text = p.to_string();
    CHECK(text.find("KV cache") != std::string::npos);
    CHECK(text.find("budget") != std::string::npos);
}

TEST_CASE("memory plan: the largest context that fits is exact", "[memory_plan]") {
    // A budget that is exactly the total of a 700-token plan: 700 fits, 701 does not.
    const uint64_t budget = plan_memory(stories(), cpu_options(uint64_t{1} << 40), context(700)).total;
    const MemoryPlan p = plan_memory(stories(), cpu_options(budget), context(700));
    CHECK(p.fits());
    CHECK(p.max_context_that_fits == 700);
    CHECK_FALSE(plan_memory(stories(), cpu_options(budget), context(701)).fits());
    // kLargestContext resolves to it; 0 (default) is min(training, 4096) reduced to fit.
    CHECK(plan_memory(stories(), cpu_options(budget), context(kLargestContext)).context_length == 700);
    CHECK(plan_memory(stories(), cpu_options(budget), context(0)).context_length == 700);
    CHECK(plan_memory(stories(), cpu_options(uint64_t{1} << 40), context(0)).context_length == 2048);
    // Nothing fits a budget below the weights.
    const MemoryPlan none = plan_memory(stories(), cpu_options(1024), context(16));
    CHECK_FALSE(none.fits());
    CHECK(none.max_context_that_fits == 0);
    CHECK_THROWS_AS(plan_memory(stories(), cpu_options(), context(-2)), Error);
}

TEST_CASE("memory plan: the default budget is the host's available memory", "[memory_plan]") {
    const core::SystemMemory host = core::read_system_memory();
    const uint64_t available = host.usable();
    REQUIRE(available > 0);  // Linux: /proc/meminfo (and the cgroup's limit where one is set)
    const MemoryPlan p = plan_memory(stories(), cpu_options(), context(256));
    CHECK(p.budget_source == host.usable_source());
    // MemAvailable moves a little between the two reads.
    CHECK(static_cast<double>(p.budget) > 0.5 * static_cast<double>(available));
    CHECK(p.fits());
}

TEST_CASE("memory plan: an over-budget session or model is OutOfMemory with the plan", "[memory_plan]") {
    const uint64_t budget = plan_memory(stories(), cpu_options(uint64_t{1} << 40), context(300)).total;
    const Model model = Model::load(stories(), cpu_options(budget));
    try {
        Session s(model, context(2000));
        FAIL("a 2000-token session should not fit the budget");
    } catch (const Error& e) {
        CHECK(e.code() == ErrorCode::OutOfMemory);
        const std::string what = e.what();
        CHECK(what.find("largest context that fits is 300 tokens") != std::string::npos);
        CHECK(what.find("KV cache") != std::string::npos);  // the plan is in the message
    }
    Session fits(model, context(300));
    CHECK(fits.context_length() == 300);
    Session largest(model, context(kLargestContext));
    CHECK(largest.context_length() == 300);
    Session dflt(model);
    CHECK(dflt.context_length() == 300);

    try {
        (void)Model::load(stories(), cpu_options(4096));
        FAIL("the model should not fit 4 KiB");
    } catch (const Error& e) {
        CHECK(e.code() == ErrorCode::OutOfMemory);
        CHECK(std::string(e.what()).find("not even a context of 1 token fits") != std::string::npos);
    }
}

TEST_CASE("backend selection: Auto runs on the CPU without a device, Cuda says why it cannot", "[memory_plan][cuda]") {
    std::string reason;
    const int devices = backend::cuda_device_count(&reason);
    if (devices > 0) {
        WARN("a CUDA device is present: the no-device paths are not exercised here (test/gpu covers the device)");
        return;
    }
    CHECK_FALSE(reason.empty());
    ModelOptions o;  // Auto
    const Model model = Model::load(stories(), o);
    Session session(model, context(64));
    CHECK(session.evaluate(std::vector<TokenId>{1, 2, 3}).size() == static_cast<size_t>(model.info().n_vocab));

    o.backend = BackendKind::Cuda;
    try {
        (void)Model::load(stories(), o);
        FAIL("BackendKind::Cuda without a device must fail");
    } catch (const Error& e) {
        if (GENIE_HAVE_CUDA) {
            CHECK(e.code() == ErrorCode::Device);  // built with CUDA, no device/driver here
        } else {
            CHECK(e.code() == ErrorCode::Unsupported);
            CHECK(std::string(e.what()) == "CUDA backend not available in this build");
        }
    }
    CHECK_THROWS_AS(plan_memory(stories(), o, context(64)), Error);
#if !GENIE_HAVE_CUDA
    // The stub itself (lib/backend/cuda_stub.cpp).
    CHECK(reason == "CUDA backend not available in this build");
    backend::CudaMemoryInfo info;
    CHECK_FALSE(backend::cuda_memory_info(0, info));
    try {
        (void)backend::make_cuda_backend(nullptr);
        FAIL("the stub must throw");
    } catch (const Error& e) {
        CHECK(e.code() == ErrorCode::Unsupported);
    }
    CHECK_THROWS_AS(backend::cuda_load_weights(nullptr, 0, 0), Error);
#endif
}

TEST_CASE("device seam: the CPU is resolved, sized, placed and opened through backend/device.hpp", "[memory_plan][device]") {
    CHECK(std::string(backend::backend_name(BackendKind::Cpu)) == "CPU");
    CHECK(std::string(backend::backend_name(BackendKind::Cuda)) == "CUDA");
    CHECK(backend::resolve_backend(BackendKind::Cpu) == BackendKind::Cpu);
    CHECK(backend::resolve_backend(BackendKind::Cuda) == BackendKind::Cuda);

    const backend::DeviceMemory host = backend::device_memory_info(BackendKind::Cpu);
    CHECK(host.description == "host memory");
    CHECK(host.free > 0);
    CHECK(host.free_source == core::read_system_memory().usable_source());

    const uint8_t bytes[64] = {};
    CHECK(backend::place_weights(BackendKind::Cpu, bytes, sizeof bytes) == nullptr);  // read in place
    backend::BackendOpenOptions open;
    open.threads = 1;
    const std::unique_ptr<backend::Backend> cpu = backend::open_backend(BackendKind::Cpu, open);
    REQUIRE(cpu);
    CHECK(cpu->host_tensors());

    backend::ScratchShape shape;
    shape.batch = 4;
    shape.context_length = 256;
    shape.max_row = 1024;
    shape.max_weight_elements = 1024 * 1024;
    shape.n_vocab = 32000;
    shape.n_head = 8;
    shape.n_head_kv = 2;
    const backend::ScratchNeeds small = backend::scratch_bytes(BackendKind::Cpu, shape);
    CHECK(small.device_overhead == 0);
    CHECK(small.scratch > 0);
    shape.context_length *= 4;  // per-thread attention scores grow with the context
    CHECK(backend::scratch_bytes(BackendKind::Cpu, shape).scratch > small.scratch);
    shape.batch *= 4;  // quantized activations grow with the batch
    CHECK(backend::scratch_bytes(BackendKind::Cpu, shape).scratch > small.scratch);

    // The CUDA backend states its needs without a device (a build without it: none).
    const backend::ScratchNeeds gpu = backend::scratch_bytes(BackendKind::Cuda, shape);
    if (GENIE_HAVE_CUDA) {
        CHECK(gpu.device_overhead > 0);
        CHECK(gpu.scratch > 0);
    } else {
        CHECK(gpu.device_overhead == 0);
        CHECK(gpu.scratch == 0);
    }
}
