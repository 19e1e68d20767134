// Only the crate's matrix views are launch operands (they carry the
// numbering of the vectors); a foreign type cannot pose as one.
use sparserl_rt::{DeviceCsr, Numbering, Operand};

struct Mine(DeviceCsr<f32>);

impl Operand<f32> for Mine {
    fn parts(&self) -> (&DeviceCsr<f32>, Numbering) {
        (&self.0, Numbering::Internal)
    }
}

fn main() {}
