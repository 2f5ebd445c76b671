// KV persistence: the file format (docs/kv-cache.md), the model fingerprint, XXH64, and
// the size-bounded cache directory (genie::KvCacheDir).
#include "runtime/kv_file.hpp"

#include "core/mapped_file.hpp"

#include <genie/error.hpp>
#include <genie/session.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <thread>
#include <unistd.h>

namespace genie::runtime {

// ---- XXH64 ----------------------------------------------------------------------------

namespace {

constexpr uint64_t kP1 = 0x9E3779B185EBCA87ULL, kP2 = 0xC2B2AE3D27D4EB4FULL, kP3 = 0x165667B19E3779F9ULL,
                   kP4 = 0x85EBCA77C2B2AE63ULL, kP5 = 0x27D4EB2F165667C5ULL;

inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
inline uint64_t read64(const unsigned char* p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];  // little-endian whatever the host
    return v;
}
inline uint32_t read32(const unsigned char* p) {
    return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 | static_cast<uint32_t>(p[2]) << 16 |
           static_cast<uint32_t>(p[3]) << 24;
}
inline uint64_t round64(uint64_t acc, uint64_t input) { return rotl(acc + input * kP2, 31) * kP1; }
inline uint64_t merge64(uint64_t acc, uint64_t v) { return (acc ^ round64(0, v)) * kP1 + kP4; }

}  // namespace

Xxh64::Xxh64(uint64_t seed) noexcept : v_{seed + kP1 + kP2, seed + kP2, seed, seed - kP1}, seed_(seed), buffer_{} {}

void Xxh64::update(const void* data, size_t size) noexcept {
    const auto* p = static_cast<const unsigned char*>(data);
    total_ += size;
    if (buffered_ + size < 32) {
        if (size) std::memcpy(buffer_ + buffered_, p, size);
        buffered_ += size;
        return;
    }
    if (buffered_) {
        const size_t fill = 32 - buffered_;
        std::memcpy(buffer_ + buffered_, p, fill);
        for (int i = 0; i < 4; ++i) v_[i] = round64(v_[i], read64(buffer_ + 8 * i));
        p += fill;
        size -= fill;
        buffered_ = 0;
    }
    uint64_t v0 = v_[0], v1 = v_[1], v2 = v_[2], v3 = v_[3];
    for (; size >= 32; p += 32, size -= 32) {
        v0 = round64(v0, read64(p));
        v1 = round64(v1, read64(p + 8));
        v2 = round64(v2, read64(p + 16));
        v3 = round64(v3, read64(p + 24));
    }
    v_[0] = v0, v_[1] = v1, v_[2] = v2, v_[3] = v3;
    if (size) std::memcpy(buffer_, p, size);
    buffered_ = size;
}

uint64_t Xxh64::digest() const noexcept {
    uint64_t h;
    if (total_ >= 32) {
        h = rotl(v_[0], 1) + rotl(v_[1], 7) + rotl(v_[2], 12) + rotl(v_[3], 18);
        for (int i = 0; i < 4; ++i) h = merge64(h, v_[i]);
    } else {
        h = seed_ + kP5;
    }
    h += total_;
    const unsigned char* p = buffer_;
    size_t left = buffered_;
    for (; left >= 8; p += 8, left -= 8) h = rotl(h ^ round64(0, read64(p)), 27) * kP1 + kP4;
    if (left >= 4) {
        h = rotl(h ^ (static_cast<uint64_t>(read32(p)) * kP1), 23) * kP2 + kP3;
        p += 4;
        left -= 4;
    }
    for (; left > 0; ++p, --left) h = rotl(h ^ (*p * kP5), 11) * kP1;
    h ^= h >> 33;
    h *= kP2;
    h ^= h >> 29;
    h *= kP3;
    h ^= h >> 32;
    return h;
}

uint64_t xxh64(const void* data, size_t size, uint64_t seed) noexcept {
    Xxh64 h(seed);
    h.update(data, size);
    return h.digest();
}

// ---- model fingerprint ------------------------------------------------------------------

