//! # sparserl-build
pub mod descriptor;
