//! # sparserl-build
pub mod codegen;
pub mod descriptor;