namespace {

template <class T>
void hash_value(Xxh64& h, T v) {
    unsigned char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    h.update(b, sizeof(T));
}
void hash_string(Xxh64& h, const std::string& s) {
    hash_value<uint64_t>(h, s.size());
    h.update(s.data(), s.size());
}

uint64_t compute_fingerprint(const Model::Impl& model) {
    constexpr size_t kChunk = size_t{16} << 20;
    struct Piece {
        const uint8_t* data;
        size_t size;
    };
    std::vector<Piece> pieces;
    Xxh64 h(0x67656e69654b5631ULL);  // "genieKV1"
    const model::HParams& hp = model.hparams;
    hash_string(h, hp.architecture);
    for (int32_t v : {hp.n_vocab, hp.n_embd, hp.n_layer, hp.n_head, hp.n_head_kv, hp.head_dim_k, hp.head_dim_v, hp.n_ff,
                      hp.n_rot, hp.rope_n_ctx_orig, static_cast<int32_t>(hp.recipe.rope_mode),
                      static_cast<int32_t>(hp.recipe.qkv_bias), static_cast<int32_t>(hp.recipe.qk_norm),
                      static_cast<int32_t>(hp.rope_scaling)})
        hash_value(h, v);
    for (float v : {hp.rms_eps, hp.rope_freq_base, hp.rope_freq_scale, hp.yarn_ext_factor, hp.yarn_attn_factor,
                    hp.yarn_beta_fast, hp.yarn_beta_slow})
        hash_value(h, v);
    for (const gguf::TensorInfo& t : model.reader.tensors()) {
        hash_string(h, t.name);
        hash_value(h, static_cast<int32_t>(t.type));
        hash_value<uint64_t>(h, t.shape.size());
        for (int64_t d : t.shape) hash_value(h, d);
        hash_value(h, t.size_bytes);
        for (size_t at = 0; at < t.size_bytes; at += kChunk)
            pieces.push_back({t.data + at, std::min(kChunk, static_cast<size_t>(t.size_bytes) - at)});
    }
    std::vector<uint64_t> digests(pieces.size());
    std::atomic<size_t> next{0};
    auto work = [&] {
        for (size_t i; (i = next.fetch_add(1)) < pieces.size();) digests[i] = xxh64(pieces[i].data, pieces[i].size);
    };
    const size_t n_threads =
        std::min<size_t>(pieces.size(), std::max(1u, std::thread::hardware_concurrency()));
    std::vector<std::thread> threads;
    for (size_t i = 1; i < n_threads; ++i) threads.emplace_back(work);
    work();
    for (auto& t : threads) t.join();
    h.update(digests.data(), digests.size() * sizeof(uint64_t));
    return h.digest();
}

}  // namespace

uint64_t model_fingerprint(const Model::Impl& model) {
    std::call_once(model.fingerprint_once, [&] { model.fingerprint_value = compute_fingerprint(model); });
    return model.fingerprint_value;
}

// ---- the file ---------------------------------------------------------------------------

