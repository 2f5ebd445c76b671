// genie::Tokenizer: the public face over the vocabulary (vocab.cpp), the special-token
// partition (special.cpp) and the two algorithms (bpe.cpp, spm.cpp).
#include "tokenizer/tokenizer_internal.hpp"

#include "gguf/gguf_reader.hpp"
#include "tokenizer/vocab.hpp"

#include <genie/error.hpp>
#include <genie/tokenizer.hpp>

namespace genie {

namespace tokenizer {
Tokenizer make_tokenizer(const gguf::Reader& reader) { return Tokenizer(load_vocab(reader)); }
}  // namespace tokenizer

Tokenizer::Tokenizer(std::shared_ptr<const Impl> impl) noexcept : impl_(std::move(impl)) {}
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::load(const std::filesystem::path& gguf_path) {
    const gguf::Reader reader = gguf::Reader::open(gguf_path);
    return tokenizer::make_tokenizer(reader);
}

std::vector<TokenId> Tokenizer::tokenize(std::string_view text, const TokenizeOptions& options) const {
    const Impl& v = *impl_;
    const bool add_bos = options.add_bos.value_or(options.add_special && v.add_bos);
    const bool add_eos = options.add_eos.value_or(options.add_special && v.add_eos);
    if (add_bos && v.bos == kNoToken)
        throw Error(ErrorCode::NotFound, "tokenize: BOS was requested but the vocabulary has no BOS token");
    if (add_eos && v.eos == kNoToken)
        throw Error(ErrorCode::NotFound, "tokenize: EOS was requested but the vocabulary has no EOS token");

    const std::vector<tokenizer::Fragment> fragments = tokenizer::partition_special(v, text, options.parse_special);
    std::vector<TokenId> out;
    out.reserve(text.size() / 3 + 2);
    if (add_bos) out.push_back(v.bos);

    if (v.type == tokenizer::VocabType::Spm) {
        // The space prefix goes before the text at the start and after every special token.
        bool prev_special = true;
        std::string piece;
        for (const auto& f : fragments) {
            if (f.token != kNoToken) {
                out.push_back(f.token);
                prev_special = true;
                continue;
            }
            piece.clear();
            if (v.add_space_prefix && prev_special) piece = ' ';
            piece.append(text.substr(f.offset, f.length));
            // escape spaces as U+2581 "▁"
            std::string escaped;
            escaped.reserve(piece.size() + piece.size() / 2);
            for (char c : piece) {
                if (c == ' ') escaped += "\xE2\x96\x81";
                else escaped += c;
            }
            v.tokenize_spm(escaped, out);
            prev_special = false;
        }
    } else {
        for (const auto& f : fragments) {
            if (f.token != kNoToken) out.push_back(f.token);
            else v.tokenize_bpe(text.substr(f.offset, f.length), out);
        }
    }

    if (add_eos) out.push_back(v.eos);
    return out;
}

std::string Tokenizer::token_to_piece(TokenId id, bool render_special) const {
    const Impl& v = *impl_;
    if (!v.valid(id))
        throw Error(ErrorCode::InvalidArgument, "token id " + std::to_string(id) + " is outside the vocabulary of " +
                                                    std::to_string(v.tokens.size()) + " tokens");
    if (!render_special && (v.attr(id) & (tokenizer::kAttrUnknown | tokenizer::kAttrControl))) return {};
    return v.piece_cache[size_t(id)];
}

size_t Tokenizer::vocab_size() const noexcept { return impl_->tokens.size(); }
VocabKind Tokenizer::kind() const noexcept {
    return impl_->type == tokenizer::VocabType::Spm ? VocabKind::SentencePiece : VocabKind::BytePairEncoding;
}
const std::string& Tokenizer::model_name() const noexcept { return impl_->model; }
const std::string& Tokenizer::pre_tokenizer() const noexcept { return impl_->pre; }
TokenId Tokenizer::bos() const noexcept { return impl_->bos; }
TokenId Tokenizer::eos() const noexcept { return impl_->eos; }
TokenId Tokenizer::eot() const noexcept { return impl_->eot; }
TokenId Tokenizer::eom() const noexcept { return impl_->eom; }
TokenId Tokenizer::unk() const noexcept { return impl_->unk; }
TokenId Tokenizer::pad() const noexcept { return impl_->pad; }
TokenId Tokenizer::sep() const noexcept { return impl_->sep; }
TokenId Tokenizer::newline() const noexcept { return impl_->linefeed; }
bool Tokenizer::adds_bos() const noexcept { return impl_->add_bos; }
bool Tokenizer::adds_eos() const noexcept { return impl_->add_eos; }

bool Tokenizer::is_eog(TokenId id) const noexcept { return impl_->valid(id) && impl_->is_eog_flag[size_t(id)]; }
const std::vector<TokenId>& Tokenizer::eog_tokens() const noexcept { return impl_->eog_ids; }

namespace {
void check_id(const Tokenizer::Impl& v, TokenId id) {
    if (!v.valid(id))
        throw Error(ErrorCode::InvalidArgument, "token id " + std::to_string(id) + " is outside the vocabulary of " +
                                                    std::to_string(v.tokens.size()) + " tokens");
}
}  // namespace

std::string_view Tokenizer::token_text(TokenId id) const {
    check_id(*impl_, id);
    return impl_->tokens[size_t(id)].text;
}

TokenType Tokenizer::token_type(TokenId id) const {
    check_id(*impl_, id);
    using namespace tokenizer;
    const uint32_t a = impl_->attr(id);
    if (a & kAttrControl) return TokenType::Control;
    if (a & kAttrUserDefined) return TokenType::UserDefined;
    if (a & kAttrByte) return TokenType::Byte;
    if (a & kAttrUnknown) return TokenType::Unknown;
    if (a & kAttrUnused) return TokenType::Unused;
    if (a & kAttrNormal) return TokenType::Normal;
    return TokenType::Undefined;
}

float Tokenizer::token_score(TokenId id) const {
    check_id(*impl_, id);
    return impl_->tokens[size_t(id)].score;
}

std::optional<TokenId> Tokenizer::find_token(std::string_view text) const {
    const TokenId id = impl_->find(text);
    if (id == kNoToken) return std::nullopt;
    return id;
}

}  // namespace genie
