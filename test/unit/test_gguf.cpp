// GGUF reader/writer: round trips, the shared real files, and every kind of bad input.
#include "gguf/gguf_reader.hpp"
#include "gguf/gguf_writer.hpp"
#include "support/test_support.hpp"

#include <catch2/catch.hpp>

#include <cstring>
#include <limits>

using namespace genie;
using namespace genie::gguf;
using genie::test::testdata_dir;

namespace {

/// Builds raw GGUF bytes by hand, so tests can write files the Writer refuses to write.
struct Bytes {
    std::vector<uint8_t> b;
    template <class T>
    Bytes& put(T v) {
        const auto* p = reinterpret_cast<const uint8_t*>(&v);
        b.insert(b.end(), p, p + sizeof v);
        return *this;
    }
    Bytes& str(const std::string& s) {
        put<uint64_t>(s.size());
        b.insert(b.end(), s.begin(), s.end());
        return *this;
    }
    Bytes& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
        b.insert(b.end(), {'G', 'G', 'U', 'F'});
        return put<uint32_t>(version).put<uint64_t>(n_tensors).put<uint64_t>(n_kv);
    }
    Bytes& tensor(const std::string& name, std::vector<uint64_t> ne, uint32_t type, uint64_t offset) {
        str(name).put<uint32_t>(static_cast<uint32_t>(ne.size()));
        for (auto d : ne) put<uint64_t>(d);
        return put<uint32_t>(type).put<uint64_t>(offset);
    }
    Bytes& pad_to(size_t alignment) {
        b.resize((b.size() + alignment - 1) / alignment * alignment, 0);
        return *this;
    }
    Bytes& zeros(size_t n) {
        b.resize(b.size() + n, 0);
        return *this;
    }
};

std::string error_of(std::vector<uint8_t> bytes, ErrorCode expected_code = ErrorCode::Format) {
    try {
        Reader::from_bytes(std::move(bytes), "bad.gguf");
    } catch (const Error& e) {
        CHECK(e.code() == expected_code);
        return e.what();
    }
    FAIL("expected the reader to reject the input");
    return {};
}

Writer sample_writer() {
    Writer w;
    w.set("general.architecture", "llama");
    w.set("general.name", std::string("tiny \"test\""));
    w.set("llama.block_count", uint32_t{5});
    w.set("llama.rope.freq_base", 10000.0f);
    w.set("test.u8", uint8_t{200}).set("test.i8", int8_t{-5}).set("test.u16", uint16_t{65000});
    w.set("test.i16", int16_t{-30000}).set("test.i32", int32_t{-7}).set("test.u64", uint64_t{1} << 40);
    w.set("test.i64", int64_t{-(int64_t{1} << 40)}).set("test.f64", 0.125).set("test.bool", true);
    w.set("test.strings", Value::array_of(std::vector<std::string>{"a", "", "ünïcödé"}));
    w.set("test.floats", Value::array_of(std::vector<float>{1.5f, -2.0f}));
    w.set("test.nested", Value::array(ValueType::Array, {Value::array_of(std::vector<int32_t>{1, 2}),
                                                         Value::array_of(std::vector<int32_t>{3})}));
    w.set("test.empty", Value::array(ValueType::UInt32, {}));
    std::vector<float> values(64 * 3);
    for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) * 0.5f;
    w.add_tensor_f32("weights", {64, 3}, values);
    w.add_tensor("q", DType::Q8_0, {32, 2}, std::vector<uint8_t>(68, 7));
    w.add_tensor("scalar", DType::F16, {}, std::vector<uint8_t>{0, 0x3c});
    return w;
}

}  // namespace

