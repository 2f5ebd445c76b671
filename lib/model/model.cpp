#include "model/model_impl.hpp"
#include "tokenizer/tokenizer_internal.hpp"

#include <genie/error.hpp>

#include <fmt/format.h>

#include <chrono>

namespace genie {

Model Model::load(const std::filesystem::path& path, const ModelOptions& options) {
    const auto start = std::chrono::steady_clock::now();
    if (options.backend == BackendKind::Cuda)
        throw Error(ErrorCode::Unsupported, "the CUDA backend is not available in this build yet (use BackendKind::Cpu)");
    auto report = [&](float fraction) {
        if (options.progress && !options.progress(fraction))
            throw Error(ErrorCode::Cancelled, fmt::format("'{}': loading cancelled by the progress callback", path.string()));
    };
    report(0.0f);
    gguf::Reader reader = gguf::Reader::open(path);
    report(0.4f);  // metadata parsed, tensor directory validated
    model::HParams hp = model::read_hparams(reader);
    model::Weights weights = model::bind_weights(reader, hp);
    report(0.5f);
    Tokenizer tokenizer = tokenizer::make_tokenizer(reader);
    report(0.9f);
    if (static_cast<int64_t>(tokenizer.vocab_size()) > hp.n_vocab)
        throw Error(ErrorCode::Format, fmt::format("'{}': the vocabulary has {} tokens but token_embd.weight has {} rows",
                                                   path.string(), tokenizer.vocab_size(), hp.n_vocab));

    auto impl = std::make_shared<Impl>(std::move(reader), hp, std::move(weights), std::move(tokenizer));
    impl->options = options;
    impl->chat_template_source = impl->reader.get_or<std::string>("tokenizer.chat_template", "");
    ModelInfo& info = impl->info;
    info.architecture = hp.architecture;
    info.name = impl->reader.get_or<std::string>("general.name", "");
    info.file_size = impl->reader.file_size();
    for (const auto& t : impl->reader.tensors()) {
        info.parameter_count += static_cast<uint64_t>(t.element_count());
        info.weight_bytes += t.size_bytes;
    }
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
