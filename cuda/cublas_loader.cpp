#include "cuda/cublas_loader.hpp"

#include <dlfcn.h>

#include <mutex>
#include <string>

namespace genie::cuda {

namespace {

CublasApi load() {
    CublasApi api;
    const std::string names[] = {"libcublas.so." + std::to_string(CUBLAS_VER_MAJOR), "libcublas.so"};
    void* lib = nullptr;
    for (const auto& n : names)
        if ((lib = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL))) break;
    if (!lib) {
        const char* e = dlerror();
        api.error = std::string("cannot load ") + names[0] + ": " + (e ? e : "unknown error");
        return api;
    }
    auto sym = [&](auto& fn, const char* name) {
        fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
        if (!fn && api.error.empty()) api.error = std::string(names[0]) + " has no " + name;
    };
    sym(api.create, "cublasCreate_v2");
    sym(api.destroy, "cublasDestroy_v2");
    sym(api.set_stream, "cublasSetStream_v2");
    sym(api.sgemm, "cublasSgemm_v2");
    sym(api.gemm_ex, "cublasGemmEx");
    sym(api.status_name, "cublasGetStatusName");
    sym(api.status_string, "cublasGetStatusString");
    api.loaded = api.error.empty();
    return api;  // the library stays loaded for the process's lifetime
}

}  // namespace

const CublasApi& cublas_api() {
    static std::once_flag once;
    static CublasApi api;
    std::call_once(once, [] { api = load(); });
    return api;
}

}  // namespace genie::cuda
