//! Every function, struct, enum constant and `#define` of `include/genie/genie.h` has its
//! declaration in this crate (read from the header beside the crate in the repository), so
//! a function or constant added to the header without a Rust twin fails here.
const HEADER: &str = include_str!("../../../../include/genie/genie.h");
const TYPES: &str = include_str!("../src/types.rs");
const FUNCTIONS: &str = include_str!("../src/functions.rs");

/// Identifiers that follow `prefix` at the start of a (trimmed) header line.
fn names_after(prefix: &str) -> Vec<String> {
    HEADER
        .lines()
        .map(str::trim_start)
        .filter_map(|l| l.strip_prefix(prefix))
        .map(|rest| rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect::<String>())
        .filter(|n| !n.is_empty())
        .collect()
}

#[test]
fn every_function_is_declared() {
    let mut missing = Vec::new();
    let mut count = 0;
    for line in HEADER.lines().filter(|l| l.starts_with("GENIE_API ")) {
        let name = line.split('(').next().unwrap().rsplit([' ', '*']).next().unwrap();
        count += 1;
        if !FUNCTIONS.contains(&format!("pub fn {name}(")) {
            missing.push(name.to_string());
        }
    }
    assert!(count >= 50, "found only {count} functions in genie.h");
    assert!(missing.is_empty(), "genie.h functions without a declaration: {missing:?}");
}

#[test]
fn every_struct_and_constant_is_declared() {
    let mut missing = Vec::new();
    for name in names_after("typedef struct ") {
        let opaque = HEADER.contains(&format!("typedef struct {name} {name};"));
        if !TYPES.contains(&format!("pub struct {name} {{")) {
            missing.push(format!("struct {name}{}", if opaque { " (opaque)" } else { "" }));
        }
    }
    let defines = names_after("#define ").into_iter().filter(|n| n != "GENIE_GENIE_H");
    let enum_values = HEADER
        .lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with("GENIE_") && l.contains(" = "))
        .map(|l| l.split(' ').next().unwrap().to_string());
    let mut constants = 0;
    for name in defines.chain(enum_values) {
        constants += 1;
        if !TYPES.contains(&format!("pub const {name}:")) {
            missing.push(name);
        }
    }
    assert!(constants >= 70, "found only {constants} constants in genie.h");
    assert!(missing.is_empty(), "genie.h items without a declaration: {missing:?}");
}
