//! The library exports its own natives only: the production crate's `NativeBridge` exports, linked
//! in from the rlib, stay local, so the JVM cannot bind `NativeBridge` to this library's copy.

fn main() {
    let map = concat!(env!("CARGO_MANIFEST_DIR"), "/exports.map");
    println!("cargo:rerun-if-changed={map}");
    println!("cargo:rustc-cdylib-link-arg=-Wl,--version-script={map}");
}
