// One Adam/AdamW step over every parameter of a param group in a single launch ("multi-tensor apply").
// The group's tensors are described by device arrays of pointers and element offsets; each thread
// finds its tensor by binary search over the offsets. Bias corrections are computed on the host.
// NumPy reference: workbench/_backend/kernels.py (adam_step).
__device__ __forceinline__ int find_tensor(const long long* offsets, int ntensors, long long i) {
    int lo = 0, hi = ntensors - 1;
    while (lo < hi) {
        const int mid = (lo + hi + 1) >> 1;
        if (offsets[mid] <= i) lo = mid; else hi = mid - 1;
    }
    return lo;
}

extern "C" __global__ void adam_step(float** params, float** grads, float** exp_avgs, float** exp_avg_sqs,
                                     float** max_exp_avg_sqs, const long long* offsets, int ntensors,
                                     long long total, float lr, float beta1, float beta2, float eps,
                                     float weight_decay, float bias_c1, float bias_c2_sqrt, int decoupled,
                                     int amsgrad, int maximize) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
         i += (long long)gridDim.x * blockDim.x) {
        const int t = find_tensor(offsets, ntensors, i);
        const long long k = i - offsets[t];
        float* p = params[t];
        float g = grads[t][k];
        if (maximize) g = -g;
        float w = p[k];
        if (weight_decay != 0.0f) {
            if (decoupled) w *= 1.0f - lr * weight_decay;
            else g += weight_decay * w;
        }
        float m = exp_avgs[t][k] = beta1 * exp_avgs[t][k] + (1.0f - beta1) * g;
        float v = exp_avg_sqs[t][k] = beta2 * exp_avg_sqs[t][k] + (1.0f - beta2) * g * g;
        if (amsgrad) {
            v = max_exp_avg_sqs[t][k] = fmaxf(max_exp_avg_sqs[t][k], v);
        }
        const float denom = sqrtf(v) / bias_c2_sqrt + eps;
        p[k] = w - (lr / bias_c1) * m / denom;
    }
}
