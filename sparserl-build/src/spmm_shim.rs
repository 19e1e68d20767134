//! Temporary stand-ins for sparserl-rt's SpMM types until they land.
#![allow(dead_code, missing_docs)]
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DenseLayout {
    RowMajor,
    ColMajor,
}
impl DenseLayout {
    pub const ALL: [DenseLayout; 2] = [DenseLayout::RowMajor, DenseLayout::ColMajor];
    pub const fn as_str(self) -> &'static str {
        match self {
            DenseLayout::RowMajor => "row-major",
            DenseLayout::ColMajor => "col-major",
        }
    }
}
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SpmmEpilogue {
    BiasRelu,
}
impl SpmmEpilogue {
    pub const ALL: [SpmmEpilogue; 1] = [SpmmEpilogue::BiasRelu];
    pub const fn as_str(self) -> &'static str {
        "bias-relu"
    }
    pub fn parse(s: &str) -> Option<SpmmEpilogue> {
        (s == "bias-relu").then_some(SpmmEpilogue::BiasRelu)
    }
}
