//! # sparserl-policies
//!
//! The policy that proposes kernel variants for a matrix's features.
