//! Which optional layouts an upload builds.

/// Which of the optional layouts an upload builds (the CSR arrays are always
/// uploaded). A layout the matrix does not qualify for is never built.
///
/// ```
/// use sparserl_rt::{Layouts, Strategy, Variant};
/// // Only what a tiled kernel reads, plus nothing else:
/// let l = Layouts::for_variants(&[Variant::of(Strategy::Tiled)]);
/// assert!(l.tiled && !l.diagonal && !l.binned && !l.narrow);
/// // CSR kernels need no layout at all.
/// assert_eq!(Layouts::for_variants(&[Variant::FALLBACK]), Layouts::NONE);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Layouts {
    /// The diagonal layout of [`Strategy::Diagonal`](crate::Strategy::Diagonal) kernels.
    pub diagonal: bool,
    /// The row-binned index of [`Strategy::Binned`](crate::Strategy::Binned) kernels.
    pub binned: bool,
    /// The tile index of [`Strategy::Tiled`](crate::Strategy::Tiled) kernels.
    pub tiled: bool,
    /// The 16-bit column offsets of [`Strategy::Narrow`](crate::Strategy::Narrow) kernels.
    pub narrow: bool,
    /// The SELL-C-sigma slices of [`Strategy::Sell`](crate::Strategy::Sell) kernels.
    pub sell: bool,
    /// Keep the CSR arrays. `false` keeps only what the built layout's
    /// kernels read when a layout that stands alone was built: nothing more
    /// for the diagonal and SELL-C-sigma layouts, the row pointers and values (not the column
    /// indices) for the narrow one. The nnz-balanced fallback needs all
    /// three CSR arrays, so a matrix without them always runs its layout's
    /// kernel. Ignored (the arrays are kept) when neither layout was built.
    pub csr: bool,
    /// Store the matrix renumbered (square matrices; see
    /// [`crate::renumber`]): the other layouts are built from the
    /// renumbered matrix, and launches permute `x` and `y` around the kernel
    /// unless they use [`DeviceCsr::internal`](crate::DeviceCsr::internal).
    pub reorder: crate::reorder::Reorder,
}

impl Layouts {
    /// Every layout the matrix qualifies for (what [`DeviceCsr::upload`](crate::DeviceCsr::upload) builds).
    pub const ALL: Layouts = Layouts {
        diagonal: true,
        binned: true,
        tiled: true,
        narrow: true,
        sell: true,
        csr: true,
        reorder: crate::reorder::Reorder::None,
    };
    /// CSR only.
    pub const NONE: Layouts = Layouts {
        diagonal: false,
        binned: false,
        tiled: false,
        narrow: false,
        sell: false,
        csr: true,
        reorder: crate::reorder::Reorder::None,
    };

    /// The least device memory `variant` can run from: its layout alone
    /// where its kernels need no CSR array (diagonal, SELL-C-sigma; narrow
    /// keeps row pointers and values), else CSR plus its layout.
    ///
    /// ```
    /// use sparserl_rt::{Layouts, Strategy, Variant};
    /// let l = Layouts::lean(&Variant::of(Strategy::Diagonal));
    /// assert!(l.diagonal && !l.csr);
    /// assert!(Layouts::lean(&Variant::of(Strategy::Tiled)).csr);
    /// ```
    pub fn lean(variant: &crate::Variant) -> Layouts {
        use crate::Strategy;
        let mut l = Layouts::for_variants(&[*variant]);
        l.csr = !matches!(
            variant.strategy,
            Strategy::Diagonal | Strategy::Narrow | Strategy::Sell
        );
        l
    }

    /// The layouts that kernels of these variants read, in the numbering of
    /// the first variant.
    pub fn for_variants(variants: &[crate::Variant]) -> Layouts {
        use crate::Strategy;
        let has = |s: Strategy| variants.iter().any(|v| v.strategy == s);
        Layouts {
            diagonal: has(Strategy::Diagonal),
            binned: has(Strategy::Binned),
            tiled: has(Strategy::Tiled),
            narrow: has(Strategy::Narrow),
            sell: has(Strategy::Sell),
            csr: true,
            reorder: variants.first().map_or(Default::default(), |v| v.reorder),
        }
    }
}
