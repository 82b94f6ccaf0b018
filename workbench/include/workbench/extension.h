/* workbench's C ABI for extension functions that want a tensor's shape, strides and dtype.
 *
 * A parameter declared `const wb_tensor* x` (or `wb_tensor* x` when the function writes through x->data)
 * receives a description of the tensor or NumPy array passed for it, of any dtype and any strides
 * (non-contiguous views included). load_inline/load put this header on the include path:
 *
 *     #include <workbench/extension.h>
 *     extern "C" double total(const wb_tensor* x);
 *
 * Plain pointer parameters (`const float* x`) keep taking a contiguous buffer of the matching dtype.
 * The description lives for the duration of the call only: do not keep x, x->shape or x->strides.
 */
#ifndef WORKBENCH_EXTENSION_H
#define WORKBENCH_EXTENSION_H
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum wb_dtype {
    WB_BOOL = 0, WB_UINT8 = 1, WB_INT8 = 2, WB_INT16 = 3, WB_INT32 = 4, WB_INT64 = 5,
    WB_FLOAT16 = 6, WB_BFLOAT16 = 7, WB_FLOAT32 = 8, WB_FLOAT64 = 9, WB_COMPLEX64 = 10, WB_COMPLEX128 = 11,
    WB_UINT16 = 12, WB_UINT32 = 13, WB_UINT64 = 14
};

typedef struct wb_tensor {
    void* data;             /* the first element (x[0, 0, ...]) */
    int64_t ndim;
    const int64_t* shape;   /* ndim sizes */
    const int64_t* strides; /* ndim strides in elements, not bytes (may be 0 or negative) */
    int64_t numel;
    int32_t dtype;          /* an enum wb_dtype value */
    int32_t itemsize;       /* bytes per element */
} wb_tensor;

#ifdef __cplusplus
}
#endif
#endif
