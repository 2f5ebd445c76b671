// Links libgenie.so: GENIE_LIB_DIR names the folder that holds it (build/lib).
fn main() {
    println!("cargo:rerun-if-env-changed=GENIE_LIB_DIR");
    if let Ok(dir) = std::env::var("GENIE_LIB_DIR") {
        println!("cargo:rustc-link-search=native={dir}");
    }
    println!("cargo:rustc-link-lib=dylib=genie");
}
