//! Ours (placeholder while the generator lands).
use super::check::Reference;
use super::report::Row;
use anyhow::Result;
use sparserl_rt::dense::DenseLayout;
use sparserl_rt::{Csr, DeviceCsr, Gpu, Scalar, ValueType};

pub struct Inputs<'a, T: Scalar> {
    pub csr: &'a Csr,
    pub a: &'a DeviceCsr<T>,
    pub x: &'a [T],
    pub reference: &'a Reference,
    pub n: usize,
    pub layout: DenseLayout,
    pub copies: usize,
    pub reps: u32,
}

pub struct Ours;

impl Ours {
    pub fn new(_gpu: &Gpu, _v: &[ValueType], _l: &[DenseLayout], _w: &[usize], _b: f64) -> Result<Self> {
        Ok(Ours)
    }
    pub fn choice_label(&self) -> String {
        String::new()
    }
    pub fn run<T: Scalar>(&self, _i: &Inputs<T>, _space: bool, _row: &mut Row) -> Result<()> {
        Ok(())
    }
}
