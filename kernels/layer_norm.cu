// layer_norm over the last dim of a contiguous (rows, cols) float32 array, with optional affine
// weight/bias (null pointers), saving mean and rstd for backward.
// NumPy reference: workbench/_backend/kernels.py (layer_norm, layer_norm_backward).
#include "common.cuh"

extern "C" __global__ void layer_norm_fwd(const float* __restrict__ x, const float* __restrict__ w,
                                          const float* __restrict__ b, float* __restrict__ y,
                                          float* __restrict__ mean_out, float* __restrict__ rstd_out, int cols,
                                          float eps) {
    __shared__ float scratch[32];
    const size_t off = (size_t)blockIdx.x * cols;
    float s = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) s += x[off + j];
    const float mean = block_sum(s, scratch) / cols;
    float v = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        const float d = x[off + j] - mean;
        v += d * d;
    }
    const float rstd = rsqrtf(block_sum(v, scratch) / cols + eps);
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        float h = (x[off + j] - mean) * rstd;
        if (w) h *= w[j];
        if (b) h += b[j];
        y[off + j] = h;
    }
    if (threadIdx.x == 0) {
        mean_out[blockIdx.x] = mean;
        rstd_out[blockIdx.x] = rstd;
    }
}

// dx = rstd * (dy*w - mean(dy*w) - xhat * mean(dy*w*xhat)), one block per row
extern "C" __global__ void layer_norm_bwd_dx(const float* __restrict__ g, const float* __restrict__ x,
                                             const float* __restrict__ mean, const float* __restrict__ rstd,
                                             const float* __restrict__ w, float* __restrict__ dx, int cols) {
    __shared__ float scratch[32];
    const size_t off = (size_t)blockIdx.x * cols;
    const float mu = mean[blockIdx.x], rs = rstd[blockIdx.x];
    float a = 0.0f, c = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        const float gw = g[off + j] * (w ? w[j] : 1.0f);
        a += gw;
        c += gw * (x[off + j] - mu) * rs;
    }
    a = block_sum(a, scratch) / cols;
    c = block_sum(c, scratch) / cols;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        const float gw = g[off + j] * (w ? w[j] : 1.0f);
        const float xhat = (x[off + j] - mu) * rs;
        dx[off + j] = rs * (gw - a - xhat * c);
    }
}

// dw[j] = sum_rows g * xhat, db[j] = sum_rows g: one thread per column, rows walked in order
// (adjacent threads read adjacent columns, so loads coalesce)
extern "C" __global__ void layer_norm_bwd_dwdb(const float* __restrict__ g, const float* __restrict__ x,
                                               const float* __restrict__ mean, const float* __restrict__ rstd,
                                               float* __restrict__ dw, float* __restrict__ db, int rows, int cols) {
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= cols) return;
    float sw = 0.0f, sb = 0.0f;
    for (int r = 0; r < rows; ++r) {
        const size_t i = (size_t)r * cols + j;
        sw += g[i] * (x[i] - mean[r]) * rstd[r];
        sb += g[i];
    }
    if (dw) dw[j] = sw;
    if (db) db[j] = sb;
}
