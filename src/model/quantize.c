/* quantize: a model's weights as int8 (model_quantize, see model.h). */
#include "model/model.h"

#include "nn/packed_int8.h"

void model_quantize(Model *m)
{
    for (int i = 0; i < m->n_tensors; i++) {
        const TensorInfo *t = &m->tensors[i];
        if (!model_tensor_int8(t)) continue;
#pragma omp parallel for schedule(static)
        for (int r = 0; r < t->rows; r++) {
            float *row = m->params + t->offset + (size_t)r * t->cols;
            int8_t q[t->cols];
            const float s = int8_quantize_row(q, row, t->cols);
            for (int c = 0; c < t->cols; c++) row[c] = (float)q[c] * s;
        }
    }
    m->int8 = true;
}
