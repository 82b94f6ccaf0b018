// softmax / log_softmax over the last dim of a contiguous (rows, cols) float32 array, and their
// backward passes. One block per row; each thread strides over the columns.
// NumPy reference: workbench/_backend/kernels.py (softmax, softmax_backward).
#include "common.cuh"

extern "C" __global__ void softmax_fwd(const float* __restrict__ x, float* __restrict__ y, int cols, int log_out) {
    __shared__ float scratch[32];
    const float* xr = x + (size_t)blockIdx.x * cols;
    float* yr = y + (size_t)blockIdx.x * cols;
    float m = -INFINITY;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, xr[j]);
    m = block_max(m, scratch);
    float s = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) s += __expf(xr[j] - m);
    s = block_sum(s, scratch);
    if (log_out) {
        const float lse = m + __logf(s);
        for (int j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = xr[j] - lse;
    } else {
        const float inv = 1.0f / s;
        for (int j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = __expf(xr[j] - m) * inv;
    }
}

// softmax:     dx = y * (g - sum(g * y))
// log_softmax: dx = g - exp(y) * sum(g)
extern "C" __global__ void softmax_bwd(const float* __restrict__ y, const float* __restrict__ g, float* __restrict__ dx,
                                       int cols, int log_out) {
    __shared__ float scratch[32];
    const size_t off = (size_t)blockIdx.x * cols;
    float s = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) s += log_out ? g[off + j] : g[off + j] * y[off + j];
    s = block_sum(s, scratch);
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        const float yj = y[off + j], gj = g[off + j];
        dx[off + j] = log_out ? gj - __expf(yj) * s : yj * (gj - s);
    }
}
