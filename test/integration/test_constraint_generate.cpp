// Generation under a JSON constraint (GenerateOptions::constraint): every finished output
// parses and validates against the schema; an output cut by max_tokens is still a valid
// prefix.
#include "support/test_support.hpp"

#include <genie/constraint.hpp>
#include <genie/error.hpp>
#include <genie/model.hpp>
#include <genie/session.hpp>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace genie;
using nlohmann::json;

namespace {

size_t utf8_length(const std::string& s) {
    size_t n = 0;
    for (unsigned char c : s) n += (c & 0xC0) != 0x80;
    return n;
}

// A small validator for the schema subset (independent of the constraint's code).
bool validate(const json& v, const json& s) {
    if (s.is_boolean()) return s.get<bool>();
    if (s.contains("const") && v != s["const"]) return false;
    if (s.contains("enum")) {
        bool found = false;
        for (const auto& e : s["enum"]) found = found || e == v;
        if (!found) return false;
    }
    if (s.contains("type")) {
        std::vector<std::string> types;
        if (s["type"].is_array()) for (const auto& t : s["type"]) types.push_back(t.get<std::string>());
        else types.push_back(s["type"].get<std::string>());
        bool ok = false;
        for (const auto& t : types) {
            if (t == "object") ok = ok || v.is_object();
            if (t == "array") ok = ok || v.is_array();
            if (t == "string") ok = ok || v.is_string();
            if (t == "number") ok = ok || v.is_number();
            if (t == "integer") ok = ok || v.is_number_integer() || v.is_number_unsigned();
            if (t == "boolean") ok = ok || v.is_boolean();
            if (t == "null") ok = ok || v.is_null();
        }
        if (!ok) return false;
    }
    if (v.is_object()) {
        const json props = s.value("properties", json::object());
        for (const auto& r : s.value("required", json::array()))
            if (!v.contains(r.get<std::string>())) return false;
        for (const auto& [k, x] : v.items()) {
            if (props.contains(k)) {
                if (!validate(x, props[k])) return false;
            } else if (s.contains("additionalProperties") && !validate(x, s["additionalProperties"])) {
                return false;
            }
        }
    }
    if (v.is_array()) {
        if (s.contains("minItems") && v.size() < s["minItems"].get<size_t>()) return false;
        if (s.contains("maxItems") && v.size() > s["maxItems"].get<size_t>()) return false;
        if (s.contains("items"))
            for (const auto& x : v)
                if (!validate(x, s["items"])) return false;
    }
    if (v.is_string()) {
        const size_t n = utf8_length(v.get<std::string>());
        if (s.contains("minLength") && n < s["minLength"].get<size_t>()) return false;
        if (s.contains("maxLength") && n > s["maxLength"].get<size_t>()) return false;
    }
    return true;
}

const char* kSchema = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "maxLength": 16},
    "age": {"type": "integer"},
    "mood": {"enum": ["happy", "sad", "sleepy"]},
    "friends": {"type": "array", "items": {"type": "string", "maxLength": 8}, "maxItems": 3},
    "home": {"type": "object", "properties": {"town": {"type": "string", "maxLength": 12},
             "big": {"type": "boolean"}}, "required": ["town"], "additionalProperties": false},
    "height": {"type": ["number", "null"]}
  },
  "required": ["name", "age", "mood"],
  "additionalProperties": false
})";

struct Tally {
    int finished = 0;
    int cut = 0;
    std::string sample_finished, sample_cut;  // one output of each kind (for the log)
};