TEST_CASE("gguf: writer output reads back identically", "[gguf]") {
    const Writer w = sample_writer();
    const auto bytes = w.to_bytes();
    const Reader r = Reader::from_bytes(bytes);
    CHECK(r.version() == 3);
    CHECK(r.alignment() == 32);
    CHECK(r.data_offset() % 32 == 0);
    CHECK(r.architecture() == "llama");
    CHECK(r.get<std::string>("general.name") == "tiny \"test\"");
    CHECK(r.get<uint32_t>("llama.block_count") == 5);
    CHECK(r.get<uint64_t>("llama.block_count") == 5);  // lenient widening
    CHECK(r.get<float>("llama.rope.freq_base") == 10000.0f);
    CHECK(r.get<int>("test.u8") == 200);
    CHECK(r.get<int>("test.i8") == -5);
    CHECK(r.get<uint16_t>("test.u16") == 65000);
    CHECK(r.get<int16_t>("test.i16") == -30000);
    CHECK(r.get<int64_t>("test.i32") == -7);
    CHECK(r.get<uint64_t>("test.u64") == (uint64_t{1} << 40));
    CHECK(r.get<int64_t>("test.i64") == -(int64_t{1} << 40));
    CHECK(r.get<double>("test.f64") == 0.125);
    CHECK(r.get<bool>("test.bool"));
    CHECK(r.get_array<std::string>("test.strings") == std::vector<std::string>{"a", "", "ünïcödé"});
    CHECK(r.get_array<float>("test.floats") == std::vector<float>{1.5f, -2.0f});
    const Array* nested = r.find("test.nested")->array();
    REQUIRE(nested);
    CHECK(nested->element_type == ValueType::Array);
    CHECK(nested->items.size() == 2);
    CHECK(nested->items[1].array()->items[0].as<int>() == 3);
    CHECK(r.find("test.nested")->type_description() == "array[array[int32]]");
    CHECK(r.get_array<uint32_t>("test.empty").empty());
    CHECK(r.get_or<uint32_t>("missing.key", 42) == 42);
    CHECK_FALSE(r.get_optional<uint32_t>("missing.key"));

    REQUIRE(r.tensors().size() == 3);
    const TensorInfo& t = r.tensor("weights");
    CHECK(t.type == DType::F32);
    CHECK(t.shape == std::vector<int64_t>{64, 3});
    CHECK(t.size_bytes == 64 * 3 * 4);
    float v;
    std::memcpy(&v, t.data + 4 * 10, 4);
    CHECK(v == 5.0f);
    CHECK(r.tensor("q").size_bytes == 68);
    CHECK(r.tensor("q").offset % 32 == 0);
    CHECK(r.tensor("scalar").element_count() == 1);
    CHECK(r.tensor("scalar").shape.empty());
    for (const auto& ti : r.tensors()) CHECK(ti.offset % r.alignment() == 0);

    // Metadata order is file order and a rewrite is byte-identical.
    Writer copy;
    copy.copy_metadata(r);
    for (const auto& ti : r.tensors())
        copy.add_tensor(ti.name, ti.type, ti.shape, std::vector<uint8_t>(ti.data, ti.data + ti.size_bytes));
    CHECK(copy.to_bytes() == bytes);
}

TEST_CASE("gguf: typed accessors name the key and the types on a mismatch", "[gguf]") {
    const Reader r = Reader::from_bytes(sample_writer().to_bytes(), "sample.gguf");
    try {
        (void)r.get<uint32_t>("general.name");
        FAIL("expected a type error");
    } catch (const Error& e) {
        CHECK(e.code() == ErrorCode::Format);
        const std::string msg = e.what();
        CHECK_THAT(msg, Catch::Contains("sample.gguf") && Catch::Contains("general.name") &&
                            Catch::Contains("non-negative integer") && Catch::Contains("string"));
    }
    CHECK_THROWS_WITH(r.get<uint32_t>("test.i32"), Catch::Contains("test.i32"));  // -7
    CHECK_THROWS_WITH(r.get<uint8_t>("test.u16"), Catch::Contains("test.u16"));   // 65000
    try {
        (void)r.get<uint32_t>("no.such.key");
        FAIL("expected NotFound");
    } catch (const Error& e) {
        CHECK(e.code() == ErrorCode::NotFound);
    }
    CHECK_THROWS_AS(r.tensor("nope"), Error);
    CHECK_THROWS_AS(r.get_array<int>("test.strings"), Error);
}

