//! Routing benchmark (placeholder).
fn main() {}