namespace {

uint32_t kv_type_code(KvType t) {
    switch (t) {
        case KvType::F16: return 0;
        case KvType::F32: return 1;
        case KvType::Q8_0: return 2;
    }
    return 0xffffffffu;
}
const char* kv_type_name(uint32_t code) {
    switch (code) {
        case 0: return "F16";
        case 1: return "F32";
        case 2: return "Q8_0";
        default: return "unknown";
    }
}

void put32(unsigned char* p, uint32_t v) {
    for (int i = 0; i < 4; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}
void put64(unsigned char* p, uint64_t v) {
    for (int i = 0; i < 8; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}

struct Header {
    uint32_t version = kKvFileVersion;
    uint32_t header_bytes = kKvFileHeaderBytes;
    uint64_t fingerprint = 0;
    uint32_t kv_type = 0, n_layer = 0, n_head_kv = 0, head_dim = 0, n_ctx = 0, n_tokens = 0;
    uint64_t row_bytes = 0, payload_bytes = 0, payload_hash = 0;

    void encode(unsigned char* b) const {
        std::memcpy(b, kKvFileMagic, 8);
        put32(b + 8, version);
        put32(b + 12, header_bytes);
        put64(b + 16, fingerprint);
        put32(b + 24, kv_type);
        put32(b + 28, n_layer);
        put32(b + 32, n_head_kv);
        put32(b + 36, head_dim);
        put32(b + 40, n_ctx);
        put32(b + 44, n_tokens);
        put64(b + 48, row_bytes);
        put64(b + 56, payload_bytes);
        put64(b + 64, payload_hash);
        put64(b + 72, xxh64(b, 72));
    }
    static Header decode(const unsigned char* b) {
        Header h;
        h.version = read32(b + 8);
        h.header_bytes = read32(b + 12);
        h.fingerprint = read64(b + 16);
        h.kv_type = read32(b + 24);
        h.n_layer = read32(b + 28);
        h.n_head_kv = read32(b + 32);
        h.head_dim = read32(b + 36);
        h.n_ctx = read32(b + 40);
        h.n_tokens = read32(b + 44);
        h.row_bytes = read64(b + 48);
        h.payload_bytes = read64(b + 56);
        h.payload_hash = read64(b + 64);
        return h;
    }
};

[[noreturn]] void io_error(const std::filesystem::path& path, const char* what, int err) {
    throw Error(ErrorCode::Io, fmt::format("{}: cannot {}: {}", path.string(), what, std::strerror(err)));
}

/// An open file descriptor that closes itself.
struct Fd {
    int fd = -1;
    ~Fd() {
        if (fd >= 0) ::close(fd);
    }
};

void write_all(int fd, const void* data, size_t size, const std::filesystem::path& path) {
    const auto* p = static_cast<const unsigned char*>(data);
    while (size > 0) {
        const ssize_t n = ::write(fd, p, std::min<size_t>(size, size_t{1} << 30));
        if (n < 0) {
            if (errno == EINTR) continue;
            io_error(path, "write", errno);
        }
        p += n;
        size -= static_cast<size_t>(n);
    }
}

std::string hex(uint64_t v) { return fmt::format("{:016x}", v); }

}  // namespace

uint64_t save_kv_file(const std::filesystem::path& path, const Model::Impl& model, const backend::KvCache& cache,
                      std::span<const TokenId> tokens) {
    const backend::KvLayout& layout = cache.layout();
    if (static_cast<int64_t>(tokens.size()) > layout.n_ctx)
        throw Error(ErrorCode::Internal, "more cached tokens than KV cells");
    Header hdr;
    hdr.fingerprint = model_fingerprint(model);
    hdr.kv_type = kv_type_code(layout.type);
    hdr.n_layer = static_cast<uint32_t>(layout.n_layer);
    hdr.n_head_kv = static_cast<uint32_t>(layout.n_head_kv);
    hdr.head_dim = static_cast<uint32_t>(layout.head_dim);
    hdr.n_ctx = static_cast<uint32_t>(layout.n_ctx);
    hdr.n_tokens = static_cast<uint32_t>(tokens.size());
    hdr.row_bytes = layout.row_bytes();
    const uint64_t cells_bytes = uint64_t{hdr.n_tokens} * hdr.row_bytes;
    hdr.payload_bytes = uint64_t{hdr.n_tokens} * 4 + 2 * uint64_t{hdr.n_layer} * cells_bytes;

    const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
    static std::atomic<uint64_t> counter{0};
    const std::filesystem::path tmp =
        dir / fmt::format(".{}.tmp-{}-{}", path.filename().string(), ::getpid(), counter.fetch_add(1));
    Fd out;
    out.fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (out.fd < 0) {
        const int err = errno;
        throw Error(err == ENOENT ? ErrorCode::NotFound : ErrorCode::Io,
                    fmt::format("{}: cannot create a temporary file in {}: {}", path.string(), dir.string(),
                                std::strerror(err)));
    }
    try {
        unsigned char header[kKvFileHeaderBytes] = {};
        write_all(out.fd, header, sizeof header, tmp);  // rewritten with the checksums at the end
        Xxh64 payload;
        std::vector<unsigned char> buf(std::max<size_t>(static_cast<size_t>(cells_bytes), 4 * tokens.size()));
        for (size_t i = 0; i < tokens.size(); ++i) put32(buf.data() + 4 * i, static_cast<uint32_t>(tokens[i]));
        payload.update(buf.data(), 4 * tokens.size());
        write_all(out.fd, buf.data(), 4 * tokens.size(), tmp);
        std::vector<unsigned char> vbuf(static_cast<size_t>(cells_bytes));
        for (int32_t il = 0; il < layout.n_layer; ++il) {
            if (cells_bytes == 0) break;
            cache.read_cells(il, 0, static_cast<int32_t>(tokens.size()), buf.data(), vbuf.data());
            payload.update(buf.data(), static_cast<size_t>(cells_bytes));
            write_all(out.fd, buf.data(), static_cast<size_t>(cells_bytes), tmp);
            payload.update(vbuf.data(), static_cast<size_t>(cells_bytes));
            write_all(out.fd, vbuf.data(), static_cast<size_t>(cells_bytes), tmp);
        }
        hdr.payload_hash = payload.digest();
        hdr.encode(header);
        if (::pwrite(out.fd, header, sizeof header, 0) != static_cast<ssize_t>(sizeof header))
            io_error(tmp, "write the header of", errno);
        if (::fsync(out.fd) != 0) io_error(tmp, "fsync", errno);
        const int fd = out.fd;
        out.fd = -1;
        if (::close(fd) != 0) io_error(tmp, "close", errno);
        if (::rename(tmp.c_str(), path.c_str()) != 0) io_error(path, "rename the temporary file to", errno);
    } catch (...) {
        ::unlink(tmp.c_str());
        throw;
    }
    // Make the rename itself durable.
    Fd d;
    d.fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (d.fd < 0 || ::fsync(d.fd) != 0) io_error(dir, "fsync the folder", errno);
    return kKvFileHeaderBytes + hdr.payload_bytes;
}

std::vector<TokenId> load_kv_file(const std::filesystem::path& path, const Model::Impl& model,
                                  backend::KvCache& cache) {
    const MappedFile file = MappedFile::open(path);
    const std::string name = path.string();
    auto format = [&](const std::string& what) { return Error(ErrorCode::Format, fmt::format("{}: {}", name, what)); };
    auto mismatch = [&](const std::string& what) {
        return Error(ErrorCode::InvalidArgument, fmt::format("{}: {}", name, what));
    };
    const unsigned char* b = file.data();
    if (file.size() < 8 || std::memcmp(b, kKvFileMagic, 8) != 0)
        throw format("not a libgenie KV state file (no GENIEKV magic at byte 0)");
    if (file.size() < kKvFileHeaderBytes)
        throw format(fmt::format("truncated: {} bytes, shorter than the {}-byte header", file.size(), kKvFileHeaderBytes));
    const Header h = Header::decode(b);
    if (h.version != kKvFileVersion)
        throw format(fmt::format("KV file format version {}; this build reads version {}", h.version, kKvFileVersion));
    if (read64(b + 72) != xxh64(b, 72)) throw format("the header is corrupt (checksum mismatch at byte 72)");
    if (h.header_bytes != kKvFileHeaderBytes)
        throw format(fmt::format("header size {}, expected {}", h.header_bytes, kKvFileHeaderBytes));

    const backend::KvLayout& layout = cache.layout();
    const uint64_t ours = model_fingerprint(model);
    if (h.fingerprint != ours)
        throw mismatch(fmt::format("the KV state was saved from another model (fingerprint {}, this model's is {})",
                                   hex(h.fingerprint), hex(ours)));
    if (h.kv_type != kv_type_code(layout.type))
        throw mismatch(fmt::format("the KV state holds a {} KV cache, this session's is {}", kv_type_name(h.kv_type),
                                   kv_type_name(kv_type_code(layout.type))));
    if (h.n_layer != static_cast<uint32_t>(layout.n_layer) || h.n_head_kv != static_cast<uint32_t>(layout.n_head_kv) ||
        h.head_dim != static_cast<uint32_t>(layout.head_dim))
        throw mismatch(fmt::format("KV shape {} layers x {} KV heads x head size {}, this session's is {} x {} x {}",
                                   h.n_layer, h.n_head_kv, h.head_dim, layout.n_layer, layout.n_head_kv,
                                   layout.head_dim));
    if (h.row_bytes != layout.row_bytes())
        throw format(fmt::format("{} bytes per KV cell, expected {}", h.row_bytes, layout.row_bytes()));
    if (h.n_tokens > static_cast<uint32_t>(layout.n_ctx))
        throw mismatch(fmt::format("the KV state holds {} tokens but this session's context holds {}", h.n_tokens,
                                   layout.n_ctx));
    const uint64_t cells_bytes = uint64_t{h.n_tokens} * h.row_bytes;  // n_tokens <= n_ctx: no overflow
    const uint64_t expected_payload = uint64_t{h.n_tokens} * 4 + 2 * uint64_t{h.n_layer} * cells_bytes;
    if (h.payload_bytes != expected_payload)
        throw format(fmt::format("payload size {} does not match its shape ({} bytes)", h.payload_bytes, expected_payload));
    if (file.size() != kKvFileHeaderBytes + expected_payload)
        throw format(fmt::format("{}: {} bytes, the header describes {}",
                                 file.size() < kKvFileHeaderBytes + expected_payload ? "truncated" : "trailing bytes",
                                 file.size(), kKvFileHeaderBytes + expected_payload));
    const unsigned char* payload = b + kKvFileHeaderBytes;
    if (xxh64(payload, static_cast<size_t>(expected_payload)) != h.payload_hash)
        throw format("the KV payload is corrupt (checksum mismatch)");
    std::vector<TokenId> tokens(h.n_tokens);
    const int32_t n_vocab = model.hparams.n_vocab;
    for (uint32_t i = 0; i < h.n_tokens; ++i) {
        tokens[i] = static_cast<TokenId>(read32(payload + 4 * i));
        if (tokens[i] < 0 || tokens[i] >= n_vocab)
            throw format(fmt::format("token {} at index {} is outside the vocabulary [0, {})", tokens[i], i, n_vocab));
    }
    // Everything checked: only now touch the cache.
    const unsigned char* cells = payload + 4 * uint64_t{h.n_tokens};
    for (uint32_t il = 0; il < h.n_layer && cells_bytes > 0; ++il) {
        const unsigned char* k = cells + 2 * il * cells_bytes;
        cache.write_cells(static_cast<int32_t>(il), 0, static_cast<int32_t>(h.n_tokens), k, k + cells_bytes);
    }
    return tokens;
}

}  // namespace genie::runtime

// ---- genie::KvCacheDir ------------------------------------------------------------------

namespace genie {

namespace {

constexpr const char* kEntrySuffix = ".gkv";

/// A strictly increasing modification time for this process's touches, so that entries
/// stored or restored in quick succession keep their order (the file system's own clock
/// ticks in milliseconds at best).
std::filesystem::file_time_type next_touch_time() {
    static std::mutex mutex;
    static std::filesystem::file_time_type last{};
    std::lock_guard<std::mutex> lock(mutex);
    auto now = std::filesystem::file_time_type::clock::now();
    if (now <= last) now = last + std::chrono::microseconds(1);
    last = now;
    return now;
}

}  // namespace

struct KvCacheDir::Impl {
    std::filesystem::path dir;
    uint64_t max_bytes = 0;
    mutable std::mutex mutex;

