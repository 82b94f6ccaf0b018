// GELU forward and backward, exact (erf) or tanh-approximated, elementwise over n float32 values.
// NumPy reference: workbench/_backend/kernels.py (gelu, gelu_backward).
#define SQRT_2_OVER_PI 0.7978845608028654f
#define INV_SQRT_2 0.7071067811865476f
#define INV_SQRT_2PI 0.3989422804014327f

extern "C" __global__ void gelu_fwd(const float* __restrict__ x, float* __restrict__ y, long long n, int tanh_approx) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        const float v = x[i];
        if (tanh_approx) {
            y[i] = 0.5f * v * (1.0f + tanhf(SQRT_2_OVER_PI * (v + 0.044715f * v * v * v)));
        } else {
            y[i] = 0.5f * v * (1.0f + erff(v * INV_SQRT_2));
        }
    }
}

extern "C" __global__ void gelu_bwd(const float* __restrict__ g, const float* __restrict__ x, float* __restrict__ dx,
                                    long long n, int tanh_approx) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        const float v = x[i];
        float d;
        if (tanh_approx) {
            const float u = SQRT_2_OVER_PI * (v + 0.044715f * v * v * v);
            const float t = tanhf(u);
            d = 0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * SQRT_2_OVER_PI * (1.0f + 3.0f * 0.044715f * v * v);
        } else {
            d = 0.5f * (1.0f + erff(v * INV_SQRT_2)) + v * INV_SQRT_2PI * __expf(-0.5f * v * v);
        }
        dx[i] = g[i] * d;
    }
}