TEST_CASE("gguf: version 2 files and custom alignment", "[gguf]") {
    Writer w(2, 64);
    w.set("a", uint32_t{1});
    w.add_tensor("t0", DType::F32, {3}, std::vector<uint8_t>(12, 1));
    w.add_tensor("t1", DType::F32, {5}, std::vector<uint8_t>(20, 2));
    const Reader r = Reader::from_bytes(w.to_bytes());
    CHECK(r.version() == 2);
    CHECK(r.alignment() == 64);
    CHECK(r.data_offset() % 64 == 0);
    CHECK(r.tensor("t1").offset == 64);
    CHECK(r.tensor("t1").data[0] == 2);
}

TEST_CASE("gguf: the shared stories260K model", "[gguf]") {
    const Reader r = Reader::open(testdata_dir() / "models/stories260K.gguf");
    CHECK(r.is_mapped());
    CHECK(r.version() == 3);
    CHECK(r.architecture() == "llama");
    CHECK(r.tensors().size() == 48);
    CHECK(r.get<uint32_t>("llama.block_count") == 5);
    CHECK(r.get<uint32_t>("llama.embedding_length") == 64);
    CHECK(r.get<uint32_t>("llama.attention.head_count") == 8);
    CHECK(r.get<uint32_t>("llama.attention.head_count_kv") == 4);
    CHECK(r.get<uint32_t>("llama.feed_forward_length") == 172);
    CHECK(r.get<std::string>("tokenizer.ggml.model") == "llama");
    CHECK(r.get_array<std::string>("tokenizer.ggml.tokens").size() == 512);
    for (const auto& t : r.tensors()) CHECK(t.type == DType::F32);
    CHECK(r.tensor("token_embd.weight").shape == std::vector<int64_t>{64, 512});
}

TEST_CASE("gguf: the shared llama-2-tiny-random model and vocab files", "[gguf]") {
    const Reader r = Reader::open(testdata_dir() / "models/llama-2-tiny-random.gguf");
    size_t f16 = 0, f32 = 0;
    for (const auto& t : r.tensors()) (t.type == DType::F16 ? f16 : f32) += (t.type == DType::F16 || t.type == DType::F32);
    CHECK(f16 == 9);
    CHECK(f32 == 3);
    CHECK(r.get_array<std::string>("tokenizer.ggml.tokens").size() == 32000);

    const Reader gpt2 = Reader::open(testdata_dir() / "tokenizer/vocab/ggml-vocab-gpt-2.gguf");
    CHECK(gpt2.tensors().empty());
    CHECK(gpt2.get<std::string>("tokenizer.ggml.model") == "gpt2");
    CHECK(gpt2.get<std::string>("tokenizer.ggml.pre") == "gpt-2");
    CHECK(gpt2.get_array<std::string>("tokenizer.ggml.tokens").size() == 50257);
    CHECK(gpt2.get_array<std::string>("tokenizer.ggml.merges").size() == 50000);
}

TEST_CASE("gguf: a missing file is NotFound naming the path", "[gguf]") {
    try {
        Reader::open("/nonexistent/dir/model.gguf");
        FAIL("expected an error");
    } catch (const Error& e) {
        CHECK(e.code() == ErrorCode::NotFound);
        CHECK_THAT(std::string(e.what()), Catch::Contains("/nonexistent/dir/model.gguf"));
    }
}

