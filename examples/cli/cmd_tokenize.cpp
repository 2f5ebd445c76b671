// genie-cli tokenize / detokenize / convert-tokenizer.
//
//   tokenize -m MODEL.gguf (-p TEXT | --file PATH) [--add-bos] [--add-special] [--parse-special] [--pieces]
//       stdout: the token ids separated by single spaces on one line (with --pieces: one
//       "id<TAB>piece" line per token, the piece with control characters escaped).
//   detokenize -m MODEL.gguf [--render-special] [--remove-special] IDS...
//       stdout: the text, exactly (no newline added).
//   convert-tokenizer HF_DIR -o OUT.gguf [--pre NAME] [--name NAME] [--arch NAME]
//                     [--bos-token TEXT] [--eos-token TEXT] [--vocab-size N]
#include "commands.hpp"

#include "tokenizer/hf_import.hpp"

#include <genie/error.hpp>
#include <genie/tokenizer.hpp>

#include <fmt/format.h>

#include <charconv>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

namespace genie::cli {

namespace {

[[noreturn]] void usage_error(const std::string& message) { throw Error(ErrorCode::InvalidArgument, message); }

std::string_view value_of(Args args, size_t& i) {
    if (i + 1 >= args.size()) usage_error(fmt::format("option '{}' needs a value", args[i]));
    return args[++i];
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(ErrorCode::NotFound, fmt::format("cannot open '{}'", path));
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_stdout(std::string_view bytes) { std::fwrite(bytes.data(), 1, bytes.size(), stdout); }

std::string escape_piece(std::string_view piece) {
    std::string out;
    for (unsigned char c : piece) {
        if (c == '\n') out += "\\n";
        else if (c == '\t') out += "\\t";
        else if (c == '\r') out += "\\r";
        else if (c == '\\') out += "\\\\";
        else if (c < 0x20 || c == 0x7F) out += fmt::format("\\x{:02x}", c);
        else out += char(c);
    }
    return out;
}

}  // namespace

int cmd_tokenize(Args args) {
    std::string model;
    std::optional<std::string> text;
    TokenizeOptions options;
    bool pieces = false;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string_view a = args[i];
        if (a == "-m" || a == "--model") model = value_of(args, i);
        else if (a == "-p" || a == "--prompt") text = std::string(value_of(args, i));
        else if (a == "--file" || a == "-f") text = read_file(std::string(value_of(args, i)));
        else if (a == "--add-bos") options.add_bos = true;
        else if (a == "--add-eos") options.add_eos = true;
        else if (a == "--add-special") options.add_special = true;
        else if (a == "--parse-special") options.parse_special = true;
        else if (a == "--pieces") pieces = true;
        else usage_error(fmt::format("tokenize: unknown option '{}'", a));
    }
    if (model.empty()) usage_error("tokenize: -m MODEL.gguf is required");
    if (!text) usage_error("tokenize: give the text with -p TEXT or --file PATH");

    const Tokenizer tokenizer = Tokenizer::load(model);
    const std::vector<TokenId> ids = tokenizer.tokenize(*text, options);
    std::string out;
    if (pieces) {
        for (TokenId id : ids) out += fmt::format("{}\t{}\n", id, escape_piece(tokenizer.token_to_piece(id, true)));
    } else {
        for (size_t i = 0; i < ids.size(); ++i) {
            if (i) out += ' ';
            out += std::to_string(ids[i]);
        }
        out += '\n';
    }
    write_stdout(out);
    return 0;
}

int cmd_detokenize(Args args) {
    std::string model;
    DetokenizeOptions options;
    std::vector<TokenId> ids;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string_view a = args[i];
        if (a == "-m" || a == "--model") {
            model = value_of(args, i);
        } else if (a == "--render-special") {
            options.render_special = true;
        } else if (a == "--remove-special") {
            options.remove_special = true;
        } else {
            // ids may also come as one space-separated argument
            size_t pos = 0;
            while (pos < a.size()) {
                while (pos < a.size() && (a[pos] == ' ' || a[pos] == ',')) ++pos;
                if (pos >= a.size()) break;
                TokenId id = 0;
                const auto [end, ec] = std::from_chars(a.data() + pos, a.data() + a.size(), id);
                if (ec != std::errc() || (end != a.data() + a.size() && *end != ' ' && *end != ','))
                    usage_error(fmt::format("detokenize: '{}' is not a token id", a));
                pos = size_t(end - a.data());
                ids.push_back(id);
            }
        }
    }
    if (model.empty()) usage_error("detokenize: -m MODEL.gguf is required");
    const Tokenizer tokenizer = Tokenizer::load(model);
    write_stdout(tokenizer.detokenize(ids, options));
    return 0;
}

int cmd_convert_tokenizer(Args args) {
    std::string dir, out;
    tokenizer::HfImportOptions options;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string_view a = args[i];
        if (a == "-o" || a == "--output") out = value_of(args, i);
        else if (a == "--pre") options.pre = value_of(args, i);
        else if (a == "--name") options.name = value_of(args, i);
        else if (a == "--arch") options.architecture = value_of(args, i);
        else if (a == "--bos-token") options.bos_token = value_of(args, i);
        else if (a == "--eos-token") options.eos_token = value_of(args, i);
        else if (a == "--vocab-size") {
            const std::string_view v = value_of(args, i);
            const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), options.vocab_size);
            if (ec != std::errc() || end != v.data() + v.size()) usage_error("--vocab-size needs a number");
        } else if (!a.empty() && a[0] != '-' && dir.empty()) dir = a;
        else usage_error(fmt::format("convert-tokenizer: unknown option '{}'", a));
    }
    if (dir.empty() || out.empty()) usage_error("convert-tokenizer: usage: convert-tokenizer HF_DIR -o OUT.gguf");
    tokenizer::convert_hf_tokenizer(dir, out, options);
    const Tokenizer check = Tokenizer::load(out);  // the result must load
    fmt::print(stderr, "wrote '{}': {} tokens, pre-tokenizer '{}'\n", out, check.vocab_size(), check.pre_tokenizer());
    return 0;
}

}  // namespace genie::cli
