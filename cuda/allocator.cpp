#include "cuda/allocator.hpp"

#include "cuda/check.hpp"

#include <genie/error.hpp>

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace genie::cuda {

namespace {

int attribute(cudaDeviceAttr attr, int device) {
    int value = 0;
    GENIE_CUDA_CHECK(cudaDeviceGetAttribute(&value, attr, device));
    return value;
}

std::string gib(size_t bytes) { return fmt::format("{:.2f} GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0)); }

}  // namespace

DeviceTraits device_traits(int device) {
    DeviceTraits t;
    t.device = device;
    char name[256] = {};
    GENIE_CUDA_CHECK(cudaDeviceGetAttribute(&t.major, cudaDevAttrComputeCapabilityMajor, device));
    GENIE_CUDA_CHECK(cudaDeviceGetAttribute(&t.minor, cudaDevAttrComputeCapabilityMinor, device));
    cudaDeviceProp props{};
    GENIE_CUDA_CHECK(cudaGetDeviceProperties(&props, device));
    std::memcpy(name, props.name, sizeof props.name < sizeof name ? sizeof props.name : sizeof name - 1);
    t.name = name;
    t.sm_count = attribute(cudaDevAttrMultiProcessorCount, device);
    t.integrated = attribute(cudaDevAttrIntegrated, device) != 0;
    t.concurrent_managed_access = attribute(cudaDevAttrConcurrentManagedAccess, device) != 0;
    t.pageable_uses_host_page_tables = attribute(cudaDevAttrPageableMemoryAccessUsesHostPageTables, device) != 0;
    t.host_register_read_only = attribute(cudaDevAttrHostRegisterReadOnlySupported, device) != 0;
    t.can_map_host_memory = attribute(cudaDevAttrCanMapHostMemory, device) != 0;
    return t;
}

const char* placement_name(WeightPlacement p) noexcept {
    switch (p) {
        case WeightPlacement::Uploaded: return "uploaded to device memory";
        case WeightPlacement::HostPageTables: return "used in place through the host page tables";
        case WeightPlacement::HostRegistered: return "used in place (cudaHostRegister, zero-copy)";
        case WeightPlacement::Managed: return "copied to managed memory";
    }
    return "?";
}

void* device_malloc(size_t bytes, const char* what) {
    if (bytes == 0) bytes = 1;
    size_t free_bytes = 0, total_bytes = 0;
    GENIE_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    if (bytes > free_bytes)
        throw Error(ErrorCode::OutOfMemory, fmt::format("cannot allocate {} ({} bytes) of CUDA device memory for {}: "
                                                        "{} free of {}",
                                                        gib(bytes), bytes, what, gib(free_bytes), gib(total_bytes)));
    void* p = nullptr;
    GENIE_CUDA_CHECK(cudaMalloc(&p, bytes));
    return p;
}

void device_free(void* p) noexcept {
    if (p) (void)cudaFree(p);
}

CudaWeights::CudaWeights(const void* data, size_t bytes, int device) : bytes_(bytes) {
    GENIE_CUDA_CHECK(cudaSetDevice(device));
    traits_ = device_traits(device);
    host_begin_ = static_cast<const uint8_t*>(data);
    host_end_ = host_begin_ + bytes;
    if (bytes == 0) {
        placement_ = WeightPlacement::HostPageTables;
        device_begin_ = host_begin_;
        return;
    }
    if (traits_.integrated) {
        if (traits_.pageable_uses_host_page_tables) {
            placement_ = WeightPlacement::HostPageTables;
            device_begin_ = host_begin_;
            return;
        }
        if (traits_.can_map_host_memory) {
            // Register whole pages: the mapping is page-aligned, the tensor data need not be.
            const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
            const uintptr_t begin = reinterpret_cast<uintptr_t>(host_begin_) & ~(page - 1);
            const uintptr_t end = (reinterpret_cast<uintptr_t>(host_end_) + page - 1) & ~(page - 1);
            unsigned flags = cudaHostRegisterMapped;
            if (traits_.host_register_read_only) flags |= cudaHostRegisterReadOnly;
            void* base = reinterpret_cast<void*>(begin);
            if (cudaHostRegister(base, end - begin, flags) == cudaSuccess) {
                void* dev = nullptr;
                GENIE_CUDA_CHECK(cudaHostGetDevicePointer(&dev, base, 0));
                registered_ = base;
                placement_ = WeightPlacement::HostRegistered;
                device_begin_ = static_cast<const uint8_t*>(dev) + (reinterpret_cast<uintptr_t>(host_begin_) - begin);
                return;
            }
            (void)cudaGetLastError();  // refused (e.g. a read-only file mapping): fall back
        }
        size_t free_bytes = 0, total_bytes = 0;
        GENIE_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
        if (bytes > free_bytes)
            throw Error(ErrorCode::OutOfMemory,
                        fmt::format("cannot place {} of weights in managed memory on {}: {} free", gib(bytes), traits_.name,
                                    gib(free_bytes)));
        GENIE_CUDA_CHECK(cudaMallocManaged(&owned_, bytes, cudaMemAttachGlobal));
        std::memcpy(owned_, host_begin_, bytes);
#if CUDART_VERSION >= 13000
        cudaMemLocation loc{};
        loc.type = cudaMemLocationTypeDevice;
        loc.id = device;
        GENIE_CUDA_CHECK(cudaMemAdvise(owned_, bytes, cudaMemAdviseSetReadMostly, loc));
        if (traits_.concurrent_managed_access) GENIE_CUDA_CHECK(cudaMemPrefetchAsync(owned_, bytes, loc, 0, nullptr));
#else
        GENIE_CUDA_CHECK(cudaMemAdvise(owned_, bytes, cudaMemAdviseSetReadMostly, device));
        if (traits_.concurrent_managed_access) GENIE_CUDA_CHECK(cudaMemPrefetchAsync(owned_, bytes, device, nullptr));
#endif
        GENIE_CUDA_CHECK(cudaDeviceSynchronize());
        placement_ = WeightPlacement::Managed;
        device_begin_ = static_cast<const uint8_t*>(owned_);
        return;
    }
    owned_ = device_malloc(bytes, "model weights");
    try {
        upload(host_begin_, bytes);
    } catch (...) {
        device_free(owned_);
        throw;
    }
    placement_ = WeightPlacement::Uploaded;
    device_begin_ = static_cast<const uint8_t*>(owned_);
}

void CudaWeights::upload(const uint8_t* src, size_t bytes) {
    // Two pinned staging buffers: the CPU fills one (reading the mmap, i.e. the file)
    // while the copy engine drains the other.
    constexpr size_t kChunk = size_t{32} << 20;
    const size_t chunk = std::min(kChunk, bytes);
    void* staging[2] = {nullptr, nullptr};
    cudaEvent_t done[2] = {nullptr, nullptr};
    cudaStream_t stream = nullptr;
    auto release = [&] {
        if (stream) (void)cudaStreamSynchronize(stream);
        for (int i = 0; i < 2; ++i) {
            if (staging[i]) (void)cudaFreeHost(staging[i]);
            if (done[i]) (void)cudaEventDestroy(done[i]);
        }
        if (stream) (void)cudaStreamDestroy(stream);
    };
    try {
        GENIE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
        for (int i = 0; i < 2; ++i) {
            GENIE_CUDA_CHECK(cudaMallocHost(&staging[i], chunk));
            GENIE_CUDA_CHECK(cudaEventCreateWithFlags(&done[i], cudaEventDisableTiming));
        }
        auto* dst = static_cast<uint8_t*>(owned_);
        int slot = 0;
        for (size_t off = 0; off < bytes; off += chunk, slot ^= 1) {
            const size_t n = std::min(chunk, bytes - off);
            GENIE_CUDA_CHECK(cudaEventSynchronize(done[slot]));  // the previous copy from this buffer
            std::memcpy(staging[slot], src + off, n);
            GENIE_CUDA_CHECK(cudaMemcpyAsync(dst + off, staging[slot], n, cudaMemcpyHostToDevice, stream));
            GENIE_CUDA_CHECK(cudaEventRecord(done[slot], stream));
        }
        GENIE_CUDA_CHECK(cudaStreamSynchronize(stream));
    } catch (...) {
        release();
        throw;
    }
    release();
}

CudaWeights::~CudaWeights() {
    (void)cudaSetDevice(traits_.device);
    if (registered_) (void)cudaHostUnregister(registered_);
    if (owned_) (void)cudaFree(owned_);
}

std::string CudaWeights::describe() const {
    return fmt::format("{} (sm_{}{}, {}): {} of weights {}", traits_.name, traits_.major, traits_.minor,
                       traits_.integrated ? "integrated" : "discrete", gib(bytes_), placement_name(placement_));
}

size_t CudaWeights::device_bytes() const noexcept {
    return placement_ == WeightPlacement::Uploaded || placement_ == WeightPlacement::Managed ? bytes_ : 0;
}

}  // namespace genie::cuda

// ---- the CUDA entry points of lib/backend/cuda_entry.hpp ---------------------------------

namespace genie::backend {

int cuda_device_count(std::string* reason) noexcept {
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess) {
        if (reason) *reason = fmt::format("{}: {}", cudaGetErrorName(status), cudaGetErrorString(status));
        (void)cudaGetLastError();
        return 0;
    }
    if (count == 0 && reason) *reason = "no CUDA device";
    return count;
}

bool cuda_memory_info(int device, CudaMemoryInfo& info, std::string* reason) noexcept {
    try {
        if (cuda_device_count(reason) <= device) {
            if (reason && reason->empty()) *reason = fmt::format("no CUDA device {}", device);
            return false;
        }
        GENIE_CUDA_CHECK(cudaSetDevice(device));
        GENIE_CUDA_CHECK(cudaMemGetInfo(&info.free, &info.total));
        const cuda::DeviceTraits t = cuda::device_traits(device);
        info.integrated = t.integrated;
        info.name = t.name;
        return true;
    } catch (const std::exception& e) {
        if (reason) *reason = e.what();
        return false;
    }
}

std::shared_ptr<DeviceWeights> cuda_load_weights(const void* data, size_t bytes, int device) {
    std::string reason;
    const int count = cuda_device_count(&reason);
    if (count <= device)
        throw Error(ErrorCode::Device, fmt::format("CUDA device {} is not available: {}", device,
                                                   count == 0 ? reason : fmt::format("{} device(s)", count)));
    return std::make_shared<cuda::CudaWeights>(data, bytes, device);
}

}  // namespace genie::backend
