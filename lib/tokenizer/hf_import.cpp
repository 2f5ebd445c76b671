#include "tokenizer/hf_import.hpp"

#include <genie/error.hpp>

#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <optional>
#include <sstream>

namespace genie::tokenizer {

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

// GGUF token types (llama_token_type).
constexpr int32_t kNormal = 1, kControl = 3, kUserDefined = 4, kUnused = 5;

std::string read_text(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(ErrorCode::NotFound, "cannot open '" + path.string() + "'");
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::optional<json> read_json(const fs::path& path, bool required) {
    if (!fs::exists(path)) {
        if (required) throw Error(ErrorCode::NotFound, "'" + path.string() + "' does not exist");
        return std::nullopt;
    }
    try {
        return json::parse(read_text(path));
    } catch (const json::exception& e) {
        throw Error(ErrorCode::Format, "'" + path.string() + "' is not valid JSON: " + e.what());
    }
}

// A special token in tokenizer_config.json is a string or {"content": ...}.
std::optional<std::string> token_content(const json& config, const char* key) {
    auto it = config.find(key);
    if (it == config.end() || it->is_null()) return std::nullopt;
    if (it->is_string()) return it->get<std::string>();
    if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
        return (*it)["content"].get<std::string>();
    return std::nullopt;
}

// convert_hf_to_gguf.py's does_token_look_special.
bool looks_special(const std::string& t) {
    auto starts = [&](std::string_view p) { return t.compare(0, p.size(), p) == 0; };
    auto ends = [&](std::string_view s) { return t.size() >= s.size() && t.compare(t.size() - s.size(), s.size(), s) == 0; };
    if (t == "<pad>" || t == "<mask>" || t == "<2mass>" || t == "[@BOS@]") return true;
    if (starts("<|") && ends("|>")) return true;
    if (starts("<｜") && ends("｜>")) return true;
    if (starts("<unused") && ends(">")) return true;
    return false;
}

struct AddedToken {
    std::string content;
    bool special = false;
};

constexpr std::string_view kLlama3Split =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr std::string_view kQwen2Split =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

// The Split regex of a tokenizer.json pre_tokenizer (a Split or a Sequence holding one).
std::optional<std::string> split_regex(const json& pre) {
    if (!pre.is_object()) return std::nullopt;
    if (pre.value("type", "") == "Split" && pre.contains("pattern") && pre["pattern"].contains("Regex"))
        return pre["pattern"]["Regex"].get<std::string>();
    if (pre.value("type", "") == "Sequence" && pre.contains("pretokenizers"))
        for (const json& p : pre["pretokenizers"])
            if (auto r = split_regex(p)) return r;
    return std::nullopt;
}

}  // namespace

gguf::Writer import_hf_tokenizer(const fs::path& dir, const HfImportOptions& options) {
    const std::optional<json> tokenizer_json = read_json(dir / "tokenizer.json", false);
    const json config = read_json(dir / "tokenizer_config.json", false).value_or(json::object());
    const std::optional<json> model_config = read_json(dir / "config.json", false);

    std::map<int64_t, std::string> vocab;  // id -> text
    std::vector<std::string> merges;
    std::map<int64_t, AddedToken> added;
    bool ignore_merges = false;

    auto add_merge = [&](const json& m) {
        if (m.is_string()) merges.push_back(m.get<std::string>());
        else if (m.is_array() && m.size() == 2) merges.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
        else throw Error(ErrorCode::Format, "tokenizer.json: a merge is neither \"a b\" nor [\"a\", \"b\"]");
    };

    if (tokenizer_json) {
        const json& model = (*tokenizer_json)["model"];
        if (model.value("type", "") != "BPE")
            throw Error(ErrorCode::Unsupported, "tokenizer.json: only BPE models convert (this is '" +
                                                    model.value("type", std::string("?")) + "')");
        for (auto it = model["vocab"].begin(); it != model["vocab"].end(); ++it) vocab[it.value().get<int64_t>()] = it.key();
        for (const json& m : model["merges"]) add_merge(m);
        ignore_merges = model.value("ignore_merges", false);
        if (tokenizer_json->contains("added_tokens"))
            for (const json& t : (*tokenizer_json)["added_tokens"])
                added[t["id"].get<int64_t>()] = AddedToken{t["content"].get<std::string>(), t.value("special", false)};
    } else {
        const std::optional<json> vocab_json = read_json(dir / "vocab.json", true);
        for (auto it = vocab_json->begin(); it != vocab_json->end(); ++it) vocab[it.value().get<int64_t>()] = it.key();
        std::istringstream lines(read_text(dir / "merges.txt"));
        std::string line;
        bool first = true;
        while (std::getline(lines, line)) {
            if (!line.empty() && line.back() == '\r') line.pop_back();
            if (first && line.rfind("#version", 0) == 0) {
                first = false;
                continue;
            }
            first = false;
            if (line.empty()) continue;
            merges.push_back(line);
        }
    }
    if (config.contains("added_tokens_decoder"))
        for (auto it = config["added_tokens_decoder"].begin(); it != config["added_tokens_decoder"].end(); ++it)
            added[std::stoll(it.key())] =
                AddedToken{it.value()["content"].get<std::string>(), it.value().value("special", false)};
    if (vocab.empty()) throw Error(ErrorCode::Format, "'" + dir.string() + "': the vocabulary is empty");

    // ---- pre-tokenizer -----------------------------------------------------------------
    std::string pre = options.pre;
    if (pre.empty() && tokenizer_json) {
        if (auto regex = split_regex((*tokenizer_json)["pre_tokenizer"])) {
            if (*regex == kLlama3Split) pre = "llama-bpe";
            else if (*regex == kQwen2Split) pre = "qwen2";
        }
    }
    if (pre.empty()) {
        const std::string cls = config.value("tokenizer_class", "");
        if (cls == "Qwen2Tokenizer" || cls == "Qwen2TokenizerFast") pre = "qwen2";
    }
    if (pre.empty())
        throw Error(ErrorCode::Unsupported, "'" + dir.string() +
                                                "': cannot tell the pre-tokenizer from the files; name it (e.g. --pre qwen2)");

    // ---- tokens ------------------------------------------------------------------------
    int64_t size = 0;
    for (const auto& [id, text] : vocab) size = std::max(size, id + 1);
    for (const auto& [id, tok] : added) size = std::max(size, id + 1);
    int64_t wanted = options.vocab_size;
    if (wanted == 0 && model_config && model_config->contains("vocab_size"))
        wanted = (*model_config)["vocab_size"].get<int64_t>();
    size = std::max(size, wanted);

    std::vector<std::string> tokens(static_cast<size_t>(size));
    std::vector<int32_t> types(static_cast<size_t>(size));
    for (int64_t i = 0; i < size; ++i) {
        if (auto a = added.find(i); a != added.end()) {
            std::string text = a->second.content;
            if (a->second.special || looks_special(text)) {
                types[size_t(i)] = kControl;
            } else {
                // user-defined tokens are matched verbatim: write spaces, not "▁"
                for (size_t p; (p = text.find("\xE2\x96\x81")) != std::string::npos;) text.replace(p, 3, " ");
                types[size_t(i)] = kUserDefined;
            }
            tokens[size_t(i)] = std::move(text);
        } else if (auto v = vocab.find(i); v != vocab.end()) {
            tokens[size_t(i)] = v->second;
            types[size_t(i)] = kNormal;
        } else {
            tokens[size_t(i)] = "[PAD" + std::to_string(i) + "]";
            types[size_t(i)] = kUnused;
        }
    }

    auto id_of = [&](const std::string& text) -> std::optional<uint32_t> {
        for (size_t i = 0; i < tokens.size(); ++i)
            if (tokens[i] == text) return uint32_t(i);
        return std::nullopt;
    };
    auto special_id = [&](const std::string& override_text, const char* config_key,
                          const char* model_key) -> std::optional<uint32_t> {
        if (!override_text.empty()) {
            auto id = id_of(override_text);
            if (!id) throw Error(ErrorCode::NotFound, "special token '" + override_text + "' is not in the vocabulary");
            return id;
        }
        if (auto text = token_content(config, config_key))
            if (auto id = id_of(*text)) return id;
        if (model_key && model_config && model_config->contains(model_key) && (*model_config)[model_key].is_number_unsigned())
            return (*model_config)[model_key].get<uint32_t>();
        return std::nullopt;
    };

    gguf::Writer w;
    if (!options.architecture.empty()) w.set("general.architecture", options.architecture);
    if (!options.name.empty()) w.set("general.name", options.name);
    w.set("tokenizer.ggml.model", "gpt2");
    w.set("tokenizer.ggml.pre", pre);
    w.set("tokenizer.ggml.tokens", gguf::Value::array_of(tokens));
    w.set("tokenizer.ggml.token_type", gguf::Value::array_of(types));
    w.set("tokenizer.ggml.merges", gguf::Value::array_of(merges));
    if (auto id = special_id(options.bos_token, "bos_token", "bos_token_id")) w.set("tokenizer.ggml.bos_token_id", *id);
    if (auto id = special_id(options.eos_token, "eos_token", "eos_token_id")) w.set("tokenizer.ggml.eos_token_id", *id);
    if (auto id = special_id("", "unk_token", nullptr)) w.set("tokenizer.ggml.unknown_token_id", *id);
    if (auto id = special_id("", "pad_token", nullptr)) w.set("tokenizer.ggml.padding_token_id", *id);
    if (config.contains("add_bos_token") && config["add_bos_token"].is_boolean())
        w.set("tokenizer.ggml.add_bos_token", config["add_bos_token"].get<bool>());
    if (config.contains("add_eos_token") && config["add_eos_token"].is_boolean())
        w.set("tokenizer.ggml.add_eos_token", config["add_eos_token"].get<bool>());
    if (config.contains("chat_template") && config["chat_template"].is_string())
        w.set("tokenizer.chat_template", config["chat_template"].get<std::string>());
    (void)ignore_merges;  // llama.cpp derives ignore_merges from the pre-tokenizer name, not the file
    return w;
}

void convert_hf_tokenizer(const fs::path& dir, const fs::path& out, const HfImportOptions& options) {
    import_hf_tokenizer(dir, options).write(out);
}

}  // namespace genie::tokenizer
