// Cross-entropy from logits and class indices, fused with log_softmax (PyTorch's definition): per row
//   loss = (1 - ls) * w[t] * (lse - x[t]) + ls / C * sum_c w[c] * (lse - x[c])   (0 where t == ignore_index)
// and its backward
//   dx_j = g_row * ((1 - ls) * w[t] * (p_j - [j == t]) + ls / C * (W * p_j - w[j])),  W = sum_c w[c].
// weight may be null (all ones). NumPy reference: workbench/_backend/kernels.py (cross_entropy*).
#include "common.cuh"

extern "C" __global__ void cross_entropy_fwd(const float* __restrict__ x, const long long* __restrict__ target,
                                             const float* __restrict__ weight, float* __restrict__ loss,
                                             float* __restrict__ lse_out, int cols, long long ignore_index,
                                             float smoothing) {
    __shared__ float scratch[32];
    const float* xr = x + (size_t)blockIdx.x * cols;
    float m = -INFINITY;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, xr[j]);
    m = block_max(m, scratch);
    float s = 0.0f, wx = 0.0f, wsum = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        const float wj = weight ? weight[j] : 1.0f;
        s += __expf(xr[j] - m);
        wx += wj * xr[j];
        wsum += wj;
    }
    s = block_sum(s, scratch);
    wx = block_sum(wx, scratch);
    wsum = block_sum(wsum, scratch);
    if (threadIdx.x == 0) {
        const float lse = m + __logf(s);
        lse_out[blockIdx.x] = lse;
        const long long t = target[blockIdx.x];
        if (t == ignore_index) {
            loss[blockIdx.x] = 0.0f;
        } else {
            const float wt = weight ? weight[t] : 1.0f;
            loss[blockIdx.x] = (1.0f - smoothing) * wt * (lse - xr[t]) + smoothing / cols * (lse * wsum - wx);
        }
    }
}

extern "C" __global__ void cross_entropy_bwd(const float* __restrict__ x, const long long* __restrict__ target,
                                             const float* __restrict__ weight, const float* __restrict__ lse,
                                             const float* __restrict__ grow, float* __restrict__ dx, int cols,
                                             long long ignore_index, float smoothing) {
    __shared__ float scratch[32];
    const size_t off = (size_t)blockIdx.x * cols;
    const long long t = target[blockIdx.x];
    float wsum = 0.0f;
    if (weight) {
        for (int j = threadIdx.x; j < cols; j += blockDim.x) wsum += weight[j];
        wsum = block_sum(wsum, scratch);
    } else {
        wsum = (float)cols;
    }
    const float gr = t == ignore_index ? 0.0f : grow[blockIdx.x];
    const float wt = (t == ignore_index) ? 0.0f : (weight ? weight[t] : 1.0f);
    const float l = lse[blockIdx.x];
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        const float p = __expf(x[off + j] - l);
        const float wj = weight ? weight[j] : 1.0f;
        const float hard = (1.0f - smoothing) * wt * (p - (j == t ? 1.0f : 0.0f));
        dx[off + j] = gr * (hard + smoothing / cols * (wsum * p - wj));
    }
}
