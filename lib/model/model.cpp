#include "backend/device.hpp"
#include "model/memory_plan.hpp"
#include "model/model_impl.hpp"
#include "tokenizer/tokenizer_internal.hpp"

#include <genie/error.hpp>

#include <fmt/format.h>

#include <chrono>

namespace genie {

Model Model::load(const std::filesystem::path& path, const ModelOptions& options) {
    const auto start = std::chrono::steady_clock::now();
    // Auto: a GPU backend when a device is usable, else the CPU; a GPU backend asked for
    // without one fails in the planner's target with Unsupported (not in this build) or
    // Device (no device/driver).
    const BackendKind backend = backend::resolve_backend(options.backend);
    auto report = [&](float fraction) {
        if (options.progress && !options.progress(fraction))
            throw Error(ErrorCode::Cancelled, fmt::format("'{}': loading cancelled by the progress callback", path.string()));
    };
    report(0.0f);
    gguf::Reader reader = gguf::Reader::from_file(options.use_mmap ? MappedFile::open(path) : MappedFile::read(path));
    report(0.4f);  // metadata parsed, tensor directory validated
    model::HParams hp = model::read_hparams(reader);
    model::Weights weights = model::bind_weights(reader, hp);
    // The memory planner, before anything is allocated: the weights and a context of one
    // token must fit the budget (each Session checks its own context).
    model::require_fits(model::plan_for_context(model::plan_model(reader), model::plan_target(backend, options.memory_budget_bytes), 1,
                                                KvType::F16, 1),
                        fmt::format("'{}'", path.string()));
    report(0.5f);
    Tokenizer tokenizer = tokenizer::make_tokenizer(reader);
    report(0.9f);
    if (static_cast<int64_t>(tokenizer.vocab_size()) > hp.n_vocab)
        throw Error(ErrorCode::Format, fmt::format("'{}': the vocabulary has {} tokens but token_embd.weight has {} rows",
                                                   path.string(), tokenizer.vocab_size(), hp.n_vocab));

    auto impl = std::make_shared<Impl>(std::move(reader), hp, std::move(weights), std::move(tokenizer));
    impl->options = options;
    impl->backend = backend;
    {  // the tensor data made reachable by the backend's device (nothing to do for the CPU)
        const uint8_t* begin = nullptr;
        const uint8_t* end = nullptr;
        for (const auto& t : impl->reader.tensors()) {
            if (!t.data) continue;
            if (!begin || t.data < begin) begin = t.data;
            if (!end || t.data + t.size_bytes > end) end = t.data + t.size_bytes;
        }
        impl->device_weights = backend::place_weights(backend, begin, begin ? static_cast<size_t>(end - begin) : 0);
    }
    impl->chat_template_source = impl->reader.get_or<std::string>("tokenizer.chat_template", "");
    ModelInfo& info = impl->info;
    info.architecture = hp.architecture;
    info.name = impl->reader.get_or<std::string>("general.name", "");
    info.file_size = impl->reader.file_size();
    for (const auto& t : impl->reader.tensors()) {
        info.parameter_count += static_cast<uint64_t>(t.element_count());
        info.weight_bytes += t.size_bytes;
    }
    info.decode_bytes = info.weight_bytes;
    if (const auto& w = impl->weights; w.output.data != w.token_embd.data)  // untied: one row of the table is read
        info.decode_bytes -= static_cast<uint64_t>(w.token_embd.row_bytes) * static_cast<uint64_t>(w.token_embd.n_out - 1);
    info.n_vocab = hp.n_vocab;
    info.n_ctx_train = hp.n_ctx_train;
    info.n_embd = hp.n_embd;
    info.n_layer = hp.n_layer;
    info.n_head = hp.n_head;
    info.n_head_kv = hp.n_head_kv;
    info.head_dim = hp.head_dim_k;
    info.n_ff = hp.n_ff;
    impl->load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    report(1.0f);
    return Model(std::move(impl));
}

const ModelInfo& Model::info() const noexcept { return impl_->info; }
const Tokenizer& Model::tokenizer() const noexcept { return impl_->tokenizer; }
double Model::load_time_ms() const noexcept { return impl_->load_ms; }
const std::string& Model::chat_template() const noexcept { return impl_->chat_template_source; }

}  // namespace genie