TEST_CASE("gguf: bad magic, versions and truncation", "[gguf][errors]") {
    CHECK_THAT(error_of({}), Catch::Contains("bad.gguf") && Catch::Contains("magic"));
    CHECK_THAT(error_of({'G', 'G', 'U'}), Catch::Contains("magic"));
    Bytes wrong_magic;
    wrong_magic.b = {'G', 'G', 'M', 'L'};
    wrong_magic.put<uint32_t>(3);
    CHECK_THAT(error_of(wrong_magic.b), Catch::Contains("offset 0") && Catch::Contains("'GGML'"));

    CHECK_THAT(error_of(Bytes().header(0, 0, 1).b, ErrorCode::Unsupported), Catch::Contains("version 1"));
    CHECK_THAT(error_of(Bytes().header(0, 0, 0x03000000).b, ErrorCode::Unsupported), Catch::Contains("big-endian"));

    // Every proper prefix of a valid file is rejected with a Format error (never a crash).
    const auto full = sample_writer().to_bytes();
    const Reader ok = Reader::from_bytes(full);
    size_t rejected = 0;
    for (size_t n = 0; n < ok.data_offset() + 1; ++n) {
        try {
            Reader::from_bytes(std::vector<uint8_t>(full.begin(), full.begin() + static_cast<long>(n)));
        } catch (const Error& e) {
            CHECK(e.code() == ErrorCode::Format);
            ++rejected;
        }
    }
    CHECK(rejected == ok.data_offset() + 1);
    // Truncated inside the tensor data: names the tensor and the sizes.
    std::vector<uint8_t> cut(full.begin(), full.end() - 40);
    CHECK_THAT(error_of(cut), Catch::Contains("past the end of the file"));
}

TEST_CASE("gguf: lengths and counts past the end are rejected before allocating", "[gguf][errors]") {
    // A key whose string length is huge.
    CHECK_THAT(error_of(Bytes().header(0, 1).put<uint64_t>(uint64_t{1} << 60).zeros(16).b),
               Catch::Contains("offset 24") && Catch::Contains("past the end"));
    // An array claiming 2^40 items.
    Bytes arr;
    arr.header(0, 1).str("k").put<uint32_t>(9).put<uint32_t>(4).put<uint64_t>(uint64_t{1} << 40);
    CHECK_THAT(error_of(arr.b), Catch::Contains("array 'k'") && Catch::Contains("claims"));
    // Absurd tensor / kv counts.
    CHECK_THAT(error_of(Bytes().header(uint64_t{1} << 50, 0).b), Catch::Contains("tensor count"));
    CHECK_THAT(error_of(Bytes().header(0, uint64_t{1} << 50).b), Catch::Contains("metadata count"));
    // Invalid value type, invalid array element type, invalid bool.
    CHECK_THAT(error_of(Bytes().header(0, 1).str("k").put<uint32_t>(13).b), Catch::Contains("value type"));
    CHECK_THAT(error_of(Bytes().header(0, 1).str("k").put<uint32_t>(9).put<uint32_t>(99).put<uint64_t>(0).b),
               Catch::Contains("element type"));
    CHECK_THAT(error_of(Bytes().header(0, 1).str("k").put<uint32_t>(7).put<uint8_t>(2).b), Catch::Contains("bool"));
    // Deeply nested arrays.
    Bytes deep;
    deep.header(0, 1).str("k").put<uint32_t>(9);
    for (int i = 0; i < 20; ++i) deep.put<uint32_t>(9).put<uint64_t>(1);
    CHECK_THAT(error_of(deep.b), Catch::Contains("nested"));
}

TEST_CASE("gguf: duplicate keys and bad alignment", "[gguf][errors]") {
    Bytes dup;
    dup.header(0, 2).str("a").put<uint32_t>(4).put<uint32_t>(1).str("a").put<uint32_t>(4).put<uint32_t>(2);
    CHECK_THAT(error_of(dup.b), Catch::Contains("duplicate metadata key 'a'") && Catch::Contains("offset 41"));
    Bytes align;
    align.header(0, 1).str("general.alignment").put<uint32_t>(4).put<uint32_t>(24);
    CHECK_THAT(error_of(align.b), Catch::Contains("power of two"));
    Bytes align_type;
    align_type.header(0, 1).str("general.alignment").put<uint32_t>(10).put<uint64_t>(32);
    CHECK_THAT(error_of(align_type.b), Catch::Contains("general.alignment"));
}