    std::filesystem::path path_for(std::string_view key) const {
        if (key.empty()) throw Error(ErrorCode::InvalidArgument, "a KV cache key must not be empty");
        std::string safe;
        for (char c : key.substr(0, 64)) {
            const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                            c == '_' || c == '.';
            safe += ok ? c : '_';
        }
        if (safe[0] == '.') safe[0] = '_';  // never a hidden file (temporary files are)
        return dir / fmt::format("{}-{:016x}{}", safe, runtime::xxh64(key.data(), key.size()), kEntrySuffix);
    }

    struct Entry {
        std::filesystem::path path;
        uint64_t size;
        std::filesystem::file_time_type time;
    };

    std::vector<Entry> entries() const {
        std::vector<Entry> out;
        std::error_code ec;
        const auto stale = std::filesystem::file_time_type::clock::now() - std::chrono::hours(1);
        for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
            std::error_code ec2;
            if (!e.is_regular_file(ec2)) continue;
            const std::string name = e.path().filename().string();
            const auto time = e.last_write_time(ec2);
            if (ec2) continue;
            // A temporary file left by a writer that died: removed after an hour.
            if (name.size() > 1 && name[0] == '.' && name.find(".tmp-") != std::string::npos) {
                if (time < stale) std::filesystem::remove(e.path(), ec2);
                continue;
            }
            if (e.path().extension() != kEntrySuffix) continue;
            const uint64_t size = e.file_size(ec2);
            if (!ec2) out.push_back({e.path(), size, time});
        }
        if (ec)
            throw Error(ErrorCode::Io, fmt::format("{}: cannot list the KV cache folder: {}", dir.string(), ec.message()));
        return out;
    }
};

KvCacheDir::KvCacheDir(std::filesystem::path dir, uint64_t max_bytes) : impl_(std::make_unique<Impl>()) {
    impl_->dir = std::move(dir);
    impl_->max_bytes = max_bytes;
    std::error_code ec;
    std::filesystem::create_directories(impl_->dir, ec);
    if (ec || !std::filesystem::is_directory(impl_->dir))
        throw Error(ErrorCode::Io, fmt::format("{}: cannot create the KV cache folder: {}", impl_->dir.string(),
                                               ec ? ec.message() : std::string("not a directory")));
}
KvCacheDir::KvCacheDir(KvCacheDir&&) noexcept = default;
KvCacheDir& KvCacheDir::operator=(KvCacheDir&&) noexcept = default;
KvCacheDir::~KvCacheDir() = default;

std::filesystem::path KvCacheDir::path_for(std::string_view key) const { return impl_->path_for(key); }
uint64_t KvCacheDir::max_bytes() const noexcept { return impl_->max_bytes; }

uint64_t KvCacheDir::size_bytes() const {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    uint64_t total = 0;
    for (const auto& e : impl_->entries()) total += e.size;
    return total;
}

bool KvCacheDir::store(std::string_view key, const Session& session) {
    const std::filesystem::path path = impl_->path_for(key);
    std::lock_guard<std::mutex> lock(impl_->mutex);
    const uint64_t size = session.save_state(path);
    std::error_code ec;
    if (impl_->max_bytes != 0 && size > impl_->max_bytes) {
        std::filesystem::remove(path, ec);
        return false;
    }
    std::filesystem::last_write_time(path, next_touch_time(), ec);
    if (impl_->max_bytes == 0) return true;
    std::vector<Impl::Entry> entries = impl_->entries();
    uint64_t total = 0;
    for (const auto& e : entries) total += e.size;
    std::sort(entries.begin(), entries.end(), [](const Impl::Entry& a, const Impl::Entry& b) {
        return a.time != b.time ? a.time < b.time : a.path < b.path;
    });
    for (const auto& e : entries) {
        if (total <= impl_->max_bytes) break;
        if (e.path == path) continue;
        std::error_code rm;
        if (std::filesystem::remove(e.path, rm)) total -= e.size;
    }
    return true;
}

bool KvCacheDir::restore(std::string_view key, Session& session) {
    const std::filesystem::path path = impl_->path_for(key);
    std::lock_guard<std::mutex> lock(impl_->mutex);
    try {
        session.load_state(path);
    } catch (const Error& e) {
        if (e.code() == ErrorCode::NotFound || e.code() == ErrorCode::InvalidArgument) return false;
        if (e.code() == ErrorCode::Format) {
            std::error_code ec;
            std::filesystem::remove(path, ec);
            return false;
        }
        throw;
    }
    std::error_code ec;
    std::filesystem::last_write_time(path, next_touch_time(), ec);
    return true;
}

bool KvCacheDir::remove(std::string_view key) {
    const std::filesystem::path path = impl_->path_for(key);
    std::lock_guard<std::mutex> lock(impl_->mutex);
    std::error_code ec;
    const bool removed = std::filesystem::remove(path, ec);
    if (ec) throw Error(ErrorCode::Io, fmt::format("{}: cannot remove: {}", path.string(), ec.message()));
    return removed;
}

}  // namespace genie
