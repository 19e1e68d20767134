// ---- epilogue.cuh: what a kernel does with each finished y[row] ----
//
// The generator includes this fragment once per entry point, after setting
// SPARSERL_EPILOGUE for that entry:
//
//   0  plain:     y[r] = (A x)[r]
//   1  axpby:     y[r] = alpha (A x)[r] + beta y[r] + gamma
//   2  dot:       y[r] = (A x)[r];  dot += w[r] y[r]
//   3  axpby-dot: y[r] = alpha (A x)[r] + beta y[r] + gamma;  dot += w[r] y[r]
//
// Fused entries (1..3) take four parameters after the common ABI (and after
// meta / scratch where a strategy has them):
//
//   const double* coef:  {alpha, beta, gamma, gamma_dot} on the device, read
//                        by every thread at kernel start (a CUDA graph replay
//                        sees the values of the moment it runs); the constant
//                        term is gamma + gamma_dot * dot[0], dot[0] being the
//                        previous result of this kernel's dot scalar (PageRank:
//                        the dangling mass of the input vector); beta == 0
//                        never reads y (BLAS convention: y may hold NaN);
//   const T* w:          the dot weights, rows entries;
//   double* dot:         {result, accumulator[32]}: the accumulators are zero
//                        between launches; block b adds into accumulator
//                        b % 32 (32 addresses, so same-address atomics do not
//                        serialise thousands of blocks), the block that
//                        finishes last sums them into result and zeroes them;
//   unsigned* ticket:    {main, group[32]}: completion counters, zero between
//                        launches and left zero. The last block of each group
//                        b % 32 takes the main ticket; the last of those
//                        publishes. Every block reads dot[0] (for gamma_dot)
//                        before it takes a ticket, so publishing cannot race
//                        with those reads.
//
// Every strategy whose kernels write each y[r] exactly once with its final
// value (all but the nnz-split one, which adds into y with atomics) calls
// store_y(y, r, v) there; the epilogue state lives in a local object whose
// destructor runs when the thread leaves the kernel, early returns included,
// and sums the thread's dot partials: warp shuffles when the whole warp is
// present, then a shared-memory block sum; the last thread of the block adds
// it to the accumulator with one double atomic, and the last block publishes
// the total.

#ifndef SPARSERL_EPILOGUE_HELPERS
#define SPARSERL_EPILOGUE_HELPERS

template <int KIND>
struct sparserl_epilogue {
    static constexpr bool AXPBY = (KIND & 1) != 0;
    static constexpr bool DOT = (KIND & 2) != 0;
    double alpha, beta, gamma, acc;
    const T* __restrict__ w;
    double* dot;
    unsigned* ticket;
    double* block_sum;
    unsigned* block_count;

    __device__ __forceinline__ sparserl_epilogue(const double* __restrict__ coef,
                                                 const T* __restrict__ w_, double* dot_,
                                                 unsigned* ticket_, double* block_sum_,
                                                 unsigned* block_count_)
        : alpha(1.0), beta(0.0), gamma(0.0), acc(0.0), w(w_), dot(dot_), ticket(ticket_),
          block_sum(block_sum_), block_count(block_count_) {
        if (AXPBY) {
            alpha = coef[0];
            beta = coef[1];
            gamma = coef[2] + (coef[3] != 0.0 ? coef[3] * dot_[0] : 0.0);
        }
    }

    __device__ __forceinline__ void store(T* __restrict__ y, int i, T v) {
        T out = v;
        if (AXPBY) {
            double r = alpha * (double)v + gamma;
            if (beta != 0.0) {
                r += beta * (double)y[i];
            }
            out = (T)r;
        }
        sparserl_store_raw(y, i, out);
        if (DOT) {
            acc += (double)w[i] * (double)out;
        }
    }

    __device__ __forceinline__ ~sparserl_epilogue() {
        if (!DOT) {
            return;
        }
        double v = acc;
        unsigned add = 1u;
        if (__activemask() == SPARSERL_FULL_MASK) {
            v = group_reduce<32>(v, SPARSERL_FULL_MASK);
            if ((threadIdx.x & 31u) != 0u) {
                return;
            }
            add = 32u;
        }
        atomicAdd(block_sum, v);
        __threadfence_block();
        if (atomicAdd(block_count, add) + add == blockDim.x) {
            // Every thread of the block has added its part.
            const double b = atomicAdd(block_sum, 0.0);
            const unsigned g = blockIdx.x & 31u;
            atomicAdd(dot + 1 + g, b);
            __threadfence();
            // Blocks of group g: g, g + 32, ... < gridDim.x.
            const unsigned in_group = (gridDim.x - g + 31u) / 32u;
            const unsigned groups = gridDim.x < 32u ? gridDim.x : 32u;
            if (atomicAdd(ticket + 1 + g, 1u) == in_group - 1u) {
                ticket[1 + g] = 0u;
                __threadfence();
                if (atomicAdd(ticket, 1u) == groups - 1u) {
                    // Every block has added its part.
                    __threadfence();
                    double total = 0.0;
                    for (int k = 0; k < 32; ++k) {
                        total += __ldcg(dot + 1 + k);
                        dot[1 + k] = 0.0;
                    }
                    dot[0] = total;
                    *ticket = 0u;
                    __threadfence();
                }
            }
        }
    }
};

#endif  // SPARSERL_EPILOGUE_HELPERS

#undef store_y
#undef SPARSERL_EP_PARAMS
#undef SPARSERL_EP_BEGIN

#if !defined(SPARSERL_EPILOGUE) || SPARSERL_EPILOGUE < 0 || SPARSERL_EPILOGUE > 3
#error "SPARSERL_EPILOGUE must be 0..=3"
#endif

#if SPARSERL_EPILOGUE == 0
#define SPARSERL_EP_PARAMS
#define SPARSERL_EP_BEGIN
#define store_y(Y, I, V) sparserl_store_raw(Y, I, V)
#else
#define SPARSERL_EP_PARAMS                                                              \
    , const double* __restrict__ ep_coef, const T* __restrict__ ep_w,                   \
        double* __restrict__ ep_dot, unsigned* __restrict__ ep_ticket
#define SPARSERL_EP_BEGIN                                                               \
    __shared__ double sparserl_ep_sum;                                                  \
    __shared__ unsigned sparserl_ep_count;                                              \
    if (threadIdx.x == 0) {                                                             \
        sparserl_ep_sum = 0.0;                                                          \
        sparserl_ep_count = 0u;                                                         \
    }                                                                                   \
    __syncthreads();                                                                    \
    sparserl_epilogue<SPARSERL_EPILOGUE> sparserl_ep(ep_coef, ep_w, ep_dot, ep_ticket,  \
                                                     &sparserl_ep_sum, &sparserl_ep_count);
#define store_y(Y, I, V) sparserl_ep.store(Y, I, V)
#endif

// ---- end epilogue.cuh ----