TEST_CASE("gguf: bad tensor directories", "[gguf][errors]") {
    auto with_tensors = [](std::initializer_list<std::tuple<std::string, std::vector<uint64_t>, uint32_t, uint64_t>> ts,
                           size_t data_bytes) {
        Bytes b;
        b.header(ts.size(), 0);
        for (const auto& [name, ne, type, offset] : ts) b.tensor(name, ne, type, offset);
        b.pad_to(32).zeros(data_bytes);
        return b.b;
    };
    // Sanity: a valid hand-made file parses.
    CHECK_NOTHROW(Reader::from_bytes(with_tensors({{"a", {4}, 0, 0}, {"b", {8}, 0, 32}}, 64)));
    CHECK_THAT(error_of(with_tensors({{"a", {4}, 0, 0}, {"b", {8}, 0, 32}}, 50)),
               Catch::Contains("tensor 'b'") && Catch::Contains("past the end"));
    CHECK_THAT(error_of(with_tensors({{"a", {4}, 0, 4096}}, 64)), Catch::Contains("past the end"));
    CHECK_THAT(error_of(with_tensors({{"a", {16}, 0, 0}, {"b", {8}, 0, 32}}, 128)), Catch::Contains("overlaps"));
    CHECK_THAT(error_of(with_tensors({{"a", {4}, 0, 8}}, 64)), Catch::Contains("not a multiple of the alignment"));
    CHECK_THAT(error_of(with_tensors({{"a", {4}, 99, 0}}, 64)), Catch::Contains("unknown tensor type 99"));
    CHECK_THAT(error_of(with_tensors({{"a", {4}, 5, 0}}, 64)), Catch::Contains("unknown tensor type 5"));
    CHECK_THAT(error_of(with_tensors({{"a", {4}, 0, 0}, {"a", {4}, 0, 32}}, 64)), Catch::Contains("duplicate tensor"));
    CHECK_THAT(error_of(with_tensors({{"a", {1, 1, 1, 1, 1}, 0, 0}}, 64)), Catch::Contains("dimensions"));
    CHECK_THAT(error_of(with_tensors({{"q", {16}, 8, 0}}, 64)), Catch::Contains("block size 32"));
    CHECK_THAT(error_of(with_tensors({{"a", {uint64_t{1} << 62, 16}, 0, 0}}, 64)), Catch::Contains("overflow"));
    CHECK_THAT(error_of(with_tensors({{std::string(64, 'n'), {4}, 0, 0}}, 64)), Catch::Contains("at most 63"));
}

TEST_CASE("gguf: writer refuses invalid tensors and writes files atomically", "[gguf]") {
    Writer w;
    CHECK_THROWS_AS(w.add_tensor("q", DType::Q4_K, {100}, std::vector<uint8_t>(10)), Error);
    CHECK_THROWS_AS(w.add_tensor("f", DType::F32, {4}, std::vector<uint8_t>(15)), Error);
    w.add_tensor("f", DType::F32, {4}, std::vector<uint8_t>(16));
    CHECK_THROWS_AS(w.add_tensor("f", DType::F32, {4}, std::vector<uint8_t>(16)), Error);
    CHECK_THROWS_AS(Writer(1), Error);
    CHECK_THROWS_AS(Writer(3, 48), Error);

    const auto path = genie::test::temp_path("writer");
    w.add_tensor("gen", DType::F32, {2}, [](uint8_t* dst, size_t n) {
        REQUIRE(n == 8);
        const float v[2] = {1.0f, 2.0f};
        std::memcpy(dst, v, 8);
    });
    w.write(path);
    CHECK_FALSE(std::filesystem::exists(path.string() + ".tmp"));
    const Reader r = Reader::open(path);
    CHECK(r.tensors().size() == 2);
    float v[2];
    std::memcpy(v, r.tensor("gen").data, 8);
    CHECK(v[1] == 2.0f);
    std::filesystem::remove(path);
}
