//! Finds libgenie and tells rustc how to link it.
//!
//! Where from, first match wins:
//!  1. `GENIE_DIR`: a libgenie build folder (`build/`, holding `lib/libgenie.so`) or an
//!     install prefix (`lib/`, `lib64/` or `lib/<multiarch>/`); the folder itself is
//!     searched too.
//!  2. pkg-config: `genie.pc`, installed by `cmake --install` (set `PKG_CONFIG_PATH` for a
//!     prefix outside the default search path).
//!  3. Otherwise `-lgenie` from the linker's default folders (a warning says so).
//!
//! How: dynamically (`libgenie.so`) by default; statically (`libgenie.a`) when the
//! `static` feature is on or `GENIE_STATIC=1`. A static libgenie brings its private
//! dependencies: the C++ runtime, fmt and PCRE2 (and the CUDA runtime when it was built
//! with CUDA: add those in `GENIE_STATIC_LIBS`, e.g. `-L/usr/local/cuda/lib64,cudart_static,rt`),
//! taken from `pkg-config --static` when the `.pc` lists them, else this default list.
use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Private link dependencies of libgenie's static archive (lib/CMakeLists.txt).
const STATIC_DEPENDENCIES: &[&str] = &["fmt", "pcre2-8", "stdc++", "m", "pthread", "dl"];

fn main() {
    for var in ["GENIE_DIR", "GENIE_STATIC", "GENIE_STATIC_LIBS", "PKG_CONFIG_PATH", "PKG_CONFIG_LIBDIR"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    println!("cargo:rerun-if-changed=build.rs");
    let want_static = env::var_os("CARGO_FEATURE_STATIC").is_some()
        || env::var("GENIE_STATIC").map(|v| v == "1" || v.eq_ignore_ascii_case("true")).unwrap_or(false);
    let file = if want_static { "libgenie.a" } else { "libgenie.so" };

    if let Some(dir) = env::var_os("GENIE_DIR") {
        let dir = PathBuf::from(dir);
        let lib_dir = match find_lib_dir(&dir, file) {
            Some(lib_dir) => lib_dir,
            None => panic!(
                "genie-sys: GENIE_DIR={} holds no {file} (looked in lib/, lib64/, lib/<multiarch>/ and the folder \
                 itself); build libgenie there (scripts/build) or point GENIE_DIR at its build or install folder",
                dir.display()
            ),
        };
        link(&lib_dir, want_static, None);
        return;
    }
    if let Some(pc) = pkg_config(want_static) {
        let lib_dir = pc.lib_dirs.iter().find(|d| d.join(file).exists()).cloned();
        match lib_dir {
            Some(dir) => link(&dir, want_static, Some(pc.private_libs)),
            None => {
                for d in &pc.lib_dirs {
                    println!("cargo:rustc-link-search=native={}", d.display());
                }
                link_libraries(want_static, Some(pc.private_libs));
            }
        }
        return;
    }
    println!(
        "cargo:warning=genie-sys: neither GENIE_DIR nor pkg-config's genie.pc found libgenie; linking -lgenie from \
         the linker's default folders"
    );
    link_libraries(want_static, None);
}

/// The folder under `dir` that holds `file`.
fn find_lib_dir(dir: &Path, file: &str) -> Option<PathBuf> {
    let mut candidates = vec![dir.join("lib"), dir.join("lib64")];
    if let Ok(target) = env::var("TARGET") {
        // Debian's multiarch folder, e.g. lib/x86_64-linux-gnu for x86_64-unknown-linux-gnu.
        let mut parts = target.split('-');
        if let (Some(arch), Some(_vendor), Some(os), Some(abi)) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        {
            candidates.push(dir.join("lib").join(format!("{arch}-{os}-{abi}")));
        }
    }
    candidates.push(dir.to_path_buf());
    candidates.into_iter().find(|d| d.join(file).exists())
}

fn link(lib_dir: &Path, want_static: bool, private_libs: Option<Vec<String>>) {
    println!("cargo:rustc-link-search=native={}", lib_dir.display());
    // Tells dependents (their build.rs reads DEP_GENIE_LIB_DIR) where the library is, e.g.
    // to set an rpath or LD_LIBRARY_PATH.
    println!("cargo:lib_dir={}", lib_dir.display());
    if want_static {
        println!("cargo:rerun-if-changed={}", lib_dir.join("libgenie.a").display());
    }
    link_libraries(want_static, private_libs);
}

fn link_libraries(want_static: bool, private_libs: Option<Vec<String>>) {
    if !want_static {
        println!("cargo:rustc-link-lib=dylib=genie");
        return;
    }
    println!("cargo:rustc-link-lib=static=genie");
    let mut libs: Vec<String> = match private_libs {
        Some(libs) if !libs.is_empty() => libs,
        _ => STATIC_DEPENDENCIES.iter().map(|s| s.to_string()).collect(),
    };
    if let Ok(extra) = env::var("GENIE_STATIC_LIBS") {
        // Linker-style entries, separated by commas or spaces: `name` or `-lname` (a
        // library), `-L/dir` (a folder to search).
        for item in extra.split(|c: char| c == ',' || c.is_whitespace()).filter(|s| !s.is_empty()) {
            if let Some(dir) = item.strip_prefix("-L") {
                println!("cargo:rustc-link-search=native={dir}");
            } else {
                libs.push(item.strip_prefix("-l").unwrap_or(item).to_string());
            }
        }
    }
    for lib in libs {
        if lib != "genie" {
            println!("cargo:rustc-link-lib=dylib={lib}");
        }
    }
}

struct PkgConfig {
    lib_dirs: Vec<PathBuf>,
    /// `-l` names besides genie (only with --static: the .pc's Libs.private).
    private_libs: Vec<String>,
}

fn pkg_config(want_static: bool) -> Option<PkgConfig> {
    let pkg_config = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".to_string());
    let mut cmd = Command::new(pkg_config);
    cmd.arg("--libs");
    if want_static {
        cmd.arg("--static");
    }
    let out = cmd.arg("genie").output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut lib_dirs = Vec::new();
    let mut private_libs = Vec::new();
    for flag in text.split_whitespace() {
        if let Some(dir) = flag.strip_prefix("-L") {
            lib_dirs.push(PathBuf::from(dir));
        } else if let Some(name) = flag.strip_prefix("-l") {
            if want_static && name != "genie" {
                private_libs.push(name.to_string());
            }
        }
    }
    Some(PkgConfig { lib_dirs, private_libs })
}
