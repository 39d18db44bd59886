//! Example (to be filled in).
fn main() {}
