// ---- narrow.cu: CSR SpMV with 16-bit column offsets, LANES lanes per row ----
//
// Reads the matrix's narrow-index layout (see sparserl_rt::narrow) through
// the common ABI: `indices` holds, per nonzero, the 16-bit signed offset
// col - row instead of the 32-bit column, so a nonzero costs 2 index bytes
// instead of 4 (values and row pointers are the CSR ones). The kernel is
// group_per_row.cu's, instantiated over these offsets.

#define SPARSERL_GROUP_INDEX_T short
#define SPARSERL_GROUP_BASE(row) (row)

#include "group_per_row.cu"