/// Runs `n` generations (seeds 1..n, temperature 1) and checks each.
Tally run_generations(const Model& model, const std::shared_ptr<const JsonConstraint>& c, const json& schema, int n,
                      int max_tokens, const char* prompt) {
    SessionOptions so;
    so.threads = 2;
    Session session(model, so);
    Tally t;
    for (int seed = 1; seed <= n; ++seed) {
        SamplerOptions sopt;
        sopt.temperature = 1.0f;
        sopt.seed = static_cast<uint32_t>(seed);
        Sampler sampler(sopt);
        GenerateOptions go;
        go.max_tokens = max_tokens;
        go.constraint = c;
        const GenerateResult r = session.generate(prompt, sampler, go);
        INFO("seed " << seed << " output: " << r.text);
        // The tokens are exactly what the matcher accepts, and the text is theirs.
        JsonMatcher m(c);
        for (TokenId id : r.tokens) REQUIRE(m.accept_token(id));
        CHECK(m.text() == r.text);
        if (r.finish_reason == FinishReason::Stop) {
            ++t.finished;
            if (t.sample_finished.empty()) t.sample_finished = r.text;
            REQUIRE(m.is_complete());
            json v;
            REQUIRE_NOTHROW(v = json::parse(r.text));
            CHECK(validate(v, schema));
        } else {
            ++t.cut;  // max_tokens or a full context: a valid prefix (checked above)
            if (t.sample_cut.empty()) t.sample_cut = r.text;
            CHECK(r.finish_reason == FinishReason::Length);
        }
    }
    return t;
}

std::filesystem::path qwen_fixture() {
    for (const auto& dir : {test::fixture_dir(), std::filesystem::path(GENIE_SOURCE_DIR) / "build" / "fixtures"}) {
        const auto p = dir / "qwen3-tiny-q4_k_m.gguf";
        if (std::filesystem::exists(p)) return p;
    }
    return {};
}

}  // namespace

TEST_CASE("constrained generation: 100 stories260K outputs parse and validate", "[constraint]") {
    const Model model = Model::load(test::testdata_dir() / "models" / "stories260K.gguf");
    const json schema = json::parse(kSchema);
    const auto c = JsonConstraint::from_schema(kSchema, model.tokenizer());
    const Tally t = run_generations(model, c, schema, 100, 400, "Once upon a time");
    WARN("stories260K schema: " << t.finished << " finished, " << t.cut << " cut by max_tokens\nfinished: "
                                << t.sample_finished);
    CHECK(t.finished >= 50);
}

TEST_CASE("constrained generation: any object on stories260K", "[constraint]") {
    const Model model = Model::load(test::testdata_dir() / "models" / "stories260K.gguf");
    JsonConstraintOptions o;
    o.max_nesting = 3;
    o.max_string_length = 12;   // the tiny model rarely closes a string on its own
    o.close_after_bytes = 200;  // nor an object: the length budget closes it
    const auto c = JsonConstraint::any_object(model.tokenizer(), o);
    const Tally t = run_generations(model, c, json::object({{"type", "object"}}), 20, 300, "Tom said");
    WARN("stories260K any object: " << t.finished << " finished, " << t.cut << " cut by max_tokens\nfinished: "
                                     << t.sample_finished << "\ncut: " << t.sample_cut);
    CHECK(t.finished == 20);
}

TEST_CASE("constrained generation: a constraint for another vocabulary is refused", "[constraint]") {
    const Model model = Model::load(test::testdata_dir() / "models" / "stories260K.gguf");
    const Model other = Model::load(test::testdata_dir() / "models" / "llama-2-tiny-random.gguf");
    if (other.tokenizer().vocab_size() == model.tokenizer().vocab_size()) return;
    Session session(model);
    Sampler sampler;
    GenerateOptions go;
    go.constraint = JsonConstraint::any_object(other.tokenizer());
    CHECK_THROWS_AS(session.generate("Once", sampler, go), Error);
}

TEST_CASE("constrained generation: Qwen3 fixture (151k vocabulary)", "[constraint][qwen]") {
    const auto path = qwen_fixture();
    if (path.empty()) {
        WARN("SKIPPED: qwen3-tiny-q4_k_m.gguf not generated (run the 'fixtures: generate models' test)");
        return;
    }
    const Model model = Model::load(path);
    const json schema = json::parse(kSchema);
    const auto c = JsonConstraint::from_schema(kSchema, model.tokenizer());
    const char* prompt = "<|im_start|>user\nDescribe a cat as JSON.<|im_end|>\n<|im_start|>assistant\n";
    const Tally t = run_generations(model, c, schema, 5, 200, prompt);
    WARN("qwen3-tiny: " << t.finished << " finished, " << t.cut << " cut by max_tokens\nfinished: " << t.sample_finished);
    CHECK(t.finished + t.cut == 5);
}
