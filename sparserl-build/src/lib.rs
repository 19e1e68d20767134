//! # sparserl-build
